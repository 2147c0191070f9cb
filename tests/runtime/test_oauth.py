"""OAuth2 client credentials, exchanged against the payments example's own token endpoint on loopback
(:mod:`tests.e2e.oauth_support`, through the ``token_mock`` fixture).

Each test runs with both upstream clients (httpx for ``anvil run``, the pooled client ``anvil serve``
uses): the token request goes through the same client as the call it serves.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from runtime_support import FakeClock, no_sleep

from anvil.air.model import AuthProvider, Document, Operation
from anvil.bundle.emit import emit_bundle
from anvil.compiler import build
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.registry import open_ledger
from anvil.runtime.audit import MemoryAuditSink
from anvil.runtime.context import CallOptions, RuntimeContext
from anvil.runtime.credentials import Credential, MissingCredential, client_credentials_env, credential_profile
from anvil.runtime.executor import execute
from anvil.runtime.oauth import (
    DEFAULT_LIFETIME_S,
    TOKEN_MAX_BYTES,
    ClientCredentials,
    TokenFailure,
    client_credentials,
    outbound_credential,
    refresh_after,
)
from anvil.runtime.outcome import Outcome
from anvil.runtime.upstream import UpstreamClient
from tests.e2e.oauth_support import CLIENT_ID, SECRET, business, client_variables
from tests.serve.raw_upstream import Answer, RawRequest, RawUpstream

pytestmark = pytest.mark.anyio

PAYMENTS = Path(__file__).resolve().parents[2] / "examples" / "payments"
READ = "payments.customers.get"
REFUND = "payments.refunds.create"
REFUND_ARGS = {"payment_id": "pay_123", "amount": 100, "currency": "EUR", "confirm": True}


@pytest.fixture(scope="module")
def payments() -> Document:
    result = build(PAYMENTS / "openapi.yaml", manifest=PAYMENTS / "anvil.yaml", service_id="payments")
    assert result.document is not None
    return result.document


def op(doc: Document, op_id: str) -> Operation:
    found = doc.operation(op_id)
    assert found is not None
    return found


def names(doc: Document) -> tuple[str, str, str, str, str]:
    """CLIENT_ID, CLIENT_SECRET, TOKEN_ENDPOINT, AUDIENCE, SCOPES of the payments scheme's profile."""
    return client_credentials_env(credential_profile("default", op(doc, READ).auth))


def variables(doc: Document, url: str, **extra: str) -> dict[str, str]:
    return {**client_variables(op(doc, READ).auth, f"{url}/oauth/token"), **extra}


def context(doc: Document, url: str, client: httpx.AsyncClient | UpstreamClient, **overrides: Any) -> RuntimeContext:
    values: dict[str, Any] = {
        "service_id": "payments",
        "base_url": url,
        "client": client,
        "env": "dev",
        "allowed_hosts": ("127.0.0.1",),
        "credentials": variables(doc, url),
        "ledger": MemoryLedger(),
        "audit": MemoryAuditSink(),
        "sleep": no_sleep,
        "rng": lambda: 0.5,
    }
    values.update(overrides)
    return RuntimeContext(**values)


async def concurrently(count: int, call: Callable[[], Awaitable[Outcome]]) -> list[Outcome]:
    """``count`` calls at once; their outcomes in completion order."""
    outcomes: list[Outcome] = []

    async def one() -> None:
        outcomes.append(await call())

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)
    return outcomes


def details(outcome: Outcome) -> dict[str, Any]:
    assert outcome.envelope is not None, outcome
    return dict(outcome.envelope.details or {})


async def test_a_read_and_a_keyed_refund_reach_the_upstream_with_exchanged_tokens_of_their_own_scopes(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    ctx = context(payments, url, upstream_client)
    read = await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)
    refund = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-1"))
    assert (read.kind, read.status, refund.kind, refund.status) == ("success", 200, "success", 201)
    issued = state.oauth.issued
    assert [entry["scope"] for entry in issued.values()] == ["payments.read", "payments.write"]
    tokens = {entry["scope"]: token for token, entry in issued.items()}
    seen = state.requests
    assert [r["authorization"] for r in seen] == [
        f"Bearer {tokens['payments.read']}",
        f"Bearer {tokens['payments.write']}",
    ]
    assert seen[1]["idempotency_key"] == "ref-1"
    assert [(r["client_auth"], r["client_id"], r["grant_type"]) for r in state.oauth.requests] == [
        ("client_secret_basic", CLIENT_ID, "client_credentials")
    ] * 2
    # the tokens are cached: more calls fetch none
    await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)
    assert len(state.oauth.issued) == 2 and ctx.tokens.issued == 2


async def test_client_secret_post_sends_the_client_in_the_form_when_the_air_says_so(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    read = op(payments, READ)
    provider = dataclasses.replace(read.auth.provider or AuthProvider(), client_auth="client_secret_post")
    posted = dataclasses.replace(read, auth=dataclasses.replace(read.auth, provider=provider))
    outcome = await execute(posted, {"customer_id": "cus_123"}, context(payments, url, upstream_client))
    assert outcome.kind == "success"
    assert [r["client_auth"] for r in state.oauth.requests] == ["client_secret_post"]


async def test_the_scopes_and_audience_variables_replace_the_requirements(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    _, _, _, audience, scopes = names(payments)
    wide = variables(payments, url, **{scopes: "payments.write, payments.read", audience: "https://payments.api"})
    grant = client_credentials(op(payments, READ).auth, credential_profile("default", op(payments, READ).auth), wide,
                               env="dev", allowed_hosts=("127.0.0.1",))  # fmt: skip
    assert isinstance(grant, ClientCredentials)
    assert (grant.scopes, grant.audience) == (("payments.read", "payments.write"), "https://payments.api")
    outcome = await execute(op(payments, READ), {"customer_id": "cus_123"}, context(payments, url, upstream_client,
                            credentials=wide))  # fmt: skip
    assert outcome.kind == "success"
    assert [r["scope"] for r in state.oauth.requests] == ["payments.read payments.write"]


async def test_fifty_concurrent_calls_fetch_one_token(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    ctx = context(payments, url, upstream_client)
    outcomes = await concurrently(50, lambda: execute(op(payments, READ), {"customer_id": "cus_123"}, ctx))
    assert [o.kind for o in outcomes] == ["success"] * 50
    assert len(state.oauth.requests) == 1 and len(state.oauth.issued) == 1
    assert len(business(state)) == 50 and state.oauth.refused == 0


async def test_an_expired_token_is_refreshed_once_before_it_is_sent(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    clock = FakeClock(time.time())
    ctx = context(payments, url, upstream_client, clock=clock)
    assert (await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)).kind == "success"
    clock.advance(refresh_after(3600) - 1)
    assert (await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)).kind == "success"
    assert len(state.oauth.issued) == 1
    clock.advance(2)  # past expiry less the skew: every call needs a new token; one is fetched
    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(execute, op(payments, READ), {"customer_id": "cus_123"}, ctx)
    assert len(state.oauth.issued) == 2 and state.oauth.refused == 0
    newest = list(state.oauth.issued)[-1]
    assert {r["authorization"] for r in business(state)[2:]} == {f"Bearer {newest}"}


def test_a_token_is_replaced_its_lifetime_less_a_skew_after_issue() -> None:
    assert refresh_after(3600) == 3570
    assert refresh_after(4) == 2  # a short-lived token is still used for half its life
    assert refresh_after(0) == 0


async def test_a_401_gets_one_new_token_and_one_resend_with_the_same_idempotency_key(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    audit = MemoryAuditSink()
    ctx = context(payments, url, upstream_client, audit=audit)
    assert (await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)).kind == "success"
    first = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-401"))
    assert first.kind == "success"
    state.oauth.issued.clear()  # the authorization server forgets every token: the cached ones are now refused
    again = await execute(op(payments, REFUND), {**REFUND_ARGS, "amount": 200}, ctx, CallOptions(idempotency_key="r2"))
    assert again.kind == "success" and again.status == 201
    refunds = business(state, "/refunds")
    assert [r["idempotency_key"] for r in refunds] == ["ref-401", "r2", "r2"]
    assert refunds[1]["authorization"] != refunds[2]["authorization"]
    assert refunds[2]["authorization"] == f"Bearer {next(iter(state.oauth.issued))}"
    assert state.oauth.refused == 1 and len(state.oauth.issued) == 1
    assert audit.records()[-1]["attempts"] == 2
    # the write completed under its key: a retry replays it without touching the upstream
    replay = await execute(op(payments, REFUND), {**REFUND_ARGS, "amount": 200}, ctx, CallOptions(idempotency_key="r2"))
    assert replay.replayed and len(business(state, "/refunds")) == 3
    assert state.payments["pay_123"]["refunded_amount"] == 300


async def test_concurrent_401s_share_one_new_token(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    ctx = context(payments, url, upstream_client)
    assert (await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)).kind == "success"
    state.oauth.issued.clear()
    outcomes = await concurrently(10, lambda: execute(op(payments, READ), {"customer_id": "cus_123"}, ctx))
    assert [o.kind for o in outcomes] == ["success"] * 10
    assert len(state.oauth.issued) == 1 and len(state.oauth.requests) == 2


async def test_a_second_401_is_auth_required_and_releases_the_reservation(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    ctx = context(payments, url, upstream_client)
    state.faults.append({"path": "/payments/pay_123/refunds", "status": 401, "times": 2})
    refused = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-2x401"))
    assert refused.code == "auth_required"
    assert refused.attempts == 2
    assert len(state.oauth.issued) == 2  # the first token and the one new token
    # a 401 proves nothing was applied: the key is free again and the same call now succeeds once
    done = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-2x401"))
    assert done.kind == "success" and not done.replayed
    assert [r["idempotency_key"] for r in business(state, "/refunds")] == ["ref-2x401"] * 3
    assert state.payments["pay_123"]["refunded_amount"] == 100


async def test_the_variables_the_bundle_lists_for_its_deployment_are_the_ones_the_exchange_reads(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    required = yaml.safe_load(emit_bundle(payments)["deploy/credentials.required.yaml"])
    [entry] = required["credentials"]
    client_id, secret = (variable["name"] for variable in entry["variables"])
    endpoint = entry["tokenEndpoint"]["oneOf"][0]["name"]
    listed = {client_id: CLIENT_ID, secret: SECRET, endpoint: f"{url}/oauth/token"}
    ctx = context(payments, url, upstream_client, credentials=listed, auth_profile=required["authProfile"])
    refund = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-listed"))
    assert refund.kind == "success"
    [token] = state.oauth.issued
    assert business(state, "/refunds")[0]["authorization"] == f"Bearer {token}"
    # the listed static token (here one minted by the client's first exchange) serves while no client is set
    static = {entry["staticToken"]["name"]: token}
    ctx = context(payments, url, upstream_client, credentials=static, auth_profile=required["authProfile"])
    again = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-static"))
    assert again.kind == "success" and len(state.oauth.requests) == 1
    assert business(state, "/refunds")[1]["authorization"] == f"Bearer {token}"


async def test_a_static_token_still_serves_without_a_client_and_a_401_to_it_is_not_resent(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    static = {f"{names(payments)[0].removesuffix('_CLIENT_ID')}_TOKEN": "minted-out-of-band"}
    outcome = await execute(op(payments, READ), {"customer_id": "cus_123"}, context(payments, url, upstream_client,
                            credentials=static))  # fmt: skip
    assert outcome.code == "auth_required"  # the mock knows no such token
    assert [r["authorization"] for r in business(state)] == ["Bearer minted-out-of-band"]
    assert state.oauth.requests == []


async def test_a_token_endpoint_that_hangs_fails_closed_within_its_bound_and_sends_nothing(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    ledger = MemoryLedger()
    ctx = context(payments, url, upstream_client, timeout_ms=500, ledger=ledger)
    state.oauth.mode = "hang"
    try:
        began = time.monotonic()
        read = await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)
        refund = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-hang"))
        elapsed = time.monotonic() - began
    finally:
        state.oauth.mode = "normal"
    for outcome in (read, refund):
        assert outcome.code == "auth_required"
        assert details(outcome) == {"code": "oauth/token_endpoint_unavailable", "timeout_ms": 500}
        assert outcome.envelope is not None and outcome.envelope.retryable  # transient, and nothing was sent
    assert read.envelope is not None and read.envelope.safe_to_retry
    assert elapsed < 5.0  # two bounded exchanges of 0.5 s, not the mock's minute
    assert business(state) == [] and refund.record.ledger == "none"
    # nothing was reserved: the same key runs once the endpoint answers again
    done = await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-hang"))
    assert done.kind == "success" and len(business(state, "/refunds")) == 1


async def test_a_5_mb_token_answer_is_refused_at_64_kib(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    state.oauth.mode = "huge"
    outcome = await execute(op(payments, REFUND), REFUND_ARGS, context(payments, url, upstream_client),
                            CallOptions(idempotency_key="ref-huge"))  # fmt: skip
    assert outcome.code == "auth_required"
    assert details(outcome) == {"code": "oauth/token_answer_invalid", "max_bytes": TOKEN_MAX_BYTES}
    assert business(state) == []


async def test_a_refused_client_is_auth_required_with_the_token_error(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    _, secret, _, _, _ = names(payments)
    wrong = variables(payments, url, **{secret: "not-the-secret"})
    outcome = await execute(op(payments, READ), {"customer_id": "cus_123"}, context(payments, url, upstream_client,
                            credentials=wrong))  # fmt: skip
    assert outcome.code == "auth_required"
    assert details(outcome) == {"code": "oauth/token_refused", "status": 401, "token_error": "invalid_client"}
    assert outcome.envelope is not None and not outcome.envelope.retryable
    assert business(state) == []


def _scripted(answer: Answer) -> RawUpstream:
    def reply(request: RawRequest, count: int) -> Answer:
        return answer

    return RawUpstream(reply)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Answer(body=b"not json"), {"code": "oauth/token_answer_invalid", "status": 200}),
        (Answer(body=b'{"access_token": "a b", "token_type": "Bearer"}'), {"code": "oauth/token_answer_invalid",
                                                                          "status": 200}),
        (Answer(body=b'{"access_token": "abc\\r\\nX-Evil: 1"}'), {"code": "oauth/token_answer_invalid", "status": 200}),
        (Answer(body=b'{"access_token": "abc", "token_type": "mac"}'), {"code": "oauth/token_answer_invalid",
                                                                         "status": 200}),
        (Answer(status=302, headers=(("location", "http://127.0.0.1:1/steal"),)), {"code": "oauth/token_answer_invalid",
                                                                                  "status": 302}),
        (Answer(status=503, body=b"{}"), {"code": "oauth/token_endpoint_unavailable", "status": 503}),
        (Answer(status=400, body=b'{"error": "invalid_scope", "error_description": "echo s3cr3t"}'),
         {"code": "oauth/token_refused", "status": 400, "token_error": "invalid_scope"}),
    ],
)  # fmt: skip
async def test_an_unusable_token_answer_fails_closed_with_a_detail_code(
    payments: Document,
    upstream_client: httpx.AsyncClient | UpstreamClient,
    answer: Answer,
    expected: dict[str, Any],
) -> None:
    with _scripted(answer) as raw:
        ctx = context(payments, raw.url, upstream_client)
        outcome = await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx)
        assert outcome.code == "auth_required"
        assert details(outcome) == expected
        assert [r.path for r in raw.requests] == ["/oauth/token"]  # the redirect was not followed, nothing else sent


@pytest.mark.parametrize("expires_in", [b"", b', "expires_in": NaN', b', "expires_in": "soon"'])
async def test_an_answer_without_a_usable_expires_in_is_cached_for_the_default_lifetime(
    payments: Document, upstream_client: httpx.AsyncClient | UpstreamClient, expires_in: bytes
) -> None:
    answer = Answer(body=b'{"access_token": "plain-token", "token_type": "bearer"' + expires_in + b"}")
    with _scripted(answer) as raw:
        clock = FakeClock()
        ctx = context(payments, raw.url, upstream_client, clock=clock)
        grant_op = op(payments, READ)
        profile = credential_profile("default", grant_op.auth)
        first = await outbound_credential(grant_op.auth, profile, ctx)
        clock.advance(refresh_after(DEFAULT_LIFETIME_S) - 1)
        second = await outbound_credential(grant_op.auth, profile, ctx)
        assert isinstance(first, Credential) and first == second
        assert first.headers == (("Authorization", "Bearer plain-token"),)
        assert len(raw.requests) == 1
        clock.advance(2)
        await outbound_credential(grant_op.auth, profile, ctx)
        assert len(raw.requests) == 2
        form = raw.requests[0].body.decode()
        assert form == "grant_type=client_credentials&scope=payments.read"


def test_a_token_endpoint_outside_the_allowed_hosts_is_refused_before_the_secret_leaves(payments: Document) -> None:
    read = op(payments, READ)
    profile = credential_profile("default", read.auth)
    _, _, endpoint, _, _ = names(payments)

    def grant(values: dict[str, str], env: str = "dev") -> ClientCredentials | MissingCredential | None:
        return client_credentials(read.auth, profile, values, env=env, allowed_hosts=("127.0.0.1",))

    with pytest.raises(TokenFailure) as caught:
        grant(variables(payments, "http://auth.elsewhere.example"))
    assert caught.value.details == {"code": "oauth/token_endpoint_refused", "variable": endpoint}
    assert "auth.elsewhere.example" in caught.value.message and SECRET not in caught.value.message
    with pytest.raises(TokenFailure) as caught:  # plain http only in dev
        grant(variables(payments, "http://127.0.0.1:9"), env="prod")
    assert "https" in caught.value.message
    with pytest.raises(TokenFailure):  # user info never
        grant(variables(payments, "https://user:pw@127.0.0.1"))
    # ANVIL_CREDENTIAL_HOSTS admits a host exactly (not its subdomains)
    admitted = variables(payments, "https://auth.elsewhere.example", ANVIL_CREDENTIAL_HOSTS="auth.elsewhere.example")
    assert isinstance(grant(admitted, env="prod"), ClientCredentials)
    with pytest.raises(TokenFailure):
        grant(variables(payments, "https://x.auth.elsewhere.example", ANVIL_CREDENTIAL_HOSTS="auth.elsewhere.example"))
    # the endpoint the spec declared needs ANVIL_CREDENTIAL_HOSTS; without it the call is not configured
    declared = {k: v for k, v in variables(payments, "unused").items() if k != endpoint}
    missing = grant(declared, env="prod")
    assert isinstance(missing, MissingCredential) and missing.expected_env[-1].startswith("one of: ANVIL_CREDENTIAL")
    found = grant({**declared, "ANVIL_CREDENTIAL_HOSTS": "payments.internal.example.com"}, env="prod")
    assert isinstance(found, ClientCredentials)
    assert found.token_endpoint == "https://payments.internal.example.com/oauth/token"


async def test_a_refused_token_endpoint_is_auth_required_and_nothing_is_sent(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient
) -> None:
    url, state = token_mock
    elsewhere = variables(payments, url.replace("127.0.0.1", "localhost"))
    outcome = await execute(op(payments, READ), {"customer_id": "cus_123"}, context(payments, url, upstream_client,
                            credentials=elsewhere))  # fmt: skip
    assert outcome.code == "auth_required"
    assert details(outcome)["code"] == "oauth/token_endpoint_refused"
    assert state.oauth.requests == [] and business(state) == []


def test_a_client_authentication_other_than_a_secret_is_refused_with_a_code(payments: Document) -> None:
    read = op(payments, READ)
    provider = dataclasses.replace(read.auth.provider or AuthProvider(), client_auth="private_key_jwt")
    auth = dataclasses.replace(read.auth, provider=provider)
    with pytest.raises(TokenFailure) as caught:
        client_credentials(auth, credential_profile("default", auth), variables(payments, "http://127.0.0.1:1"),
                           env="dev", allowed_hosts=())  # fmt: skip
    assert caught.value.code == "oauth/client_auth_unsupported"


async def test_the_secret_and_the_tokens_never_show_in_envelopes_audit_lines_ledger_rows_or_reprs(
    payments: Document, token_mock: tuple[str, Any], upstream_client: httpx.AsyncClient | UpstreamClient, tmp_path: Path
) -> None:
    url, state = token_mock
    audit = MemoryAuditSink()
    ledger = open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    ctx = context(payments, url, upstream_client, audit=audit, ledger=ledger)
    outcomes = [
        await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx),
        await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-s")),
        await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-s")),
    ]
    state.oauth.issued.clear()
    outcomes.append(await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx))
    state.faults.append({"path": "/payments/pay_123/refunds", "status": 401, "times": 2})
    outcomes.append(await execute(op(payments, REFUND), REFUND_ARGS, ctx, CallOptions(idempotency_key="ref-t")))
    state.oauth.mode = "huge"
    ctx2 = context(payments, url, upstream_client, audit=audit, ledger=ledger)
    outcomes.append(await execute(op(payments, READ), {"customer_id": "cus_123"}, ctx2))
    state.oauth.mode = "normal"
    await ledger.close()
    assert [o.kind for o in outcomes] == ["success", "success", "success", "success", "error", "error"]
    secrets = [SECRET, *state.oauth.issued, *{r["authorization"].split()[1] for r in state.requests}]
    assert len(secrets) >= 4
    shown = [
        json.dumps([o.envelope.to_json() if o.envelope else o.data for o in outcomes]),
        json.dumps([o.record.to_json() for o in outcomes]),
        "\n".join(audit.lines),
        (tmp_path / "ledger.db").read_bytes().decode("latin-1"),
        repr(ctx),
        repr(ctx.tokens),
        repr([outcomes]),
    ]
    grant = client_credentials(op(payments, READ).auth, credential_profile("default", op(payments, READ).auth),
                               ctx.credentials, env="dev", allowed_hosts=("127.0.0.1",))  # fmt: skip
    shown.append(repr(grant))
    for text in shown:
        for secret in secrets:
            assert secret not in text
