"""Lane records are judged by their evidence: a record whose verdict fields disagree with its checks is corrupt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.proof.records import LANES, RECORD_FILES, judge_record, judge_records
from anvil.proof.status import evidence_summary
from tests.proof.conftest import edit_json


def _fail_first_check(record: dict[str, Any]) -> None:
    """The first check fails, as the lane would have written it, but nothing else changes."""
    record["checks"][0]["status"] = "failed" if record["checks"][0]["status"] == "passed" else "fail"


def _fail_first_cell(record: dict[str, Any]) -> None:
    record["coverage"]["cells"][0]["ok"] = False


def test_the_genuine_records_of_every_lane_are_fresh(evidenced: Path) -> None:
    assert {lane: verdict.state for lane, verdict in judge_records(evidenced).items()} == dict.fromkeys(LANES, "fresh")


@pytest.mark.parametrize(
    ("lane", "tamper"),
    [
        ("certify", _fail_first_check),
        ("selftest", _fail_first_check),
        ("conformance", _fail_first_check),
        ("simulate", _fail_first_cell),
    ],
)
def test_a_record_whose_summary_still_says_passed_over_a_failing_check_is_corrupt(
    evidenced: Path, copy_bundle: Callable[[Path], Path], lane: str, tamper: Callable[[dict[str, Any]], None]
) -> None:
    bundle = copy_bundle(evidenced)
    edit_json(bundle / RECORD_FILES[lane], tamper)
    verdict = judge_record(bundle, lane)
    assert verdict.state == "corrupt"
    assert verdict.reason.startswith(f"{RECORD_FILES[lane]} is inconsistent: ")
    assert verdict.reason.endswith(f"rerun `anvil {lane}`")


def _honest_selftest_failure(record: dict[str, Any]) -> None:
    record["checks"][0]["status"] = "fail"
    record["summary"] = {"pass": record["summary"]["pass"] - 1, "fail": 1, "skipped": record["summary"]["skipped"]}
    record["passed"] = False


def test_a_failing_selftest_record_edited_to_say_passed_is_corrupt_and_enables_no_write(
    evidenced: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(evidenced)
    record = bundle / RECORD_FILES["selftest"]
    edit_json(record, _honest_selftest_failure)
    assert judge_record(bundle, "selftest").state == "failed"
    edit_json(record, lambda r: r.update(passed=True))
    assert judge_record(bundle, "selftest").state == "corrupt"
    assert "passed True but its checks say False" in judge_record(bundle, "selftest").reason
    # The summary edited to match the forged verdict still disagrees with the failing check.
    edit_json(record, lambda r: r.update(summary={"pass": r["summary"]["pass"] + 1, "fail": 0, "skipped": 1}))
    assert judge_record(bundle, "selftest").state == "corrupt"
    summary = evidence_summary(bundle)
    assert summary["writesReadyForReview"] == [] and summary["writesEnabled"] == []
    assert all("selftest evidence is corrupt" in write["blockers"] for write in summary["writes"])
    assert {write["state"] for write in summary["writes"]} == {"blocked"}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda r: r.update(status="passed"), "its status says 'passed' but its checks say 'failed'"),
        (lambda r: r.update(checks=r["checks"][1:], status="passed"), "recordDigest is not the digest of its content"),
        (lambda r: r.update(checks=[], status="passed"), "its status says 'passed' but its checks say 'failed'"),
    ],
    ids=["status-edited", "failing-check-dropped", "every-check-dropped"],
)
def test_a_certification_that_failed_cannot_be_edited_into_a_pass(
    evidenced: Path,
    copy_bundle: Callable[[Path], Path],
    change: Callable[[dict[str, Any]], None],
    said: str,
) -> None:
    bundle = copy_bundle(evidenced)
    record = bundle / RECORD_FILES["certify"]
    edit_json(record, _fail_first_check)
    edit_json(record, change)
    verdict = judge_record(bundle, "certify")
    assert verdict.state == "corrupt"
    assert said in verdict.reason


def test_a_certification_whose_check_detail_was_edited_no_longer_matches_its_record_digest(
    evidenced: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(evidenced)
    edit_json(bundle / RECORD_FILES["certify"], lambda r: r["checks"][0].update(detail="edited"))
    assert "recordDigest is not the digest of its content" in judge_record(bundle, "certify").reason


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["mutation"]["mutants"][0].update(killed=False),
        lambda r: r["coverage"]["dimensions"][0].update(passed=0),
        lambda r: r["summary"].update(ok=1),
        lambda r: r["coverage"].update(cells=[]),
    ],
    ids=["mutant-unkilled", "dimension-recount", "ok-not-boolean", "cells-dropped"],
)
def test_a_simulation_record_whose_counts_disagree_with_its_cells_or_mutants_is_corrupt(
    evidenced: Path, copy_bundle: Callable[[Path], Path], change: Callable[[dict[str, Any]], None]
) -> None:
    bundle = copy_bundle(evidenced)
    edit_json(bundle / RECORD_FILES["simulate"], change)
    assert judge_record(bundle, "simulate").state == "corrupt"


def test_a_conformance_record_with_an_unknown_check_status_is_corrupt(
    evidenced: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(evidenced)
    edit_json(bundle / RECORD_FILES["conformance"], lambda r: r["checks"][0].update(status="waived"))
    verdict = judge_record(bundle, "conformance")
    assert verdict.state == "corrupt"
    assert "unknown status 'waived'" in verdict.reason


@pytest.mark.parametrize("lane", ["selftest", "conformance", "simulate"])
def test_a_passing_record_marked_incomplete_is_judged_incomplete_and_never_fresh(
    evidenced: Path, copy_bundle: Callable[[Path], Path], lane: str
) -> None:
    bundle = copy_bundle(evidenced)
    marker = {
        "reason": "stopped (SIGINT received) after 1 of 4 operations",
        "operationsRun": 1,
        "operationsApproved": 4,
    }
    edit_json(bundle / RECORD_FILES[lane], lambda record: record.update(incomplete=marker))
    verdict = judge_record(bundle, lane)
    assert verdict.state == "incomplete"
    assert "SIGINT" in verdict.reason and f"anvil {lane}" in verdict.reason
    assert evidence_summary(bundle)["lanes"][lane]["state"] == "incomplete"


def test_an_incomplete_marker_without_a_reason_is_corrupt(evidenced: Path, copy_bundle: Callable[[Path], Path]) -> None:
    bundle = copy_bundle(evidenced)
    edit_json(bundle / RECORD_FILES["selftest"], lambda record: record.update(incomplete=True))
    assert judge_record(bundle, "selftest").state == "corrupt"


@pytest.mark.parametrize("lane", ["selftest", "simulate"])
def test_a_nothing_to_prove_marker_on_a_record_that_proved_something_is_corrupt(
    evidenced: Path, copy_bundle: Callable[[Path], Path], lane: str
) -> None:
    bundle = copy_bundle(evidenced)
    marker = {"reason": "nothing to prove: the bundle approves no operation", "operationsApproved": 0}
    edit_json(bundle / RECORD_FILES[lane], lambda record: record.update(nothingToProve=marker))
    verdict = judge_record(bundle, lane)
    assert verdict.state == "corrupt"
    assert "nothingToProve marker disagrees with its evidence" in verdict.reason
