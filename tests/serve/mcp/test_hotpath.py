"""The HTTP hot path answers the handshake, tools/call and tools/list byte for byte as the SDK path does.

Two apps serve one provider on real uvicorn listeners: the default app (hot path on) and one built with
``hot_path=False`` (every request on the official SDK). The same requests go to both and the answers
(status, headers but the date, body) are compared as bytes. The provider replays fixed results taken
from the real projections (the github-mini gateway's listing, ``CallResult`` values of every kind), so
both answers come from one set of values; the official client (legacy and ``mode="auto"``) then drives
the hot app against the real gateway and the github-mini mock.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import mcp.types as types
import pytest
from hypothesis import example, given, settings, strategies as st
from mcp import ClientSession
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from anvil._types import JSONObject, JSONValue
from anvil.air.model import DisclosureBudget, Document
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import RuntimeContext
from anvil.runtime.envelope import ErrorEnvelope
from anvil.serve.answer_store import MemoryAnswers, answer_owner
from anvil.serve.auth.principals import hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.fleet import Fleet, FleetBundle
from anvil.serve.gateway import Gateway
from anvil.serve.listener import create_listener
from anvil.serve.mcp.bootstrap import HANDSHAKE_VERSIONS
from anvil.serve.mcp.hotpath import HotPath, ResultEncoder
from anvil.serve.mcp.http import create_app, listen, serve_http
from anvil.serve.mcp.results import CallResult
from anvil.serve.mcp.server import build_server
from anvil.serve.responses import TRUNCATED_META, TRUNCATED_PREFIX
from tests.serve.budget_upstream import Upstream, catalog_context, catalog_document, item_list
from tests.serve.support import OWNER_REPO, PAYMENTS as PAYMENTS_EXAMPLE, MockServer, compile_example, listing_gateway
from tests.serve.test_fleet import read_grant

pytestmark = pytest.mark.anyio

ENVELOPE = ErrorEnvelope(
    code="validation_error",
    message="Input 'owner' is required.",
    retryable=False,
    safe_to_retry=False,
    operation="github.issues.get",
    trace_id="trace_fixed",
    details={"field": "owner"},
)
DATA: JSONObject = {
    "id": 7,
    "title": 'Grüße \u2028 \x01 "quoted" </script>',
    "labels": [None, 1.5e-7, 1e16, 0.1, -0.0, 2**63 + 5],
    "nested": {"empty": {}, "none": None, "list": []},
}


class _Image:
    """A result outside the probed shape (an image content item): the SDK's pipeline serializes it."""

    def to_wire(self) -> JSONObject:
        return {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}], "isError": False}


class _Broken:
    """A result the SDK refuses (content is not a list)."""

    def to_wire(self) -> JSONObject:
        return {"content": "nope"}


class _Raising:
    def to_wire(self) -> JSONObject:
        raise RuntimeError("boom")


RESULTS: dict[str, Any] = {
    "object": CallResult(kind="success", data=DATA, status=200, report={"class": "read", "deadline": None}),
    "array": CallResult(kind="success", data=[1, "two", {"three": 3}], status=200),
    "scalar": CallResult(kind="success", data="plain text ✓", status=200),
    "empty": CallResult(kind="success", data=None, status=204, report={"class": "reversible"}),
    "huge_int": CallResult(kind="success", data={"n": 2**70}, status=200),
    "surrogate": CallResult(kind="success", data={"s": "lone \ud800"}, status=200),
    "not_a_number": CallResult(kind="success", data={"nan": float("nan"), "inf": float("-inf")}, status=200),
    "error": CallResult(kind="error", envelope=ENVELOPE, report={"class": "read", "succeeded": False}),
    "dry_run": CallResult(kind="dry_run", plan={"method": "GET", "url": "http://127.0.0.1/x", "headers": {}}),
    "projected": CallResult(
        kind="success",
        data=[7, None],
        status=200,
        report={"class": "read"},
        structured={"anvil_projection": "[].id", "result": [7, None]},
    ),
    "image": _Image(),
    "broken": _Broken(),
    "raising": _Raising(),
}


class FixedProvider:
    """A provider with a real listing whose calls answer fixed results (so two apps answer alike)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.tools: tuple[JSONObject, ...] = gateway.tools
        self.calls: list[tuple[str, Any, Any]] = []

    @property
    def server_name(self) -> str:
        return self.gateway.server_name

    @property
    def version(self) -> str:
        return self.gateway.version

    def input_schema(self, name: str) -> JSONObject | None:
        return self.gateway.input_schema(name)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None = None,
        *,
        identity: Mapping[str, JSONValue] | None = None,
    ) -> Any:
        self.calls.append((name, arguments, meta))
        return RESULTS.get(name)


@asynccontextmanager
async def serving(*apps: Starlette) -> AsyncIterator[list[str]]:
    """Serve each app on its own loopback port; yields their ``/mcp`` URLs."""
    socks = [listen("127.0.0.1", 0) for _ in apps]
    try:
        async with anyio.create_task_group() as group:
            for app, sock in zip(apps, socks, strict=True):
                group.start_soon(lambda app=app, sock=sock: serve_http(app, sock=sock))
            yield [f"http://127.0.0.1:{sock.getsockname()[1]}/mcp" for sock in socks]
            group.cancel_scope.cancel()
    finally:
        for sock in socks:
            sock.close()


def hot_path_of(app: Starlette) -> HotPath:
    found = next(getattr(route, "endpoint", None) for route in app.routes if getattr(route, "path", "") == "/mcp")
    assert isinstance(found, HotPath)
    return found


JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def rpc(method: str, params: Any = None, *, request_id: Any = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, ensure_ascii=False).encode()


def call(name: str, arguments: Any = None, meta: Any = None, *, request_id: Any = 1) -> bytes:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if meta is not None:
        params["_meta"] = meta
    return rpc("tools/call", params, request_id=request_id)


#: (headers over JSON_HEADERS, body) pairs: the hot verbs in every shape, then what the SDK keeps.
CASES: Sequence[tuple[dict[str, str], bytes]] = (
    ({}, rpc("tools/list")),
    ({}, rpc("tools/list", {})),
    ({}, rpc("tools/list", {"cursor": "abc"}, request_id="list-1")),
    ({"mcp-protocol-version": "2024-11-05"}, rpc("tools/list", {"_meta": {"progressToken": 3}})),
    ({"mcp-protocol-version": "2025-06-18"}, rpc("tools/list")),
    ({"mcp-protocol-version": "2025-11-25"}, rpc("tools/list", request_id=2**40)),
    ({}, call("object", {"id": 1}, {"idempotency_key": "k-1", "stage": False})),
    ({"mcp-protocol-version": "2024-11-05"}, call("object", {"id": 1})),
    ({"mcp-protocol-version": "2024-11-05"}, call("object", {"id": 1}, {"idempotency_key": "k-2", "x": [1]})),
    ({}, call("object", {"n": 2**70, "f": 1.5e300, "s": "ünï \u2028"})),
    ({"mcp-protocol-version": "2025-03-26"}, call("array", request_id="ünï")),
    ({"mcp-protocol-version": "2025-06-18"}, call("scalar", {"a": [1, 2.5, None]})),
    ({"mcp-protocol-version": "2025-11-25"}, call("empty", meta={"progressToken": "p"})),
    ({"mcp-protocol-version": "2025-11-25"}, call("huge_int")),
    ({}, call("not_a_number")),
    ({}, call("surrogate")),
    ({}, call("error", {"owner": None})),
    ({}, call("dry_run", {"anvil_dry_run": True})),
    ({}, call("projected", {"anvil_projection": "[].id"})),
    ({}, call("image")),
    ({}, call("broken")),
    ({}, call("raising")),
    ({}, call("no_such_tool")),
    ({}, call("object", [1, 2])),
    ({}, call("object", meta={"progressToken": True})),
    ({}, rpc("tools/call", {"name": 5})),
    ({}, rpc("tools/call", {"name": "object", "task": {"ttl": 5}})),
    ({}, rpc("tools/list", {"cursor": 5})),
    ({}, rpc("ping")),
    ({}, rpc("tools/call", request_id=None)),
    ({}, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'),
    ({}, b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]'),
    ({}, b'{"jsonrpc":"2.0","id":1,"method":"tools/list"'),
    ({}, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"object","arguments":{"n":1e400}}}'),
    ({"accept": "text/event-stream"}, rpc("tools/list")),
    ({"content-type": "text/plain"}, rpc("tools/list")),
    ({"content-type": "application/json; charset=utf-8"}, rpc("tools/list")),
    ({"host": "evil.example"}, rpc("tools/list")),
    ({"origin": "http://evil.example"}, call("object")),
    ({"mcp-protocol-version": "1999-01-01"}, rpc("tools/list")),
)


def comparable(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    headers = [(name, value) for name, value in response.headers.multi_items() if name not in ("date", "server")]
    return response.status_code, headers, response.content


async def test_the_hot_path_answers_every_request_byte_for_byte_as_the_sdk_path(
    github: Document, make_gateway: Any
) -> None:
    provider = FixedProvider(make_gateway(github))
    hot = create_app(build_server(provider), service="github")
    sdk = create_app(build_server(provider), service="github", hot_path=False)
    assert isinstance(hot_path_of(hot), HotPath)
    with anyio.fail_after(60):
        async with serving(hot, sdk) as (hot_url, sdk_url), httpx.AsyncClient() as client:
            for extra, body in CASES:
                headers = {**JSON_HEADERS, **extra}
                provider.calls.clear()
                fast = await client.post(hot_url, content=body, headers=headers)
                hot_calls = list(provider.calls)
                provider.calls.clear()
                slow = await client.post(sdk_url, content=body, headers=headers)
                assert comparable(fast) == comparable(slow), body
                assert hot_calls == provider.calls, body  # the provider saw the same name, arguments and _meta
    assert hot_path_of(hot).answered >= 14  # the hot verbs were answered by the hot path, not handed on
    assert hot_path_of(hot).switched is False  # answered from the bootstrap tables, which agree with the SDK


_TRACE = re.compile(rb"trace_[0-9a-f-]{36}")


async def test_projected_calls_of_the_real_gateway_are_answered_byte_for_byte_on_both_paths(
    github: Document, make_gateway: Any, mock: MockServer
) -> None:
    gateway: Gateway = make_gateway(github)
    hot = create_app(build_server(gateway), service="github")
    sdk = create_app(build_server(gateway), service="github", hot_path=False)
    issue = {**OWNER_REPO, "issue_number": 1}
    bodies = [
        call("github_list_issue", {**OWNER_REPO, "anvil_projection": "[].number"}),  # a view of a wrapped answer
        call("github_get_issue", {**issue, "anvil_projection": "{n: number, t: title}"}),  # an object view
        call("github_get_issue", {**issue, "anvil_projection": "title"}),  # a scalar view
        call("github_get_issue", {**issue, "anvil_projection": "length(number)"}),  # fails after the read
        call("github_get_issue", {**issue, "anvil_projection": "title["}),  # refused before the read
        call("github_get_issue", {**issue, "anvil_projection": 7}),  # not a string
    ]
    answers: list[dict[str, Any]] = []
    with anyio.fail_after(60):
        async with serving(hot, sdk) as (hot_url, sdk_url), httpx.AsyncClient() as client:
            for body in bodies:
                fast = await client.post(hot_url, content=body, headers=JSON_HEADERS)
                slow = await client.post(sdk_url, content=body, headers=JSON_HEADERS)
                status, headers, content = comparable(fast)
                # Each answer has its own trace id; everything else is the same bytes.
                assert (status, headers, _TRACE.sub(b"trace_", content)) == (
                    slow.status_code,
                    comparable(slow)[1],
                    _TRACE.sub(b"trace_", slow.content),
                ), body
                answers.append(json.loads(content)["result"])
    assert hot_path_of(hot).answered == len(bodies)
    listed, picked, title, failed, malformed, not_text = answers
    view = listed["structuredContent"]
    assert view["anvil_projection"] == "[].number" and view["result"] and all(type(n) is int for n in view["result"])
    assert picked["structuredContent"]["result"]["n"] == 1 and title["isError"] is False
    for refused, code in ((failed, "projection/failed"), (malformed, "projection/invalid")):
        assert refused["isError"] is True and "structuredContent" not in refused
        assert json.loads(refused["content"][0]["text"])["error"]["details"]["code"] == code
    assert json.loads(not_text["content"][0]["text"])["error"]["code"] == "validation_error"
    assert len(mock.requests) == 2 * 4  # the two refusals sent nothing, on either path


def initialize(protocol: Any = "2025-11-25", *, request_id: Any = 1, **params: Any) -> bytes:
    body: dict[str, Any] = {
        "protocolVersion": protocol,
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1.0"},
        **params,
    }
    return rpc("initialize", {key: value for key, value in body.items() if value is not None}, request_id=request_id)


INSPECTOR_CAPABILITIES = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
#: (headers over JSON_HEADERS, body, answered by the hot path): the handshake in every shape.
HANDSHAKE_CASES: Sequence[tuple[dict[str, str], bytes, bool]] = (
    ({}, initialize(), True),
    ({}, initialize("2024-11-05"), True),
    ({}, initialize("2025-03-26", request_id="init-ü"), True),
    ({"mcp-protocol-version": "2025-06-18"}, initialize("2025-06-18"), True),
    ({"mcp-protocol-version": "2024-11-05"}, initialize("2025-11-25"), True),
    ({}, initialize("2026-07-28"), True),  # a 2026 request over the handshake negotiates the latest one
    ({}, initialize("1999-01-01"), True),  # an unknown version: the SDK's latest handshake version
    ({}, initialize(capabilities=INSPECTOR_CAPABILITIES), True),
    ({}, initialize(capabilities={"experimental": {"x": {"on": True}}, "roots": {}}), True),
    ({}, initialize(clientInfo={"name": "c", "version": "2", "title": "C", "websiteUrl": "https://c.example"}), True),
    ({}, initialize(capabilities={"roots": {"listChanged": "yes"}}), False),
    ({}, initialize(capabilities={"tasks": {"list": {}}}), False),
    ({}, initialize(capabilities={"sampling": {"context": {"x": 1}}}), False),
    ({}, initialize(capabilities={"experimental": {"x": 5}}), False),
    ({}, initialize(capabilities={"extensions": {"io.example/x": {}}}), False),
    ({}, initialize(capabilities=[]), False),
    ({}, initialize(capabilities=None), False),
    ({}, initialize(clientInfo={"name": "c"}), False),
    ({}, initialize(clientInfo={"name": "c", "version": 2}), False),
    ({}, initialize(5), False),
    ({}, initialize(_meta={"progressToken": 1}), False),
    ({"mcp-protocol-version": "2026-07-28"}, initialize(), False),
    ({}, b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}', False),
    ({}, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', True),
    ({}, b'{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}', True),
    ({"mcp-protocol-version": "2025-11-25"}, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', True),
    ({}, b'{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{}}}', False),
    ({}, b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}', False),
    ({}, b'{"jsonrpc":"2.0","method":"notifications/initialized","extra":1}', False),
    ({"accept": "text/event-stream"}, initialize(), False),
)


async def test_the_handshake_is_answered_byte_for_byte_as_the_sdk_path_answers_it(
    github: Document, make_gateway: Any
) -> None:
    provider = FixedProvider(make_gateway(github))
    hot = create_app(build_server(provider, instructions="Read before you write."), service="github")
    sdk = create_app(build_server(provider, instructions="Read before you write."), service="github", hot_path=False)
    fast_path = hot_path_of(hot)
    with anyio.fail_after(60):
        async with serving(hot, sdk) as (hot_url, sdk_url), httpx.AsyncClient() as client:
            for extra, body, answered_here in HANDSHAKE_CASES:
                headers = {**JSON_HEADERS, **extra}
                before = fast_path.answered
                fast = await client.post(hot_url, content=body, headers=headers)
                slow = await client.post(sdk_url, content=body, headers=headers)
                assert comparable(fast) == comparable(slow), body
                assert fast_path.answered == before + answered_here, body
    assert fast_path.switched is False


@pytest.mark.corpus
async def test_every_corpus_listing_is_answered_byte_for_byte_as_the_sdk_path_at_every_version(
    corpus_documents: list[tuple[str, Document]], http: httpx.AsyncClient
) -> None:
    providers = {name: listing_gateway(document, http) for name, document in corpus_documents}
    first = next(iter(providers.values()))

    def select(request: Any) -> Any:
        return providers.get(request.headers.get("x-spec", ""))

    hot = create_app(build_server(first, select=select), service="corpus")
    sdk = create_app(build_server(first, select=select), service="corpus", hot_path=False)
    with anyio.fail_after(240):
        async with serving(hot, sdk) as (hot_url, sdk_url), httpx.AsyncClient(timeout=60) as client:
            for name in providers:
                for version in HANDSHAKE_VERSIONS:
                    headers = {**JSON_HEADERS, "mcp-protocol-version": version, "x-spec": name}
                    fast = await client.post(hot_url, content=rpc("tools/list"), headers=headers)
                    slow = await client.post(sdk_url, content=rpc("tools/list"), headers=headers)
                    assert fast.status_code == 200, (name, version)
                    assert comparable(fast) == comparable(slow), (name, version)
    assert hot_path_of(hot).answered == len(providers) * len(HANDSHAKE_VERSIONS)
    assert hot_path_of(hot).switched is False


async def test_a_listing_with_summarised_and_omitted_output_schemas_is_answered_byte_for_byte_at_every_version(
    github: Document, http: httpx.AsyncClient
) -> None:
    # A tight budget: some tools publish a cut output schema, one a one-object summary, some none at all.
    tight = dataclasses.replace(github, disclosure=DisclosureBudget(tool_budget_tokens=400, output_schema_percent=25))
    gateway = listing_gateway(tight, http)
    states = {tool["_meta"].get("anvil/output_schema") for tool in gateway.tools}
    assert {"summarised", "omitted"} <= states
    hot = create_app(build_server(gateway), service="github")
    sdk = create_app(build_server(gateway), service="github", hot_path=False)
    with anyio.fail_after(60):
        async with serving(hot, sdk) as (hot_url, sdk_url), httpx.AsyncClient() as client:
            for version in HANDSHAKE_VERSIONS:
                headers = {**JSON_HEADERS, "mcp-protocol-version": version}
                fast = await client.post(hot_url, content=rpc("tools/list"), headers=headers)
                slow = await client.post(sdk_url, content=rpc("tools/list"), headers=headers)
                assert fast.status_code == 200, version
                assert comparable(fast) == comparable(slow), version
    listed = json.loads(fast.content)["result"]["tools"]
    assert any(tool["_meta"].get("anvil/output_schema") == "summarised" for tool in listed)
    assert hot_path_of(hot).answered == len(HANDSHAKE_VERSIONS)
    assert hot_path_of(hot).switched is False


async def test_an_oversized_body_is_refused_by_the_sdk_rule_on_the_hot_app(github: Document, make_gateway: Any) -> None:
    provider = FixedProvider(make_gateway(github))
    hot = create_app(build_server(provider), service="github", max_request_bytes=64)
    sdk = create_app(build_server(provider), service="github", max_request_bytes=64, hot_path=False)
    body = call("object", {"padding": "x" * 200})
    with anyio.fail_after(30):
        async with serving(hot, sdk) as (hot_url, sdk_url), httpx.AsyncClient() as client:
            fast = await client.post(hot_url, content=body, headers=JSON_HEADERS)
            slow = await client.post(sdk_url, content=body, headers=JSON_HEADERS)

            async def chunked() -> AsyncIterator[bytes]:
                for start in range(0, len(body), 50):
                    yield body[start : start + 50]

            streamed = await client.post(hot_url, content=chunked(), headers=JSON_HEADERS)
    assert fast.status_code == slow.status_code == streamed.status_code == 413
    assert fast.content == slow.content == streamed.content
    assert provider.calls == []


async def test_the_official_client_legacy_and_auto_works_through_the_hot_app(
    github: Document, make_gateway: Any, mock: MockServer
) -> None:
    gateway: Gateway = make_gateway(github)
    app = create_app(build_server(gateway), service="github")
    hot = hot_path_of(app)
    with anyio.fail_after(60):
        async with serving(app) as (url,):
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                assert "github_create_comment" in [tool.name for tool in listed.tools]
                answered = hot.answered
                created = await session.call_tool(
                    "github_create_comment",
                    {**OWNER_REPO, "issue_number": 2, "body": "hot"},
                    meta={"idempotency_key": "hot-1"},
                )
                assert hot.answered == answered + 1
                assert created.is_error is False and created.meta is not None
                assert created.meta["effect"]["idempotency_key"] == "hot-1"
                assert mock.requests[-1]["idempotency_key"] == "hot-1"
                refused = await session.call_tool("github_create_comment", {"body": "no owner"})
                assert refused.is_error is True
                # An error carries its envelope as text only (a stock client validates structuredContent).
                assert refused.structured_content is None
                assert json.loads(refused.content[0].text)["error"]["code"] == "validation_error"
            for mode in ("legacy", "auto"):
                async with Client(url, mode=mode) as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    assert "github_list_pull" in names
                    pulls = await client.call_tool("github_list_pull", OWNER_REPO)
                    assert pulls.is_error is False


async def test_the_fleet_listener_lists_each_callers_composition_byte_for_byte_on_both_paths(
    github: Document, mock: MockServer
) -> None:
    payments = compile_example(PAYMENTS_EXAMPLE, "payments")
    records = parse_principals(
        {
            "principals": [
                {"id": "ops", "token_sha256": hash_token("tok-ops")},
                {"id": "reader", "token_sha256": hash_token("tok-reader"), "grants": read_grant()},
            ]
        }
    )
    async with httpx.AsyncClient() as upstream:
        bundles = [
            FleetBundle(
                id=doc.service.id,
                document=doc,
                context=RuntimeContext(
                    service_id=doc.service.id,
                    base_url=mock.url,
                    client=upstream,
                    env="dev",
                    ledger=open_ledger("memory:"),
                ),
            )
            for doc in (github, payments)
        ]
        fleet = Fleet(bundles)
        apps = [
            create_listener(fleet, authenticator=StaticTokenAuthenticator(records), hot_path=hot)
            for hot in (True, False)
        ]
        answers: list[list[tuple[int, list[tuple[str, str]], bytes]]] = [[], []]
        with anyio.fail_after(60):
            async with serving(*apps) as urls, httpx.AsyncClient() as client:
                for index, url in enumerate(urls):
                    for token in ("tok-ops", "tok-reader", "tok-unknown"):
                        headers = {**JSON_HEADERS, "authorization": f"Bearer {token}"}
                        for body in (rpc("tools/list"), call("no_such_tool", {})):
                            answers[index].append(comparable(await client.post(url, content=body, headers=headers)))
    assert answers[0] == answers[1]
    listed = [json.loads(body) for status, _, body in answers[0][::2] if status == 200]
    ops, reader = ([tool["name"] for tool in answer["result"]["tools"]] for answer in listed)
    assert set(reader) < set(ops) and all(name.startswith("github__") for name in reader)
    assert hot_path_of(apps[0]).answered == 4  # two listings and two unknown-tool answers, on the hot path


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_subnormal=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def sdk_answer(wire: JSONObject, version: str, request_id: int | str) -> bytes:
    """What the official SDK's handler pipeline sends for ``wire`` (the oracle)."""
    from mcp_types import JSONRPCResponse, methods

    dumped = types.CallToolResult.model_validate(wire).model_dump(by_alias=True, mode="json", exclude_none=True)
    result = methods.serialize_server_result("tools/call", version, dumped)
    return (
        JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
        .model_dump_json(by_alias=True, exclude_unset=True)
        .encode()
    )


ENCODER = ResultEncoder()


@settings(max_examples=150, deadline=None)
@example(data=[-(2**63) - 1, float("inf")], report=None, kind="success", version="2024-11-05", request_id=0)
@given(
    data=JSON_VALUES,
    report=st.none() | st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3),
    kind=st.sampled_from(["success", "error", "dry_run"]),
    version=st.sampled_from(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]),
    request_id=st.integers(min_value=-(2**53), max_value=2**53) | st.text(max_size=6),
)
def test_every_call_result_encodes_as_the_sdk_encodes_it(
    data: Any, report: JSONObject | None, kind: str, version: str, request_id: int | str
) -> None:
    if kind == "error":
        envelope = ErrorEnvelope(
            code="upstream_error",
            message="x",
            retryable=False,
            safe_to_retry=False,
            operation="p.o",
            trace_id="t",
            details={"data": data},
        )
        result = CallResult(kind="error", envelope=envelope, report=report)
    elif kind == "dry_run":
        result = CallResult(kind="dry_run", plan={"plan": data})
    else:
        result = CallResult(kind="success", data=data, report=report)
    wire = result.to_wire()
    assert ENCODER.encode(wire, version, request_id) == sdk_answer(wire, version, request_id)  # never None here


_ANSWER_URI = re.compile(rb"anvil://answer/[0-9a-f]{32}")


async def test_a_cut_answer_and_its_resource_link_are_sent_as_the_sdk_sends_them_to_the_official_client() -> None:
    big = {"object": "list", "data": item_list(3000), "has_more": True}
    upstream = Upstream(answers={"/items": big})
    keeper = MemoryAnswers()
    async with upstream.client() as http:
        gateway = Gateway(catalog_document(), catalog_context(http), keeper=keeper)
        hot = create_app(build_server(gateway), service="catalog")
        sdk = create_app(build_server(gateway), service="catalog", hot_path=False)
        body = call("catalog_list_items", {})
        with anyio.fail_after(60):
            async with serving(hot, sdk) as (hot_url, sdk_url), httpx.AsyncClient() as client:
                for version in HANDSHAKE_VERSIONS:
                    headers = {**JSON_HEADERS, "mcp-protocol-version": version}
                    fast = await client.post(hot_url, content=body, headers=headers)
                    slow = await client.post(sdk_url, content=body, headers=headers)
                    status, fast_headers, content = comparable(fast)
                    # Each answer is kept under its own id; everything else is the same bytes.
                    assert (status, _ANSWER_URI.sub(b"-", content)) == (200, _ANSWER_URI.sub(b"-", slow.content))
                    assert fast_headers == comparable(slow)[1]
                    sent = json.loads(content)["result"]["content"]
                    assert [block["type"] for block in sent] == ["text", "text", "resource_link"], version
                async with Client(hot_url) as session:
                    result = await session.call_tool("catalog_list_items", {})
    assert result.is_error is False
    text, marker, link = result.content
    assert isinstance(text, types.TextContent) and isinstance(marker, types.TextContent)
    assert isinstance(link, types.ResourceLink) and link.mime_type == "application/json"
    assert marker.text.startswith(TRUNCATED_PREFIX) and str(link.uri) in marker.text
    assert result.structured_content == json.loads(text.text)  # validated by the client against the schema
    assert result.meta is not None and result.meta[TRUNCATED_META]["answer"] == str(link.uri)
    kept = await keeper.read(str(link.uri), answer_owner(None))  # an anonymous caller over /mcp
    assert kept is not None and json.loads(kept.body) == big
