"""Server spans on the real listener: one per call, on the hot path and on the SDK's, continuing the caller's trace;
gateway refusals carry the call's trace id; ``/metrics`` behind the bearer; nothing traced without a tracer."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import httpx
import pytest

from anvil.air.model import Document
from anvil.serve.auth.principals import hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.fleet import Fleet
from anvil.serve.listener import create_listener
from anvil.telemetry.spans import Recorder, SpanRecord
from tests.serve.raw_upstream import serving
from tests.serve.support import OWNER_REPO
from tests.serve.test_fleet import Rig

pytestmark = pytest.mark.anyio

JSON_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}
CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
LIST_ISSUES = "github__github_list_issue"


def traced_fleet(rig: Rig, records: list[SpanRecord]) -> Fleet:
    recorder = Recorder(records.append)
    bundles = [rig.bundle("github"), rig.bundle("payments")]
    return Fleet([replace(b, context=replace(b.context, tracer=recorder)) for b in bundles])


def rpc_call(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


@pytest.mark.parametrize("hot_path", [True, False], ids=["hot path", "sdk"])
async def test_an_mcp_call_over_http_continues_the_callers_traceparent_header_on_either_path(
    github: Document, payments: Document, hot_path: bool
) -> None:
    rig = Rig(github, payments)
    records: list[SpanRecord] = []
    app = create_listener(traced_fleet(rig, records), hot_path=hot_path, trace_inbound=True)
    with serving(app) as base:
        async with httpx.AsyncClient() as http:
            answer = await http.post(
                f"{base}/mcp",
                content=rpc_call(LIST_ISSUES, OWNER_REPO),
                headers={**JSON_HEADERS, "traceparent": CALLER},
            )
    assert answer.status_code == 200 and "result" in answer.json()
    [call] = [r for r in records if r.is_server]
    assert call.name == f"tools/call {LIST_ISSUES}" and f"{call.trace:032x}" == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert call.parent_id == 0x00F067AA0BA902B7 and call.remote
    assert call.attributes["network.protocol.name"] == "http" and call.attributes["anvil.outcome"] == "ok"
    children = [r for r in records if not r.is_server]
    assert [c.name for c in children] == ["anvil.gates", "GET"]  # a static token: no token span
    assert {c.parent_id for c in children} == {call.span_id} and {c.trace for c in children} == {call.trace}
    # the _meta.traceparent of an MCP request wins over the header
    records.clear()
    meta_trace = "5" * 32
    with serving(app) as base:
        async with httpx.AsyncClient() as http:
            body = rpc_call(LIST_ISSUES, OWNER_REPO, {"traceparent": f"00-{meta_trace}-{'6' * 16}-01"})
            await http.post(f"{base}/mcp", content=body, headers={**JSON_HEADERS, "traceparent": CALLER})
    [call] = [r for r in records if r.is_server]
    assert f"{call.trace:032x}" == meta_trace
    await rig.aclose()


async def test_a_refusal_before_the_executor_carries_the_calls_trace_id(github: Document, payments: Document) -> None:
    rig = Rig(github, payments)
    records: list[SpanRecord] = []
    fleet = traced_fleet(rig, records)
    result = await fleet.call(LIST_ISSUES, {"owner": 5})
    assert result is not None and result.envelope is not None and result.envelope.code == "validation_error"
    [call] = [r for r in records if r.is_server]
    assert result.envelope.trace_id == call.trace_id and call.error == "validation_error"
    assert [(r.name, r.error) for r in records if not r.is_server] == [("anvil.gates", "validation_error")]
    # without a tracer nothing is recorded and the id keeps its uuid shape
    plain = Fleet([rig.bundle("github")])
    refused = await plain.call(LIST_ISSUES.removeprefix("github__"), {"owner": 5})
    assert refused is not None and refused.envelope is not None
    assert re.fullmatch(
        r"trace_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", refused.envelope.trace_id
    )
    await rig.aclose()


@pytest.mark.parametrize("guarded", [True, False])
async def test_metrics_want_the_mcp_bearer_when_guarded(github: Document, payments: Document, guarded: bool) -> None:
    rig = Rig(github, payments)
    principals = parse_principals({"principals": [{"id": "scraper", "token_sha256": hash_token("scrape-token")}]})
    app = create_listener(rig.fleet(), authenticator=StaticTokenAuthenticator(principals), metrics_auth=guarded)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        bare = await http.get("/metrics")
        scraped = await http.get("/metrics", headers={"authorization": "Bearer scrape-token"})
        wrong = await http.get("/metrics", headers={"authorization": "Bearer nope"})
    assert scraped.status_code == 200 and "anvil_tool_calls" in scraped.text
    if guarded:
        assert bare.status_code == 401 and bare.json()["error"]["code"] == "invalid_request"
        assert bare.headers["www-authenticate"].startswith("Bearer")
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_token"
    else:
        assert bare.status_code == wrong.status_code == 200
    await rig.aclose()
