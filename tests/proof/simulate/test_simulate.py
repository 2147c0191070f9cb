"""anvil simulate: the contract × dimension matrix and the mutation battery (original-core §8.4)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.hash import bundle_hash
from anvil.cli import main
from anvil.proof.records import judge_record
from anvil.proof.scope import NOTHING_TO_PROVE, LaneScope
from anvil.proof.simulate.lane import SIMULATION_FILE, simulate
from anvil.proof.simulate.matrix import DIMENSIONS
from anvil.proof.simulate.mutants import MUTANTS
from tests.proof.conftest import edit_json


def _cell(record: dict[str, Any], op_id: str, name: str) -> dict[str, Any]:
    return next(
        c
        for c in record["coverage"]["cells"]
        if c["operationId"] == op_id and f"{c['dimension']}/{c['variant']}" == name
    )


def _mutant(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in record["mutation"]["mutants"] if m["name"] == name)


def test_the_dimensions_and_mutants_are_the_public_registry() -> None:
    assert DIMENSIONS == ("auth", "confirmation", "idempotency", "fault", "pagination", "disclosure", "effect")
    assert [m.name for m in MUTANTS] == [
        "remove_confirmation",
        "enable_unsafe_retry",
        "drop_oauth_scope",
        "weaken_mutation_to_read",
        "corrupt_output_schema",
        "drop_idempotency_key",
        "drop_undo",
    ]


@pytest.mark.parametrize("example", ["payments", "github"])
def test_simulate_passes_every_cell_and_kills_every_applicable_mutant_on_both_examples(
    example: str,
    request: pytest.FixtureRequest,
    copy_bundle: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle = copy_bundle(request.getfixturevalue(example))
    assert main(["simulate", str(bundle)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("PASSED — ")
    record = json.loads((bundle / SIMULATION_FILE).read_text(encoding="utf-8"))
    assert record["bundleHash"] == bundle_hash(bundle)
    summary = record["summary"]
    assert summary["ok"] is True
    assert summary["coverageCells"] == summary["coveragePassed"] > 0
    applicable = [m for m in record["mutation"]["mutants"] if m["applicable"]]
    assert applicable and all(m["killed"] for m in applicable)
    assert all(m["detectedBy"][0] == "surface-signature" for m in applicable)


def test_operations_with_their_own_server_are_simulated_like_the_others(files: Path) -> None:
    record = simulate(files)
    assert record["summary"]["ok"] is True
    uploads = [c for c in record["coverage"]["cells"] if c["operationId"].startswith("files.content.")]
    assert uploads and all(c["ok"] for c in uploads)


def test_payments_retries_a_keyed_refund_but_github_never_retries_an_unkeyed_issue(
    payments: Path, github: Path
) -> None:
    pay, gh = simulate(payments), simulate(github)
    assert _cell(pay, "payments.refunds.create", "fault/outage")["actual"] == "upstream_unavailable after 3 attempt(s)"
    assert _cell(gh, "github.issues.create", "fault/outage")["actual"] == "upstream_unavailable after 1 attempt(s)"
    assert _cell(pay, "payments.refunds.create", "idempotency/without-key")["actual"] == (
        "idempotency_required after 0 attempt(s)"
    )
    assert _cell(pay, "payments.refunds.create", "idempotency/replay")["actual"] == (
        "two answers from 1 upstream request(s)"
    )
    assert _cell(gh, "github.releases.create", "effect/stage")["actual"] == "staged github.releases.create"
    assert _cell(gh, "github.comments.create", "effect/report")["actual"] == (
        "class=reversible undo=inverse lookup=none"
    )


def test_each_weakened_control_is_caught_by_the_cell_that_watches_it(payments: Path, github: Path) -> None:
    pay, gh = simulate(payments), simulate(github)
    assert _mutant(pay, "enable_unsafe_retry")["applicable"] is False  # every payments write retries safely
    assert "auth/authorized" in _mutant(pay, "drop_oauth_scope")["detectedBy"]
    assert "idempotency/replay" in _mutant(pay, "drop_idempotency_key")["detectedBy"]
    assert "confirmation/without-confirm" in _mutant(gh, "remove_confirmation")["detectedBy"]
    assert "effect/report" in _mutant(gh, "drop_undo")["detectedBy"]
    assert _mutant(gh, "corrupt_output_schema")["classification"] == "breaking"
    assert _mutant(gh, "drop_oauth_scope")["applicable"] is False  # github-mini declares no scopes


def test_the_record_is_deterministic_for_a_seed_apart_from_its_timestamp(github: Path) -> None:
    first, second = simulate(github, seed=7), simulate(github, seed=7)
    assert first.pop("simulatedAt") != "" and second.pop("simulatedAt") != ""
    assert first == second
    assert first["coverage"]["seed"] == 7


def test_a_bundle_with_nothing_approved_has_nothing_to_prove_and_exits_0_saying_how_to_approve_one(
    payments: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(payments)

    def unapprove(air: dict[str, Any]) -> None:
        for op in air["operations"]:
            op["state"] = "review_required"

    edit_json(bundle / "air.json", unapprove)
    assert main(["simulate", str(bundle)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"SKIPPED — simulate {bundle}: {NOTHING_TO_PROVE}"
    record = json.loads((bundle / SIMULATION_FILE).read_text(encoding="utf-8"))
    assert record["nothingToProve"] == {"reason": NOTHING_TO_PROVE, "operationsApproved": 0}
    assert (record["summary"]["ok"], record["coverage"]["cells"]) == (False, [])  # readers without the marker
    verdict = judge_record(bundle, "simulate")
    assert (verdict.state, verdict.reason) == ("skipped", f"simulate: {NOTHING_TO_PROVE}")


def test_a_malformed_seed_is_a_usage_error(payments: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(payments), "--seed", "x3"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err


def test_date_time_answers_are_times_the_inverse_is_reported_and_an_unmakeable_example_is_skipped(
    events: Path,
) -> None:
    record = simulate(events)
    assert _cell(record, "events.events.create", "effect/report")["ok"]
    assert _cell(record, "events.events.create", "fault/none")["ok"]
    assert record["coverage"]["skipped"] == [
        {
            "operationId": "events.reports.create",
            "reason": "no valid example input can be made: create_report: 'body': 'range': 'from' is required "
            "but additionalProperties is false",
        }
    ]
    assert not [c for c in record["coverage"]["cells"] if c["operationId"] == "events.reports.create"]
    assert record["summary"]["ok"], [c for c in record["coverage"]["cells"] if not c["ok"]]


def test_the_simulated_upstream_answers_every_field_within_its_format(events: Path) -> None:
    import httpx

    from anvil.bundle.read import read_bundle
    from anvil.proof.simulate.upstream import SimulatedUpstream

    doc = read_bundle(events)
    upstream = SimulatedUpstream(doc, seed=3)
    answer = upstream.answer(httpx.Request("GET", f"https://x/accounts/AC{'0' * 32}/events/{'1' * 8}"))
    data = answer.json()
    assert datetime.fromisoformat(data["start"].replace("Z", "+00:00"))
    assert len(data["id"]) == 36 and data["id"].count("-") == 4


def test_answers_that_cannot_be_made_within_the_bounds_are_skipped_and_a_contradiction_is_a_finding(
    hostile: Path,
) -> None:
    started = time.perf_counter()
    record = simulate(hostile)  # ran 645 s until SIGKILL before, on the pattern alone
    assert time.perf_counter() - started < 60
    skipped = {item["operationId"]: item["reason"] for item in record["coverage"]["skipped"]}
    assert sorted(skipped) == ["hostile.big.list", "hostile.grid.list"]
    assert skipped["hostile.big.list"].startswith("no answer can be made within the generator's bounds: ")
    assert "minLength 2000000000 is longer than a generated string may be" in skipped["hostile.big.list"]
    assert "more work to make than a generated value may" in skipped["hostile.grid.list"]
    # no text matches ^(a+)+(?!)$: the contract contradicts itself, and the cell checking the answer says so
    assert _cell(record, "hostile.things.list", "fault/none")["actual"] == "schema_mismatch after 1 attempt(s)"


def _ticking(scope: LaneScope, *, stop_at: int | None = None) -> list[int]:
    """Make ``scope``'s clock advance one second per reading (a signal arriving at reading ``stop_at``)."""
    readings = [0]

    def clock() -> float:
        readings[0] += 1
        if readings[0] == stop_at:
            scope.stop.set("SIGTERM received")
        return float(readings[0])

    scope.clock = clock
    return readings


@pytest.mark.parametrize("how", ["time cap", "signal"])
def test_the_time_cap_and_a_signal_hold_while_a_value_is_being_made(hostile: Path, how: str) -> None:
    scope = LaneScope(operations=("hostile.grid.*",), time_cap_s=8 if how == "time cap" else 3600)
    readings = _ticking(scope, stop_at=8 if how == "signal" else None)
    started = time.perf_counter()
    record = simulate(hostile, scope=scope)
    assert time.perf_counter() - started < 30
    # the grid's answer is being made when the clock is read the eighth time: that value is abandoned
    assert readings[0] >= 8
    assert record["coverage"]["cells"] == [] and record["coverage"]["skipped"] == []
    reason = "the time cap of 8 s was reached" if how == "time cap" else "SIGTERM received"
    assert f"stopped ({reason}) after 0 of 1 operations" in record["incomplete"]["reason"]
