"""``anvil.client``: ``(data, effect)`` from an Anvil gateway over Streamable HTTP and stdio, typed errors otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from anvil.client import (
    AnvilClient,
    GatewayUnavailable,
    ToolError,
    exit_code_for,
    resolve_tool_name,
    result_data,
)
from anvil.errors import AnvilError, ExecutionError
from tests.cli.fixtures.upstreams import HttpGateway, LoopbackServer, compile_example, credential_env, example_module

TOKEN = "gh-token"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def github(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example("github-mini", "github", tmp_path_factory.mktemp("client") / "github")


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, Any]]:
    app, state = example_module("github-mini").create_app(token=TOKEN)
    server = LoopbackServer(app).start()
    yield server.url, state
    server.stop()


def _env(github: Path, url: str) -> dict[str, str]:
    return {"ANVIL_ENV": "dev", "ANVIL_BASE_URL": url, **credential_env(github, "github.comments.create", TOKEN)}


@pytest.fixture(scope="module")
def gateway(github: Path, upstream: tuple[str, Any]) -> Iterator[str]:
    served = HttpGateway(github, _env(github, upstream[0]))
    yield served.url
    served.stop()


COMMENT = {"owner": "octo", "repo": "hello", "issue_number": 1, "body": "hello"}


@pytest.mark.anyio
async def test_a_call_returns_the_data_and_the_effect_with_the_resolved_undo(gateway: str) -> None:
    async with AnvilClient.http(gateway, timeout=20) as client:
        names = [tool["name"] for tool in await client.list_tools()]
        data, effect = await client.call("github_create_comment", COMMENT, idempotency_key="ledger-0001")
    assert "github_create_comment" in names
    assert data["body"] == "hello"
    assert effect is not None
    assert effect["class"] == "reversible"
    assert effect["idempotency_key"] == "ledger-0001"
    assert effect["undo"]["kind"] == "inverse"
    assert effect["undo"]["arguments"]["comment_id"] == data["id"]


@pytest.mark.anyio
async def test_the_same_ledger_id_replays_the_first_answer_without_a_second_upstream_request(
    gateway: str, upstream: tuple[str, Any]
) -> None:
    async with AnvilClient.http(gateway, timeout=20) as client:
        first, _ = await client.call("github_create_comment", COMMENT, idempotency_key="ledger-0002")
        again, _ = await client.call("github_create_comment", COMMENT, idempotency_key="ledger-0002")
    assert again == first
    assert [r.get("idempotency_key") for r in upstream[1].requests].count("ledger-0002") == 1


@pytest.mark.anyio
async def test_a_refusal_raises_a_tool_error_carrying_the_envelope_and_the_failure_effect(gateway: str) -> None:
    arguments = {"owner": "octo", "repo": "hello", "title": "t"}
    async with AnvilClient.http(gateway, timeout=20) as client:
        with pytest.raises(ToolError) as raised:
            await client.call("github_create_issue", arguments)
        answer = await client.call_result("github_create_issue", arguments)
    error = raised.value
    assert isinstance(error, ExecutionError) and isinstance(error, AnvilError)
    assert error.code == "confirmation_required"
    assert error.exit_code == 3
    assert error.envelope["error"]["required_flags"] == ["--confirm"]
    assert error.effect is not None and error.effect["class"] == "compensable" and error.effect["undo"] is None
    assert answer.is_error and answer.envelope == answer.data


@pytest.mark.anyio
async def test_staging_returns_the_draft_and_a_staged_effect(gateway: str) -> None:
    arguments = {"owner": "octo", "repo": "hello", "tag_name": "v9", "confirm": True}
    async with AnvilClient.http(gateway, timeout=20) as client:
        data, effect = await client.call("github_create_release", arguments, stage=True)
    assert data["draft"] is True
    assert effect is not None and effect["staged"]["draft_operation"] == "github.releases.create"


@pytest.mark.anyio
async def test_a_dry_run_returns_the_plan_and_no_effect(gateway: str) -> None:
    arguments = {**COMMENT, "anvil_dry_run": True}
    async with AnvilClient.http(gateway, timeout=20) as client:
        plan, effect = await client.call("github_create_comment", arguments, idempotency_key="ledger-0003")
    assert plan["method"] == "POST"
    assert plan["headers"]["Idempotency-Key"] == "ledger-0003"
    assert effect is None


@pytest.mark.anyio
async def test_an_error_raised_inside_the_block_reaches_the_caller_unchanged(gateway: str) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with AnvilClient.http(gateway) as client:
            await client.list_tools()
            raise Boom


@pytest.mark.anyio
async def test_an_unreachable_gateway_is_upstream_unavailable_without_the_url() -> None:
    with pytest.raises(GatewayUnavailable) as raised:
        async with AnvilClient.http("http://user:s3cret@127.0.0.1:9/mcp", timeout=5):
            pass
    assert raised.value.code == "upstream_unavailable"
    assert raised.value.exit_code == 7
    assert "s3cret" not in str(raised.value.envelope)


@pytest.mark.anyio
async def test_a_server_that_cannot_start_is_upstream_unavailable(tmp_path: Path) -> None:
    with pytest.raises(GatewayUnavailable) as raised:
        async with AnvilClient.stdio(tmp_path / "no-bundle", env={}, timeout=20):
            pass
    assert raised.value.code == "upstream_unavailable"
    assert raised.value.envelope["error"]["details"] == {"transport": "stdio"}


@pytest.mark.anyio
async def test_stdio_spawns_the_gateway_for_the_bundle(github: Path, upstream: tuple[str, Any]) -> None:
    async with AnvilClient.stdio(github, env=_env(github, upstream[0]), timeout=20) as client:
        data, effect = await client.call("github_list_pull", {"owner": "octo", "repo": "hello"})
    assert isinstance(data, list)
    assert effect is not None and effect["class"] == "read"


def test_exit_codes_follow_the_envelope_code_table() -> None:
    codes = ("validation_error", "idempotency_required", "permission_denied", "unsupported_operation", "conflict")
    assert [exit_code_for(code) for code in (*codes, "rate_limited", "something_else")] == [2, 3, 4, 5, 6, 7, 7]


def test_using_a_client_outside_its_context_is_a_programming_error() -> None:
    client = AnvilClient.http("http://127.0.0.1:9/mcp")
    with pytest.raises(RuntimeError):
        client._require()


@pytest.mark.anyio
async def test_an_unknown_tool_is_a_tool_error_saying_so_not_an_unreachable_gateway(gateway: str) -> None:
    async with AnvilClient.http(gateway, timeout=20) as client:
        answer = await client.call_result("github_no_such_tool", {})
        with pytest.raises(ToolError) as raised:
            await client.call("github_no_such_tool", {})
        still = await client.call("github_list_issue", {"owner": "octo", "repo": "hello"})  # the session lives on
    assert answer.is_error and answer.envelope is not None
    error = answer.envelope["error"]
    assert (error["code"], error["details"]["code"], error["details"]["jsonrpc_code"]) == (
        "unsupported_operation",
        "client/unknown_tool",
        -32602,
    )
    assert error["retryable"] is False
    assert not isinstance(raised.value, GatewayUnavailable)
    assert raised.value.code == "unsupported_operation"
    assert still[0] is not None


@pytest.mark.anyio
async def test_other_json_rpc_errors_and_refused_structured_content_are_named_as_what_they_are(gateway: str) -> None:
    from mcp.shared.exceptions import MCPError

    async with AnvilClient.http(gateway, timeout=20) as client:
        rpc = client._failure(MCPError(code=-32600, message="Invalid request"), "github_list_issue")
        refused = client._failure(RuntimeError("Invalid structured content returned by tool x: 1"), "x")
        dead = client._failure(ConnectionResetError("peer went away"), "x")
    assert (rpc.code, rpc.envelope["error"]["details"]["code"]) == ("validation_error", "client/jsonrpc_error")
    assert not isinstance(rpc, GatewayUnavailable)
    assert (refused.code, refused.envelope["error"]["details"]["code"]) == (
        "schema_mismatch",
        "client/invalid_structured_content",
    )
    assert isinstance(dead, GatewayUnavailable) and dead.code == "upstream_unavailable"


@pytest.mark.anyio
async def test_validate_input_checks_schema_confirmation_and_key_without_calling(
    gateway: str, upstream: tuple[str, Any]
) -> None:
    before = len(upstream[1].requests)
    async with AnvilClient.http(gateway, timeout=20) as client:
        ok = await client.validate_input("github_create_comment", COMMENT)
        with pytest.raises(ToolError) as wrong_type:
            await client.validate_input("github_create_comment", {**COMMENT, "issue_number": "one"})
        with pytest.raises(ToolError) as unknown_input:
            await client.validate_input("github_create_comment", {**COMMENT, "colour": "red"})
        with pytest.raises(ToolError) as unconfirmed:
            await client.validate_input("github_create_issue", {"owner": "octo", "repo": "hello", "title": "t"})
        confirmed = await client.validate_input(
            "github_create_issue", {"owner": "octo", "repo": "hello", "title": "t", "confirm": True}
        )
    assert ok == {"valid": True, "tool": "github_create_comment"}
    assert wrong_type.value.code == unknown_input.value.code == "validation_error"
    assert unconfirmed.value.code == "confirmation_required"
    assert confirmed["valid"] is True
    assert len(upstream[1].requests) == before


def test_a_bundles_tool_name_resolves_to_its_one_prefixed_fleet_tool() -> None:
    listed = ["github__github_create_comment", "payments__payments_get_customer", "plain_tool"]
    assert resolve_tool_name("github_create_comment", listed) == "github__github_create_comment"
    assert resolve_tool_name("plain_tool", listed) == "plain_tool"
    assert resolve_tool_name("nothing_like_it", listed) == "nothing_like_it"
    with pytest.raises(ToolError) as raised:
        resolve_tool_name("x", ["a__x", "b__x"])
    assert raised.value.envelope["error"]["details"] == {
        "code": "client/ambiguous_tool",
        "candidates": ["a__x", "b__x"],
    }


def test_the_data_of_a_cut_answer_is_its_first_text_block_not_the_marker_after_it() -> None:
    result = types.CallToolResult.model_validate(
        {
            "content": [
                {"type": "text", "text": '{"data":[1,2]}'},
                {"type": "text", "text": "[truncated: ~5 of ~900 estimated tokens]"},
                {"type": "resource_link", "uri": "anvil://answer/" + "0" * 32, "name": "answer"},
            ],
            "structuredContent": {"anvil_projection": "@", "result": {"data": [1, 2]}},
        }
    )
    assert result_data(result) == {"data": [1, 2]}
