"""The _meta.effect report: key order, undo resolution, deadlines, lookups, staging, fleet renaming."""

from __future__ import annotations

import dataclasses
from typing import Any

from anvil.air.model import Deadline, Effect, Operation
from anvil.serve.report import (
    EffectPlan,
    FollowUpPlan,
    ListedItems,
    LookupPlan,
    StagePlan,
    call_report,
    lookup_found,
    rewrite_report_tools,
    staged_report,
)
from tests.runtime.runtime_support import operation

REQUEST = {"owner": "octo", "repo": "hello", "issue_number": 2}
RESPONSE = {"id": 9, "expires_at": "2030-01-01T00:00:00Z"}
INVERSE = FollowUpPlan("s.comments.delete", "s_delete_comment", {"owner": "request.owner", "comment_id": "response.id"})
CLOSE = FollowUpPlan("s.issues.close", "s_close_issue", {"issue_number": "request.issue_number"})


def report(plan: EffectPlan, *, succeeded: bool = True, key: str | None = None, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("request", REQUEST)
    kwargs.setdefault("response", RESPONSE if succeeded else None)
    return call_report(plan, succeeded=succeeded, idempotency_key=key, answered_at_ms=1000, **kwargs)


def test_an_undeclared_read_reports_exactly_the_default_shape() -> None:
    assert report(EffectPlan("s.issues.list", "read")) == {
        "class": "read",
        "operation": "s.issues.list",
        "idempotency_key": None,
        "undo": None,
        "deadline_ms": None,
        "lookup": None,
    }


def test_an_undeclared_write_is_irreversible_with_no_undo_and_no_reason() -> None:
    shown = report(EffectPlan("s.issues.update", "irreversible"))
    assert (shown["class"], shown["undo"]) == ("irreversible", None)
    assert "undo_unavailable" not in shown


def test_a_reversible_call_resolves_its_inverse_deadline_and_compensation_in_key_order() -> None:
    inverse = FollowUpPlan(INVERSE.operation, INVERSE.tool, INVERSE.arguments, Deadline(within_ms=60000))
    shown = report(EffectPlan("s.comments.create", "reversible", inverse=inverse, compensate=CLOSE), key="k")
    assert list(shown) == ["class", "operation", "idempotency_key", "undo", "deadline_ms", "lookup", "compensate"]
    assert shown["undo"] == {
        "kind": "inverse",
        "operation": "s.comments.delete",
        "tool": "s_delete_comment",
        "arguments": {"owner": "octo", "comment_id": 9},
    }
    assert (shown["deadline_ms"], shown["idempotency_key"]) == (61000, "k")
    assert shown["compensate"] == {
        "operation": "s.issues.close",
        "tool": "s_close_issue",
        "arguments": {"issue_number": 2},
        "deadline_ms": None,
    }


def test_a_deadline_at_a_response_time_resolves_to_epoch_milliseconds() -> None:
    inverse = FollowUpPlan(INVERSE.operation, INVERSE.tool, INVERSE.arguments, Deadline(at="response.expires_at"))
    shown = report(EffectPlan("s.comments.create", "reversible", inverse=inverse))
    assert shown["deadline_ms"] == 1893456000000


def test_an_undo_that_cannot_be_resolved_says_why() -> None:
    no_inverse = report(EffectPlan("s.c.create", "reversible"))
    assert no_inverse["undo"] is None
    assert no_inverse["undo_unavailable"] == "the operation declares no inverse"
    unserved = FollowUpPlan("s.comments.delete", None, INVERSE.arguments)
    assert "is not served here" in report(EffectPlan("s.c.create", "reversible", inverse=unserved))["undo_unavailable"]
    gap = report(EffectPlan("s.c.create", "reversible", inverse=INVERSE), response={"other": 1})
    assert gap["undo"] is None and "comment_id" in gap["undo_unavailable"]
    late = FollowUpPlan(INVERSE.operation, INVERSE.tool, INVERSE.arguments, Deadline(at="response.when"))
    unknown = report(EffectPlan("s.c.create", "reversible", inverse=late))
    assert unknown["undo"] is None and "deadline" in unknown["undo_unavailable"]
    compensable = report(EffectPlan("s.i.create", "compensable"))
    assert compensable["undo_unavailable"] == "the operation declares no compensate"


def test_a_compensable_call_undoes_by_its_compensation_and_resolves_a_lookup_by_key() -> None:
    lookup = LookupPlan("s.issues.find", "s_find_issue", "idempotency_key", {"key": "idempotency_key"})
    shown = report(EffectPlan("s.i.create", "compensable", compensate=CLOSE, lookup=lookup), key="k-1")
    assert shown["undo"]["kind"] == "compensate"  # type: ignore[index]
    assert shown["lookup"] == {
        "operation": "s.issues.find",
        "tool": "s_find_issue",
        "arguments": {"key": "k-1"},
        "by": "idempotency_key",
    }
    keyless = report(EffectPlan("s.i.create", "compensable", compensate=CLOSE, lookup=lookup))
    assert keyless["lookup"] is None


def test_a_failed_call_keeps_class_key_and_lookup_and_drops_the_undo() -> None:
    lookup = LookupPlan("s.tags.get", "s_get_tag", "id", {"tag": "request.owner"})
    plan = EffectPlan("s.c.create", "reversible", inverse=INVERSE, lookup=lookup)
    shown = report(plan, succeeded=False, key="k")
    assert shown == {
        "class": "reversible",
        "operation": "s.c.create",
        "idempotency_key": "k",
        "undo": None,
        "deadline_ms": None,
        "lookup": {"operation": "s.tags.get", "tool": "s_get_tag", "arguments": {"tag": "octo"}, "by": "id"},
    }


def test_a_declared_lookup_interprets_its_answer() -> None:
    assert (lookup_found(True, {"id": 1}, None), lookup_found(True, [1], None)) == (True, True)
    assert (lookup_found(True, [], None), lookup_found(True, None, None)) == (False, False)
    assert (lookup_found(False, None, "not_found"), lookup_found(False, None, "upstream_timeout")) == (False, None)
    plan = EffectPlan("s.tags.get", "read", answers_lookup=True)
    assert report(plan, found=False)["lookup"] == {"found": False}
    assert report(plan, succeeded=False, found=None)["lookup"] is None


def test_a_lookup_that_lists_in_an_object_is_found_only_when_its_items_are_not_empty() -> None:
    paged = ListedItems("data")
    assert lookup_found(True, {"data": [], "has_more": False}, None, paged) is False
    assert lookup_found(True, {"data": [{"id": 1}], "has_more": False}, None, paged) is True
    nested = ListedItems("result.items")
    assert lookup_found(True, {"result": {"items": []}}, None, nested) is False
    only_list = ListedItems(None)
    assert lookup_found(True, {"payments": [], "total": 0}, None, only_list) is False
    assert lookup_found(True, {"payments": [{"id": 1}]}, None, only_list) is True
    # Items it cannot locate say nothing: a wrong "not found" would have a reconciler repeat the effect.
    assert lookup_found(True, {"a": [], "b": []}, None, only_list) is None
    assert lookup_found(True, {"count": 3}, None, paged) is None
    # A lookup that does not list keeps the old reading: any answer is found.
    assert lookup_found(True, {"data": []}, None, None) is True


def test_only_the_answer_schema_makes_a_lookup_a_list_so_a_record_with_an_empty_list_field_is_found() -> None:
    pet = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}}}
    wrapper = {
        "type": "object",
        "properties": {"data": {"type": "array", "items": {}}, "has_more": {"type": "boolean"}},
    }
    assert ListedItems.of(_operation("get"), pet) is None
    # A "find" that answers one record is a get, whatever its action says: no array at the top.
    assert ListedItems.of(_operation("search"), {"type": "object", "properties": {"id": {"type": "integer"}}}) is None
    assert ListedItems.of(_operation("list"), wrapper) == ListedItems("data")
    assert ListedItems.of(_operation("get"), {"type": "array", "items": pet}) == ListedItems(None)
    assert ListedItems.of(_operation("list"), None) is None


def test_a_staged_report_resolves_handle_promote_and_discard() -> None:
    stage = StagePlan(
        "s.releases.create",
        {"tag": "request.tag"},
        "response.id",
        FollowUpPlan("s.releases.update", "s_update_release", {"id": "response.id", "draft": {"const": False}}),
        None,
    )
    plan = EffectPlan("s.releases.create", "irreversible", stage=stage)
    shown = staged_report(plan, request={"tag": "v1"}, response={"id": 500}, idempotency_key="ledger-03")
    assert shown == {
        "class": "irreversible",
        "operation": "s.releases.create",
        "idempotency_key": "ledger-03",
        "undo": None,
        "deadline_ms": None,
        "lookup": None,
        "staged": {
            "draft_operation": "s.releases.create",
            "handle": 500,
            "promote": {
                "operation": "s.releases.update",
                "tool": "s_update_release",
                "arguments": {"id": 500, "draft": False},
            },
            "discard": None,
        },
    }
    gap = staged_report(plan, request={"tag": "v1"}, response={}, idempotency_key=None)
    assert gap["staged"]["handle"] is None and gap["staged"]["promote"] is None
    assert gap["staged"]["unavailable"].startswith("promote: ")


def test_every_follow_up_whose_operation_requires_confirmation_ends_with_requires_confirmation() -> None:
    inverse = FollowUpPlan(INVERSE.operation, INVERSE.tool, INVERSE.arguments, confirm=True)
    close = FollowUpPlan(CLOSE.operation, CLOSE.tool, CLOSE.arguments, confirm=True)
    lookup = LookupPlan("s.comments.get", "s_get_comment", "id", {"comment_id": "response.id"}, confirm=True)
    shown = report(EffectPlan("s.comments.create", "reversible", inverse=inverse, compensate=close, lookup=lookup))
    assert shown["undo"]["requires_confirmation"] is True and list(shown["undo"])[-1] == "requires_confirmation"
    assert list(shown["compensate"]) == ["operation", "tool", "arguments", "deadline_ms", "requires_confirmation"]
    assert shown["lookup"]["requires_confirmation"] is True
    stage = StagePlan("s.comments.create", {}, "response.id", close, FollowUpPlan("s.x", "s_x", {}))
    plan = EffectPlan("s.comments.create", "irreversible", stage=stage)
    staged = staged_report(plan, request=REQUEST, response=RESPONSE, idempotency_key=None)
    assert staged["staged"]["promote"]["requires_confirmation"] is True
    assert "requires_confirmation" not in staged["staged"]["discard"]  # absent, never false, when not needed


def test_a_fleet_rewrites_every_follow_up_tool_and_leaves_nulls() -> None:
    plan = EffectPlan("s.c.create", "reversible", inverse=INVERSE, compensate=CLOSE)
    shown = report(plan)
    renamed = rewrite_report_tools(shown, lambda tool: f"svc__{tool}")
    assert renamed["undo"]["tool"] == "svc__s_delete_comment"
    assert renamed["compensate"]["tool"] == "svc__s_close_issue"
    assert renamed["lookup"] is None
    assert shown["undo"]["tool"] == "s_delete_comment"  # the input is not changed
    stage = StagePlan("s.r.create", {}, "response.id", FollowUpPlan("s.r.update", "s_update", {}), None)
    staged = staged_report(EffectPlan("s.r.create", "irreversible", stage=stage), request={}, response={"id": 1},
                           idempotency_key=None)  # fmt: skip
    moved = rewrite_report_tools(staged, lambda tool: f"svc__{tool}")
    assert (moved["staged"]["promote"]["tool"], moved["staged"]["discard"]) == ("svc__s_update", None)


def test_a_replay_and_an_unreplayable_answer_are_marked_after_the_fixed_keys() -> None:
    plan = EffectPlan("s.c.create", "irreversible")
    marked = call_report(
        plan,
        succeeded=True,
        request={},
        response={},
        idempotency_key=None,
        answered_at_ms=1000,
        replayed=True,
        replay_unavailable="too large",
    )
    assert list(marked) == [
        "class",
        "operation",
        "idempotency_key",
        "undo",
        "deadline_ms",
        "lookup",
        "replayed",
        "replay_unavailable",
    ]
    assert (marked["replayed"], marked["replay_unavailable"]) == (True, "too large")
    plain = call_report(plan, succeeded=True, request={}, response={}, idempotency_key="k", answered_at_ms=1000)
    assert "replayed" not in plain and "replay_unavailable" not in plain


def _operation(action: str) -> Operation:
    op = operation("s.things." + action, method="GET", path="/things", kind="read")
    return dataclasses.replace(op, effect=Effect(kind="read", action=action))  # type: ignore[arg-type]
