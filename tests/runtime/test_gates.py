"""The ordered gates refuse before anything later runs, and before any request reaches the upstream."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from runtime_support import (
    SAFE_RETRIES,
    ContextFactory,
    Scripted,
    UpstreamState,
    fingerprint_write,
    keyed_write,
    operation,
    query_carrier_write,
    read_op,
    with_state,
)

from anvil.air.model import Auth, AuthCarrier, Idempotency, Server
from anvil.ledger.base import LedgerOptions
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import CallOptions
from anvil.runtime.executor import execute, host_allowed

pytestmark = pytest.mark.anyio

REFUND = {"payment_id": "pay_1", "amount": 2500}
KEY = CallOptions(idempotency_key="gate-key")


@pytest.mark.parametrize("state", ["generated", "review_required", "deprecated", "blocked"])
async def test_an_unapproved_operation_is_refused_even_as_a_dry_run(
    state: str, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    for options in (KEY, CallOptions(idempotency_key="gate-key", dry_run=True)):
        outcome = await execute(with_state(keyed_write(), state), REFUND, make_context(), options)
        assert outcome.code == "unsupported_operation"
        assert outcome.envelope is not None and outcome.envelope.details is not None
        assert outcome.envelope.details["state"] == state
        assert "anvil approve" in str(outcome.envelope.details["required_action"])
    assert upstream.count == 0


async def test_retry_bounds_outside_the_hard_limits_are_refused(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    too_many = dataclasses.replace(keyed_write(), retries=dataclasses.replace(SAFE_RETRIES, max_attempts=6))
    too_slow = dataclasses.replace(keyed_write(), retries=dataclasses.replace(SAFE_RETRIES, max_delay_ms=20001))
    for op in (too_many, too_slow):
        outcome = await execute(op, REFUND, make_context(), KEY)
        assert outcome.code == "unsupported_operation"
        assert outcome.envelope is not None
        assert outcome.envelope.details == {"max_attempts": 5, "max_delay_ms": 20000}
    assert upstream.count == 0


async def test_a_keyed_operation_whose_carrier_does_not_resolve_is_refused(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    undeclared = dataclasses.replace(
        keyed_write(), idempotency=Idempotency(mode="required", mechanism="query", key="missing_param")
    )
    outcome = await execute(undeclared, REFUND, make_context(), KEY)
    assert outcome.code == "unsupported_operation"
    assert outcome.envelope is not None and outcome.envelope.details is not None
    assert "idempotency_carrier" in outcome.envelope.details
    assert upstream.count == 0


async def test_missing_required_inputs_are_listed(make_context: ContextFactory, upstream: UpstreamState) -> None:
    outcome = await execute(keyed_write(), {"payment_id": "", "amount": None}, make_context(), KEY)
    assert outcome.code == "validation_error"
    assert outcome.envelope is not None and outcome.envelope.details == {"missing": ["payment_id", "amount"]}
    assert upstream.count == 0


async def test_confirmation_is_required_with_the_flags_still_missing(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = keyed_write(confirm=True)
    without_key = await execute(op, REFUND, make_context())
    with_key = await execute(op, REFUND, make_context(), KEY)
    assert without_key.code == with_key.code == "confirmation_required"
    assert without_key.envelope is not None and with_key.envelope is not None
    assert without_key.envelope.required_flags == ("--confirm", "--idempotency-key")
    assert with_key.envelope.required_flags == ("--confirm",)
    assert upstream.count == 0


async def test_confirmation_is_given_by_the_option_or_the_confirm_input(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = keyed_write(confirm=True)
    by_option = await execute(op, REFUND, make_context(), CallOptions(idempotency_key="c-1", confirm=True))
    by_input = await execute(op, {**REFUND, "confirm": True, "idempotency_key": "c-2"}, make_context())
    assert by_option.kind == by_input.kind == "success" and upstream.count == 2


async def test_a_required_client_key_that_is_absent_is_refused(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(keyed_write(), REFUND, make_context())
    assert outcome.code == "idempotency_required"
    assert outcome.envelope is not None and outcome.envelope.required_flags == ("--idempotency-key",)
    assert upstream.count == 0


async def test_a_fingerprint_write_derives_its_key_when_none_is_given(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(fingerprint_write(), REFUND, make_context(ledger=MemoryLedger()))
    assert outcome.kind == "success" and outcome.idempotency_key is not None
    assert upstream.calls[0].headers["idempotency-key"] == outcome.idempotency_key
    assert outcome.idempotency_key.startswith("anvil-") and len(outcome.idempotency_key) == 38


@pytest.mark.parametrize("timeout_ms", [0, 99, 30001, 1.5, True])
async def test_a_timeout_outside_the_bounds_is_refused(
    timeout_ms: object, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(read_op(), {"payment_id": "p"}, make_context(timeout_ms=timeout_ms))
    assert outcome.code == "validation_error"
    assert outcome.envelope is not None
    assert outcome.envelope.details == {"field": "timeout_ms", "min": 100, "max": 30000}
    assert upstream.count == 0


async def test_a_blank_service_id_is_refused(make_context: ContextFactory, upstream: UpstreamState) -> None:
    outcome = await execute(keyed_write(), REFUND, make_context(service_id="  "), KEY)
    assert outcome.code == "validation_error"
    assert outcome.envelope is not None and outcome.envelope.details == {"field": "service_id"}


def test_the_host_allowlist_admits_hosts_and_their_subdomains_only() -> None:
    assert host_allowed("https://api.example.com/v1", "prod", ("example.com",))
    assert host_allowed("https://example.com", "prod", ("example.com",))
    assert not host_allowed("https://evil-example.com", "prod", ("example.com",))
    assert not host_allowed("https://api.example.com", "prod", ())
    assert host_allowed("https://api.example.com", "dev", ())
    assert not host_allowed("not a url", "dev", ())


async def test_a_host_outside_the_allowlist_is_refused_outside_dev(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    for context in (
        make_context(env="prod", allowed_hosts=("payments.example.com",)),
        make_context(env="prod", allowed_hosts=()),
    ):
        outcome = await execute(read_op(), {"payment_id": "p"}, context)
        assert outcome.code == "policy_denied"
    assert upstream.count == 0


async def test_the_host_gate_wins_over_the_ledger_gate(make_context: ContextFactory, upstream: UpstreamState) -> None:
    outcome = await execute(keyed_write(), REFUND, make_context(env="prod", allowed_hosts=()), KEY)
    assert outcome.code == "policy_denied" and upstream.count == 0


@pytest.mark.parametrize("env", ["prod", "staging"])
async def test_a_required_key_write_fails_closed_outside_dev_without_a_durable_ledger(
    env: str, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    for ledger in (None, MemoryLedger()):
        outcome = await execute(keyed_write(), REFUND, make_context(env=env, ledger=ledger), KEY)
        assert outcome.code == "idempotency_ledger_unavailable"
        assert outcome.envelope is not None and outcome.envelope.safe_to_retry is False
    assert upstream.count == 0


async def test_a_durable_ledger_lets_the_write_through_in_prod(
    make_context: ContextFactory, upstream: UpstreamState, tmp_path: Path
) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/prod.db", options=LedgerOptions())
    outcome = await execute(keyed_write(), REFUND, make_context(env="prod", ledger=ledger), KEY)
    await ledger.close()
    assert outcome.kind == "success" and upstream.count == 1


async def test_a_dry_run_in_prod_needs_no_ledger_and_touches_nothing(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    ledger = MemoryLedger()
    options = CallOptions(idempotency_key="dry-key", dry_run=True)
    outcome = await execute(keyed_write(), REFUND, make_context(env="prod", ledger=None), options)
    assert outcome.kind == "dry_run" and upstream.count == 0
    dev = await execute(keyed_write(), REFUND, make_context(ledger=ledger), options)
    assert dev.kind == "dry_run" and dev.record.ledger == "none"
    real = await execute(keyed_write(), REFUND, make_context(ledger=ledger), CallOptions(idempotency_key="dry-key"))
    assert real.record.ledger == "reserved" and upstream.count == 1


def bearer(op_auth_profile: str | None = None) -> Auth:
    return Auth(type="oauth2_client_credentials", credential_profile=op_auth_profile)


async def test_missing_credentials_name_the_expected_variables_only(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = dataclasses.replace(read_op(), auth=Auth(type="jwt_bearer", credential_profile="bearer_scheme"))
    outcome = await execute(op, {"payment_id": "p"}, make_context(credentials={"ANVIL_DEFAULT_TOKEN": "unused"}))
    assert outcome.code == "auth_required"
    assert outcome.envelope is not None
    expected = {"expected_env": ["ANVIL_DEFAULT_BEARER_SCHEME_TOKEN"], "auth_profile": "default"}
    assert outcome.envelope.details == expected
    # client credentials name what the exchange needs, as the original does
    op = dataclasses.replace(read_op(), auth=bearer("oauth2_scheme"))
    outcome = await execute(op, {"payment_id": "p"}, make_context(credentials={"ANVIL_DEFAULT_TOKEN": "unused"}))
    assert outcome.code == "auth_required"
    assert outcome.envelope is not None
    assert outcome.envelope.details == {
        "expected_env": [
            "ANVIL_DEFAULT_OAUTH2_SCHEME_CLIENT_ID",
            "ANVIL_DEFAULT_OAUTH2_SCHEME_CLIENT_SECRET",
            "one of: ANVIL_CREDENTIAL_HOSTS OR ANVIL_DEFAULT_OAUTH2_SCHEME_TOKEN_ENDPOINT",
        ],
        "auth_profile": "default",
    }
    assert upstream.count == 0


async def test_an_auth_required_refusal_names_the_variables_to_set_and_the_auth_profile_they_were_read_under(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = dataclasses.replace(read_op(), auth=Auth(type="basic", credential_profile="partner"))
    set_for_prod = {"ANVIL_PROD_PARTNER_USERNAME": "u", "ANVIL_PROD_PARTNER_PASSWORD": "secret-pw"}
    outcome = await execute(op, {"payment_id": "p"}, make_context(credentials=set_for_prod))
    assert outcome.code == "auth_required" and outcome.envelope is not None
    assert outcome.envelope.message == (
        "Credentials for payments.payment.get are not configured: set ANVIL_DEFAULT_PARTNER_USERNAME, "
        "ANVIL_DEFAULT_PARTNER_PASSWORD. These are the names under auth profile 'default', which "
        "ANVIL_AUTH_PROFILE chooses; deploy/credentials.required.yaml lists the deployed profile's names."
    )
    assert outcome.envelope.details["auth_profile"] == "default"
    assert "secret-pw" not in str(outcome.envelope.to_json())
    chosen = await execute(op, {"payment_id": "p"}, make_context(credentials=set_for_prod, auth_profile="prod"))
    assert chosen.kind == "success" and upstream.count == 1


async def test_resolved_credentials_are_sent_in_their_carrier(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    token_op = dataclasses.replace(read_op(), auth=bearer())
    basic_op = dataclasses.replace(read_op(), auth=Auth(type="basic"))
    query_op = dataclasses.replace(read_op(), auth=Auth(type="api_key", carrier=AuthCarrier(in_="query", name="key")))
    env = {
        "ANVIL_PARTNER_TOKEN": "tok-1",
        "ANVIL_PARTNER_USERNAME": "u",
        "ANVIL_PARTNER_PASSWORD": "p",
        "ANVIL_PARTNER_API_KEY": "k-1",
    }
    context = make_context(credentials=env, auth_profile="partner")
    for op in (token_op, basic_op, query_op):
        assert (await execute(op, {"payment_id": "p"}, context)).kind == "success"
    assert upstream.calls[0].headers["authorization"] == "Bearer tok-1"
    assert upstream.calls[1].headers["authorization"] == "Basic dTpw"
    assert upstream.calls[2].query == "key=k-1"


async def test_a_credential_that_would_overwrite_the_key_carrier_is_refused_before_the_ledger(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    clash = Auth(type="api_key", carrier=AuthCarrier(in_="header", name="idempotency-key"))
    op = dataclasses.replace(keyed_write(), auth=clash)
    ledger = MemoryLedger()
    context = make_context(ledger=ledger, credentials={"ANVIL_DEFAULT_API_KEY": "secret-value"})
    outcome = await execute(op, REFUND, context, KEY)
    assert outcome.code == "unsupported_operation"
    assert outcome.envelope is not None and outcome.envelope.details is not None
    assert outcome.envelope.details["credential_carrier_conflict"] is True
    assert "secret-value" not in str(outcome.envelope.to_json())
    plain = await execute(keyed_write(), REFUND, make_context(ledger=ledger), KEY)
    assert plain.record.ledger == "reserved" and upstream.count == 1  # no reservation was left behind


async def test_an_identity_without_a_stable_principal_is_refused_for_keyed_writes(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    options = CallOptions(idempotency_key="k-iss", identity={"iss": "https://issuer.example"})
    outcome = await execute(keyed_write(), REFUND, make_context(ledger=MemoryLedger()), options)
    assert outcome.code == "auth_required" and upstream.count == 0
    assert outcome.record.principal == "unresolved"


async def test_a_write_with_mode_none_is_never_given_a_ledger_row(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = operation("payments.note.create", method="post", path="/notes")
    upstream.answer(Scripted(status=201))
    outcome = await execute(op, {}, make_context(ledger=MemoryLedger(), env="prod"))
    assert outcome.kind == "success" and outcome.record.ledger == "none" and outcome.idempotency_key is None


async def test_a_key_supported_write_without_a_key_runs_unprotected(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    outcome = await execute(query_carrier_write(), {"payment_id": "p"}, make_context(ledger=MemoryLedger()))
    assert outcome.kind == "success" and outcome.record.ledger == "none" and upstream.calls[0].query == ""


async def test_an_operation_server_outside_the_allowed_hosts_is_refused_before_the_wire(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = dataclasses.replace(read_op(), servers=(Server(url="https://upload.example.com"),))
    outcome = await execute(op, {"payment_id": "p1"}, make_context(allowed_hosts=("127.0.0.1",)))
    assert outcome.code == "policy_denied" and upstream.count == 0


async def test_an_operation_whose_own_server_has_no_url_is_never_sent_to_the_services(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = dataclasses.replace(read_op(), servers=(Server(url="https://{zone}.example.com"),))
    outcome = await execute(op, {"payment_id": "p1"}, make_context(), CallOptions(dry_run=True))
    assert outcome.code == "unsupported_operation" and upstream.count == 0
    assert outcome.envelope is not None and outcome.envelope.details == {
        "server": "server 'https://{zone}.example.com': the server variable {zone} is not declared"
    }


async def test_a_keyed_write_to_its_own_server_is_keyed_in_that_servers_ledger_scope(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    from anvil.runtime.gates import resolve_key, split_key_inputs
    from anvil.runtime.request import prepare

    own = dataclasses.replace(keyed_write(), servers=(Server(url=upstream_url + "/upload"),))
    context = make_context()
    for op, upstream_identity in ((keyed_write(), upstream_url + "/"), (own, upstream_url + "/upload")):
        plan = prepare(op)
        business, _ = split_key_inputs(plan, REFUND, "gate-key")
        resolved = resolve_key(plan, context, KEY, business, "gate-key")
        assert resolved.scope is not None and resolved.scope["upstream"] == upstream_identity


async def test_a_query_credential_travels_to_the_operations_own_server_only(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    op = dataclasses.replace(
        read_op(),
        auth=Auth(type="api_key", carrier=AuthCarrier(in_="query", name="key")),
        servers=(Server(url=upstream_url + "/upload"),),
    )
    context = make_context(credentials={"ANVIL_PARTNER_API_KEY": "k-2"}, auth_profile="partner")
    assert (await execute(op, {"payment_id": "p"}, context)).kind == "success"
    assert (upstream.calls[0].path, upstream.calls[0].query) == ("/upload/payments/p", "key=k-2")


def _composite() -> Auth:
    from anvil.air.model import ApiKeyCarrier, AuthProvider

    def key(where: str, name: str, profile: str) -> Auth:
        provider = AuthProvider(api_key=ApiKeyCarrier(in_=where, name=name))
        return Auth(type="api_key", credential_profile=profile, provider=provider)

    factors = (key("header", "X-Client-Id", "client"), key("header", "X-Secret", "secret"), key("query", "tk", "tk"))
    return Auth(type="composite", credential_profile="client_secret_tk", factors=factors)


async def test_a_composite_sends_every_factors_credential_in_its_own_carrier(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = dataclasses.replace(read_op(), auth=_composite())
    env = {
        "ANVIL_DEFAULT_CLIENT_API_KEY": "cid",
        "ANVIL_DEFAULT_SECRET_API_KEY": "sec",
        "ANVIL_DEFAULT_TK_API_KEY": "t",
    }
    outcome = await execute(op, {"payment_id": "p"}, make_context(credentials=env))
    assert outcome.kind == "success"
    sent = upstream.calls[0]
    assert (sent.headers["x-client-id"], sent.headers["x-secret"], sent.query) == ("cid", "sec", "tk=t")


async def test_a_composite_with_a_factor_unset_is_auth_required_naming_every_missing_variable_only(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = dataclasses.replace(read_op(), auth=_composite())
    outcome = await execute(op, {"payment_id": "p"}, make_context(credentials={"ANVIL_DEFAULT_SECRET_API_KEY": "s3"}))
    assert outcome.code == "auth_required" and outcome.envelope is not None
    assert outcome.envelope.details == {
        "expected_env": ["ANVIL_DEFAULT_CLIENT_API_KEY", "ANVIL_DEFAULT_TK_API_KEY"],
        "auth_profile": "default",
    }
    assert "s3" not in str(outcome.envelope.to_json()) and upstream.count == 0


async def test_a_composite_factor_that_would_overwrite_the_key_carrier_is_refused(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    clash = Auth(type="api_key", credential_profile="idem", carrier=AuthCarrier(in_="header", name="Idempotency-Key"))
    composite = _composite()
    op = dataclasses.replace(keyed_write(), auth=dataclasses.replace(composite, factors=(*composite.factors, clash)))
    env = dict.fromkeys(
        ("ANVIL_DEFAULT_CLIENT_API_KEY", "ANVIL_DEFAULT_SECRET_API_KEY", "ANVIL_DEFAULT_TK_API_KEY"), "v"
    ) | {"ANVIL_DEFAULT_IDEM_API_KEY": "secret-value"}
    outcome = await execute(op, REFUND, make_context(credentials=env), KEY)
    assert outcome.code == "unsupported_operation" and outcome.envelope is not None
    assert outcome.envelope.details is not None and outcome.envelope.details["credential_carrier_conflict"] is True
    assert "secret-value" not in str(outcome.envelope.to_json()) and upstream.count == 0


async def test_a_composites_credentials_are_never_sent_to_a_host_outside_the_allowlist(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    op = dataclasses.replace(read_op(), auth=_composite())
    env = {"ANVIL_DEFAULT_CLIENT_API_KEY": "c", "ANVIL_DEFAULT_SECRET_API_KEY": "s", "ANVIL_DEFAULT_TK_API_KEY": "t"}
    outcome = await execute(op, {"payment_id": "p"}, make_context(env="prod", allowed_hosts=(), credentials=env))
    assert outcome.code == "policy_denied" and upstream.count == 0
    elsewhere = dataclasses.replace(op, servers=(Server(url="https://upload.example.com"),))
    refused = await execute(elsewhere, {"payment_id": "p"}, make_context(allowed_hosts=("127.0.0.1",), credentials=env))
    assert refused.code == "policy_denied" and upstream.count == 0
