"""MCP resources: each bundle's skill files listed and read, per caller, over the SDK path and the listener."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.skillpack import read_skill_package
from anvil.bundle.writer import install_bundle
from anvil.runtime.context import RuntimeContext
from anvil.serve.auth.grants import parse_grants
from anvil.serve.auth.principals import STATIC_ISSUER, Principal, hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.fleet import Fleet, FleetBundle, FleetError
from anvil.serve.listener import create_listener
from anvil.serve.mcp.http import listen, serve_http
from anvil.serve.mcp.resources import RESOURCE_NOT_FOUND
from anvil.serve.mcp.server import build_server

pytestmark = pytest.mark.anyio

SKILL_PATHS = ("SKILL.md", "reference/idempotency.md", "reference/operations.md")
TOKENS = {"ops": "ops-token-0123456789", "reader": "reader-token-0123456789"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, github: Document, payments: Document) -> Path:
    root = tmp_path_factory.mktemp("resources")
    for doc in (github, payments):
        install_bundle(root / doc.service.id, emit_bundle(doc))
    return root


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def _bundles(workspace: Path, docs: Sequence[Document], client: httpx.AsyncClient) -> list[FleetBundle]:
    out = []
    for doc in docs:
        context = RuntimeContext(service_id=doc.service.id, base_url="http://127.0.0.1:9", client=client, env="dev")
        skill = read_skill_package(workspace / doc.service.id)
        out.append(FleetBundle(id=doc.service.id, document=doc, context=context, skill=skill))
    return out


def _reader(connector: str) -> Principal:
    grants = parse_grants([{"connector": connector, "operations": ["*"], "mode": "read"}])
    return Principal(id="reader", grants=grants, issuer=STATIC_ISSUER, subject="reader", verified=True)


async def test_one_bundle_lists_and_reads_its_skill_files_under_its_service_id(
    workspace: Path, github: Document, http: httpx.AsyncClient
) -> None:
    fleet = Fleet(_bundles(workspace, [github], http))
    async with Client(build_server(fleet)) as client:
        assert client.server_capabilities.resources is not None
        listed = await client.list_resources()
        uris = [str(item.uri) for item in listed.resources]
        assert uris == [f"anvil://skill/github/{path}" for path in SKILL_PATHS]
        assert {item.mime_type for item in listed.resources} == {"text/markdown"}
        read = await client.read_resource("anvil://skill/github/reference/operations.md")
    [content] = read.contents
    expected = (workspace / "github" / "skill" / "reference" / "operations.md").read_text(encoding="utf-8")
    assert (str(content.uri), content.mime_type, getattr(content, "text", None)) == (
        "anvil://skill/github/reference/operations.md",
        "text/markdown",
        expected,
    )


@pytest.mark.parametrize(
    "uri",
    [
        "anvil://skill/github/../../air.json",
        "anvil://skill/github/skill/SKILL.md",
        "anvil://skill/github/reference/../SKILL.md",
        "anvil://skill/payments/SKILL.md",
        "file:///etc/passwd",
    ],
)
async def test_an_unknown_resource_uri_is_refused_as_not_found(
    uri: str, workspace: Path, github: Document, http: httpx.AsyncClient
) -> None:
    fleet = Fleet(_bundles(workspace, [github], http))
    async with Client(build_server(fleet)) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
    assert raised.value.error.code == RESOURCE_NOT_FOUND


async def test_a_fleet_names_each_bundles_resources_by_its_connector(
    workspace: Path, github: Document, payments: Document, http: httpx.AsyncClient
) -> None:
    fleet = Fleet(_bundles(workspace, [github, payments], http))
    async with Client(build_server(fleet)) as client:
        listed = await client.list_resources()
        read = await client.read_resource("anvil://skill/payments/SKILL.md")
    assert [str(item.uri) for item in listed.resources] == [
        f"anvil://skill/{bundle}/{path}" for bundle in ("github", "payments") for path in SKILL_PATHS
    ]
    expected = (workspace / "payments" / "skill" / "SKILL.md").read_text(encoding="utf-8")
    assert getattr(read.contents[0], "text", None) == expected


async def test_a_caller_sees_and_reads_only_the_resources_of_bundles_its_grant_reaches(
    workspace: Path, github: Document, payments: Document, http: httpx.AsyncClient
) -> None:
    fleet = Fleet(_bundles(workspace, [github, payments], http))
    composition = fleet.compose(_reader("github"))
    async with Client(build_server(fleet, select=lambda _request: composition)) as client:
        listed = await client.list_resources()
        granted = await client.read_resource("anvil://skill/github/SKILL.md")
        with pytest.raises(MCPError) as hidden:
            await client.read_resource("anvil://skill/payments/SKILL.md")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("anvil://skill/nowhere/SKILL.md")
    assert [str(item.uri) for item in listed.resources] == [f"anvil://skill/github/{path}" for path in SKILL_PATHS]
    assert granted.contents
    assert (hidden.value.error.code, hidden.value.error.message) == (
        unknown.value.error.code,
        unknown.value.error.message,
    )
    assert hidden.value.error.code == RESOURCE_NOT_FOUND


async def test_one_bundle_under_a_grant_is_prefixed_and_an_empty_grant_sees_no_resources(
    workspace: Path, github: Document, http: httpx.AsyncClient
) -> None:
    fleet = Fleet(_bundles(workspace, [github], http))
    granted = fleet.compose(_reader("github"))
    nothing = fleet.compose(Principal(id="none", grants=(), issuer=STATIC_ISSUER, subject="none", verified=True))
    assert [resource.uri for resource in granted.resources] == [f"anvil://skill/github/{p}" for p in SKILL_PATHS]
    assert nothing.resources == ()
    assert nothing.resource("anvil://skill/github/SKILL.md") is None


async def rpc(client: httpx.AsyncClient, url: str, token: str, method: str, params: Any = None) -> dict[str, Any]:
    """One JSON-RPC request to the listener's /mcp as the bearer of ``token``; its JSON answer."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
    }
    answer = await client.post(url, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def test_the_listener_serves_each_caller_the_resources_its_grant_reaches(
    workspace: Path, github: Document, payments: Document, http: httpx.AsyncClient
) -> None:
    records = parse_principals(
        {
            "principals": [
                {"id": "ops", "token_sha256": hash_token(TOKENS["ops"])},
                {
                    "id": "reader",
                    "token_sha256": hash_token(TOKENS["reader"]),
                    "grants": [{"connector": "payments", "operations": ["*"], "mode": "read"}],
                },
            ]
        }
    )
    app = create_listener(
        Fleet(_bundles(workspace, [github, payments], http)),
        authenticator=StaticTokenAuthenticator(records),
        stateless=True,
        json_response=True,
    )
    sock = listen("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_http(app, sock=sock))
            async with httpx.AsyncClient() as client:
                ops = await rpc(client, url, TOKENS["ops"], "resources/list")
                reader = await rpc(client, url, TOKENS["reader"], "resources/list")
                hidden = await rpc(
                    client, url, TOKENS["reader"], "resources/read", {"uri": "anvil://skill/github/SKILL.md"}
                )
                shown = await rpc(
                    client, url, TOKENS["reader"], "resources/read", {"uri": "anvil://skill/payments/SKILL.md"}
                )
            group.cancel_scope.cancel()
    sock.close()
    assert len(ops["result"]["resources"]) == 2 * len(SKILL_PATHS)
    assert [item["uri"] for item in reader["result"]["resources"]] == [
        f"anvil://skill/payments/{path}" for path in SKILL_PATHS
    ]
    assert hidden["error"]["code"] == RESOURCE_NOT_FOUND
    assert shown["result"]["contents"][0]["mimeType"] == "text/markdown"


async def test_two_bundles_whose_ids_fold_to_one_connector_are_refused_at_start_for_their_resources(
    workspace: Path, github: Document, payments: Document, http: httpx.AsyncClient
) -> None:
    first, second = _bundles(workspace, [github, payments], http)
    with pytest.raises(FleetError) as caught:
        Fleet([replace(first, id="svc"), replace(second, id="svc!!")])
    assert caught.value.code == "fleet/resource_collision"
    assert [bundle.connector for bundle in Fleet([first, second]).bundles] == ["github", "payments"]


async def test_a_read_only_grant_reads_a_skill_that_documents_only_the_tools_it_shows(
    workspace: Path, github: Document, http: httpx.AsyncClient
) -> None:
    fleet = Fleet(_bundles(workspace, [github], http))
    reader = fleet.compose(_reader("github"))
    writer = fleet.compose(
        Principal(
            id="writer",
            grants=parse_grants([{"connector": "github", "operations": ["*"], "mode": "write", "confirm": "allow"}]),
            issuer=STATIC_ISSUER,
            subject="writer",
            verified=True,
        )
    )
    hidden = [op.mcp.tool_name for op in github.operations if op.is_approved and op.effect.kind != "read"]
    shown = [op.mcp.tool_name for op in github.operations if op.is_approved and op.effect.kind == "read"]
    assert hidden and shown
    for path in SKILL_PATHS:
        uri = f"anvil://skill/github/{path}"
        read_only = reader.resource(uri)
        whole = writer.resource(uri)
        assert read_only is not None and whole is not None
        assert whole.text == (workspace / "github" / "skill" / path).read_text(encoding="utf-8")
        assert not any(name in read_only.text for name in hidden), path
    skill = reader.resource("anvil://skill/github/SKILL.md")
    assert skill is not None and all(name in skill.text for name in shown)
