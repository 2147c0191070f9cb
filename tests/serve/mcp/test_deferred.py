"""The HTTP listener starts without the MCP SDK, loads it in the background and refuses cleanly without it.

A fresh interpreter builds the ``anvil serve --http`` listener and answers the handshake and the hot
verbs with neither ``mcp`` nor ``mcp_types`` imported; the SDK arrives with the app's lifespan. A
request only the SDK answers waits for it (bounded) and is refused with 503 ``mcp_unavailable`` when
it cannot be had. Tables that answer otherwise than the loaded SDK are replaced by its answers.
"""

from __future__ import annotations

import errno
import json
import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.routing import Route

from anvil._types import JSONObject, JSONValue
from anvil.air.model import Document
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import RuntimeContext
from anvil.serve.fleet import Fleet, FleetBundle
from anvil.serve.listener import create_listener
from anvil.serve.mcp.bootstrap import BOOTSTRAP, WireTables
from anvil.serve.mcp.config import ServerSpec
from anvil.serve.mcp.deferred import DeferredSdk
from anvil.serve.mcp.hotpath import HotPath
from anvil.serve.mcp.http import MAX_REQUEST_BYTES, create_app, mcp_sdk
from anvil.serve.mcp.results import CallResult
from anvil.serve.mcp.sdkwire import SdkWire
from anvil.serve.mcp.server import build_server
from tests.serve.mcp.test_hotpath import JSON_HEADERS, FixedProvider, call, comparable, hot_path_of, rpc, serving
from tests.serve.support import OWNER_REPO, REPO, TOKEN, MockServer, token_variable

pytestmark = pytest.mark.anyio

#: Run in a fresh interpreter: the listener ``anvil serve --http`` builds, over the payments example.
COLD = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    import anvil.cli.serve
    import httpx
    from anvil.compiler import build
    from anvil.runtime.connections import PooledUpstream
    from anvil.runtime.context import RuntimeContext
    from anvil.serve.fleet import Fleet, FleetBundle
    from anvil.serve.mcp.http import listen
    from anvil.serve.listener import create_listener

    HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    SDK = ("mcp", "mcp_types")
    LAZY = ("prometheus_client", "jmespath")  # loaded on first use only

    def loaded():
        return sorted(name for name in SDK if name in sys.modules)

    async def main():
        example = Path(sys.argv[1])
        document = build(example / "openapi.yaml", manifest=example / "anvil.yaml", service_id="payments").document
        upstream = PooledUpstream()
        context = RuntimeContext(service_id="payments", base_url="http://127.0.0.1:9", client=upstream, env="dev")
        app = create_listener(Fleet([FleetBundle(id="payments", document=document, context=context)]))
        sock = listen("127.0.0.1", 0)
        report = {"listening": loaded(), "lazy_listening": sorted(name for name in LAZY if name in sys.modules)}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            bodies = [
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "no_such_tool"}},
            ]
            headers = {**HEADERS, "mcp-protocol-version": "2025-11-25"}
            answers = [await client.post("/mcp", json=body, headers=headers) for body in bodies]
            report["statuses"] = [answer.status_code for answer in answers]
            report["answered"] = loaded()
            async with app.router.lifespan_context(app):
                ping = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "ping"}, headers=headers)
                report["ping"] = [ping.status_code, ping.json()]
        report["after"] = loaded()
        sock.close()
        await upstream.aclose()
        print(json.dumps(report))

    asyncio.run(main())
    """
)


def test_the_http_listener_answers_the_handshake_without_importing_the_mcp_sdk_or_what_it_needs_later() -> None:
    shown = subprocess.run(
        [sys.executable, "-c", COLD, str(REPO / "examples" / "payments")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=REPO,
    )
    report = json.loads(shown.stdout.strip().splitlines()[-1])
    assert report["listening"] == []  # built and listening: no SDK
    assert report["lazy_listening"] == []  # /metrics' series and projections: made on first use
    assert report["statuses"] == [200, 202, 200, 200]
    assert report["answered"] == []  # initialize, the notification, tools/list and tools/call: still none
    assert report["ping"] == [200, {"jsonrpc": "2.0", "id": 4, "result": {}}]  # the SDK answers once loaded
    assert report["after"] == ["mcp", "mcp_types"]


class _Provider:
    """A provider whose listing the SDK refuses to build (a tool title that is not a string)."""

    server_name = "broken"
    version = "1.0.0"
    tools: tuple[JSONObject, ...] = ({"name": "t", "title": 5, "inputSchema": {"type": "object"}},)

    def input_schema(self, name: str) -> JSONObject | None:
        return None

    async def call(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None = None,
        *,
        identity: Mapping[str, JSONValue] | None = None,
    ) -> CallResult | None:
        return CallResult(kind="success", data={"ok": True}, status=200) if name == "t" else None


def _refused(response: httpx.Response) -> bool:
    return (
        response.status_code == 503
        and response.json()
        == {"error": {"code": "mcp_unavailable", "message": "The MCP server is not available; retry."}}
        and response.headers["retry-after"] == "1"
    )


async def test_a_listener_whose_sdk_cannot_load_answers_the_hot_verbs_and_refuses_the_rest_with_503(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(ServerSpec(_Provider()), service="broken")
    with anyio.fail_after(60), caplog.at_level(logging.ERROR, logger="anvil.serve.mcp.deferred"):
        async with serving(app) as (url,), httpx.AsyncClient() as client:
            listed = await client.post(url, content=rpc("tools/list"), headers=JSON_HEADERS)
            answered = await client.post(url, content=call("t", {}), headers=JSON_HEADERS)
            ping = await client.post(url, content=rpc("ping"), headers=JSON_HEADERS)
            stream = await client.get(url, headers={"accept": "text/event-stream"})
    assert _refused(listed) and _refused(ping) and _refused(stream)  # the SDK would list it: it must answer
    assert answered.status_code == 200 and answered.json()["result"]["structuredContent"] == {"ok": True}
    logged = [record for record in caplog.records if record.name == "anvil.serve.mcp.deferred"]
    assert [record.levelno for record in logged] == [logging.ERROR]  # said once, without a traceback
    assert logged[0].exc_info is None


async def test_a_request_for_an_sdk_that_never_started_waits_a_bounded_time_then_gets_503(
    github: Document, make_gateway: Any
) -> None:
    sdk = DeferredSdk(
        build_server(make_gateway(github)),
        stateless=True,
        json_response=True,
        security=None,
        max_request_bytes=MAX_REQUEST_BYTES,
        wait_seconds=0.05,
    )
    with anyio.fail_after(30):  # no lifespan ran: nothing loads the SDK
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=sdk), base_url="http://127.0.0.1") as client:
            answer = await client.post("/mcp", content=rpc("ping"), headers=JSON_HEADERS)
    assert _refused(answer)
    assert sdk.failed is False


async def test_the_sdk_loads_after_its_start_delay_unless_a_request_needs_it_sooner(
    github: Document, make_gateway: Any
) -> None:
    sdk = DeferredSdk(
        build_server(make_gateway(github)),
        stateless=True,
        json_response=True,
        security=None,
        max_request_bytes=MAX_REQUEST_BYTES,
        start_delay=60.0,
    )
    with anyio.fail_after(60):
        async with sdk.running():
            await anyio.sleep(0.3)
            assert sdk.attempts == 0  # the cold start's first requests do not share the interpreter with it
            transport = httpx.ASGITransport(app=sdk)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                answer = await client.post("/mcp", content=rpc("ping"), headers=JSON_HEADERS)
    assert answer.status_code == 200 and answer.json()["result"] == {}
    assert sdk.attempts == 1


@asynccontextmanager
async def _started(sdk: DeferredSdk, hot: HotPath) -> AsyncIterator[Starlette]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with sdk.running():
            yield

    yield Starlette(routes=[Route("/mcp", endpoint=hot)], lifespan=lifespan)


async def test_tables_that_answer_otherwise_than_the_loaded_sdk_are_replaced_by_its_answers(
    github: Document, make_gateway: Any, caplog: pytest.LogCaptureFixture
) -> None:
    provider = FixedProvider(make_gateway(github))
    stale = WireTables(
        call={version: replace(shape, defaults={}) for version, shape in BOOTSTRAP.call.items()},
        tools=BOOTSTRAP.tools,
        initialize=BOOTSTRAP.initialize,
    )
    sdk = DeferredSdk(
        build_server(provider), stateless=True, json_response=True, security=None, max_request_bytes=MAX_REQUEST_BYTES
    )
    hot = HotPath(sdk, provider=provider, select=None, security=None, max_request_bytes=MAX_REQUEST_BYTES, tables=stale)
    reference = create_app(build_server(provider), service="github", hot_path=False)
    bodies = [
        call("object", {"id": 1}),
        call("empty"),
        rpc("tools/list"),
        rpc(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
        ),
    ]
    with anyio.fail_after(60), caplog.at_level(logging.WARNING, logger="anvil.serve.mcp.hotpath"):
        async with (
            _started(sdk, hot) as app,
            serving(app, reference) as (hot_url, sdk_url),
            httpx.AsyncClient() as client,
        ):
            assert await sdk.loaded()
            for body in bodies:
                fast = await client.post(hot_url, content=body, headers=JSON_HEADERS)
                slow = await client.post(sdk_url, content=body, headers=JSON_HEADERS)
                assert comparable(fast) == comparable(slow), body
    assert hot.switched is True
    assert hot.answered == 3  # the calls and the listing; initialize went to the SDK once switched
    warnings = [record for record in caplog.records if record.name == "anvil.serve.mcp.hotpath"]
    assert len(warnings) == 1 and "tools/call 2024-11-05" in warnings[0].getMessage()


async def test_the_official_client_legacy_and_auto_works_through_a_listener_that_loads_the_sdk_late(
    github: Document, mock: MockServer
) -> None:
    async with httpx.AsyncClient() as upstream:
        context = RuntimeContext(
            service_id="github",
            base_url=mock.url,
            client=upstream,
            env="dev",
            credentials={token_variable(github): TOKEN},
            ledger=open_ledger("memory:"),
        )
        app = create_listener(Fleet([FleetBundle(id="github", document=github, context=context)]))
        hot = hot_path_of(app)
        with anyio.fail_after(60):
            async with serving(app) as (url,):
                async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    assert "github_list_pull" in [tool.name for tool in listed.tools]
                    pulls = await session.call_tool("github_list_pull", OWNER_REPO)
                    assert pulls.is_error is False
                for mode in ("legacy", "auto"):
                    async with Client(url, mode=mode) as client:
                        names = [tool.name for tool in (await client.list_tools()).tools]
                        assert "github_create_comment" in names
                        created = await client.call_tool(
                            "github_create_comment",
                            {**OWNER_REPO, "issue_number": 2, "body": mode},
                            meta={"idempotency_key": f"late-{mode}"},
                        )
                        assert created.is_error is False
                        assert mock.requests[-1]["idempotency_key"] == f"late-{mode}"
    assert hot.answered >= 4 and hot.switched is False  # the handshake and the hot verbs, from the tables


async def test_a_request_after_the_lifespan_ended_gets_a_coded_refusal(github: Document, make_gateway: Any) -> None:
    app = create_app(ServerSpec(make_gateway(github)), service="github")
    transport = httpx.ASGITransport(app=app)
    with anyio.fail_after(60):
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            async with app.router.lifespan_context(app):
                during = await client.post("/mcp", content=rpc("ping"), headers=JSON_HEADERS)
            after = await client.post("/mcp", content=rpc("ping"), headers=JSON_HEADERS)
    assert during.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert _refused(after)  # the SDK's run is over: a coded refusal, not its "not initialized" error


class OutOfDescriptorsOnce:
    """A load hook: the first load fails as a process out of file descriptors does (``EMFILE``); a later
    one succeeds once ``recover`` is set (so the test sees the failed state for as long as it looks)."""

    def __init__(self) -> None:
        self.calls = 0
        self.recover = threading.Event()

    def __call__(self, wire: SdkWire) -> None:
        self.calls += 1
        if self.calls == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        self.recover.wait(30)


async def _until(client: httpx.AsyncClient, url: str, status: int) -> httpx.Response:
    while (answer := await client.get(url)).status_code != status:
        await anyio.sleep(0.05)
    return answer


async def test_a_failed_sdk_load_is_retried_and_readyz_says_not_ready_until_the_sdk_serves(
    github: Document, mock: MockServer
) -> None:
    async with httpx.AsyncClient() as upstream:
        context = RuntimeContext(
            service_id="github",
            base_url=mock.url,
            client=upstream,
            env="dev",
            credentials={token_variable(github): TOKEN},
            ledger=open_ledger("memory:"),
        )
        app = create_listener(Fleet([FleetBundle(id="github", document=github, context=context)]))
        sdk = mcp_sdk(app)
        flaky = OutOfDescriptorsOnce()
        sdk.on_load(flaky)
        try:
            async with serving(app) as (url,), httpx.AsyncClient() as client:
                readyz = url.removesuffix("/mcp") + "/readyz"
                with anyio.fail_after(30):
                    unready = await _until(client, readyz, 503)
                ping = await client.post(url, content=rpc("ping"), headers=JSON_HEADERS)
                hot = await client.post(url, content=call("github_list_pull", OWNER_REPO), headers=JSON_HEADERS)
                flaky.recover.set()
                with anyio.fail_after(30):
                    ready = await _until(client, readyz, 200)
                recovered = await client.post(url, content=rpc("ping"), headers=JSON_HEADERS)
        finally:
            flaky.recover.set()
    assert unready.json() == {"ready": False, "service": "github", "code": "mcp_unavailable"}
    assert _refused(ping)  # the SDK's request, while it cannot be had
    assert hot.status_code == 200 and hot.json()["result"]["isError"] is False  # the hot path kept serving
    assert ready.json() == {"ready": True, "service": "github"}
    assert recovered.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert (sdk.attempts, sdk.failed, flaky.calls) == (2, False, 2)


async def test_an_sdk_load_that_keeps_failing_gives_up_after_its_bounded_retries(
    github: Document, make_gateway: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sdk = DeferredSdk(
        build_server(make_gateway(github)),
        stateless=True,
        json_response=True,
        security=None,
        max_request_bytes=MAX_REQUEST_BYTES,
        retry_delays=(0.01, 0.02),
    )

    def broken(wire: SdkWire) -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    sdk.on_load(broken)
    with anyio.fail_after(30), caplog.at_level(logging.WARNING, logger="anvil.serve.mcp.deferred"):
        async with sdk.running():
            while sdk.attempts < 3 or not sdk.failed:
                await anyio.sleep(0.01)
            await anyio.sleep(0.3)  # no fourth attempt comes
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=sdk), base_url="http://x") as client:
                answer = await client.post("/mcp", content=rpc("ping"), headers=JSON_HEADERS)
    assert (sdk.attempts, sdk.failed, sdk.available) == (3, True, False)
    assert _refused(answer)
    logged = [record for record in caplog.records if record.name == "anvil.serve.mcp.deferred"]
    assert [record.levelno for record in logged] == [logging.ERROR, logging.WARNING, logging.ERROR]
    assert "after 3 attempts" in logged[-1].getMessage() and all(record.exc_info is None for record in logged)
