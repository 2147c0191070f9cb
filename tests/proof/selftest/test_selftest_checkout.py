"""selftest on an unseen checkout API: no failure the lane causes itself (``fixtures/checkout.yaml``).

A read of an item no approved create makes meets an item planted in the mock; a lookup by key tells
found from never made; a draft observed only through a list is proven published and, on its own
draft, gone. A seeded item never turns a real failure into a pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from anvil.cli.compile import compile_bundle
from anvil.proof.processes import mock_process
from anvil.proof.selftest.lane import SelftestOptions, SelftestReport, run_selftest
from tests.proof.conftest import FIXTURES, REPO, edit_json, operation


def _env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}


def _selftest(bundle: Path, upstream: Path | None = None) -> SelftestReport:
    """The selftest of ``bundle``, against the mock of ``upstream`` (default: of ``bundle`` itself)."""
    if upstream is None:
        return anyio.run(lambda: run_selftest(bundle, SelftestOptions(env=_env()), write=False))

    async def against() -> SelftestReport:
        async with mock_process(upstream, env=_env()) as mock:
            return await run_selftest(bundle, SelftestOptions(upstream=mock.url, env=_env()), write=False)

    return anyio.run(against)


@pytest.fixture(scope="module")
def checkout_report(checkout: Path) -> SelftestReport:
    """One selftest of the checkout bundle, shared by the tests that read it."""
    return _selftest(checkout)


def _check(report: SelftestReport, check_id: str, op_id: str) -> dict[str, object]:
    return next(c.to_json() for c in report.checks if c.id == check_id and c.operation == op_id)


def test_a_read_of_an_item_no_approved_create_makes_passes_on_an_item_planted_in_the_mock(
    checkout_report: SelftestReport,
) -> None:
    report = checkout_report
    check = _check(report, "fidelity", "checkout.sessions.get")
    assert check["status"] == "pass", check
    assert "planted in the mock's state" in str(check["detail"])


def test_a_planted_item_does_not_hide_a_gateway_that_answers_wrong(
    checkout: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    # The gateway's contract says a session's amount is a string: the planted session (an integer
    # amount, as the API answers) must fail the gateway's output check, and so fidelity.
    bundle = copy_bundle(checkout)

    def tamper(air: dict[str, object]) -> None:
        schema = operation(air, "checkout.sessions.get")["output"]["schema"]
        ref = schema.get("$ref", "")
        target = air["schemas"][ref.rsplit("/", 1)[-1]] if ref else schema  # type: ignore[index]
        target["properties"]["amount"] = {"type": "string"}

    edit_json(bundle / "air.json", tamper)
    report = _selftest(bundle, upstream=checkout)  # the mock answers as the API's own contract says
    check = _check(report, "fidelity", "checkout.sessions.get")
    assert check["status"] == "fail", check
    assert "schema_mismatch" in str(check["detail"])
    assert not report.passed


def test_a_lookup_by_key_through_a_filtered_list_finds_the_effect_and_not_one_never_made(
    checkout_report: SelftestReport,
) -> None:
    report = checkout_report
    check = _check(report, "effect-lookup", "checkout.payments.create")
    assert check["status"] == "pass", check
    assert "reports found: false for one never made" in str(check["detail"])


def test_a_draft_only_a_list_observes_is_published_by_its_promote_and_gone_after_its_discard(
    checkout_report: SelftestReport,
) -> None:
    report = checkout_report
    check = _check(report, "effect-draft", "checkout.posts.create")
    assert check["status"] == "pass", check
    assert "a second draft discarded with checkout_delete_post is gone" in str(check["detail"])
    assert report.passed, [c.to_json() for c in report.checks if c.status == "fail"]
    skipped = [(c.id, c.operation) for c in report.checks if c.status == "skipped"]
    assert skipped == [("fidelity", "checkout.tokens.remove")]  # its add is not approved: nothing to remove


def test_an_rpc_remove_whose_add_is_not_approved_is_a_skip_saying_so_not_a_failure(
    checkout_report: SelftestReport,
) -> None:
    report = checkout_report
    check = _check(report, "fidelity", "checkout.tokens.remove")
    assert check == {
        "id": "fidelity",
        "operationId": "checkout.tokens.remove",
        "status": "skipped",
        "detail": "it removes an item only its add makes, and no approved add makes one in this run",
    }


def _redeclared(checkout: Path, copy_bundle: Callable[[Path], Path], step: str, target: str, **literal: object) -> Path:
    bundle = copy_bundle(checkout)

    def tamper(air: dict[str, Any]) -> None:
        arguments: dict[str, object] = {"post_id": "response.id", **{k: {"const": v} for k, v in literal.items()}}
        operation(air, "checkout.posts.create")["effect"]["draft"][step] = {"operation": target, "arguments": arguments}

    edit_json(bundle / "air.json", tamper)
    return bundle


def test_a_promote_that_removes_the_draft_is_not_proof_it_was_published(
    checkout: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    report = _selftest(_redeclared(checkout, copy_bundle, "promote", "checkout.posts.delete"))
    check = _check(report, "effect-draft", "checkout.posts.create")
    assert check["status"] == "fail", check
    assert "after checkout_delete_post, checkout_list_posts sees no such item" in str(check["detail"])


def test_a_discard_that_leaves_the_draft_fails_on_that_draft(
    checkout: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    report = _selftest(_redeclared(checkout, copy_bundle, "discard", "checkout.posts.update", draft=True))
    check = _check(report, "effect-draft", "checkout.posts.create")
    assert check["status"] == "fail", check
    assert "after checkout_update_post the draft is still there" in str(check["detail"])


def test_a_lookup_whose_list_answers_in_an_object_tells_found_from_never_made(
    tmp_path: Path,
) -> None:
    # The same checkout API, but its payments list answers {"data": [...], "has_more": ...}: the
    # gateway must read the items, not call any object "found".
    listed = 'schema: { type: array, items: { $ref: "#/components/schemas/Payment" } }'
    wrapped = (
        "schema: { type: object, required: [data, has_more], properties: "
        '{ data: { type: array, items: { $ref: "#/components/schemas/Payment" } }, has_more: { type: boolean } } }'
    )
    text = (FIXTURES / "checkout.yaml").read_text(encoding="utf-8")
    assert text.count(listed) == 1
    spec = tmp_path / "checkout.yaml"
    spec.write_text(text.replace(listed, wrapped), encoding="utf-8")
    out = tmp_path / "checkout"
    outcome = compile_bundle(
        spec, out=out, manifest=FIXTURES / "checkout.anvil.yaml", service_id="checkout", root=REPO, spec_root=tmp_path
    )
    assert outcome.bundle_hash is not None, [d.code for d in outcome.diagnostics if d.severity == "error"]
    report = _selftest(out)
    check = _check(report, "effect-lookup", "checkout.payments.create")
    assert check["status"] == "pass", check
    assert "reports found: false for one never made" in str(check["detail"])
