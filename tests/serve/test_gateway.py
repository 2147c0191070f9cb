"""tools/call over the official MCP client against github-mini and its mock: reports, undo, staging, _meta."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from anvil.air.model import Document, Draft
from anvil.runtime.audit import MemoryAuditSink
from anvil.serve.gateway import Gateway
from tests.serve.support import OWNER_REPO, MockServer, connected, op_of

pytestmark = pytest.mark.anyio

COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Looks good ✓"}
RELEASE = {**OWNER_REPO, "tag_name": "v1.0.0", "confirm": True}


def envelope(result: Any) -> dict[str, Any]:
    """The Anvil envelope of an error result: text only, no structuredContent (original-core §5.6 item 7)."""
    assert result.is_error is True
    assert result.structured_content is None
    parsed = json.loads(result.content[0].text)
    return dict(parsed["error"])


def effect(result: Any) -> dict[str, Any]:
    assert result.meta is not None and "effect" in result.meta
    return dict(result.meta["effect"])


def with_draft(doc: Document, **changes: Any) -> Document:
    """github-mini with releases.create's draft form changed."""
    op = op_of(doc, "github.releases.create")
    assert op.effect.draft is not None
    draft: Draft = dataclasses.replace(op.effect.draft, **changes)
    changed = dataclasses.replace(op, effect=dataclasses.replace(op.effect, draft=draft))
    return dataclasses.replace(doc, operations=tuple(changed if o.id == op.id else o for o in doc.operations))


async def test_a_comment_reports_its_inverse_and_calling_it_removes_the_comment(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            created = await client.call_tool("github_create_comment", COMMENT, meta={"idempotency_key": "ledger-01"})
        assert created.is_error is False
        assert created.structured_content == {"id": 100, "body": "Looks good ✓"}
        assert effect(created) == {
            "class": "reversible",
            "operation": "github.comments.create",
            "idempotency_key": "ledger-01",
            "undo": {
                "kind": "inverse",
                "operation": "github.comments.delete",
                "tool": "github_delete_comment",
                "arguments": {"owner": "octo", "repo": "hello", "comment_id": 100},
                "requires_confirmation": True,
            },
            "deadline_ms": None,
            "lookup": None,
        }
        assert [c["id"] for c in mock.state.comments] == [100]
        undo = effect(created)["undo"]
        with anyio.fail_after(10):
            undone = await client.call_tool(undo["tool"], {**undo["arguments"], "confirm": True})
    assert undone.is_error is False
    assert effect(undone)["class"] == "irreversible" and effect(undone)["undo"] is None
    assert mock.state.comments == []


async def test_an_undo_that_needs_confirmation_says_so_and_is_refused_as_given_until_confirm_is_added(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            created = await client.call_tool("github_create_comment", COMMENT)
            undo = effect(created)["undo"]
            as_given = await client.call_tool(undo["tool"], undo["arguments"])
            undone = await client.call_tool(undo["tool"], {**undo["arguments"], "confirm": True})
    assert undo["requires_confirmation"] is True and list(undo)[-1] == "requires_confirmation"
    assert envelope(as_given)["code"] == "confirmation_required"
    assert undone.is_error is False and mock.state.comments == []


async def test_an_undo_that_needs_no_confirmation_keeps_the_adrs_shape(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    delete = op_of(github, "github.comments.delete")
    waived = dataclasses.replace(delete, confirmation=dataclasses.replace(delete.confirmation, required=False))
    doc = dataclasses.replace(github, operations=tuple(waived if o.id == delete.id else o for o in github.operations))
    async with connected(make_gateway(doc)) as client:
        with anyio.fail_after(10):
            created = await client.call_tool("github_create_comment", COMMENT)
    assert list(effect(created)["undo"]) == ["kind", "operation", "tool", "arguments"]  # absent, never false


async def test_the_callers_key_reaches_the_upstream_idempotency_key_header(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer, audit: MemoryAuditSink
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            await client.call_tool("github_create_comment", COMMENT, meta={"idempotency_key": "01JLEDGER0000001"})
    posts = [r for r in mock.requests if r["method"] == "POST"]
    assert [r.get("idempotency_key") for r in posts] == ["01JLEDGER0000001"]
    line = audit.records()[-1]
    assert (line["effect_class"], line["staged_for"], line["idempotency_key_forwarded"]) == ("reversible", None, True)
    assert line["ledger_id"] == "01JLEDGER0000001"


async def test_an_idempotent_replay_answers_the_same_result_without_a_second_upstream_call(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            first = await client.call_tool("github_create_comment", COMMENT, meta={"idempotency_key": "same-key"})
            again = await client.call_tool("github_create_comment", COMMENT, meta={"idempotency_key": "same-key"})
    assert again.structured_content == first.structured_content
    assert len([r for r in mock.requests if r["method"] == "POST"]) == 1
    assert effect(first)["idempotency_key"] == "same-key"
    assert effect(again)["idempotency_key"] == "same-key"  # the key the first call sent, echoed as the original does
    assert effect(again)["undo"] == effect(first)["undo"]
    assert effect(again)["replayed"] is True and "replayed" not in effect(first)  # the caller can tell


async def test_an_issue_reports_a_compensation_that_closes_it(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            opened = await client.call_tool("github_create_issue", {**OWNER_REPO, "title": "New", "confirm": True})
        report = effect(opened)
        assert report["class"] == "compensable"
        assert report["undo"] == {
            "kind": "compensate",
            "operation": "github.issues.update",
            "tool": "github_update_issue",
            "arguments": {"owner": "octo", "repo": "hello", "issue_number": 3, "state": "closed"},
            "requires_confirmation": True,
        }
        with anyio.fail_after(10):
            await client.call_tool(report["undo"]["tool"], {**report["undo"]["arguments"], "confirm": True})
    assert [(i["number"], i["state"]) for i in mock.state.issues] == [(2, "open"), (1, "closed"), (3, "closed")]


async def test_a_staged_release_is_a_draft_that_promote_publishes(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer, audit: MemoryAuditSink
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            staged = await client.call_tool("github_create_release", RELEASE, meta={"stage": True})
        assert staged.structured_content == {"id": 500, "tag_name": "v1.0.0", "name": "", "body": "", "draft": True}
        report = effect(staged)
        assert report == {
            "class": "irreversible",
            "operation": "github.releases.create",
            "idempotency_key": None,
            "undo": None,
            "deadline_ms": None,
            "lookup": None,
            "staged": {
                "draft_operation": "github.releases.create",
                "handle": 500,
                "promote": {
                    "operation": "github.releases.update",
                    "tool": "github_update_release",
                    "arguments": {"owner": "octo", "repo": "hello", "release_id": 500, "draft": False},
                    "requires_confirmation": True,
                },
                "discard": {
                    "operation": "github.releases.delete",
                    "tool": "github_delete_release",
                    "arguments": {"owner": "octo", "repo": "hello", "release_id": 500},
                    "requires_confirmation": True,
                },
            },
        }
        assert audit.records()[-1]["staged_for"] == "github.releases.create"
        promote = report["staged"]["promote"]
        with anyio.fail_after(10):
            published = await client.call_tool(promote["tool"], {**promote["arguments"], "confirm": True})
    assert published.is_error is False
    assert mock.state.releases[0]["draft"] is False


async def test_a_staged_release_is_thrown_away_by_discard(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            staged = await client.call_tool("github_create_release", RELEASE, meta={"stage": True})
            discard = effect(staged)["staged"]["discard"]
            await client.call_tool(discard["tool"], {**discard["arguments"], "confirm": True})
    assert mock.state.releases == []


async def test_staging_an_operation_without_a_draft_form_is_refused_without_touching_the_mock(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("github_create_comment", COMMENT, meta={"stage": True})
    error = envelope(refused)
    assert (error["code"], error["details"]) == ("unsupported_operation", {"code": "effect/no_draft_form"})
    assert refused.meta is None or "effect" not in refused.meta
    assert mock.requests == []


async def test_a_draft_form_that_is_not_served_is_refused(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    changed = with_draft(github, operation="github.releases.publish")
    async with connected(make_gateway(changed)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("github_create_release", RELEASE, meta={"stage": True})
    error = envelope(refused)
    assert error["code"] == "unsupported_operation"
    assert error["details"] == {"code": "effect/draft_unavailable", "draft_operation": "github.releases.publish"}
    assert mock.requests == []


async def test_a_draft_form_needing_a_value_the_call_lacks_is_refused(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    op = op_of(github, "github.releases.create")
    assert op.effect.draft is not None
    changed = with_draft(github, arguments={**op.effect.draft.arguments, "body": "request.body"})
    async with connected(make_gateway(changed)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("github_create_release", RELEASE, meta={"stage": True})
    error = envelope(refused)
    assert error["code"] == "validation_error"
    assert error["details"] == {"code": "effect/draft_argument_missing", "argument": "body"}
    assert mock.requests == []


async def test_a_mapped_draft_input_that_breaks_the_draft_schema_is_refused(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    op = op_of(github, "github.releases.create")
    assert op.effect.draft is not None
    changed = with_draft(github, arguments={**op.effect.draft.arguments, "name": {"const": 1}})
    async with connected(make_gateway(changed)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("github_create_release", RELEASE, meta={"stage": True})
    error = envelope(refused)
    assert error["code"] == "validation_error"
    assert error["details"] == {
        "code": "effect/draft_input_invalid",
        "draft_operation": "github.releases.create",
        "field": "name",
    }
    assert mock.requests == []


async def test_a_staged_call_still_needs_the_draft_confirmation(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    unconfirmed = {key: value for key, value in RELEASE.items() if key != "confirm"}
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("github_create_release", unconfirmed, meta={"stage": True})
    assert envelope(refused)["code"] == "confirmation_required"
    assert refused.meta is None or "effect" not in refused.meta  # a failed staged call carries no report
    assert mock.requests == []


async def test_a_dry_run_has_no_effect_report_and_sends_nothing(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            plain = await client.call_tool("github_create_comment", {**COMMENT, "anvil_dry_run": True})
            staged = await client.call_tool(
                "github_create_release", {**RELEASE, "anvil_dry_run": True}, meta={"stage": True}
            )
    for result in (plain, staged):
        assert result.is_error is False
        assert result.meta is None or "effect" not in result.meta
        # The plan is the structured answer too (the official client validated it against outputSchema).
        assert result.structured_content == json.loads(result.content[0].text)
    assert json.loads(plain.content[0].text)["method"] == "POST"
    assert json.loads(staged.content[0].text)["body"]["draft"] is True
    assert mock.requests == []


async def test_a_failed_call_reports_class_key_and_lookup_but_no_undo(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    unconfirmed = {key: value for key, value in RELEASE.items() if key != "confirm"}
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("github_create_release", unconfirmed)
    async with connected(make_gateway(github, token="wrong")) as client:
        with anyio.fail_after(10):
            rejected = await client.call_tool("github_create_comment", COMMENT, meta={"idempotency_key": "k-401"})
    assert envelope(refused)["code"] == "confirmation_required"
    assert effect(refused) == {
        "class": "irreversible",
        "operation": "github.releases.create",
        "idempotency_key": None,
        "undo": None,
        "deadline_ms": None,
        "lookup": {
            "operation": "github.tags.get",
            "tool": "github_get_release",
            "arguments": {"owner": "octo", "repo": "hello", "tag": "v1.0.0"},
            "by": "id",
        },
    }
    assert envelope(rejected)["code"] == "auth_required"
    assert mock.requests[-1]["idempotency_key"] == "k-401"
    assert effect(rejected) == {
        "class": "reversible",
        "operation": "github.comments.create",
        "idempotency_key": "k-401",
        "undo": None,
        "deadline_ms": None,
        "lookup": None,
    }


async def test_calling_a_declared_lookup_says_whether_it_found_the_effect(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            await client.call_tool("github_create_release", RELEASE)
            found = await client.call_tool("github_get_release", {**OWNER_REPO, "tag": "v1.0.0"})
            absent = await client.call_tool("github_get_release", {**OWNER_REPO, "tag": "v9"})
            plain_read = await client.call_tool("github_list_pull", OWNER_REPO)
    assert effect(found)["lookup"] == {"found": True}
    assert envelope(absent)["code"] == "not_found"
    assert effect(absent)["lookup"] == {"found": False}
    assert effect(plain_read) == {
        "class": "read",
        "operation": "github.pulls.list",
        "idempotency_key": None,
        "undo": None,
        "deadline_ms": None,
        "lookup": None,
    }


async def test_a_key_for_an_operation_without_a_carrier_is_not_sent_but_is_the_ledger_id(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer, audit: MemoryAuditSink
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            opened = await client.call_tool(
                "github_create_issue", {**OWNER_REPO, "title": "x", "confirm": True}, meta={"idempotency_key": "l-02"}
            )
    assert effect(opened)["idempotency_key"] is None
    assert [r for r in mock.requests if "idempotency_key" in r] == []
    assert audit.records()[-1]["ledger_id"] is not None


async def test_a_different_key_in_the_arguments_is_a_conflict_and_nothing_is_called(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool(
                "github_create_comment", {**COMMENT, "idempotency_key": "a"}, meta={"idempotency_key": "b"}
            )
            same = await client.call_tool(
                "github_create_comment", {**COMMENT, "idempotency_key": "c"}, meta={"idempotency_key": "c"}
            )
    error = envelope(refused)
    assert error["code"] == "validation_error"
    assert error["details"] == {"code": "effect/idempotency_key_conflict", "field": "idempotency_key"}
    assert effect(refused)["undo"] is None
    assert effect(same)["idempotency_key"] == "c"
    assert len(mock.requests) == 1


@pytest.mark.parametrize(
    "meta",
    [{"idempotency_key": ""}, {"idempotency_key": 7}, {"stage": "yes"}, {"stage": 1}],
)
async def test_malformed_meta_is_refused_as_invalid_meta(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer, meta: dict[str, Any]
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("github_create_comment", COMMENT, meta=meta)  # type: ignore[arg-type]
    error = envelope(refused)
    assert (error["code"], error["details"]) == ("validation_error", {"code": "effect/invalid_meta"})
    assert (error["retryable"], error["operation"]) == (False, "github.comments.create")
    assert mock.requests == []


async def test_reserved_protocol_meta_keys_and_stage_false_are_ignored(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    meta = {"stage": False, "io.modelcontextprotocol/clientInfo": "anything", "progressToken": 7}
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            created = await client.call_tool("github_create_comment", COMMENT, meta=meta)  # type: ignore[arg-type]
    assert created.is_error is False
    assert "staged" not in effect(created)


async def test_gate_refusals_are_envelopes_with_their_codes_not_sdk_validation_text(
    github: Document, payments: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            unconfirmed = await client.call_tool("github_create_issue", {**OWNER_REPO, "title": "x"})
            wrong = await client.call_tool("github_create_issue", {**OWNER_REPO, "title": "x", "confirm": False})
            extra = await client.call_tool("github_create_issue", {**OWNER_REPO, "title": "x", "bogus": 1})
            missing = await client.call_tool("github_create_issue", {"owner": "octo", "confirm": True})
            typed = await client.call_tool("github_get_issue", {**OWNER_REPO, "issue_number": "two"})
    assert envelope(unconfirmed)["code"] == "confirmation_required"
    assert envelope(wrong)["code"] == "confirmation_required"
    assert (envelope(extra)["code"], envelope(extra)["details"]) == ("validation_error", {"unknown": ["bogus"]})
    assert envelope(missing)["details"] == {"missing": ["repo", "title"]}
    assert envelope(typed)["details"] == {"field": "issue_number", "keyword": "type"}
    assert mock.requests == []
    async with connected(make_gateway(payments)) as client:
        with anyio.fail_after(10):
            keyless = await client.call_tool(
                "payments_create_refund", {"payment_id": "pay_1", "amount": 100, "currency": "USD", "confirm": True}
            )
    assert envelope(keyless)["code"] == "idempotency_required"


async def test_an_unknown_tool_is_a_protocol_error(github: Document, make_gateway: Callable[..., Gateway]) -> None:
    from mcp.shared.exceptions import MCPError

    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10), pytest.raises(MCPError):
            await client.call_tool("github_nope", {})


async def test_an_unapproved_operation_listed_in_dev_is_still_refused_by_the_executor(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    pulls = dataclasses.replace(op_of(github, "github.pulls.list"), state="review_required")
    changed = dataclasses.replace(github, operations=tuple(pulls if o.id == pulls.id else o for o in github.operations))
    async with connected(make_gateway(changed, include_unapproved=True)) as client:
        with anyio.fail_after(10):
            names = [tool.name for tool in (await client.list_tools()).tools]
            refused = await client.call_tool("github_list_pull", {"unexpected": True})
    assert "github_list_pull" in names
    error = envelope(refused)
    assert (error["code"], error["details"]["state"]) == ("unsupported_operation", "review_required")
    assert mock.requests == []


async def test_arguments_nested_ten_thousand_levels_deep_are_a_validation_error_over_mcp(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    deep: Any = "x"
    for _ in range(10_000):
        deep = {"d": deep}
    result = await make_gateway(github).call("github_create_comment", {**COMMENT, "body": deep})
    assert result is not None and result.envelope is not None
    assert result.envelope.code == "validation_error" and result.envelope.details == {
        "field": "arguments",
        "max_depth": 64,
    }
    assert mock.requests == []


async def test_a_generic_undo_caller_may_add_confirm_to_every_follow_up_and_a_typo_is_still_refused(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            created = await client.call_tool("github_create_comment", {**COMMENT, "confirm": True})
            undo = effect(created)["undo"]
            undone = await client.call_tool(undo["tool"], {**undo["arguments"], "confirm": True})
            typo = await client.call_tool(undo["tool"], {**undo["arguments"], "bogus": 1})
            not_a_boolean = await client.call_tool("github_create_comment", {**COMMENT, "confirm": "yes"})
    assert created.is_error is False and undone.is_error is False
    assert [r["method"] for r in mock.requests] == ["POST", "DELETE"]  # confirm never reached the upstream
    assert all("confirm" not in json.dumps(r.get("body") or {}) for r in mock.requests)
    assert envelope(typo)["code"] == "validation_error"
    assert envelope(not_a_boolean)["code"] == "validation_error"
    tools = {tool.name: tool for tool in (await _listed(make_gateway(github)))}
    assert "confirm" not in tools["github_create_comment"].input_schema["properties"]  # listed as before


async def _listed(gateway: Gateway) -> list[Any]:
    async with connected(gateway) as client:
        return list((await client.list_tools()).tools)
