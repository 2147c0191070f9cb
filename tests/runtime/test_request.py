"""Request building: parameter locations, key carriers, key validation and the redacted dry-run plan."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import time
from urllib.parse import unquote

import pytest
from hypothesis import given, settings, strategies as st
from runtime_support import (
    PAYMENT_ID,
    Captured,
    ContextFactory,
    Scripted,
    UpstreamState,
    body_carrier_write,
    form_carrier_write,
    keyed_write,
    nested_body_carrier_write,
    operation,
    path_carrier_write,
    query_carrier_write,
    read_op,
    unkeyed_write,
)
from starlette.requests import Request, cookie_parser

from anvil.air.model import ApiKeyCarrier, Auth, AuthProvider, BodyField, Operation, Param, RequestBody, Server
from anvil.ledger.base import Ledger
from anvil.runtime.context import CallOptions
from anvil.runtime.executor import execute
from anvil.runtime.request import BuildError, build_request, check_target, prepare, render_path

pytestmark = pytest.mark.anyio

REFUND = {"payment_id": "pay_1", "amount": 2500}


async def test_header_carrier_sends_exactly_one_key_header_in_the_manifest_spelling(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    lower = Param(name="idempotency-key", in_="header", schema={"type": "string"})
    op = dataclasses.replace(keyed_write(), input=dataclasses.replace(keyed_write().input, params=(PAYMENT_ID, lower)))
    outcome = await execute(op, REFUND, make_context(), CallOptions(idempotency_key="hdr-1"))
    assert outcome.kind == "success"
    raw = upstream.calls[0]
    assert raw.headers["idempotency-key"] == "hdr-1"
    assert json.loads(raw.body) == {"amount": 2500} and raw.path == "/payments/pay_1/refunds"


async def test_query_carrier_sets_the_declared_parameter(make_context: ContextFactory, upstream: UpstreamState) -> None:
    outcome = await execute(
        query_carrier_write(), {"payment_id": "p 1"}, make_context(), CallOptions(idempotency_key="q-1")
    )
    assert outcome.kind == "success" and outcome.idempotency_key == "q-1"
    assert upstream.calls[0].path == "/payments/p%201/captures" and upstream.calls[0].query == "dedupe=q-1"


async def test_path_carrier_url_encodes_the_key(make_context: ContextFactory, upstream: UpstreamState) -> None:
    outcome = await execute(path_carrier_write(), {"amount": 5}, make_context(), CallOptions(idempotency_key="a/b?c"))
    assert outcome.kind == "success"
    assert upstream.calls[0].method == "PUT" and upstream.calls[0].path == "/orders/a%2Fb%3Fc"


async def test_body_field_carrier_puts_the_key_in_the_body(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(body_carrier_write(), {"amount": 7, "idempotency_key": "b-1"}, make_context())
    assert outcome.kind == "success"
    assert json.loads(upstream.calls[0].body) == {"amount": 7, "request_id": "b-1"}


async def test_nested_body_carrier_is_injected_without_mutating_the_callers_input(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    arguments = {"body": {"amount": 3, "meta": {"note": "n"}, "tags": ["a"]}}
    before = copy.deepcopy(arguments)
    outcome = await execute(nested_body_carrier_write(), arguments, make_context(), CallOptions(idempotency_key="n-1"))
    assert outcome.kind == "success" and arguments == before
    sent = json.loads(upstream.calls[0].body)
    assert sent == {"amount": 3, "meta": {"note": "n", "idempotency": "n-1"}, "tags": ["a"]}


async def test_a_key_inside_the_whole_body_counts_as_the_callers_key(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    arguments = {"body": {"amount": 3, "meta": {"idempotency": "inner-1"}}}
    outcome = await execute(nested_body_carrier_write(), arguments, make_context())
    assert outcome.kind == "success" and outcome.idempotency_key == "inner-1"
    conflicting = await execute(
        nested_body_carrier_write(), arguments, make_context(), CallOptions(idempotency_key="x")
    )
    assert conflicting.code == "validation_error"


async def test_a_whole_body_carrier_needs_an_object_body(make_context: ContextFactory, upstream: UpstreamState) -> None:
    outcome = await execute(
        nested_body_carrier_write(), {"body": [1, 2]}, make_context(), CallOptions(idempotency_key="k")
    )
    assert outcome.code == "validation_error"
    assert outcome.envelope is not None and outcome.envelope.details == {"field": "body"}


@pytest.mark.parametrize(
    "key",
    ["", " ", "contains space", "line\nbreak", "tab\tkey", "\x7f", "non-ascii-ü", "a" * 256],
    ids=["empty", "space", "inner-space", "newline", "tab", "del", "non-ascii", "256-bytes"],
)
async def test_a_non_portable_key_is_refused_with_the_key_rule_in_details(
    key: str, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    for arguments, options in (
        (REFUND, CallOptions(idempotency_key=key)),
        ({**REFUND, "idempotency_key": key}, CallOptions()),
    ):
        outcome = await execute(keyed_write(), arguments, make_context(), options)
        assert outcome.code == "validation_error"
        assert outcome.envelope is not None
        assert outcome.envelope.details == {"field": "idempotency_key", "encoding": "visible_ascii", "max_bytes": 255}
        assert key not in outcome.envelope.message or not key.strip()
    assert upstream.count == 0


async def test_a_255_byte_key_is_accepted(make_context: ContextFactory, upstream: UpstreamState) -> None:
    options = CallOptions(idempotency_key="a" * 255, dry_run=True)
    outcome = await execute(keyed_write(), REFUND, make_context(), options)
    assert outcome.kind == "dry_run" and outcome.plan is not None and outcome.plan["idempotencyKeyPresent"] is True


async def test_two_different_keys_are_refused(make_context: ContextFactory, upstream: UpstreamState) -> None:
    options = CallOptions(idempotency_key="one")
    outcome = await execute(keyed_write(), {**REFUND, "idempotency_key": "two"}, make_context(), options)
    assert outcome.code == "validation_error" and upstream.count == 0
    same = await execute(keyed_write(), {**REFUND, "idempotency_key": "one"}, make_context(), options)
    assert same.kind == "success"


async def test_a_key_for_an_operation_without_a_carrier_is_refused(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(unkeyed_write(), REFUND, make_context(), CallOptions(idempotency_key="merchant-secret"))
    assert outcome.code == "validation_error"
    assert outcome.envelope is not None
    assert outcome.envelope.details == {
        "field": "idempotency_key",
        "declared_mode": "none",
        "accepted_modes": ["required", "key_supported"],
    }
    assert "merchant-secret" not in json.dumps(outcome.envelope.to_json())
    assert upstream.count == 0


async def test_a_business_field_named_idempotency_key_stays_business_input(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    body = RequestBody(
        schema={"type": "object", "properties": {"idempotency_key": {"type": "string"}}},
        projection="fields",
        fields=(BodyField(name="idempotency_key", schema={"type": "string"}),),
    )
    op = operation("payments.tag.create", method="post", path="/tags", body=body)
    outcome = await execute(op, {"idempotency_key": "plain value"}, make_context())
    assert outcome.kind == "success" and outcome.idempotency_key is None
    assert json.loads(upstream.calls[0].body) == {"idempotency_key": "plain value"}


async def test_query_header_and_cookie_parameters_are_serialized(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    params = (
        Param(name="limit", in_="query", schema={"type": "integer"}),
        Param(name="expand", in_="query", schema={"type": "array"}),
        Param(name="active", in_="query", schema={"type": "boolean"}),
        Param(name="X-Trace", agent_name="trace", in_="header"),
        Param(name="session_hint", in_="cookie"),
        Param(name="lang", in_="cookie"),
    )
    op = operation("payments.payment.list", method="get", path="/payments", kind="read", params=params)
    arguments = {"limit": 10, "expand": ["a", "b c"], "active": True, "trace": "t-1", "session_hint": "s", "lang": "en"}
    outcome = await execute(op, arguments, make_context())
    assert outcome.kind == "success"
    raw = upstream.calls[0]
    assert raw.query == "limit=10&expand=a&expand=b+c&active=true"
    assert raw.headers["x-trace"] == "t-1" and raw.headers["cookie"] == "session_hint=s; lang=en"
    assert raw.headers["accept"] == "application/json" and raw.body == b""


@pytest.mark.parametrize(
    "value",
    ["a\r\nInjected: 1", "a\nb", "a\x00", "a\x0bb", "a\x0cb", "a\x1bb", "a\x7fb", "a\x85b", "a\x9fb"],
    ids=["crlf", "lf", "nul", "vt", "ff", "esc", "del", "nel", "c1-last"],
)
async def test_a_header_value_with_a_line_break_or_any_control_character_is_refused(
    make_context: ContextFactory, upstream: UpstreamState, value: str
) -> None:
    op = operation(
        "payments.payment.list",
        method="get",
        path="/payments",
        kind="read",
        params=(Param(name="X-Trace", agent_name="trace", in_="header"),),
    )
    outcome = await execute(op, {"trace": value}, make_context())
    assert outcome.code == "validation_error"
    assert outcome.envelope is not None and outcome.envelope.details == {"field": "trace"}
    assert upstream.count == 0


def _cookie_op(*names: str) -> Operation:
    params = tuple(Param(name=name, in_="cookie") for name in names)
    return operation("payments.payment.list", method="get", path="/payments", kind="read", params=params)


async def test_a_cookie_value_that_spells_other_cookies_stays_in_its_own_cookie(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    sneaky = "dark; session=ADMIN; lang=en"
    outcome = await execute(_cookie_op("theme", "lang"), {"theme": sneaky, "lang": "fr"}, make_context())
    assert outcome.kind == "success"
    header = upstream.calls[0].headers["cookie"]
    assert header == "theme=dark%3B%20session=ADMIN%3B%20lang=en; lang=fr"  # "=" is a cookie-octet
    parsed = cookie_parser(header)  # the upstream's view (Starlette's parser)
    assert set(parsed) == {"theme", "lang"} and unquote(parsed["theme"]) == sneaky and parsed["lang"] == "fr"


_COOKIE_OCTETS = frozenset(chr(c) for c in [0x21, *range(0x23, 0x2C), *range(0x2D, 0x3B), *range(0x3C, 0x5C)]) | (
    frozenset(chr(c) for c in range(0x5D, 0x7F))
)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    st.text(alphabet=st.characters(exclude_categories=["Cs"])),
)
def test_any_cookie_value_is_sent_as_cookie_octets_and_decodes_back_to_itself(first: str, second: str) -> None:
    request = build_request(prepare(_cookie_op("a", "b")), {"a": first, "b": second}, _BASE, None)
    header = request.header("cookie")
    assert header is not None
    pairs = [pair.partition("=") for pair in header.split("; ")]
    assert [name for name, _, _ in pairs] == ["a", "b"]
    assert all(set(value) <= _COOKIE_OCTETS for _, _, value in pairs)
    assert [unquote(value) for _, _, value in pairs] == [first, second]


async def test_the_dry_run_plan_redacts_credential_headers_and_reports_the_posture(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    api_key = Param(name="X-API-Key", agent_name="api_key_hint", in_="header")
    base = keyed_write(confirm=True)
    op = dataclasses.replace(
        base,
        input=dataclasses.replace(base.input, params=(PAYMENT_ID, api_key)),
        auth=Auth(type="oauth2_client_credentials"),
    )
    arguments = {**REFUND, "api_key_hint": "leaky", "confirm": True}
    context = make_context(credentials={"ANVIL_DEFAULT_TOKEN": "tok-never-shown"})
    outcome = await execute(op, arguments, context, CallOptions(idempotency_key="ref-001", dry_run=True))
    assert outcome.kind == "dry_run" and upstream.count == 0
    assert outcome.plan == {
        "operation": "payments.refund.create",
        "method": "POST",
        "url": f"{context.base_url}/payments/pay_1/refunds",
        "headers": {
            "accept": "application/json",
            "X-API-Key": "***",
            "Idempotency-Key": "ref-001",
            "content-type": "application/json",
        },
        "body": {"amount": 2500},
        "idempotencyKeyPresent": True,
        "retryPlan": {"enabled": True, "maxAttempts": 3},
        "confirmationRequired": True,
    }
    assert "tok-never-shown" not in json.dumps(outcome.plan)


async def test_the_dry_run_plan_redacts_every_factor_of_a_composite_header_and_query(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    def key(where: str, name: str) -> Auth:
        return Auth(type="api_key", provider=AuthProvider(api_key=ApiKeyCarrier(in_=where, name=name)))

    params = (
        PAYMENT_ID,
        Param(name="X-Client-Id", agent_name="client_hint", in_="header"),
        Param(name="X-Secret", agent_name="secret_hint", in_="header"),
        Param(name="tk", agent_name="tenant_hint", in_="query"),
    )
    base = keyed_write(confirm=True)
    composite = Auth(
        type="composite", factors=(key("header", "X-Client-Id"), key("header", "X-Secret"), key("query", "tk"))
    )
    op = dataclasses.replace(base, input=dataclasses.replace(base.input, params=params), auth=composite)
    arguments = {**REFUND, "client_hint": "c-leak", "secret_hint": "s-leak", "tenant_hint": "t-leak", "confirm": True}
    outcome = await execute(op, arguments, make_context(), CallOptions(idempotency_key="ref-002", dry_run=True))
    assert outcome.kind == "dry_run" and outcome.plan is not None and upstream.count == 0
    assert outcome.plan["headers"]["X-Client-Id"] == "***" and outcome.plan["headers"]["X-Secret"] == "***"
    assert str(outcome.plan["url"]).endswith("?tk=%2A%2A%2A")
    assert not any(leak in json.dumps(outcome.plan) for leak in ("c-leak", "s-leak", "t-leak"))


async def test_a_hostile_key_against_a_slug_pattern_on_its_carrier_is_refused_at_once(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    # the carrier's pattern is matched in linear time: with re, a 40-character key froze the loop for hours
    base = body_carrier_write()
    assert base.input.body is not None
    slug = {"type": "string", "pattern": r"^([a-z0-9]+-?)+$"}
    fields = tuple(
        dataclasses.replace(field, schema=slug) if field.name == "request_id" else field
        for field in base.input.body.fields
    )
    body = dataclasses.replace(base.input.body, fields=fields, schema={**base.input.body.schema})
    body.schema["properties"] = {**body.schema["properties"], "request_id": slug}
    op = dataclasses.replace(base, input=dataclasses.replace(base.input, body=body))
    started = time.perf_counter()
    refused = await execute(op, {"amount": 1}, make_context(), CallOptions(idempotency_key="a" * 40 + "!"))
    assert time.perf_counter() - started < 0.5
    assert refused.envelope is not None and refused.envelope.code == "validation_error" and upstream.count == 0
    assert "carrier constraints" in refused.envelope.message
    sent = await execute(op, {"amount": 1}, make_context(), CallOptions(idempotency_key="transfer-key-1"))
    assert sent.kind == "success" and upstream.count == 1


# --- form bodies: the key is one more top-level field, forwarded and ledger-keyed as in a JSON body -----

PAYMENT = {"account_sid": "AC1", "amount": 1500, "to": "+1 555 0100"}
URLENCODED = "application/x-www-form-urlencoded"


async def _parsed_form(captured: Captured) -> list[tuple[str, str]]:
    """The form as Starlette (python-multipart) reads it: a parser independent of the encoder."""

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": captured.body, "more_body": False}

    headers = [(b"content-type", captured.headers["content-type"].encode("latin-1"))]
    form = await Request({"type": "http", "method": "POST", "headers": headers}, receive).form()
    return [(name, str(value)) for name, value in form.multi_items()]


@pytest.mark.parametrize("media", [URLENCODED, "multipart/form-data"])
async def test_a_form_body_carrier_sends_the_key_as_one_more_field_of_a_real_form(
    media: str, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(form_carrier_write(media), PAYMENT, make_context(), CallOptions(idempotency_key="pay-k1"))
    assert outcome.kind == "success" and outcome.idempotency_key == "pay-k1"
    sent = upstream.calls[0]
    assert sent.path == "/Accounts/AC1/Payments.json"
    assert sent.headers["content-type"].split(";")[0] == media
    assert await _parsed_form(sent) == [("Amount", "1500"), ("To", "+1 555 0100"), ("IdempotencyKey", "pay-k1")]


def _old_boundary_chain(names: str, size: int) -> str:
    """The boundaries the old field-name derivation tried in turn, joined: the reviewer's hostile value."""
    digest = hashlib.sha256(names.encode("utf-8"))
    chain: list[str] = []
    while sum(map(len, chain)) < size:
        chain.append("anvil-" + digest.hexdigest()[:32])
        digest.update(b"\0")
    return "".join(chain)


async def test_a_multipart_retry_sends_the_same_bytes_and_a_hostile_value_costs_linear_time(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = form_carrier_write("multipart/form-data")
    # the chain of boundaries the field names led to, just under the 1 MiB part Starlette reads back
    hostile = {**PAYMENT, "to": _old_boundary_chain("Amount\0To\0IdempotencyKey", (1 << 20) - 64)}
    started = time.perf_counter()
    planned = await execute(op, hostile, make_context(), CallOptions(idempotency_key="pay-k9", dry_run=True))
    assert planned.kind == "dry_run" and time.perf_counter() - started < 1.0 and upstream.count == 0
    upstream.answer(Scripted(status=503))  # the first attempt fails; the retry of the same reservation follows
    outcome = await execute(op, hostile, make_context(), CallOptions(idempotency_key="pay-k9"))
    assert outcome.kind == "success" and upstream.count == 2
    first, retry = upstream.calls
    assert first.body == retry.body and first.headers["content-type"] == retry.headers["content-type"]
    assert await _parsed_form(retry) == [("Amount", "1500"), ("To", hostile["to"]), ("IdempotencyKey", "pay-k9")]


async def test_a_urlencoded_body_is_the_form_pairs_and_not_json(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    await execute(form_carrier_write(), PAYMENT, make_context(), CallOptions(idempotency_key="pay-k2"))
    assert upstream.calls[0].body == b"Amount=1500&To=%2B1+555+0100&IdempotencyKey=pay-k2"


async def test_a_form_key_replays_the_same_request_and_refuses_another_like_a_json_body_key(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    context = make_context(ledger=ledger)
    op = form_carrier_write()
    first = await execute(op, PAYMENT, context, CallOptions(idempotency_key="pay-k3"))
    again = await execute(op, dict(reversed(PAYMENT.items())), context, CallOptions(idempotency_key="pay-k3"))
    other = await execute(op, {**PAYMENT, "amount": 1600}, context, CallOptions(idempotency_key="pay-k3"))
    assert first.kind == "success" and again.replayed and upstream.count == 1
    assert other.envelope is not None and other.envelope.code == "conflict"


async def test_a_derived_form_key_is_the_fingerprint_of_the_request_without_the_key_field(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    context = make_context(ledger=ledger)
    form = await execute(form_carrier_write(derive=True), PAYMENT, context)
    json_op = dataclasses.replace(
        form_carrier_write(derive=True),
        input=dataclasses.replace(
            form_carrier_write().input,
            body=dataclasses.replace(form_carrier_write().input.body, content_type="application/json"),  # type: ignore[arg-type]
        ),
    )
    as_json = await execute(json_op, PAYMENT, make_context(), CallOptions(dry_run=True))
    assert form.idempotency_key is not None and form.idempotency_key.startswith("anvil-")
    replay = await execute(form_carrier_write(derive=True), PAYMENT, context)
    assert replay.replayed and upstream.count == 1 and replay.idempotency_key == form.idempotency_key
    # without a reservation the request's own derived key goes upstream: the same for either encoding
    unreserved = await execute(form_carrier_write(derive=True), PAYMENT, make_context())
    assert as_json.plan is not None and as_json.plan["body"]["IdempotencyKey"] == unreserved.idempotency_key  # type: ignore[index]


async def test_the_dry_run_plan_of_a_form_body_shows_its_fields_and_form_content_type(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    context = make_context()
    outcome = await execute(form_carrier_write(), PAYMENT, context, CallOptions(idempotency_key="pay-k4", dry_run=True))
    assert outcome.kind == "dry_run" and upstream.count == 0
    assert outcome.plan is not None
    assert outcome.plan["url"] == f"{context.base_url}/Accounts/AC1/Payments.json"
    assert outcome.plan["headers"] == {"accept": "application/json", "content-type": URLENCODED}
    assert outcome.plan["body"] == {"Amount": 1500, "To": "+1 555 0100", "IdempotencyKey": "pay-k4"}


# --- servers: an operation that declares its own server is sent there ---------------------------------


def _uploads(server: str) -> Operation:
    """A read whose path item declares its own server (an upload host), with a template variable."""
    return dataclasses.replace(
        read_op(), servers=(Server(url=server, variables={"area": {"default": "upload-api", "enum": ["upload-api"]}}),)
    )


async def test_an_operation_with_its_own_server_is_sent_there_and_the_dry_run_shows_that_url(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    context = make_context(base_url=upstream_url + "/main-api")
    op = _uploads(upstream_url + "/{area}")
    outcome = await execute(op, {"payment_id": "p1"}, context)
    plan = await execute(op, {"payment_id": "p1"}, context, CallOptions(dry_run=True))
    assert outcome.kind == "success" and [call.path for call in upstream.calls] == ["/upload-api/payments/p1"]
    assert plan.plan is not None and plan.plan["url"] == f"{upstream_url}/upload-api/payments/p1"
    await execute(read_op(), {"payment_id": "p1"}, context)
    assert upstream.calls[-1].path == "/main-api/payments/p1"  # an operation without one uses the service's


async def test_a_server_the_operator_re_pointed_is_called_at_the_operators_url(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    declared = "https://upload.payments.example/upload-api"
    context = make_context(server_urls={declared: upstream_url + "/sandbox"})
    outcome = await execute(_uploads("https://upload.payments.example/{area}"), {"payment_id": "p2"}, context)
    assert outcome.kind == "success" and upstream.calls[0].path == "/sandbox/payments/p2"


# --- path confinement: a path value never leaves its segment (properties of the encoding) -------------

_TEMPLATE = "/orgs/{org}/members/{username}"
_BASE = "https://api.example.com/api/v3"


@settings(max_examples=400, deadline=None)
@given(
    st.text(min_size=1).filter(lambda v: v not in (".", "..")),
    st.text(min_size=1).filter(lambda v: v not in (".", "..")),
)
def test_any_path_value_stays_in_its_own_segment(org: str, username: str) -> None:
    try:
        org.encode("utf-8"), username.encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate cannot be sent at all (build_request refuses it)
    path = render_path(_TEMPLATE, {"org": ("org", org), "username": ("username", username)})
    check_target(_BASE + path, _BASE, path)  # the client sends exactly this path to exactly this origin
    segments = path.split("/")
    assert len(segments) == 5 and segments[1] == "orgs" and segments[3] == "members"
    assert [unquote(segments[2]), unquote(segments[4])] == [org, username]
    assert all(segment not in (".", "..") for segment in segments)


@given(st.sampled_from([".", ".."]), st.sampled_from(["org", "username"]))
def test_a_dot_segment_value_is_refused_naming_its_field(value: str, field: str) -> None:
    values = {"org": ("org", "acme"), "username": ("username", "bob")}
    values[field] = (field, value)
    with pytest.raises(BuildError) as refused:
        render_path(_TEMPLATE, values)
    assert refused.value.field == field


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="./%2eE", min_size=1, max_size=8), st.text(alphabet="./%2eE", max_size=8))
def test_two_values_in_one_segment_cannot_make_a_dot_segment_together(first: str, second: str) -> None:
    template = "/files/{a}{b}/raw"
    try:
        path = render_path(template, {"a": ("a", first), "b": ("b", second)})
    except BuildError:
        assert first + second in (".", "..") or not first + second
        return
    check_target(_BASE + path, _BASE, path)
    assert path.split("/")[2] not in (".", "..") and path.startswith("/files/") and path.endswith("/raw")


def test_a_template_whose_url_the_client_would_rewrite_is_refused() -> None:
    for base in (_BASE, "https://api.example.com"):
        for template in ("/a/../b", "/a/./b", "@evil.example/x"):
            path = render_path(template, {})
            if template.startswith("@") and base == _BASE:
                continue  # after a base path, '@' is only a path character
            with pytest.raises(BuildError):
                check_target(base + path, base, path)


async def test_a_dot_segment_idempotency_key_in_a_path_carrier_is_refused(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(path_carrier_write(), {"amount": 5}, make_context(), CallOptions(idempotency_key=".."))
    assert outcome.code == "validation_error" and upstream.calls == []


async def test_a_lone_surrogate_in_any_input_is_a_validation_error_naming_it(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(unkeyed_write(), {"payment_id": "p", "amount": "\ud800"}, make_context())
    assert outcome.code == "validation_error" and upstream.calls == []
    assert outcome.envelope is not None and outcome.envelope.details == {"field": "amount"}
    path = await execute(unkeyed_write(), {"payment_id": "\udfff", "amount": 1}, make_context())
    assert path.code == "validation_error" and path.envelope is not None
    assert path.envelope.details == {"field": "payment_id"}


def test_a_body_declared_as_any_media_type_travels_as_the_json_it_is() -> None:
    columns = RequestBody(content_type="*/*", schema={"type": "array", "items": {"type": "string"}})
    op = operation("jira.columns.replace", method="put", path="/columns", body=columns)
    request = build_request(prepare(op), {"body": ["summary", "status"]}, _BASE, None)
    assert request.header("content-type") == "application/json"
    assert request.body == ["summary", "status"]
