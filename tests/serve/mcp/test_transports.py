"""Real transports: `anvil serve BUNDLE --stdio` and `--http` as processes, and the HTTP app in-process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import Process
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.writer import install_bundle
from anvil.serve.gateway import Gateway
from anvil.serve.health import artifact_hash
from anvil.serve.mcp.http import create_app, is_loopback, listen, serve_http
from anvil.serve.mcp.server import build_server
from tests.serve.support import OWNER_REPO, TOKEN, MockServer, token_variable

pytestmark = pytest.mark.anyio

COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "over the wire"}


@pytest.fixture
def bundle(github: Document, tmp_path: Path) -> Path:
    out = tmp_path / "github"
    install_bundle(out, emit_bundle(github))
    return out


@pytest.fixture
def serve_env(github: Document, mock: MockServer) -> Iterator[dict[str, str]]:
    env = {
        **os.environ,
        "ANVIL_ENV": "dev",
        "ANVIL_BASE_URL": mock.url,
        token_variable(github): TOKEN,
    }
    for name in ("ANVIL_LEDGER", "ANVIL_ALLOWED_HOSTS", "ANVIL_AUTH_PROFILE", "ANVIL_AUDIT_FILE"):
        env.pop(name, None)
    yield env


async def exercise(session: ClientSession, mock: MockServer) -> None:
    """List, create a comment with a key, then undo it: the same checks over every transport."""
    await session.initialize()
    names = [tool.name for tool in (await session.list_tools()).tools]
    assert "github_create_comment" in names
    created = await session.call_tool("github_create_comment", COMMENT, meta={"idempotency_key": "wire-01"})
    assert created.is_error is False
    assert created.meta is not None
    report = created.meta["effect"]
    assert (report["class"], report["idempotency_key"]) == ("reversible", "wire-01")
    assert report["undo"]["tool"] == "github_delete_comment"
    assert mock.requests[-1]["idempotency_key"] == "wire-01"
    undo = report["undo"]
    undone = await session.call_tool(undo["tool"], {**undo["arguments"], "confirm": True})
    assert undone.is_error is False
    assert mock.state.comments == []


async def test_the_stdio_command_serves_the_bundle_with_the_official_client(
    bundle: Path, serve_env: dict[str, str], mock: MockServer
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "anvil", "serve", str(bundle), "--stdio"], env=serve_env
    )
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await exercise(session, mock)


async def test_stdio_lists_and_reads_the_bundles_skill_files_as_resources(
    bundle: Path, serve_env: dict[str, str]
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "anvil", "serve", str(bundle), "--stdio"], env=serve_env
    )
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            listed = await session.list_resources()
            skill = await session.read_resource("anvil://skill/github/SKILL.md")
    assert initialized.capabilities.resources is not None
    assert [str(item.uri) for item in listed.resources] == [
        "anvil://skill/github/SKILL.md",
        "anvil://skill/github/reference/idempotency.md",
        "anvil://skill/github/reference/operations.md",
    ]
    expected = (bundle / "skill" / "SKILL.md").read_text(encoding="utf-8")
    assert getattr(skill.contents[0], "text", None) == expected


async def test_stdio_writes_nothing_but_protocol_on_stdout(bundle: Path, serve_env: dict[str, str]) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "github_list_pull", "arguments": OWNER_REPO},
        },
    ]
    command = [sys.executable, "-m", "anvil", "serve", str(bundle)]
    with anyio.fail_after(60):
        process: Process = await anyio.open_process(command, env=serve_env)
        async with process:
            assert process.stdin is not None and process.stdout is not None
            payload = "".join(json.dumps(message) + "\n" for message in messages).encode()
            await process.stdin.send(payload)
            received = b""
            while received.count(b"\n") < 3:
                received += await process.stdout.receive()
            await process.stdin.aclose()
            await process.wait()
    lines = [json.loads(line) for line in received.decode().splitlines()]
    assert [line.get("id") for line in lines] == [1, 2, 3]
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    assert lines[2]["result"]["_meta"]["effect"]["class"] == "read"


@asynccontextmanager
async def http_process(bundle: Path, env: dict[str, str]) -> AsyncIterator[str]:
    """`anvil serve BUNDLE --http 127.0.0.1:0`; yields the /mcp URL it prints, then stops it with SIGTERM."""
    command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", "127.0.0.1:0"]
    process = await anyio.open_process(command, env=env, stderr=subprocess.DEVNULL)
    async with process:
        assert process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await process.stdout.receive()
        try:
            yield json.loads(line)["url"]
        finally:
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0


async def test_the_http_command_serves_streamable_http_at_mcp_and_healthz(
    bundle: Path, serve_env: dict[str, str], mock: MockServer, github: Document
) -> None:
    with anyio.fail_after(60):
        async with http_process(bundle, serve_env) as url:
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await exercise(session, mock)
            async with httpx.AsyncClient() as client:
                health = await client.get(url.removesuffix("/mcp") + "/healthz")
    body = {"status": "ok", "service": "github", "artifactHash": artifact_hash(github)}
    assert (health.status_code, health.json()) == (200, body)


async def test_the_app_factory_serves_sessions_extra_routes_and_refuses_foreign_hosts(
    github: Document, make_gateway: Any, mock: MockServer
) -> None:
    gateway: Gateway = make_gateway(github)

    async def version(request: Request) -> PlainTextResponse:
        return PlainTextResponse("v1")

    app = create_app(
        build_server(gateway),
        service=gateway.service_id,
        routes=[Route("/version", version)],
        stateless=False,
        json_response=False,
    )
    sock = listen("127.0.0.1", 0)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_http(app, sock=sock))
            async with streamable_http_client(f"{base}/mcp") as (read, write), ClientSession(read, write) as session:
                await exercise(session, mock)
            async with httpx.AsyncClient() as client:
                extra = await client.get(f"{base}/version")
                foreign = await client.post(
                    f"{base}/mcp", headers={"host": "evil.example", "content-type": "application/json"}, content=b"{}"
                )
            group.cancel_scope.cancel()
    sock.close()
    assert (extra.status_code, extra.text) == (200, "v1")
    assert foreign.status_code == 421


def test_loopback_hosts_are_recognised() -> None:
    assert all(is_loopback(host) for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(host) for host in ("0.0.0.0", "10.0.0.1", "example.com"))
