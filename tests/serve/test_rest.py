"""POST /call/<tool>: the status table, the listener's own refusals, X-Anvil-Effect and a real fleet behind it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import pytest
from hypothesis import given, settings, strategies as st
from starlette.applications import Starlette

from anvil._types import JSONValue
from anvil.air.model import Document
from anvil.air.tokens import count_tokens
from anvil.runtime.envelope import CODE_TABLE, ErrorEnvelope
from anvil.serve.answer_store import MemoryAnswers, answer_owner
from anvil.serve.auth.principals import hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.fleet import Fleet, FleetBundle
from anvil.serve.listener import create_listener
from anvil.serve.mcp.results import CallResult
from anvil.serve.responses import PAGE_CAP_META, TRUNCATED_META
from anvil.serve.rest import (
    MAX_BODY_DEPTH,
    MAX_EFFECT_HEADER,
    PAGE_CAP_HEADER,
    TRUNCATED_HEADER,
    BodyError,
    call_route,
    effect_header,
    parse_body,
)
from tests.serve.budget_upstream import Upstream, catalog_context, catalog_document, item_list
from tests.serve.support import OWNER_REPO
from tests.serve.test_fleet import COMMENT, Rig, read_grant, write_grant

pytestmark = pytest.mark.anyio

#: original-gateway §2.7 / ADR-0030 §8: every envelope code and its REST status.
STATUS = {
    "validation_error": 400,
    "schema_mismatch": 502,
    "confirmation_required": 428,
    "idempotency_required": 428,
    "auth_required": 401,
    "permission_denied": 403,
    "policy_denied": 403,
    "unsafe_retry_blocked": 409,
    "idempotency_ledger_unavailable": 503,
    "unsupported_operation": 422,
    "not_found": 404,
    "conflict": 409,
    "rate_limited": 429,
    "upstream_timeout": 504,
    "upstream_unavailable": 502,
    "unknown_upstream_error": 502,
}
TOKENS = {"writer": "tok-writer", "reader": "tok-reader", "open": "tok-open"}


class Answering:
    """A tool provider answering every call with one fixed result (for the route's own behaviour)."""

    server_name = "stub-tools"
    version = "1"
    tools: tuple[dict[str, Any], ...] = ()

    def __init__(self, result: CallResult) -> None:
        self.result = result
        self.calls: list[tuple[str, Any, Any]] = []

    def input_schema(self, name: str) -> None:
        return None

    async def call(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None = None,
        *,
        identity: Mapping[str, JSONValue] | None = None,
    ) -> CallResult | None:
        self.calls.append((name, arguments, meta))
        return self.result if name != "missing" else None


def failing(code: str) -> CallResult:
    envelope = ErrorEnvelope(
        code=code, message="m", retryable=False, safe_to_retry=False, operation="s.o.p", trace_id="trace_1"
    )
    return CallResult(kind="error", envelope=envelope, report={"class": "read", "operation": "s.o.p"})


def stub_client(result: CallResult, *, limit: int = 64 * 1024) -> tuple[httpx.AsyncClient, Answering]:
    provider = Answering(result)
    app = Starlette(routes=[call_route(lambda request: provider, body_limit=limit)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test"), provider


@pytest.mark.parametrize("code", sorted(CODE_TABLE))
async def test_every_envelope_code_answers_its_rest_status(code: str) -> None:
    client, _ = stub_client(failing(code))
    async with client:
        answer = await client.post("/call/tool", json={})
    assert answer.status_code == STATUS[code]
    assert answer.json()["error"]["code"] == code
    assert json.loads(answer.headers["x-anvil-effect"]) == {"class": "read", "operation": "s.o.p"}
    assert (answer.headers["content-type"], answer.headers["cache-control"]) == ("application/json", "no-store")


async def test_the_body_becomes_arguments_stage_and_the_idempotency_key_header_the_key() -> None:
    client, provider = stub_client(CallResult(kind="success", data=[1, 2]))
    async with client:
        answer = await client.post(
            "/call/tool.v2", json={"arguments": {"a": 1}, "stage": True}, headers={"idempotency-key": "k-1"}
        )
        plain = await client.post("/call/tool", content=b"{}", headers={"content-type": "Application/JSON; charset=x"})
    assert (answer.status_code, answer.json()) == (200, [1, 2])
    assert "x-anvil-effect" not in answer.headers
    assert provider.calls == [("tool.v2", {"a": 1}, {"idempotency_key": "k-1", "stage": True}), ("tool", {}, None)]
    assert plain.status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "headers", "content", "status", "code"),
    [
        ("GET", "/call/tool", {}, b"", 405, "method_not_allowed"),
        ("POST", "/call/tool", {"content-type": "text/plain"}, b"{}", 415, "unsupported_media_type"),
        ("POST", "/call/tool", {}, b"{}", 415, "unsupported_media_type"),
        ("POST", "/call/bad%20name", {"content-type": "application/json"}, b"{}", 404, "not_found"),
        ("POST", "/call/missing", {"content-type": "application/json"}, b"{}", 404, "not_found"),
        ("POST", "/call/tool", {"content-type": "application/json"}, b"x" * 101, 413, "request_too_large"),
        ("POST", "/call/tool", {"content-type": "application/json"}, b"[1]", 400, "validation_error"),
        ("POST", "/call/tool", {"content-type": "application/json"}, b"{nope", 400, "validation_error"),
        ("POST", "/call/tool", {"content-type": "application/json"}, b'{"arguments": [1]}', 400, "validation_error"),
        ("POST", "/call/tool", {"content-type": "application/json"}, b'{"stage": "yes"}', 400, "validation_error"),
    ],
)
async def test_the_listener_refuses_bad_requests_with_a_short_error_body(
    method: str, path: str, headers: dict[str, str], content: bytes, status: int, code: str
) -> None:
    client, provider = stub_client(CallResult(kind="success", data=None), limit=100)
    async with client:
        answer = await client.request(method, path, headers=headers, content=content)
    assert answer.status_code == status
    assert answer.json() == {"error": {"code": code, "message": answer.json()["error"]["message"]}}
    assert provider.calls == ([("missing", {}, None)] if path == "/call/missing" else [])


async def test_two_idempotency_key_headers_are_refused() -> None:
    client, provider = stub_client(CallResult(kind="success", data=None))
    async with client:
        answer = await client.post("/call/tool", json={}, headers=[("idempotency-key", "a"), ("idempotency-key", "b")])
    assert (answer.status_code, answer.json()["error"]["code"], provider.calls) == (400, "validation_error", [])


async def test_a_body_over_a_declared_length_is_refused_before_it_is_read() -> None:
    client, _ = stub_client(CallResult(kind="success", data=None), limit=10)
    async with client:
        answer = await client.post(
            "/call/tool", content=b"{}", headers={"content-type": "application/json", "content-length": "11"}
        )
    assert answer.status_code == 413


def test_the_effect_header_escapes_everything_from_u007f_up_in_lower_case_hex() -> None:
    report = {"arguments": {"owner": "øcto", "repo": "héllo\x7f", "emoji": "✓😀"}}
    header = effect_header(report)
    assert header.isascii() and all(0x20 <= ord(ch) < 0x7F for ch in header)
    assert "\\u00f8cto" in header and "\\u007f" in header and "\\u2713" in header
    assert json.loads(header) == report


# --- a real fleet behind the route -----------------------------------------------------------------


@pytest.fixture
async def gateway(github: Document, payments: Document) -> AsyncIterator[tuple[httpx.AsyncClient, Rig]]:
    rig = Rig(github, payments)
    records = parse_principals(
        {
            "principals": [
                {"id": "writer", "token_sha256": hash_token(TOKENS["writer"]), "grants": write_grant(confirm="allow")},
                {"id": "reader", "token_sha256": hash_token(TOKENS["reader"]), "grants": read_grant()},
                {"id": "open", "token_sha256": hash_token(TOKENS["open"])},
            ]
        }
    )
    app = create_listener(rig.fleet("github"), authenticator=StaticTokenAuthenticator(records))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")
    yield client, rig
    await client.aclose()
    await rig.aclose()


def bearer(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer {TOKENS[who]}"}


async def test_a_comment_over_rest_reports_its_undo_in_the_header_and_a_retry_replays_it(
    gateway: tuple[httpx.AsyncClient, Rig],
) -> None:
    client, rig = gateway
    headers = {**bearer("writer"), "idempotency-key": "01JLEDGERREST0000000000001"}
    body = {"arguments": {**COMMENT, "owner": "øcto", "repo": "héllo"}}
    first = await client.post("/call/github__github_create_comment", json=body, headers=headers)
    again = await client.post("/call/github__github_create_comment", json=body, headers=headers)
    assert (first.status_code, again.status_code) == (200, 200)
    assert first.json() == again.json() == {"id": 100, "body": "Looks good ✓"}
    raw = first.headers["x-anvil-effect"]
    assert raw.isascii()
    effect = json.loads(raw)
    assert (effect["class"], effect["idempotency_key"]) == ("reversible", "01JLEDGERREST0000000000001")
    assert effect["undo"]["tool"] == "github__github_delete_comment"
    assert effect["undo"]["arguments"] == {"owner": "øcto", "repo": "héllo", "comment_id": 100}
    assert len(rig.github_state.comments) == 1
    undone = await client.post(
        "/call/" + effect["undo"]["tool"],
        json={"arguments": {**effect["undo"]["arguments"], "confirm": True}},
        headers=bearer("writer"),
    )
    assert undone.status_code == 200 and json.loads(undone.headers["x-anvil-effect"])["undo"] is None
    assert rig.github_state.comments == []


async def test_a_read_grant_calling_a_write_is_403_with_the_header_and_nothing_sent(
    gateway: tuple[httpx.AsyncClient, Rig],
) -> None:
    client, rig = gateway
    answer = await client.post(
        "/call/github__github_delete_comment",
        json={"arguments": {**OWNER_REPO, "comment_id": 1, "confirm": True}},
        headers=bearer("reader"),
    )
    assert answer.status_code == 403
    error = answer.json()["error"]
    assert (error["code"], error["details"]["code"]) == ("policy_denied", "policy/grant_denied")
    effect = json.loads(answer.headers["x-anvil-effect"])
    assert (effect["class"], effect["undo"]) == ("irreversible", None)
    assert rig.github_requests == []


async def test_a_staged_release_over_rest_is_a_draft_with_a_prefixed_promote(
    gateway: tuple[httpx.AsyncClient, Rig],
) -> None:
    client, _ = gateway
    answer = await client.post(
        "/call/github__github_create_release",
        json={"arguments": {**OWNER_REPO, "tag_name": "v1", "confirm": True}, "stage": True},
        headers=bearer("writer"),
    )
    assert answer.status_code == 200 and answer.json()["draft"] is True
    promote = json.loads(answer.headers["x-anvil-effect"])["staged"]["promote"]
    assert promote["tool"] == "github__github_update_release"


async def test_rest_answers_reads_bad_arguments_unknown_tools_and_missing_bearers(
    gateway: tuple[httpx.AsyncClient, Rig],
) -> None:
    client, _ = gateway
    listed = await client.post(
        "/call/github__github_list_issue", json={"arguments": OWNER_REPO}, headers=bearer("reader")
    )
    assert listed.status_code == 200 and isinstance(listed.json(), list)
    assert json.loads(listed.headers["x-anvil-effect"])["class"] == "read"
    bad = await client.post("/call/github_list_issue", json={"arguments": {"owner": 1}}, headers=bearer("open"))
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "validation_error")
    unknown = await client.post("/call/github__nope", json={}, headers=bearer("writer"))
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    anonymous = await client.post("/call/github__github_list_issue", json={})
    assert (anonymous.status_code, anonymous.json()["error"]["code"]) == (401, "invalid_request")
    assert anonymous.headers["www-authenticate"].startswith('Bearer realm="mcp"')


async def test_a_projection_in_the_body_narrows_the_answer_and_a_replay_gets_its_own_view_over_rest(
    gateway: tuple[httpx.AsyncClient, Rig],
) -> None:
    client, rig = gateway
    headers = {**bearer("writer"), "idempotency-key": "rest-view-1"}
    tool = "/call/github__github_create_comment"
    by_id = await client.post(tool, json={"arguments": {**COMMENT, "anvil_projection": "id"}}, headers=headers)
    by_body = await client.post(tool, json={"arguments": {**COMMENT, "anvil_projection": "{b: body}"}}, headers=headers)
    assert (by_id.status_code, by_id.json()) == (200, 100)
    assert (by_body.status_code, by_body.json()) == (200, {"b": "Looks good ✓"})
    assert by_body.headers["x-anvil-replayed"] == "true"
    assert json.loads(by_id.headers["x-anvil-effect"])["undo"]["arguments"]["comment_id"] == 100
    assert len([r for r in rig.github_requests if r["method"] == "POST"]) == 1
    assert all("anvil_projection" not in json.dumps(r) for r in rig.github_requests)


async def test_a_malformed_projection_over_rest_is_400_and_sends_nothing(
    gateway: tuple[httpx.AsyncClient, Rig],
) -> None:
    client, rig = gateway
    answer = await client.post(
        "/call/github__github_create_comment",
        json={"arguments": {**COMMENT, "anvil_projection": "[?id =="}},
        headers={**bearer("writer"), "idempotency-key": "rest-bad-1"},
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["details"]["code"]) == ("validation_error", "projection/invalid")
    assert rig.github_requests == []


async def test_a_projection_failing_after_a_rest_write_is_400_with_the_effect_header(
    gateway: tuple[httpx.AsyncClient, Rig],
) -> None:
    client, rig = gateway
    answer = await client.post(
        "/call/github__github_create_comment",
        json={"arguments": {**COMMENT, "anvil_projection": "abs(body)"}},
        headers=bearer("writer"),
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["details"]["code"] == "projection/failed"
    assert "Looks good" not in answer.text
    effect = json.loads(answer.headers["x-anvil-effect"])
    assert effect["undo"]["tool"] == "github__github_delete_comment"  # the write landed, and says how to undo it
    assert len(rig.github_state.comments) == 1


# --- the strict body parser: properties over arbitrary input -------------------------------------------

_scalars = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
)
_json = st.recursive(
    _scalars | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _json, max_size=5))
def test_every_well_formed_utf8_object_parses_back_to_itself(body: dict[str, Any]) -> None:
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    assert parse_body(data) == body


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512) | st.text(max_size=256).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_the_body_parser_only_ever_returns_an_object_or_raises_body_error(data: bytes) -> None:
    try:
        parsed = parse_body(data)
    except BodyError:
        return
    assert isinstance(parsed, dict)
    json.dumps(parsed, ensure_ascii=False).encode("utf-8")  # whatever parses can be sent on


@given(st.integers(min_value=MAX_BODY_DEPTH + 1, max_value=20_000))
@settings(max_examples=20, deadline=None)
def test_any_nesting_beyond_the_limit_is_refused(depth: int) -> None:
    with pytest.raises(BodyError):
        parse_body(b'{"a":' + b"[" * depth + b"]" * depth + b"}")


@pytest.mark.parametrize(
    "data",
    [b'{"a":1,"a":2}', b'{"a":"\\udc00"}', b'{"a":1e999}', b'{"a":-Infinity}', b'{"a":' + b"9" * 30 + b"}"],
)
def test_ambiguous_or_unsendable_json_is_refused(data: bytes) -> None:
    with pytest.raises(BodyError):
        parse_body(data)


async def test_a_report_too_large_for_the_header_travels_in_the_body() -> None:
    report = {"class": "read", "operation": "s.o.p", "lookup": {"arguments": {"q": "ü" * 2000}}, "replayed": True}
    client, _ = stub_client(CallResult(kind="success", data=[1], report=report))
    async with client:
        answer = await client.post("/call/tool", json={})
    assert len(answer.headers["x-anvil-effect"]) <= MAX_EFFECT_HEADER
    assert json.loads(answer.headers["x-anvil-effect"]) == {
        "class": "read",
        "operation": "s.o.p",
        "replayed": True,
        "truncated": True,
        "report": "body",
    }
    assert answer.headers["x-anvil-replayed"] == "true"
    assert answer.json() == {"result": [1], "_meta": {"effect": report}}


# --- the response budget over REST -------------------------------------------------------------------


async def test_a_list_over_the_budget_answers_the_cut_data_with_its_marker_in_a_header() -> None:
    document = catalog_document()
    big = {"object": "list", "data": item_list(4000), "has_more": True}
    upstream = Upstream(answers={"/items": big})
    keeper = MemoryAnswers()
    async with upstream.client() as http:
        fleet = Fleet([FleetBundle(id="catalog", document=document, context=catalog_context(http))], keeper=keeper)
        app = create_listener(fleet)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            answer = await client.post("/call/catalog_list_items", json={"arguments": {}})
    assert answer.status_code == 200
    view = answer.json()
    served = len(view["data"])
    assert 0 < served < 4000 and view["data"] == big["data"][:served] and view["has_more"] is True
    assert count_tokens(answer.text) <= 8000
    header = answer.headers[TRUNCATED_HEADER]
    assert header.isascii() and header.isprintable()
    marker = json.loads(header)
    assert marker["cuts"] == [{"path": "$.data", "served": served, "total": 4000, "unit": "items"}]
    assert marker["continue"] == {"starting_after": big["data"][served - 1]["id"]}
    kept = await keeper.read(marker["answer"], answer_owner(None))  # the link rides inside the marker
    assert kept is not None and json.loads(kept.body) == big
    assert "link" not in answer.headers and "x-anvil-effect" in answer.headers


async def test_a_marker_too_long_for_its_header_keeps_its_first_cut_and_drops_its_hints() -> None:
    marker = {
        "served_tokens": 10,
        "total_tokens": 99,
        "budget": 10,
        "cuts": [{"path": f"$.a{n}", "served": 0, "total": 5, "unit": "items"} for n in range(3)],
        "shortened": 0,
        "continue": {"cursor": "c" * 5000},
        "answer": None,
        "answer_bytes": 900,
    }
    client, _ = stub_client(CallResult(kind="success", data={"a0": []}, meta={TRUNCATED_META: marker}))
    async with client:
        answer = await client.post("/call/tool", json={})
    shown = json.loads(answer.headers[TRUNCATED_HEADER])
    assert len(answer.headers[TRUNCATED_HEADER]) <= MAX_EFFECT_HEADER
    assert shown["hints"] == "omitted" and "continue" not in shown and shown["cuts"] == marker["cuts"][:1]


async def test_a_list_at_the_page_cap_has_the_notice_in_a_header_and_an_error_has_neither() -> None:
    facts = {"items": 50, "path": "$.records", "max_page_size": 50, "next": {"offset": 50}}
    client, _ = stub_client(CallResult(kind="success", data={"records": []}, meta={PAGE_CAP_META: facts}))
    async with client:
        answer = await client.post("/call/tool", json={})
    assert json.loads(answer.headers[PAGE_CAP_HEADER]) == facts and TRUNCATED_HEADER not in answer.headers
    client, _ = stub_client(failing("not_found"))
    async with client:
        refused = await client.post("/call/tool", json={})
    assert PAGE_CAP_HEADER not in refused.headers and TRUNCATED_HEADER not in refused.headers
