"""simulate makes the inputs an effect contract reads, so it agrees with selftest and a live call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from anvil.proof.scope import LaneScope
from anvil.proof.simulate.lane import simulate
from tests.proof.conftest import edit_json, operation

_STORE = "checkout.stored_payment_methods.create"


def _cell(record: dict[str, Any], op_id: str, name: str) -> dict[str, Any]:
    return next(
        c
        for c in record["coverage"]["cells"]
        if c["operationId"] == op_id and f"{c['dimension']}/{c['variant']}" == name
    )


def test_an_undo_read_from_an_optional_body_resolves_in_simulate_as_in_selftest(checkout: Path) -> None:
    record = simulate(checkout, scope=LaneScope(operations=(_STORE,)))
    cell = _cell(record, _STORE, "effect/report")
    assert cell["expected"] == "class=reversible undo=inverse lookup=none"
    assert cell["ok"], cell
    assert record["coverage"]["skipped"] == []
    assert all(c["ok"] for c in record["coverage"]["cells"]), [c for c in record["coverage"]["cells"] if not c["ok"]]


def test_a_contract_that_reads_what_no_input_can_hold_is_skipped_with_the_reason(
    checkout: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(checkout)

    def tamper(air: dict[str, Any]) -> None:  # a path under a string: no value of the input holds it
        inverse = operation(air, _STORE)["effect"]["inverse"]
        inverse["arguments"]["shopper_reference"] = "request.body.holderName.first"

    edit_json(bundle / "air.json", tamper)
    record = simulate(bundle, scope=LaneScope(operations=(_STORE,)))
    assert [c for c in record["coverage"]["cells"] if c["operationId"] == _STORE] == []
    [skipped] = record["coverage"]["skipped"]
    assert skipped["operationId"] == _STORE
    assert skipped["reason"].startswith("its effect contract reads request.body.holderName.first")
