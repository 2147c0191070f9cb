"""What a failed lane record puts on one write: its own failures first, bundle-wide ones, then the rest by count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvil.proof.blockers import BUDGET_CHECK, MAX_OWN, lane_failures, write_blockers

OPS = ("shop.notes.create", "shop.notes.delete", "shop.notes.get", "shop.notes.create.draft")


def _record(directory: Path, name: str, record: dict[str, Any]) -> None:
    (directory / name).write_text(json.dumps(record), encoding="utf-8")


def test_a_certify_check_naming_a_write_is_that_writes_own_and_a_check_naming_none_blocks_every_write(
    tmp_path: Path,
) -> None:
    checks = [
        {"id": "semantic.descriptions-present", "status": "failed", "detail": "no description: shop.notes.create"},
        {"id": "contract.generated-bytes", "status": "failed", "detail": "skill/SKILL.md differs"},
        {"id": "contract.air-valid", "status": "passed", "detail": "fine"},
    ]
    _record(tmp_path, "certification.json", {"checks": checks})
    found = {"certify": lane_failures(tmp_path, "certify", OPS)}
    assert write_blockers("shop.notes.create", found) == [
        "certify evidence is failed: semantic.descriptions-present: no description: shop.notes.create",
        "certify evidence is failed: contract.generated-bytes: skill/SKILL.md differs",
    ]
    # An id that only starts like another operation's is not that operation's.
    assert write_blockers("shop.notes.create.draft", found)[0] == (
        "certify evidence is failed: contract.generated-bytes: skill/SKILL.md differs"
    )
    assert write_blockers("shop.notes.delete", found)[1] == (
        "certify evidence is failed: 1 failure(s) on other operations: semantic.descriptions-present "
        "(on shop.notes.create)"
    )


def test_a_writes_own_failures_are_capped_and_counted_and_the_budget_lever_is_said_once(tmp_path: Path) -> None:
    checks = [
        {"id": f"fidelity-{n}", "operationId": "shop.notes.create", "status": "fail", "detail": "x" * 500}
        for n in range(MAX_OWN + 2)
    ]
    _record(tmp_path, "selftest.report.json", {"checks": checks})
    budget = {
        "id": BUDGET_CHECK,
        "status": "failed",
        "detail": "over the 1200-token tool budget (o200k_base): shop.notes.get (1500 tokens); to publish every "
        "tool as it is, set `disclosure: tool_budget_tokens: 1500` in anvil.yaml (the smallest budget every tool "
        "fits) and recompile, or narrow the inputs of the tools over it in the spec",
    }
    _record(tmp_path, "certification.json", {"checks": [budget]})
    found = {lane: lane_failures(tmp_path, lane, OPS) for lane in ("certify", "selftest")}
    blockers = write_blockers("shop.notes.create", found)
    assert len(blockers) == MAX_OWN + 2
    assert blockers[0].startswith("selftest evidence is failed: fidelity-0 on shop.notes.create: xxx")
    assert len(blockers[0]) < 250 and blockers[0].endswith("…")
    assert blockers[MAX_OWN] == "selftest evidence is failed: and 2 more failures on shop.notes.create"
    assert blockers[-1] == (
        f"certify evidence is failed: 1 failure(s) on other operations: {BUDGET_CHECK} (on shop.notes.get); to "
        "publish every tool as it is, set `disclosure: tool_budget_tokens: 1500` in anvil.yaml (the smallest "
        "budget every tool fits) and recompile, or narrow the inputs of the tools over it in the spec"
    )
    assert sum("tool_budget_tokens" in blocker for blocker in write_blockers("shop.notes.get", found)) == 1
