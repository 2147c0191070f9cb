"""The outside attack review, one test per class of defect, through the real listener.

Every test serves the ``acme`` fixture bundle with the real fleet listener on a loopback socket and
points it at :class:`~tests.serve.raw_upstream.RawUpstream`, which records each request target byte
for byte as it arrived, so what an upstream really received is what is asserted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import pytest

from anvil.air.model import Document
from anvil.compiler import build
from anvil.ledger.base import Ledger, LedgerOptions
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import RuntimeContext
from anvil.runtime.credentials import credential_profile, expected_env
from anvil.serve.fleet import Fleet, FleetBundle
from anvil.serve.listener import create_listener
from anvil.serve.rest import MAX_EFFECT_HEADER
from tests.serve.raw_upstream import Answer, RawRequest, RawUpstream, serving

pytestmark = pytest.mark.anyio

ACME = Path(__file__).resolve().parent / "fixtures" / "acme"
TOKEN = "acme-token-1"
BASE_PATH = "/api/v3"


@pytest.fixture(scope="module")
def acme() -> Document:
    result = build(ACME / "openapi.yaml", manifest=ACME / "anvil.yaml", service_id="acme")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    return result.document


def token_variable(doc: Document) -> str:
    op = doc.operations[0]
    return expected_env(op.auth, credential_profile("default", op.auth))[0]


class Clock:
    """Wall-clock seconds that only move when told (the ledger's expiry clock)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Gate:
    """The listener's base URL, a client for it and the (first bundle's) upstream base URL."""

    base: str
    caller: httpx.AsyncClient
    upstream: str

    async def call(
        self, tool: str, arguments: dict[str, Any] | None = None, *, key: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = {"content-type": "application/json", **kwargs.pop("headers", {})}
        if key is not None:
            headers["idempotency-key"] = key
        if "content" not in kwargs:
            kwargs["content"] = json.dumps({"arguments": arguments or {}}).encode()
        return await self.caller.post(f"/call/{tool}", headers=headers, **kwargs)


@asynccontextmanager
async def listening(fleet: Fleet) -> AsyncIterator[Gate]:
    """``fleet`` behind the real listener (uvicorn on 127.0.0.1), and a client calling it."""
    bundle = fleet.bundles[0]
    with serving(create_listener(fleet)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as caller:
            yield Gate(base, caller, bundle.context.base_url)


@asynccontextmanager
async def gate(
    doc: Document,
    upstream: RawUpstream,
    *,
    ledger: Ledger | None = None,
    window: int = 300,
    retries: bool = False,
) -> AsyncIterator[Gate]:
    """The acme bundle behind the real listener, calling ``upstream`` (dev, one loopback host allowed)."""
    context = RuntimeContext(
        service_id=doc.service.id,
        base_url=upstream.url + BASE_PATH,
        client=upstream_client(),
        env="dev",
        allowed_hosts=("127.0.0.1",),
        credentials={token_variable(doc): TOKEN},
        ledger=ledger if ledger is not None else open_ledger("memory:"),
        retries=retries,
        derived_key_window_seconds=window,
    )
    async with listening(Fleet([FleetBundle(id="acme", document=doc, context=context)])) as g:
        yield g


def upstream_client() -> httpx.AsyncClient:
    """The gateway's upstream client: used only on the listener's own loop, so it pools nothing to close."""
    return httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))


def error_of(answer: httpx.Response) -> dict[str, Any]:
    body = answer.json()
    assert "Traceback" not in answer.text
    return dict(body["error"])


# --- 1. dot segments in path parameters -----------------------------------------------------------

MEMBER = {"org": "acme", "username": "bob", "confirm": True}


@pytest.mark.parametrize("value", ["..", ".", "../..", "..%2f..", "%2e%2e", "%2E%2e", ".%2E", "a/../b", "..;x", "%"])
@pytest.mark.parametrize("field", ["org", "username"])
async def test_a_path_parameter_never_leaves_its_segment(acme: Document, field: str, value: str) -> None:
    with RawUpstream() as upstream:
        async with gate(acme, upstream) as g:
            answer = await g.call("acme_remove_member", {**MEMBER, field: value})
            plan = await g.call("acme_remove_member", {**MEMBER, field: value, "anvil_dry_run": True})
    if value in ("..", "."):  # a whole dot segment would be collapsed by a client or the upstream
        assert answer.status_code == 400 and error_of(answer)["code"] == "validation_error"
        assert error_of(answer)["details"]["field"] == field
        assert upstream.requests == []
        return
    assert answer.status_code == 200
    (received,) = upstream.requests
    segments = {"org": "acme", "username": "bob", field: quote(value, safe="!~*'()")}
    expected = f"{BASE_PATH}/orgs/{segments['org']}/members/{segments['username']}"
    assert (received.method, received.target) == ("DELETE", expected)
    assert plan.status_code == 200 and plan.json()["url"] == upstream.url + expected  # the dry run shows the wire


@pytest.mark.parametrize("location", ["reason", "x_note", "session"])
async def test_dot_segments_in_query_header_and_cookie_inputs_leave_the_path_alone(
    acme: Document, location: str
) -> None:
    with RawUpstream() as upstream:
        async with gate(acme, upstream) as g:
            answer = await g.call("acme_remove_member", {**MEMBER, location: "../../.."})
    assert answer.status_code == 200
    (received,) = upstream.requests
    assert received.path == f"{BASE_PATH}/orgs/acme/members/bob"
    if location == "reason":
        assert received.target.endswith("?reason=..%2F..%2F..")


async def test_a_dot_segment_owner_cannot_escape_the_base_path_and_a_body_value_stays_in_the_body(
    acme: Document,
) -> None:
    with RawUpstream() as upstream:
        async with gate(acme, upstream) as g:
            escaped = await g.call("acme_create_label", {"owner": "..", "repo": "..", "name": "../.."})
            body_only = await g.call("acme_create_label", {"owner": "o", "repo": "r", "name": "../.."})
    assert escaped.status_code == 400 and error_of(escaped)["details"]["field"] == "owner"
    (received,) = upstream.requests
    assert received.target == f"{BASE_PATH}/repos/o/r/labels" and received.json() == {"name": "../.."}
    assert body_only.status_code == 200


# --- 2. a write the classifier reads as a search ---------------------------------------------------


async def test_a_search_named_post_with_a_required_key_is_a_write_under_the_ledger(acme: Document) -> None:
    op = acme.operation("acme.issues.search.query")
    assert op is not None and op.effect.kind == "mutation" and op.idempotency.mode == "required"

    def slow(request: RawRequest, count: int) -> Answer:
        import time

        time.sleep(0.2)  # keep the first call in flight while the others arrive
        return Answer(body=json.dumps({"ok": True, "n": count}).encode())

    answers: list[httpx.Response] = []
    with RawUpstream(slow) as upstream:
        async with gate(acme, upstream) as g:

            async def one() -> None:
                answers.append(await g.call("acme_query_issues_query", {"text": "x"}, key="same-16"))

            async with anyio.create_task_group() as group:
                for _ in range(16):
                    group.start_soon(one)
            tools = {tool["name"]: tool for tool in _listing(acme)}
    assert len(upstream.requests) == 1
    assert sorted({a.status_code for a in answers}) in ([200], [200, 409]) and len(answers) == 16
    assert tools["acme_query_issues_query"]["annotations"]["readOnlyHint"] is False
    assert tools["acme_search_issues_search"]["annotations"]["readOnlyHint"] is True


def _listing(doc: Document) -> list[dict[str, Any]]:
    from anvil.serve.gateway import Gateway

    context = RuntimeContext(service_id="acme", base_url="http://127.0.0.1", client=httpx.AsyncClient())
    return [dict(tool) for tool in Gateway(doc, context).tools]


def test_approving_a_post_that_is_a_read_only_by_its_name_warns(acme: Document) -> None:
    result = build(ACME / "openapi.yaml", manifest=ACME / "anvil.yaml", service_id="acme")
    warned = [d for d in result.diagnostics if d.code == "manifest/heuristic_read_approved"]
    assert [(d.severity, d.operation) for d in warned] == [("warning", "acme.issues.search.search")]


# --- 3. a repeated identical write is a replay the caller can see -----------------------------------


async def test_a_replay_says_so_and_a_derived_key_stops_replaying_after_its_window(acme: Document) -> None:
    clock = Clock()
    ledger = open_ledger("memory:", options=LedgerOptions(clock=clock))
    comment = {"body": "LGTM"}
    with RawUpstream() as upstream:
        async with gate(acme, upstream, ledger=ledger, window=120) as g:
            first = await g.call("acme_create_comment", comment)
            again = await g.call("acme_create_comment", comment)
            clock.now += 121
            later = await g.call("acme_create_comment", comment)
            keyed = await g.call("acme_create_comment", {"body": "kept"}, key="caller-key-1")
            clock.now += 3600
            keyed_again = await g.call("acme_create_comment", {"body": "kept"}, key="caller-key-1")
    assert first.status_code == 200 and "x-anvil-replayed" not in first.headers
    assert "replayed" not in json.loads(first.headers["x-anvil-effect"])
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers["x-anvil-replayed"] == "true"
    assert json.loads(again.headers["x-anvil-effect"])["replayed"] is True
    assert "x-anvil-replayed" not in later.headers and later.json()["n"] == 2  # a new effect upstream
    assert keyed_again.headers["x-anvil-replayed"] == "true" and keyed_again.json() == keyed.json()
    assert len(upstream.requests) == 3


# --- 4. the answer to a committed write is never lost -----------------------------------------------


async def test_a_huge_effect_report_is_carried_in_the_body_behind_a_bounded_header(acme: Document) -> None:
    name = "é" * 2000  # echoed into the undo arguments: about 12 KB once escaped
    with RawUpstream(lambda request, count: Answer(status=201, body=b'{"ok":true}')) as upstream:
        async with gate(acme, upstream) as g:
            answer = await g.call("acme_create_label", {"owner": "o", "repo": "r", "name": name})
            small = await g.call("acme_create_label", {"owner": "o", "repo": "r", "name": "bug"})
    header = answer.headers["x-anvil-effect"]
    assert answer.status_code == 200 and len(header) <= MAX_EFFECT_HEADER
    assert json.loads(header) == {
        "class": "reversible",
        "operation": "acme.labels.create",
        "truncated": True,
        "report": "body",
    }
    body = answer.json()
    assert body["result"] == {"ok": True}
    assert body["_meta"]["effect"]["undo"]["arguments"]["name"] == name
    assert small.json() == {"ok": True} and json.loads(small.headers["x-anvil-effect"])["undo"] is not None


async def test_an_answer_over_the_replay_ceiling_reaches_its_caller_and_keeps_the_key(acme: Document) -> None:
    huge = json.dumps({"blob": "x" * 900_000}).encode()
    with RawUpstream(lambda request, count: Answer(status=201, body=huge)) as upstream:
        async with gate(acme, upstream) as g:
            line = {"entry_id": "e1", "amount": 5}
            answer = await g.call("acme_create_line", line, key="big-1")
            again = await g.call("acme_create_line", line, key="big-1")
    # It reaches its caller, cut to the response budget like any answer over it (the long string shortened).
    assert answer.status_code == 200 and answer.json()["blob"] == "x" * 2000 + "…"
    assert json.loads(answer.headers["x-anvil-truncated"])["shortened"] == 1
    assert "replay ceiling" in json.loads(answer.headers["x-anvil-effect"])["replay_unavailable"]
    assert again.status_code == 409 and error_of(again)["code"] == "conflict"
    assert len(upstream.requests) == 1


# --- 5. uncertain upstream answers keep the reservation ----------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 504, 408, None])
async def test_an_uncertain_answer_keeps_the_key_and_is_never_safe_to_retry(acme: Document, status: int | None) -> None:
    def answer(request: RawRequest, count: int) -> Answer | None:
        return None if status is None else Answer(status=status, body=b'{"message":"boom"}')

    with RawUpstream(answer) as upstream:
        async with gate(acme, upstream) as g:
            line = {"entry_id": "e1", "amount": 5}
            first = await g.call("acme_create_line", line, key="unsure-1")
            again = await g.call("acme_create_line", line, key="unsure-1")
    error = error_of(first)
    assert error["safe_to_retry"] is False
    assert error["details"]["upstream_outcome"] == "possibly_committed"
    assert error_of(again)["code"] == "conflict" and len(upstream.requests) == 1


@pytest.mark.parametrize(("status", "code"), [(503, "upstream_unavailable"), (400, "validation_error")])
async def test_an_answer_proving_nothing_happened_releases_the_key(acme: Document, status: int, code: str) -> None:
    with RawUpstream(lambda request, count: Answer(status=status, body=b"{}")) as upstream:
        async with gate(acme, upstream) as g:
            line = {"entry_id": "e1", "amount": 5}
            first = await g.call("acme_create_line", line, key="sure-1")
            again = await g.call("acme_create_line", line, key="sure-1")
    assert error_of(first)["code"] == code and "upstream_outcome" not in error_of(first).get("details", {})
    assert error_of(again)["code"] == code and len(upstream.requests) == 2


# --- 6. every malformed body is a coded 400 ---------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b'{"arguments":{"entry_id":"e","amount":1,"memo":' + b"[" * depth + b"]" * depth + b"}}"


BAD_BODIES: dict[str, bytes] = {
    "deep": _nested(10_000),
    "deeper_than_the_limit": _nested(65),
    "lone_surrogate": b'{"arguments":{"entry_id":"\\ud800","amount":1}}',
    "duplicate_key": b'{"arguments":{"entry_id":"e","amount":1,"amount":4000}}',
    "utf16": '{"arguments":{"entry_id":"e","amount":1}}'.encode("utf-16"),
    "bom": b'\xef\xbb\xbf{"arguments":{}}',
    "latin1": b'{"arguments":{"entry_id":"\xe9","amount":1}}',
    "float_for_integer": b'{"arguments":{"entry_id":"e","amount":1.0}}',
    "overflowing_number": b'{"arguments":{"entry_id":"e","amount":1e400}}',
    "huge_integer": b'{"arguments":{"entry_id":"e","amount":1' + b"0" * 400 + b"}}",
    "nan": b'{"arguments":{"entry_id":"e","amount":NaN}}',
    "not_an_object": b"[1,2]",
    "truncated": b'{"arguments":{',
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
async def test_every_malformed_body_is_a_coded_400_that_reaches_no_upstream(acme: Document, name: str) -> None:
    with RawUpstream() as upstream:
        async with gate(acme, upstream) as g:
            answer = await g.call("acme_create_line", key="body-1", content=BAD_BODIES[name])
    assert answer.status_code == 400 and error_of(answer)["code"] == "validation_error"
    assert upstream.requests == []


# --- 7. credentials never cross bundles ---------------------------------------------------------------


async def test_each_bundle_sends_its_own_token_only_to_its_own_upstream(acme: Document) -> None:
    from anvil.cli.serve_config import bundle_settings
    from anvil.errors import ConfigError

    plain = token_variable(acme)
    with RawUpstream() as alpha_up, RawUpstream() as beta_up:
        environ = {
            "ANVIL_ENV": "dev",
            "ANVIL_BASE_URL_ALPHA": alpha_up.url + BASE_PATH,
            "ANVIL_BASE_URL_BETA": beta_up.url.replace("127.0.0.1", "localhost") + BASE_PATH,
            plain: "shared-token",
        }
        pair = [("alpha", acme), ("beta", acme)]
        with pytest.raises(ConfigError) as refused:
            bundle_settings(environ, pair, base_url=None)
        assert refused.value.code == "fleet/ambiguous_credential"
        twin = {
            "alpha": plain.replace("ANVIL_DEFAULT_", "ANVIL_DEFAULT_ALPHA_"),
            "beta": plain.replace("ANVIL_DEFAULT_", "ANVIL_DEFAULT_BETA_"),
        }
        environ |= {twin["alpha"]: "alpha-token", twin["beta"]: "beta-token"}
        settings = bundle_settings(environ, pair, base_url=None)
        assert [s.allowed_hosts for s in settings] == [("127.0.0.1",), ("localhost",)]
        bundles = [
            FleetBundle(
                id=bundle_id,
                document=acme,
                context=RuntimeContext(
                    service_id="acme",
                    base_url=found.base_url,
                    client=upstream_client(),
                    env="dev",
                    allowed_hosts=found.allowed_hosts,
                    credentials=found.credentials,
                    ledger=open_ledger("memory:"),
                ),
            )
            for (bundle_id, _), found in zip(pair, settings, strict=True)
        ]
        async with listening(Fleet(bundles)) as g:
            escape = {**MEMBER, "org": f"@localhost:{beta_up.url.rsplit(':', 1)[1]}"}
            alpha = await g.call("alpha__acme_remove_member", escape)
            beta = await g.call("beta__acme_remove_member", MEMBER)
    assert alpha.status_code == 200 and beta.status_code == 200
    assert [r.headers["authorization"] for r in alpha_up.requests] == ["Bearer alpha-token"]
    assert [r.headers["authorization"] for r in beta_up.requests] == ["Bearer beta-token"]
    assert alpha_up.requests[0].target.startswith(f"{BASE_PATH}/orgs/%40localhost%3A")


# --- 10. one upstream spelled two ways shares its keys ------------------------------------------------


async def test_two_gateways_spelling_one_upstream_differently_share_keys_and_print_one_scope(
    acme: Document,
) -> None:
    from anvil.cli.serve import ledger_scope_lines

    ledger = open_ledger("memory:")
    line = {"entry_id": "e1", "amount": 5}
    with RawUpstream() as upstream:
        respelled: list[Callable[[str], str]] = [
            lambda url: url + BASE_PATH,
            lambda url: url.replace("http://127.0.0.1", "HTTP://LOCALHOST") + BASE_PATH + "/",
        ]
        answers = []
        scopes = []
        for spell in respelled:
            context = RuntimeContext(
                service_id="acme",
                base_url=spell(upstream.url),
                client=upstream_client(),
                env="dev",
                allowed_hosts=("127.0.0.1", "localhost"),
                credentials={token_variable(acme): TOKEN},
                ledger=ledger,
            )
            fleet = Fleet([FleetBundle(id="acme", document=acme, context=context)])
            scopes.append(ledger_scope_lines(fleet))
            async with listening(fleet) as g:
                answers.append(await g.call("acme_create_line", line, key="spell-1"))
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[1].headers["x-anvil-replayed"] == "true" and len(upstream.requests) == 1
    assert scopes[0] == scopes[1] and "digest sha256:" in scopes[0][0]
    elsewhere = RuntimeContext(
        service_id="acme", base_url="http://127.0.0.1:1/api/v3", client=upstream_client(), env="dev"
    )
    other = ledger_scope_lines(Fleet([FleetBundle(id="acme", document=acme, context=elsewhere)]))
    assert other[0].rsplit(" ", 1)[1] != scopes[0][0].rsplit(" ", 1)[1]
