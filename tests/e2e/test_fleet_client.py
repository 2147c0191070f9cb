"""Callers are never misled by a fleet: prefixed names resolve, JSON-RPC errors are named as such,
every tool states its effect class, and the official client validates structuredContent against outputSchema."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
import pytest

from anvil.cli.run import run_command
from anvil.client import GatewayUnavailable, ToolError
from tests.e2e.conftest import WRITE_GRANTS, Fleet
from tests.e2e.support import OWNER_REPO, connect

pytestmark = pytest.mark.anyio

COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "From the bundle's own tool name."}
TIMEOUT_S = 30


async def test_the_client_resolves_a_bundles_own_tool_name_to_its_prefixed_fleet_tool(fleet: Fleet) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth(WRITE_GRANTS)) as client:
            data, effect = await client.call("github_create_comment", COMMENT, idempotency_key="fleet-name-1")
            resolved = await client.resolve_tool("payments_get_customer")
    assert data["body"] == COMMENT["body"]
    assert effect is not None and effect["class"] == "reversible"
    assert effect["undo"]["tool"] == "github__github_delete_comment"
    assert resolved == "payments__payments_get_customer"
    assert len(fleet.github_requests("POST")) == 1


async def test_an_unknown_tool_on_a_fleet_is_a_tool_error_not_an_unreachable_gateway(fleet: Fleet) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth(WRITE_GRANTS)) as client:
            with pytest.raises(ToolError) as raised:
                await client.call("github__github_no_such_tool", {})
    assert not isinstance(raised.value, GatewayUnavailable)
    assert raised.value.envelope["error"]["details"]["code"] == "client/unknown_tool"


async def test_fleet_tools_that_declare_a_contract_state_their_class_and_structured_content_validates(
    fleet: Fleet,
) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with connect(fleet.url, headers=fleet.auth(WRITE_GRANTS)) as client:
            tools = await client.list_tools()
            # The official client checks structuredContent against outputSchema and raises when it breaks it.
            customer, _ = await client.call("payments_get_customer", {"customer_id": "cus_123"})
            issues, _ = await client.call("github_list_issue", OWNER_REPO)
    by_name = {tool["name"]: tool for tool in tools}
    for tool in tools:
        meta = tool["_meta"]
        if "anvil/effect_class" in meta:
            assert meta["anvil/effect_class"] in ("read", "reversible", "compensable", "irreversible"), tool["name"]
            assert meta["effect"]["class"] == meta["anvil/effect_class"]
        else:  # declares no contract: listed as without contracts (ADR-0030 §4)
            assert "effect" not in meta and "anvil/effect_contract" not in meta, tool["name"]
    assert by_name["github__github_create_comment"]["_meta"]["anvil/effect_class"] == "reversible"
    assert "anvil/effect_class" not in by_name["github__github_delete_comment"]["_meta"]
    assert "anvil/effect_class" not in by_name["payments__payments_get_customer"]["_meta"]
    assert "outputSchema" in by_name["payments__payments_get_customer"]
    assert customer["id"] == "cus_123"
    assert isinstance(issues, list)


def test_anvil_run_through_a_fleet_dials_the_prefixed_tool_and_prints_the_effect(
    fleet: Fleet, bundles: dict[str, Path]
) -> None:
    out, err = io.StringIO(), io.StringIO()
    env = {"FLEET_TOKEN": fleet.token(WRITE_GRANTS)}
    tokens = ["comments", "create", "--owner", "octo", "--repo", "hello", "--issue-number", "2", "--body", "via run"]
    tokens += ["--mcp", fleet.url, "--mcp-token-env", "FLEET_TOKEN", "--json"]
    code = run_command(str(bundles["github"]), tokens, environ=env, stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert json.loads(out.getvalue())["body"] == "via run"
    effect_lines = [line for line in err.getvalue().splitlines() if line.startswith("effect: ")]
    assert json.loads(effect_lines[0][len("effect: ") :])["undo"]["tool"] == "github__github_delete_comment"
