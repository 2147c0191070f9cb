"""Principals: the caller model, its ledger binding, and static bearer principals from a hashed file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from anvil.errors import ConfigError
from anvil.runtime.keys import principal_of, replay_scope, request_fingerprint
from anvil.serve.auth.grants import parse_grants
from anvil.serve.auth.principals import (
    ANONYMOUS,
    STATIC_ISSUER,
    Attribution,
    Principal,
    hash_token,
    load_principals,
    parse_principals,
)
from anvil.serve.auth.tokens import Authenticator, AuthFailure, NoAuth, StaticTokenAuthenticator

FIXTURES = Path(__file__).parent.parent / "fixtures" / "auth"
CI_TOKEN = "ci-bot-secret-token"
REVIEWER_TOKEN = "reviewer-secret-token"
SCOPE = {"serviceId": "github", "environment": "prod", "upstream": "https://api.github.example/"}


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "ci-bot", "token_sha256": hash_token(CI_TOKEN)}
    base.update(overrides)
    return base


# --- the principals file ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["principals.yaml", "principals.json"])
def test_a_principals_file_loads_in_yaml_or_json(name: str) -> None:
    records = load_principals(FIXTURES / name)
    assert records[0].principal.id == "ci-bot"
    assert records[0].token_sha256 == hashlib.sha256(CI_TOKEN.encode()).hexdigest()
    assert records[0].principal.scopes == ("*",)
    assert records[0].principal.grants is None


def test_the_principals_file_never_holds_the_raw_tokens() -> None:
    text = (FIXTURES / "principals.yaml").read_text(encoding="utf-8")
    assert CI_TOKEN not in text and REVIEWER_TOKEN not in text
    assert hash_token(CI_TOKEN) in text


def test_a_prefixed_uppercase_hash_is_normalized_and_grants_are_parsed() -> None:
    reviewer = load_principals(FIXTURES / "principals.yaml")[1]
    assert reviewer.token_sha256 == hash_token(REVIEWER_TOKEN)
    assert reviewer.principal.scopes == ("issues.read",)
    assert reviewer.principal.grants == parse_grants(
        [{"connector": "github", "operations": ["issues.*"], "mode": "read"}]
    )


def test_hash_token_is_the_sha256_hex_and_refuses_blank_tokens() -> None:
    assert hash_token("abc") == hashlib.sha256(b"abc").hexdigest()
    for bad in ("", "two words", "tab\there", "nl\n"):
        with pytest.raises(ValueError):
            hash_token(bad)


@pytest.mark.parametrize(
    "document",
    [
        pytest.param([record()], id="not-an-object"),
        pytest.param({}, id="no-principals-key"),
        pytest.param({"principals": [record()], "extra": 1}, id="extra-top-level-key"),
        pytest.param({"principals": []}, id="empty-list"),
        pytest.param({"principals": record()}, id="principals-not-a-list"),
        pytest.param({"principals": ["ci-bot"]}, id="entry-not-an-object"),
        pytest.param({"principals": [record(id="")]}, id="empty-id"),
        pytest.param({"principals": [record(id="x" * 257)]}, id="id-too-long"),
        pytest.param({"principals": [record(id="a\nb")]}, id="id-with-control-character"),
        pytest.param({"principals": [record(token_sha256="abc")]}, id="short-hash"),
        pytest.param({"principals": [record(token_sha256=None)]}, id="missing-hash"),
        pytest.param({"principals": [record(scopes="*")]}, id="scopes-not-a-list"),
        pytest.param({"principals": [record(scopes=[""])]}, id="empty-scope"),
        pytest.param({"principals": [record(grants=[{"connector": "git hub"}])]}, id="bad-grant"),
        pytest.param({"principals": [record(), record(token_sha256=hash_token("other"))]}, id="duplicate-id"),
        pytest.param({"principals": [record(), record(id="other")]}, id="duplicate-token"),
    ],
)
def test_a_bad_principals_document_is_a_coded_config_error(document: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_principals(document, "principals.json")
    assert caught.value.code == "config/invalid"


def test_a_raw_token_in_the_file_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_principals({"principals": [record(token=CI_TOKEN)]})
    assert caught.value.code == "config/invalid"
    assert CI_TOKEN not in str(caught.value)


def test_an_unknown_key_is_refused_without_echoing_the_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_principals({"principals": [{CI_TOKEN: "ci-bot", **record()}]})
    assert CI_TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("principals.yaml", f"principals:\n  - id: ci-bot\n    token_sha256: [{CI_TOKEN}\n"),
        ("principals.json", '{"principals": [{"id": "ci-bot", "token_sha256": "' + CI_TOKEN + '"'),
        ("principals.yaml", f"principals:\n  - id: ci-bot\n    token_sha256: {CI_TOKEN}\n"),
    ],
)
def test_an_unparseable_or_wrong_file_never_echoes_its_content(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_principals(path)
    assert caught.value.code == "config/invalid"
    assert CI_TOKEN not in str(caught.value)
    assert str(tmp_path) not in str(caught.value)


def test_a_missing_oversized_or_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (1024 * 1024 + 1))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe")
    for path in (tmp_path / "missing.json", big, bad):
        with pytest.raises(ConfigError) as caught:
            load_principals(path)
        assert caught.value.code == "config/invalid"


# --- static bearer authentication ------------------------------------------------------------------


@pytest.fixture
def static() -> StaticTokenAuthenticator:
    return StaticTokenAuthenticator(load_principals(FIXTURES / "principals.yaml"))


@pytest.mark.anyio
async def test_the_right_token_authenticates_its_principal(static: StaticTokenAuthenticator) -> None:
    principal = await static.authenticate(f"Bearer {REVIEWER_TOKEN}")
    assert principal.id == "reviewer" and principal.verified
    assert (await static.authenticate(f"bearer {CI_TOKEN}")).id == "ci-bot"


@pytest.mark.anyio
async def test_a_wrong_token_is_invalid_token(static: StaticTokenAuthenticator) -> None:
    with pytest.raises(AuthFailure) as caught:
        await static.authenticate("Bearer not-a-known-token")
    assert (caught.value.status, caught.value.code) == (401, "invalid_token")
    assert "not-a-known-token" not in caught.value.description


@pytest.mark.anyio
@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer   ", "Basic dXNlcjpwYXNz", CI_TOKEN])
async def test_no_bearer_is_invalid_request(static: StaticTokenAuthenticator, header: str | None) -> None:
    with pytest.raises(AuthFailure) as caught:
        await static.authenticate(header)
    assert (caught.value.status, caught.value.code) == (401, "invalid_request")
    assert caught.value.to_json() == {"error": {"code": "invalid_request", "message": caught.value.description}}


@pytest.mark.anyio
async def test_no_auth_admits_everyone_as_the_anonymous_principal() -> None:
    principal = await NoAuth().authenticate(None)
    assert principal is ANONYMOUS
    assert principal.to_json() == {"id": "anonymous", "scopes": ["*"], "grants": None, "attribution": {}}
    assert principal.verified is False and principal.ledger_identity() is None
    assert principal.session_fingerprint() == "anonymous"


def test_every_authenticator_fits_the_listener_protocol(static: StaticTokenAuthenticator) -> None:
    assert isinstance(static, Authenticator)
    assert isinstance(NoAuth(), Authenticator)


# --- ledger binding --------------------------------------------------------------------------------


def test_a_static_principal_binds_its_id_into_the_ledger_identity(static: StaticTokenAuthenticator) -> None:
    principal = load_principals(FIXTURES / "principals.json")[0].principal
    assert principal.ledger_identity() == {"iss": STATIC_ISSUER, "sub": "ci-bot"}
    assert principal_of(principal.ledger_identity()) is not None


def test_two_verified_callers_get_different_replay_fingerprints_and_anonymous_is_shared() -> None:
    ada = Principal(id="local:ada", issuer="https://yard.example", subject="local:ada", verified=True)
    bob = Principal(id="local:bob", issuer="https://yard.example", subject="local:bob", verified=True)

    def fingerprint(p: Principal) -> str:
        bound = principal_of(p.ledger_identity())
        assert bound is not None
        return request_fingerprint("github.issues.create", {"title": "x"}, replay_scope(SCOPE, bound))

    assert fingerprint(ada) != fingerprint(bob)
    assert principal_of(ANONYMOUS.ledger_identity()) == {"kind": "anonymous"}


def test_a_new_turn_of_the_same_caller_keeps_the_ledger_identity_but_not_the_session() -> None:
    turn1 = Principal(
        id="local:ada",
        issuer="https://yard.example",
        subject="local:ada",
        verified=True,
        attribution=Attribution(tenant="t1", turn="1"),
        token_id="j1",
        expires_at=100.0,
    )
    turn2 = Principal(
        id="local:ada",
        issuer="https://yard.example",
        subject="local:ada",
        verified=True,
        attribution=Attribution(tenant="t1", turn="2"),
        token_id="j2",
        expires_at=100.0,
    )
    assert (
        turn1.ledger_identity()
        == turn2.ledger_identity()
        == {
            "iss": "https://yard.example",
            "sub": "local:ada",
            "tenant": "t1",
        }
    )
    assert turn1.session_fingerprint() != turn2.session_fingerprint()
    same = Principal(**{f: getattr(turn1, f) for f in turn1.__dataclass_fields__})
    assert same.session_fingerprint() == turn1.session_fingerprint()
    granted = Principal(**{**{f: getattr(turn1, f) for f in turn1.__dataclass_fields__}, "grants": ()})
    assert granted.session_fingerprint() != turn1.session_fingerprint()


def test_scopes_hold_a_named_scope_or_everything() -> None:
    assert Principal(id="a", scopes=("issues.read",)).has_scope("issues.read")
    assert not Principal(id="a", scopes=("issues.read",)).has_scope("issues.write")
    assert ANONYMOUS.has_scope("anything")


def test_principal_json_lists_grants_and_attribution() -> None:
    principal = Principal(
        id="local:ada",
        grants=parse_grants([{"connector": "github", "operations": ["*"], "mode": "read"}]),
        attribution=Attribution(tenant="t1", branch="feature-x"),
    )
    assert json.loads(json.dumps(principal.to_json())) == {
        "id": "local:ada",
        "scopes": ["*"],
        "grants": [{"connector": "github", "operations": ["*"], "mode": "read"}],
        "attribution": {"tenant": "t1", "branch": "feature-x"},
    }
