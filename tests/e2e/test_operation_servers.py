"""Per-operation servers end to end: the main API and an upload host on loopback, a real gateway and `anvil run`.

``fixtures/files.yaml`` (tests/cli) declares its API at one server and its two upload operations at another
(one through its path item, with a server variable; one on the operation itself). Compiled here with both
servers on loopback (the API at 127.0.0.1, uploads at 127.0.0.2), every call must reach the server its
operation declares, through REST, MCP and ``anvil run``; a server outside the allowed hosts stops
``anvil serve`` at start-up with a coded error instead of being redirected.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from anvil.bundle.read import read_bundle
from tests.cli.fixtures.upstreams import LoopbackServer, Seen, anvil_run, compile_files, echo_app
from tests.e2e.support import GatewayProcess, connect, rest_call

GET, UPLOAD, VERSION = "files.files.get", "files.content.create.direct", "files.content.create.by_file_id"


class Upstream:
    """One loopback echo server and what reached it."""

    def __init__(self, host: str) -> None:
        self.seen: list[Seen] = []
        self.server = LoopbackServer(echo_app(self.seen), host=host).start()
        self.url = self.server.url

    def paths(self) -> list[tuple[str, str]]:
        return [(seen.method, seen.path) for seen in self.seen]


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[Upstream, Upstream]]:
    main, upload = Upstream("127.0.0.1"), Upstream("127.0.0.2")
    yield main, upload
    main.server.stop()
    upload.server.stop()


@pytest.fixture
def reset(upstreams: tuple[Upstream, Upstream]) -> tuple[Upstream, Upstream]:
    for upstream in upstreams:
        upstream.seen.clear()
    return upstreams


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory, upstreams: tuple[Upstream, Upstream]) -> Path:
    """The bundle with its servers declared on loopback (the upload host through a server variable)."""
    main, upload = upstreams
    port = upload.url.rsplit(":", 1)[1]
    return compile_files(
        tmp_path_factory.mktemp("servers") / "files",
        {
            "https://api.files.example/2.0": main.url + "/2.0",
            "https://{zone}.files.example/api/2.0": f"http://127.0.0.{{zone}}:{port}/api/2.0",
            "default: upload, enum: [upload, upload-eu]": 'default: "2", enum: ["2", "3"]',
            "https://upload.files.example/api/2.0": upload.url + "/api/2.0",
        },
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle as the spec declares it: the API at api.files.example, uploads at upload.files.example."""
    return compile_files(tmp_path_factory.mktemp("servers") / "files")


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env.update({"ANVIL_ENV": "dev", "ANVIL_LEDGER": "memory:"}, **extra)
    return env


def _tool(bundle: Path, op_id: str) -> str:
    op = read_bundle(bundle).operation(op_id)
    assert op is not None
    return op.mcp.tool_name


def test_each_call_reaches_the_server_its_operation_declares_through_rest_and_mcp(
    declared: Path, reset: tuple[Upstream, Upstream], tmp_path: Path
) -> None:
    main, upload = reset
    gateway = GatewayProcess(
        [str(declared), "--http", "127.0.0.1:0"],
        env=_env(ANVIL_ALLOWED_HOSTS="127.0.0.1,127.0.0.2"),
        log=tmp_path / "log",
    )
    gateway.start()

    async def calls() -> None:
        async with httpx.AsyncClient(timeout=30) as http:
            got = await rest_call(http, gateway.base, _tool(declared, GET), {"file_id": "f1"})
            sent = await rest_call(http, gateway.base, _tool(declared, UPLOAD), {"name": "a.txt", "content": "hi"})
            assert (got.status, sent.status) == (200, 200), (got.body, sent.body)
        async with connect(gateway.url) as client:
            data, _ = await client.call(_tool(declared, VERSION), {"file_id": "f1", "content": "v2"})
            assert data == {"ok": True, "path": "/api/2.0/files/f1/content"}

    try:
        anyio.run(calls)
    finally:
        gateway.stop()
    assert main.paths() == [("GET", "/2.0/files/f1")]
    assert upload.paths() == [("POST", "/api/2.0/files/content"), ("POST", "/api/2.0/files/f1/content")]
    assert upload.seen[0].headers["content-type"].startswith("multipart/form-data; boundary=anvil-")


def test_anvil_run_sends_to_the_declared_server_and_its_dry_run_shows_that_url(
    declared: Path, reset: tuple[Upstream, Upstream]
) -> None:
    main, upload = reset
    env = _env(ANVIL_ALLOWED_HOSTS="127.0.0.1,127.0.0.2")
    plan = anvil_run(declared, "content", "create", "direct", "--name", "a", "--content", "x", "--dry-run", env=env)
    assert plan.code == 0, plan.err
    assert plan.json()["url"] == f"{upload.url}/api/2.0/files/content"
    ran = anvil_run(declared, "content", "create", "direct", "--name", "a", "--content", "x", "--json", env=env)
    got = anvil_run(declared, "files", "get", "--file-id", "f1", "--json", env=env)
    assert (ran.code, got.code) == (0, 0), (ran.err, got.err)
    assert upload.paths() == [("POST", "/api/2.0/files/content")] and main.paths() == [("GET", "/2.0/files/f1")]


def test_the_operator_re_points_the_main_api_and_the_upload_server_separately(
    files: Path, reset: tuple[Upstream, Upstream]
) -> None:
    main, upload = reset
    env = _env(ANVIL_BASE_URL=main.url, ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE=upload.url)  # pins both hosts
    ran = anvil_run(files, "content", "create", "by_file_id", "--file-id", "f9", "--content", "x", "--json", env=env)
    got = anvil_run(files, "files", "get", "--file-id", "f9", "--json", env=env)
    assert (ran.code, got.code) == (0, 0), (ran.err, got.err)
    assert upload.paths() == [("POST", "/files/f9/content")] and main.paths() == [("GET", "/files/f9")]
    alone = anvil_run(
        files, "content", "create", "by_file_id", "--file-id", "f9", "--content", "x", env=_env(ANVIL_BASE_URL=main.url)
    )
    assert (alone.code, alone.envelope()["code"]) == (5, "policy_denied")  # never redirected to the main API
    assert len(upload.seen) == 1 and len(main.seen) == 1


def test_anvil_run_through_a_stdio_gateway_sends_a_re_pointed_server_where_the_operator_said(
    files: Path, reset: tuple[Upstream, Upstream]
) -> None:
    main, upload = reset
    env = _env(ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE=upload.url)
    ran = anvil_run(
        files, "content", "create", "direct", "--name", "a", "--content", "x", "--mcp", "stdio",
        "--base-url", main.url, "--json", env=env,
    )  # fmt: skip
    assert ran.code == 0, ran.err
    assert upload.paths() == [("POST", "/files/content")] and main.seen == []


def test_anvil_serve_refuses_at_start_up_a_server_outside_the_allowed_hosts(
    declared: Path, reset: tuple[Upstream, Upstream]
) -> None:
    main, upload = reset
    done = subprocess.run(
        [sys.executable, "-m", "anvil", "serve", str(declared), "--http", "127.0.0.1:0"],
        env=_env(ANVIL_ALLOWED_HOSTS="127.0.0.1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.startswith("error[config/server_not_allowed]: Bundle 'files': ")
    assert f"are sent to {upload.url}/api/2.0, the server declared for them, whose host 127.0.0.2" in done.stderr
    assert "hint: Re-point that server with ANVIL_BASE_URL__127_0_0_2_" in done.stderr
    assert main.seen == [] and upload.seen == []
