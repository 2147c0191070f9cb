"""Certify's disclosure checks: the surface at rest in the mode auto picks, the original's four ladder checks,
reachability, names, and proxies that refuse what a direct call refuses (original-core §5.15, §8.1)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.read import read_bundle
from anvil.cli.compile import compile_bundle
from anvil.compiler import build
from anvil.compiler.manifest.draft import draft_manifest
from anvil.proof.certify import disclosure
from anvil.proof.certify.checks import Bundle
from anvil.proof.certify.lane import certify
from anvil.serve.discovery.ladder import Ladder, LadderPlan
from anvil.serve.discovery.meta import CALL_READ_TOOL

CORE = "contract.certification-core.static."
DISCLOSURE = (
    "surface_at_rest_within_disclosure_budget",
    "ladder_preserves_approved_surface",
    "ladder_entry_names_unique",
    "ladder_reduces_surface",
    "ladder_mode_justified",
    "approved_operations_reachable",
    "discovery_names_distinct_from_tools",
    "proxies_refuse_as_direct_calls",
)


def _checks(record: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        check["id"].removeprefix(CORE): (check["status"], check["detail"])
        for check in record["checks"]
        if check["id"].removeprefix(CORE) in DISCLOSURE
    }


def _bundle(directory: Path, rename: dict[str, str] | None = None) -> Bundle:
    """The bundle in ``directory``, its AIR's tools renamed (``operation id -> tool name``) in memory."""
    doc = read_bundle(directory)
    if rename:
        ops = tuple(
            dataclasses.replace(op, mcp=dataclasses.replace(op.mcp, tool_name=rename[op.id])) if op.id in rename else op
            for op in doc.operations
        )
        doc = dataclasses.replace(doc, operations=ops)
    return Bundle.open(directory, doc)


def test_a_small_api_passes_every_disclosure_check_served_flat_and_nothing_reaches_the_upstream(
    payments: Path,
) -> None:
    checks = _checks(certify(payments))
    assert {status for status, _ in checks.values()} == {"passed"}
    assert checks["surface_at_rest_within_disclosure_budget"][1].startswith("served flat (auto: the flat list fits)")
    assert checks["ladder_reduces_surface"][1] == (
        "served flat (fits_budget): no lane is served, so there is no indirection to justify"
    )
    assert checks["ladder_mode_justified"][1].startswith("flat/fits_budget re-derived from the contract: ")
    assert checks["ladder_preserves_approved_surface"][1].startswith("served flat (fits_budget): all ")
    assert checks["proxies_refuse_as_direct_calls"][1].endswith("and no request reached the upstream")
    bundle = _bundle(payments)
    assert disclosure.proxies_refuse_as_direct_calls(bundle)[0] is True
    assert bundle.surfaces().requests == []


def test_every_confirmation_gated_write_is_refused_alike_directly_and_through_the_write_proxy(github: Path) -> None:
    bundle = _bundle(github)
    gated = [op for op in bundle.approved if not op.is_read and op.confirmation.required]
    assert gated
    ok, detail = disclosure.proxies_refuse_as_direct_calls(bundle)
    assert ok, detail
    assert detail.startswith(f"{len(gated)} confirmation-gated write(s) refused alike directly and through ")
    assert bundle.surfaces().requests == []


def test_an_operation_named_like_a_meta_tool_fails_the_name_and_proxy_checks(github: Path) -> None:
    bundle = _bundle(github, {"github.comments.list": CALL_READ_TOOL})
    ok, detail = disclosure.discovery_names_distinct(bundle)
    assert not ok and detail == f"operation tool named like a meta-tool: {CALL_READ_TOOL}"
    ok, detail = disclosure.proxies_refuse_as_direct_calls(bundle)
    assert not ok and detail.startswith("the proxies cannot be served: ")


def test_an_operation_named_like_a_lane_card_fails_the_entry_name_checks(github: Path) -> None:
    bundle = _bundle(github, {"github.comments.list": "open_github_issue"})
    ok, detail = disclosure.ladder_entry_names_unique(bundle)
    assert not ok and detail == "entry card shadows a tool name: github.issue -> open_github_issue"
    ok, detail = disclosure.discovery_names_distinct(bundle)
    assert not ok and "card open_github_issue of github.issue is the name of a served tool" in detail
    assert disclosure.ladder_entry_names_unique(_bundle(github))[1].startswith("4 entry card(s) distinct from")


def _planted(bundle: Bundle, **changes: Any) -> Bundle:
    """``bundle`` whose served surfaces are replaced in part (a defect no correct ladder can make)."""
    planted = Bundle(bundle.directory, bundle.doc, bundle.files)
    planted._surfaces.append(dataclasses.replace(bundle.surfaces(), **changes))
    return planted


def test_an_approved_operation_in_no_lane_fails_reachability_and_preservation(github: Path) -> None:
    bundle = _bundle(github)
    ladder = bundle.surfaces().ladder
    dropped = ladder.lanes[0]
    planted = _planted(bundle, ladder=Ladder(ladder.lanes[1:], ladder.unlaned, ()))
    ok, detail = disclosure.ladder_preserves_approved_surface(planted)
    assert not ok and detail.startswith("unreachable (in no lane, not listed at rest): ")
    assert all(op_id in detail for op_id in dropped.operation_ids)
    ok, detail = disclosure.approved_operations_reachable(planted)
    assert not ok and detail.startswith("not in exactly one lane or at rest: ")
    assert f"{dropped.operation_ids[0]} (0 places)" in detail
    twice = _planted(bundle, ladder=Ladder((*ladder.lanes, dropped), ladder.unlaned, ()))
    ok, detail = disclosure.approved_operations_reachable(twice)
    assert not ok and f"{dropped.operation_ids[0]} (2 places)" in detail
    assert disclosure.ladder_preserves_approved_surface(twice)[0] is True  # the original: a layout note only
    assert "disclosed by more than one lane" not in disclosure.ladder_preserves_approved_surface(twice)[1]


def test_a_ladder_no_cheaper_than_flat_and_a_reason_the_contract_denies_fail_their_checks(github: Path) -> None:
    bundle = _bundle(github)
    costly = _planted(bundle, plan=LadderPlan("laddered", "over_budget", 30_000, 30_000, 4, 4))
    ok, detail = disclosure.ladder_reduces_surface(costly)
    assert not ok and detail == (
        "laddered: 30000 tokens at rest is no cheaper than 30000 flat — the ladder should have declined"
    )
    wrong = _planted(bundle, plan=LadderPlan("flat", "fits_budget", 30_000, 900, 4, 4))
    ok, detail = disclosure.ladder_mode_justified(wrong)
    assert not ok and detail.startswith("flat/fits_budget is not what the contract implies: the flat surface is 30000/")
    incoherent = _planted(bundle, plan=LadderPlan("flat", "over_budget", 30_000, 900, 4, 4))
    ok, detail = disclosure.ladder_mode_justified(incoherent)
    assert not ok and detail.endswith("; mode flat does not match reason over_budget")


@pytest.fixture(scope="module")
def pagerduty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import corpus_dir, missing

    spec = corpus_dir() / "pagerduty-rest.json"
    if not spec.is_file():
        missing(f"corpus spec {spec} is missing (set ANVIL_CORPUS)")
    folder = tmp_path_factory.mktemp("pagerduty")
    manifest = folder / "anvil.yaml"
    manifest.write_text(draft_manifest(build(spec, service_id="pd").document, approve="all"), encoding="utf-8")
    assert compile_bundle(spec, out=folder / "pd", manifest=manifest, service_id="pd").bundle_hash
    return folder / "pd"


@pytest.mark.corpus
def test_a_large_api_with_every_operation_approved_passes_every_disclosure_check_laddered(pagerduty: Path) -> None:
    checks = _checks(certify(pagerduty))
    assert {name: status for name, (status, _) in checks.items()} == dict.fromkeys(DISCLOSURE, "passed")
    at_rest = checks["surface_at_rest_within_disclosure_budget"][1]
    assert at_rest.startswith("served search (auto: the flat list is over 20000): 3 meta-tool(s) + 0 pinned tool(s)")
    assert checks["ladder_reduces_surface"][1].startswith("laddered: ")
    assert checks["ladder_mode_justified"][1].startswith("laddered/over_budget re-derived from the contract: ")
    assert checks["approved_operations_reachable"][1].endswith("and each found first by its exact tool name")
