"""github-mini and payments through one fleet gateway over MCP (Streamable HTTP), with granted JWTs.

The official MCP client (through :class:`anvil.client.AnvilClient`) talks to a real ``anvil serve``
process; the mocks run on loopback and are read directly. Follow-ups are dialled by the names the
gateway reported, with the reported arguments (ADR-0030 §6: undo is an ordinary call).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from anvil.client import AnvilClient, GatewayUnavailable
from tests.e2e.conftest import READ_GRANTS, WRITE_GRANTS, Fleet
from tests.e2e.support import OWNER_REPO, connect

pytestmark = pytest.mark.anyio

COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Looks good to me."}
TIMEOUT_S = 30


async def follow(client: AnvilClient, follow_up: dict[str, Any], schemas: dict[str, Any]) -> tuple[Any, Any]:
    """Call a reported follow-up with its arguments, adding ``confirm`` where the report says it needs one."""
    arguments = dict(follow_up["arguments"])
    if follow_up.get("requires_confirmation") is True:
        assert "confirm" in schemas[follow_up["tool"]].get("properties", {})
        arguments["confirm"] = True
    return await client.call(follow_up["tool"], arguments)


async def input_schemas(client: AnvilClient) -> dict[str, Any]:
    return {tool["name"]: tool.get("inputSchema", {}) for tool in await client.list_tools()}


async def test_the_fleet_serves_both_bundles_under_prefixed_names_narrowed_to_the_grant(fleet: Fleet) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth(WRITE_GRANTS)) as writer:
            written = {tool["name"]: tool for tool in await writer.list_tools()}
        async with connect(fleet.url, headers=fleet.auth(READ_GRANTS)) as reader:
            read = {tool["name"] for tool in await reader.list_tools()}
    assert {"github__github_create_comment", "github__github_delete_comment", "payments__payments_get_customer"} <= set(
        written
    )
    meta = written["github__github_create_comment"]["_meta"]
    assert meta["anvil/effect_class"] == "reversible"
    assert meta["anvil/fleet_bundle_id"] == "github"
    assert meta["anvil/fleet_tool_name"] == "github_create_comment"
    assert "github__github_list_issue" in read
    assert "github__github_create_comment" not in read
    assert not any(name.startswith("payments__") for name in read)


async def test_a_reversible_comment_is_undone_through_the_reported_undo_tool(fleet: Fleet) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth()) as client:
            schemas = await input_schemas(client)
            data, effect = await client.call(
                "github__github_create_comment", COMMENT, idempotency_key="01JBRANCHYARDLEDGER00000001"
            )
            assert data == {"id": 100, "body": "Looks good to me."}
            assert effect == {
                "class": "reversible",
                "operation": "github.comments.create",
                "idempotency_key": "01JBRANCHYARDLEDGER00000001",
                "undo": {
                    "kind": "inverse",
                    "operation": "github.comments.delete",
                    "tool": "github__github_delete_comment",
                    "arguments": {"owner": "octo", "repo": "hello", "comment_id": 100},
                    "requires_confirmation": True,
                },
                "deadline_ms": None,
                "lookup": None,
            }
            assert fleet.github_requests("POST", "/comments")[-1]["idempotency_key"] == "01JBRANCHYARDLEDGER00000001"
            assert [c["id"] for c in fleet.github.comments] == [100]
            _, undone = await follow(client, effect["undo"], schemas)
    assert fleet.github.comments == []
    assert undone is not None
    assert (undone["class"], undone["operation"], undone["undo"]) == ("irreversible", "github.comments.delete", None)


async def test_a_replayed_ledger_id_answers_the_first_comment_without_a_second_upstream_call(fleet: Fleet) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth()) as client:
            first, _ = await client.call("github__github_create_comment", COMMENT, idempotency_key="e2e-replay-0001")
            again, replayed = await client.call(
                "github__github_create_comment", COMMENT, idempotency_key="e2e-replay-0001"
            )
    assert again == first
    assert len(fleet.github.comments) == 1
    assert len(fleet.github_requests("POST", "/comments")) == 1
    assert replayed is not None
    assert (replayed["class"], replayed["idempotency_key"]) == ("reversible", "e2e-replay-0001")  # as first sent
    assert replayed["undo"]["arguments"]["comment_id"] == first["id"]


async def test_a_compensable_issue_is_closed_by_its_reported_compensation(fleet: Fleet) -> None:
    issue = {**OWNER_REPO, "title": "Flaky job", "body": "Twice this week.", "confirm": True}
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth()) as client:
            schemas = await input_schemas(client)
            data, effect = await client.call("github__github_create_issue", issue)
            assert effect is not None
            assert effect["class"] == "compensable"
            assert effect["undo"] == {
                "kind": "compensate",
                "operation": "github.issues.update",
                "tool": "github__github_update_issue",
                "arguments": {"owner": "octo", "repo": "hello", "issue_number": data["number"], "state": "closed"},
                "requires_confirmation": True,
            }
            assert [i["state"] for i in fleet.github.issues if i["number"] == data["number"]] == ["open"]
            closed, _ = await follow(client, effect["undo"], schemas)
    assert closed["state"] == "closed"
    assert [i["state"] for i in fleet.github.issues if i["number"] == data["number"]] == ["closed"]


async def test_a_staged_release_is_a_draft_until_its_promote_call(fleet: Fleet) -> None:
    release = {**OWNER_REPO, "tag_name": "v1.0.0", "confirm": True}
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth()) as client:
            schemas = await input_schemas(client)
            data, effect = await client.call(
                "github__github_create_release", release, idempotency_key="e2e-stage-0001", stage=True
            )
            assert data["draft"] is True
            assert [(r["tag_name"], r["draft"]) for r in fleet.github.releases] == [("v1.0.0", True)]
            assert effect is not None
            assert (effect["class"], effect["operation"], effect["undo"], effect["lookup"]) == (
                "irreversible",
                "github.releases.create",
                None,
                None,
            )
            staged = effect["staged"]
            assert staged["draft_operation"] == "github.releases.create"
            assert staged["handle"] == data["id"]
            assert staged["promote"] == {
                "operation": "github.releases.update",
                "tool": "github__github_update_release",
                "arguments": {"owner": "octo", "repo": "hello", "release_id": data["id"], "draft": False},
                "requires_confirmation": True,
            }
            assert staged["discard"]["tool"] == "github__github_delete_release"
            promoted, _ = await follow(client, staged["promote"], schemas)
    assert promoted["draft"] is False
    assert [(r["tag_name"], r["draft"]) for r in fleet.github.releases] == [("v1.0.0", False)]
    staged_lines = [line for line in fleet.audit() if line.get("staged_for") == "github.releases.create"]
    assert [(line["operation"], line["effect_class"]) for line in staged_lines] == [
        ("github.releases.create", "irreversible")
    ]


async def test_staging_a_comment_is_refused_before_anything_is_sent(fleet: Fleet) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth()) as client:
            answer = await client.call_result("github__github_create_comment", COMMENT, stage=True)
    assert answer.is_error
    assert answer.envelope is not None
    error = answer.envelope["error"]
    assert (error["code"], error["details"]["code"]) == ("unsupported_operation", "effect/no_draft_form")
    assert fleet.github_requests() == []
    assert fleet.github.comments == []
    assert fleet.audit() == []


async def test_a_read_grant_refuses_a_delete_before_any_upstream_byte(fleet: Fleet) -> None:
    arguments = {**OWNER_REPO, "comment_id": 100, "confirm": True}
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth(READ_GRANTS)) as reader:
            listed, listed_effect = await reader.call("github__github_list_issue", OWNER_REPO)
            answer = await reader.call_result("github__github_delete_comment", arguments)
    assert [issue["number"] for issue in listed] == [2]
    assert listed_effect is not None and listed_effect["class"] == "read"
    assert answer.is_error and answer.envelope is not None
    error = answer.envelope["error"]
    assert (error["code"], error["retryable"], error["safe_to_retry"]) == ("policy_denied", False, False)
    assert error["details"]["code"] == "policy/grant_denied"
    assert error["details"]["connector"] == "github"
    assert error["details"]["rule"]["index"] == 0
    assert error["details"]["rule"]["mode"] == "read"
    assert fleet.github_requests("DELETE") == []
    assert answer.effect is not None
    assert (answer.effect["class"], answer.effect["undo"]) == ("irreversible", None)
    denied = [line for line in fleet.audit() if line["operation"] == "github.comments.delete"]
    assert [line["error_code"] for line in denied] == ["policy_denied"]


async def test_payments_is_served_by_the_same_gateway_with_its_own_upstream(fleet: Fleet) -> None:
    refund = {"payment_id": "pay_123", "amount": 250, "currency": "EUR", "confirm": True}
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth()) as client:
            customer, read = await client.call("payments__payments_get_customer", {"customer_id": "cus_123"})
            refunded, effect = await client.call(
                "payments__payments_create_refund", refund, idempotency_key="e2e-refund-0001"
            )
    assert customer["id"] == "cus_123"
    assert read is not None and read["class"] == "read"
    assert refunded["amount"] == 250
    assert effect is not None
    assert (effect["class"], effect["operation"], effect["undo"]) == ("irreversible", "payments.refunds.create", None)
    assert effect["idempotency_key"] == "e2e-refund-0001"
    assert fleet.payments.requests[-1]["idempotency_key"] == "e2e-refund-0001"
    assert fleet.github_requests() == []


async def test_every_executed_call_and_grant_refusal_leaves_one_attributed_audit_line(fleet: Fleet) -> None:
    refund = {"payment_id": "pay_123", "amount": 100, "currency": "EUR", "confirm": True}
    release = {**OWNER_REPO, "tag_name": "v3.0.0", "confirm": True}
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth()) as client:
            await client.call("github__github_list_issue", OWNER_REPO)
            _, effect = await client.call("github__github_create_comment", COMMENT, idempotency_key="e2e-audit-0001")
            assert effect is not None
            await client.call(effect["undo"]["tool"], {**effect["undo"]["arguments"], "confirm": True})
            await client.call("github__github_create_release", release, stage=True)
            await client.call("payments__payments_create_refund", refund, idempotency_key="e2e-audit-0002")
        async with connect(fleet.url, headers=fleet.auth(READ_GRANTS)) as reader:
            await reader.call_result("payments__payments_get_customer", {"customer_id": "cus_123"})
    lines = fleet.audit()
    assert [
        (line["connector"], line["operation"], line["decision"], line["effect_class"], line["staged_for"])
        for line in lines
    ] == [
        ("github", "github.issues.list", "allowed", "read", None),
        ("github", "github.comments.create", "allowed", "reversible", None),
        ("github", "github.comments.delete", "allowed", "irreversible", None),
        ("github", "github.releases.create", "allowed", "irreversible", "github.releases.create"),
        ("payments", "payments.refunds.create", "allowed", "irreversible", None),
        ("payments", "payments.customers.get", "denied", "read", None),
    ]
    assert [line["ledger_id"] for line in lines] == [
        None,
        "e2e-audit-0001",
        None,
        None,
        "e2e-audit-0002",
        None,
    ]
    assert [line["upstream_status"] for line in lines] == [200, 201, 204, 201, 201, None]
    assert all((line["sub"], line["by_turn"], line["by_branch"]) == ("local:ada", "7", "feature-x") for line in lines)
    assert [line["account"] for line in lines] == ["default"] * 5 + [None]
    assert [line["grant"]["index"] if line["grant"] else None for line in lines] == [0, 0, 0, 0, 1, None]
    assert (lines[-1]["error_code"], lines[-1]["rule"]) == ("policy_denied", "policy/grant_denied")
    text = fleet.audit_path.read_text(encoding="utf-8")
    assert "Looks good to me." not in text  # inputs are digested; the key is the ledger_id itself
    assert fleet.audit_path.stat().st_mode & 0o777 == 0o600


async def test_an_mcp_caller_without_a_valid_token_cannot_open_a_session(fleet: Fleet) -> None:
    foreign = fleet.keys.mint(WRITE_GRANTS, iss="https://elsewhere.example")
    for headers in ({}, {"Authorization": f"Bearer {foreign}"}):
        with anyio.fail_after(TIMEOUT_S), pytest.raises(GatewayUnavailable):
            async with connect(fleet.url, headers=headers) as client:
                await client.list_tools()
    assert fleet.github_requests() == []
    assert fleet.audit() == []
