"""Key derivation: golden vectors, the portable rule, principal binding and scope isolation."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from runtime_support import ContextFactory, UpstreamState, fingerprint_write, keyed_write

from anvil.air.canonical import canonical_json
from anvil.ledger.base import document_id
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import CallOptions
from anvil.runtime.executor import execute
from anvil.runtime.keys import (
    ANONYMOUS,
    derived_key,
    is_portable_key,
    ledger_key,
    ledger_scope,
    principal_of,
    replay_scope,
    request_fingerprint,
    reservation_key,
    scope_texts,
    text_fingerprint,
    upstream_identity,
)

REFUND = {"payment_id": "pay_1", "amount": 2500}
SCOPE = ledger_scope(
    service_id="payments",
    environment="dev",
    base_url="https://payments.internal.example.com",
    auth_profile="default",
    credential_profile="default",
)


def test_the_fingerprint_matches_the_original_golden_vectors() -> None:
    assert request_fingerprint("op", {"b": 2, "a": 1}) == (
        "f319d588a5965ce408b0af5de469d840d77ae63a59c7181f59d263ba7401fe1f"
    )
    replay = replay_scope(SCOPE, ANONYMOUS)
    assert canonical_json(replay) == (
        '{"authProfile":"default","credentialProfile":"default","environment":"dev",'
        '"principal":{"kind":"anonymous"},"serviceId":"payments","upstream":"https://payments.internal.example.com/"}'
    )
    fingerprint = request_fingerprint("payments.refund.create", REFUND, replay)
    assert fingerprint == "f289560ca47784c859b27538380607758fea7b6693b35d57bffd659f0a331649"
    key = derived_key(fingerprint)
    assert key == "anvil-f289560ca47784c859b2753838060775"
    assert ledger_key(key, SCOPE) == "10143057c6ee2a1c658219e41c7b15abf8bcdb6fcfd8ac41bd4b255ca7be6c26"
    assert document_id(ledger_key(key, SCOPE)) == "f3f70b3feb8ee79204814409b32f3a45622b838a332304314103e8e0063cacb2"
    merchant = ledger_key("merchant-key-1", SCOPE)
    assert merchant == "5dfa61d5a4c5cd4729445273d5dcbfbc73f8e247289096d7b6f4ff6d24e84aa0"
    assert document_id(merchant) == "5f97d9ebfe80ed8b4838f8e14dfea7570cbeb0919dfa34def3b35df30f5e0a31"


def test_a_reservation_key_is_one_per_reservation_instant_and_keeps_the_derived_shape() -> None:
    fingerprint = "f289560ca47784c859b27538380607758fea7b6693b35d57bffd659f0a331649"
    key = reservation_key(fingerprint, 1_800_000_000.123)
    named = request_fingerprint("anvil.idempotency.reservation-key", f"{fingerprint}:1800000000123")
    assert key == "anvil-" + named[:32]
    assert reservation_key(fingerprint, 1_800_000_000.1230004) == key  # a store's spelling of the same instant
    assert reservation_key(fingerprint, 1_800_000_300.123) != key != derived_key(fingerprint)


def test_the_fingerprint_is_stable_under_key_order() -> None:
    assert request_fingerprint("op", {"a": 1, "b": [1, {"y": 2, "x": 1}]}) == request_fingerprint(
        "op", {"b": [1, {"x": 1, "y": 2}], "a": 1}
    )


def test_the_upstream_coordinate_drops_userinfo_query_fragment_and_default_port() -> None:
    assert upstream_identity("https://USER:pw@Payments.Example.com:443/v1/?q=1#x") == "https://payments.example.com/v1"
    assert upstream_identity("https://payments.internal.example.com") == "https://payments.internal.example.com/"
    assert upstream_identity("http://127.0.0.1:8080//") == "http://127.0.0.1:8080/"
    assert upstream_identity("not a url") == "not a url"


@pytest.mark.parametrize(
    ("key", "portable"),
    [("a" * 255, True), ("!~", True), ("", False), ("a" * 256, False), ("a b", False), ("a\x00", False), ("é", False)],
)
def test_the_portable_key_rule(key: str, portable: bool) -> None:
    assert is_portable_key(key) is portable


def test_a_principal_needs_an_issuer_and_a_stable_subject() -> None:
    assert principal_of(None) == {"kind": "anonymous"}
    assert principal_of({"iss": "https://idp"}) is None
    assert principal_of({"iss": "https://idp", "sub": "alice", "email": "a@example.com", "tid": "t1"}) == {
        "issuer": "https://idp",
        "subject": "alice",
        "objectId": None,
        "authorizedParty": None,
        "tenant": "t1",
    }


@pytest.mark.anyio
async def test_two_principals_reusing_one_key_conflict_and_token_rotation_still_replays(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    context = make_context(ledger=MemoryLedger())
    alice = {"iss": "https://idp", "sub": "alice", "jti": "token-1"}
    alice_rotated = {"iss": "https://idp", "sub": "alice", "jti": "token-2"}
    bob = {"iss": "https://idp", "sub": "bob"}
    first = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="merchant-key-1", identity=alice))
    again = await execute(
        keyed_write(), REFUND, context, CallOptions(idempotency_key="merchant-key-1", identity=alice_rotated)
    )
    other = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="merchant-key-1", identity=bob))
    assert first.kind == "success" and again.replayed
    assert other.code == "conflict" and other.data is None
    assert upstream.count == 1 and upstream.calls[0].headers["idempotency-key"] == "merchant-key-1"
    assert first.record.principal.startswith("sha256:") and first.record.principal != other.record.principal


@pytest.mark.anyio
async def test_derived_keys_for_two_principals_differ(make_context: ContextFactory, upstream: UpstreamState) -> None:
    context = make_context(ledger=MemoryLedger())
    alice = await execute(fingerprint_write(), REFUND, context, CallOptions(identity={"iss": "i", "sub": "alice"}))
    bob = await execute(fingerprint_write(), REFUND, context, CallOptions(identity={"iss": "i", "sub": "bob"}))
    assert alice.kind == bob.kind == "success" and alice.idempotency_key != bob.idempotency_key
    assert upstream.count == 2


@pytest.mark.anyio
async def test_a_cli_style_call_and_an_mcp_style_call_fingerprint_alike(
    make_context: ContextFactory, upstream: UpstreamState
) -> None:
    context = make_context(ledger=MemoryLedger())
    op = keyed_write(confirm=True)
    cli = await execute(op, REFUND, context, CallOptions(idempotency_key="k-surface", confirm=True))
    mcp = await execute(op, {**REFUND, "idempotency_key": "k-surface", "confirm": True}, context)
    assert cli.kind == "success" and mcp.replayed and upstream.count == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    "change",
    [{"service_id": "refunds"}, {"env": "staging"}, {"auth_profile": "partner"}],
    ids=["service", "env", "auth-profile"],
)
async def test_changing_any_scope_coordinate_gives_a_fresh_reservation(
    change: dict[str, str], make_context: ContextFactory, upstream: UpstreamState, upstream_url: str, tmp_path: Path
) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/scope.db")
    options = CallOptions(idempotency_key="k-scope")
    hosts = ("127.0.0.1", "localhost")
    await execute(keyed_write(), REFUND, make_context(ledger=ledger, allowed_hosts=hosts), options)
    overrides: dict[str, object] = dict(change)
    second = await execute(
        keyed_write(), REFUND, make_context(ledger=ledger, allowed_hosts=hosts, **overrides), options
    )
    await ledger.close()
    assert second.kind == "success" and not second.replayed and upstream.count == 2


@pytest.mark.anyio
async def test_spellings_of_one_upstream_share_the_reservation(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str, tmp_path: Path
) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/spelling.db")
    options = CallOptions(idempotency_key="k-spelling")
    hosts = ("127.0.0.1", "localhost")
    await execute(keyed_write(), REFUND, make_context(ledger=ledger, allowed_hosts=hosts), options)
    respelled = upstream_url.replace("http://127.0.0.1", "HTTP://LocalHost") + "/"
    second = await execute(
        keyed_write(), REFUND, make_context(ledger=ledger, allowed_hosts=hosts, base_url=respelled), options
    )
    await ledger.close()
    assert second.kind == "success" and second.replayed and upstream.count == 1


def test_the_upstream_coordinate_normalises_only_what_names_one_upstream() -> None:
    same = {
        upstream_identity(url)
        for url in (
            "http://127.0.0.1:8080/api",
            "HTTP://LOCALHOST:8080/api/",
            "http://localhost.:8080/api//",
            "http://127.0.0.1:8080/api?x=1#f",
        )
    }
    assert same == {"http://127.0.0.1:8080/api"}
    assert upstream_identity("https://Example.COM.:443/v1/") == "https://example.com/v1"
    assert upstream_identity("http://[0:0::1]:80/") == "http://[::1]/"
    distinct = {
        upstream_identity(url)
        for url in ("http://127.0.0.1:8080/api", "https://127.0.0.1:8080/api", "http://127.0.0.1:8081/api")
    }
    assert len(distinct) == 3 and upstream_identity("http://[::1]:8080/api") not in same


_TEXT = st.text(min_size=0, max_size=12)
_CLAIM = st.one_of(st.none(), _TEXT, st.integers(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False))
_PRINCIPALS = st.dictionaries(st.sampled_from(["issuer", "subject", "objectId", "tenant", "kind"]), _CLAIM, max_size=5)
_INPUTS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    service=st.sampled_from(["payments", "Ünïcode", "a"]),
    env=st.sampled_from(["dev", "prod"]),
    base=st.sampled_from(["https://API.example.com:443/v1/", "http://localhost:8080", "http://[0:0::1]/"]),
    profile=st.sampled_from(["default", "x"]),
    principal=_PRINCIPALS,
    value=_INPUTS,
    key=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=20),
)
def test_the_kept_scope_texts_fingerprint_exactly_as_the_scope_itself(
    service: str, env: str, base: str, profile: str, principal: dict[str, object], value: object, key: str
) -> None:
    coordinates = {
        "service_id": service,
        "environment": env,
        "base_url": base,
        "auth_profile": profile,
        "credential_profile": profile,
    }
    scope = ledger_scope(**coordinates)
    texts = scope_texts(**coordinates)
    assert texts.scope() == scope and texts.ledger == canonical_json(scope)
    for _ in range(2):  # rendered, then kept: the same answer both times
        assert text_fingerprint("op", value, texts.replay(principal)) == request_fingerprint(
            "op",
            value,
            replay_scope(scope, principal),
        )
        assert ledger_key(key, texts.ledger) == ledger_key(key, scope)
    assert texts.scope() is not texts.scope()  # a fresh copy: a caller's change never reaches the kept scope
