"""A lane run's scope: which operations it selects, its progress lines, when it stops, and the marker
a record that covers less than every approved operation carries."""

from __future__ import annotations

from pathlib import Path

from anvil.bundle.read import read_bundle
from anvil.proof.scope import LaneScope, incomplete_marker, select_operations


def test_globs_select_approved_operations_by_id_canonical_name_or_tool_name(github: Path) -> None:
    doc = read_bundle(github)
    approved = [op.id for op in doc.operations if op.is_approved]
    assert [op.id for op in select_operations(doc.operations, ())] == approved
    by_id = [op.id for op in select_operations(doc.operations, ("github.comments.*",))]
    assert by_id and all(op_id.startswith("github.comments.") for op_id in by_id)
    first = next(op for op in doc.operations if op.is_approved)
    assert [op.id for op in select_operations(doc.operations, (first.mcp.tool_name,))] == [first.id]
    assert select_operations(doc.operations, ("nothing.*",)) == []


def test_the_time_cap_stops_the_run_and_the_marker_says_how_far_it_got(github: Path) -> None:
    now = [0.0]
    lines: list[str] = []
    scope = LaneScope(time_cap_s=5, clock=lambda: now[0], progress=lines.append)
    ops = select_operations(read_bundle(github).operations, ())
    scope.begin(len(ops))
    assert not scope.should_stop()
    scope.step("selftest", ops[0])
    now[0] = 5.0
    assert scope.should_stop()
    assert lines == [f"[1/{len(ops)}] selftest {ops[0].id}"]
    marker = incomplete_marker(scope, selected=len(ops), approved=len(ops), finished=1)
    assert marker == {
        "reason": f"stopped (the time cap of 5 s was reached) after 1 of {len(ops)} operations",
        "operationsRun": 1,
        "operationsApproved": len(ops),
    }


def test_a_run_over_every_approved_operation_carries_no_marker_and_a_subset_always_does() -> None:
    assert incomplete_marker(LaneScope(), selected=4, approved=4, finished=4) is None
    subset = incomplete_marker(LaneScope(operations=("a.*",)), selected=1, approved=4, finished=1)
    assert subset is not None and subset["reason"] == "--operations a.* selected 1 of 4 approved operations"
    stopped = LaneScope()
    stopped.stop.set("SIGTERM received")
    late = incomplete_marker(stopped, selected=4, approved=4, finished=4, left_out="the mutation battery")
    assert late is not None and late["reason"] == "stopped (SIGTERM received) before the mutation battery"
