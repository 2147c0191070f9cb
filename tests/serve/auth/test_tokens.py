"""Signed bearer tokens: JWKS sources, claim checks, failure answers and WWW-Authenticate (gateway §1.5, §4.2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa, x25519
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from jwt.warnings import InsecureKeyLengthWarning

from anvil.codes import code_info
from anvil.errors import ConfigError
from anvil.serve.auth.grants import parse_grants
from anvil.serve.auth.jwks import MAX_JWKS_BYTES
from anvil.serve.auth.principals import Attribution
from anvil.serve.auth.tokens import AuthFailure, JwtVerifier, bearer_from_header, www_authenticate

NOW = 1_700_000_000
ISSUER = "https://yard.example"
AUDIENCE = "https://gateway.example/mcp"
GRANTS = [{"connector": "github", "operations": ["issues.*"], "mode": "read"}]


@dataclass
class Signer:
    """A private key, its public JWK and the algorithm it signs with."""

    kid: str
    algorithm: str
    private: Any
    jwk: dict[str, Any] = field(default_factory=dict)

    def mint(self, claims: dict[str, Any] | None = None, *, drop: tuple[str, ...] = (), **header: Any) -> str:
        payload: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "local:ada",
            "iat": NOW,
            "exp": NOW + 600,
            "jti": "jti-1",
            "by_grants": GRANTS,
            "by_tenant": "t1",
            "by_branch": "feature-x",
            "by_turn": "7",
        }
        payload.update(claims or {})
        for name in drop:
            payload.pop(name, None)
        headers = {"kid": self.kid, **header}
        return jwt.encode(payload, self.private, algorithm=self.algorithm, headers=headers)


def ed25519_signer(kid: str = "yard-1") -> Signer:
    key = ed25519.Ed25519PrivateKey.generate()
    jwk = OKPAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return Signer(kid, "EdDSA", key, {**jwk, "kid": kid, "alg": "EdDSA", "use": "sig"})


@pytest.fixture(scope="module")
def rsa_signer() -> Signer:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return Signer("rsa-1", "RS256", key, {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "rsa-1"})


def ec_signer(kid: str = "ec-1") -> Signer:
    key = ec.generate_private_key(ec.SECP256R1())
    return Signer(kid, "ES256", key, {**ECAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid})


def write_jwks(path: Path, *signers: Signer) -> Path:
    path.write_text(json.dumps({"keys": [s.jwk for s in signers]}, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def signer() -> Signer:
    return ed25519_signer()


@pytest.fixture
def jwks_file(tmp_path: Path, signer: Signer) -> Path:
    return write_jwks(tmp_path / "jwks.json", signer)


def verifier_for(path: Path, **options: Any) -> JwtVerifier:
    return JwtVerifier(ISSUER, AUDIENCE, path.as_uri(), clock=lambda: NOW, **options)


async def refusal(verifier: JwtVerifier, token: str) -> AuthFailure:
    with pytest.raises(AuthFailure) as caught:
        await verifier.verify(token)
    return caught.value


# --- a valid token ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_valid_eddsa_token_yields_the_granted_attributed_principal(signer: Signer, jwks_file: Path) -> None:
    principal = await verifier_for(jwks_file).authenticate("Bearer " + signer.mint())
    assert principal.id == "local:ada"
    assert principal.scopes == ("*",)
    assert principal.grants == parse_grants(GRANTS)
    assert principal.attribution == Attribution(tenant="t1", branch="feature-x", turn="7")
    assert (principal.verified, principal.issuer, principal.subject) == (True, ISSUER, "local:ada")
    assert (principal.token_id, principal.expires_at, principal.purpose) == ("jti-1", NOW + 600, None)
    assert principal.ledger_identity() == {"iss": ISSUER, "sub": "local:ada", "tenant": "t1"}


@pytest.mark.anyio
async def test_rs256_and_es256_tokens_verify_in_the_idp_modes(tmp_path: Path, rsa_signer: Signer) -> None:
    es = ec_signer()
    verifier = verifier_for(write_jwks(tmp_path / "jwks.json", rsa_signer, es), algorithms=("RS256", "ES256"))
    assert (await verifier.verify(rsa_signer.mint())).id == "local:ada"
    assert (await verifier.verify(es.mint())).id == "local:ada"


@pytest.mark.anyio
async def test_an_absent_grant_means_no_gate_and_an_empty_one_allows_nothing(signer: Signer, jwks_file: Path) -> None:
    verifier = verifier_for(jwks_file)
    assert (await verifier.verify(signer.mint(drop=("by_grants",)))).grants is None
    assert (await verifier.verify(signer.mint({"by_grants": []}))).grants == ()


@pytest.mark.anyio
async def test_empty_attribution_values_are_dropped_and_aud_may_be_a_list(signer: Signer, jwks_file: Path) -> None:
    token = signer.mint({"by_branch": "", "aud": ["other", AUDIENCE]}, drop=("by_turn",))
    principal = await verifier_for(jwks_file).verify(token)
    assert principal.attribution == Attribution(tenant="t1")


@pytest.mark.anyio
async def test_a_token_without_kid_uses_the_only_key(signer: Signer, jwks_file: Path) -> None:
    token = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "a", "exp": NOW + 60}, signer.private, algorithm="EdDSA")
    assert (await verifier_for(jwks_file).verify(token)).id == "a"


@pytest.mark.anyio
async def test_expiry_within_leeway_is_still_accepted(signer: Signer, jwks_file: Path) -> None:
    assert (await verifier_for(jwks_file).verify(signer.mint({"exp": NOW - 30}))).id == "local:ada"


# --- refusals --------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("claims", "drop", "mentions"),
    [
        pytest.param({"iss": "https://evil.example"}, (), "issuer", id="wrong-issuer"),
        pytest.param({"aud": "https://other.example/mcp"}, (), "audience", id="wrong-audience"),
        pytest.param({"aud": ["https://other.example/mcp"]}, (), "audience", id="audience-list-without-us"),
        pytest.param({"aud": 7}, (), "audience", id="audience-not-string"),
        pytest.param({"exp": NOW - 120}, (), "expired", id="expired-beyond-leeway"),
        pytest.param({"exp": NOW - 60}, (), "expired", id="expired-at-leeway-edge"),
        pytest.param({"nbf": NOW + 120}, (), "not yet valid", id="nbf-in-the-future"),
        pytest.param({}, ("exp",), "expiration", id="no-exp"),
        pytest.param({"exp": "soon"}, (), "expiration", id="exp-not-a-number"),
        pytest.param({"exp": True}, (), "expiration", id="exp-boolean"),
        pytest.param({"exp": NOW + 7200}, (), "one hour", id="exp-two-hours-away"),
        pytest.param({"iat": NOW + 120}, (), "future", id="iat-in-the-future"),
        pytest.param({"iat": "then"}, (), "iat", id="iat-not-a-number"),
        pytest.param({}, ("sub",), "subject", id="no-sub"),
        pytest.param({"sub": ""}, (), "subject", id="empty-sub"),
        pytest.param({"sub": "x" * 257}, (), "subject", id="sub-too-long"),
        pytest.param({"by_grants": {"connector": "github"}}, (), "by_grants", id="grant-not-a-list"),
        pytest.param(
            {"by_grants": [{"connector": "git hub", "operations": ["*"], "mode": "read"}]},
            (),
            "by_grants",
            id="malformed-grant",
        ),
        pytest.param({"by_grants": None}, (), "by_grants", id="null-grant"),
        pytest.param({"by_turn": 7}, (), "by_turn", id="numeric-by-turn"),
        pytest.param({"by_tenant": "t" * 257}, (), "by_tenant", id="long-by-tenant"),
        pytest.param({"jti": 5}, (), "jti", id="numeric-jti"),
        pytest.param({"by_purpose": "admin"}, (), "by_purpose", id="unknown-purpose"),
        pytest.param({"by_purpose": "connect", "exp": NOW + 1800}, (), "ten minutes", id="long-connect-token"),
        pytest.param({"scope": ["a"]}, (), "scope", id="scope-not-a-string"),
        pytest.param({"scp": 3}, (), "scp", id="scp-not-strings"),
    ],
)
async def test_each_failed_claim_check_is_401_invalid_token_naming_the_check(
    signer: Signer, jwks_file: Path, claims: dict[str, Any], drop: tuple[str, ...], mentions: str
) -> None:
    failure = await refusal(verifier_for(jwks_file), signer.mint(claims, drop=drop))
    assert (failure.status, failure.code) == (401, "invalid_token")
    assert mentions in failure.description
    assert code_info("invalid_token").kind == "error"


@pytest.mark.anyio
async def test_a_short_connect_token_verifies_with_its_purpose(signer: Signer, jwks_file: Path) -> None:
    principal = await verifier_for(jwks_file).verify(signer.mint({"by_purpose": "connect", "by_grants": []}))
    assert principal.purpose == "connect"


@pytest.mark.anyio
async def test_a_token_signed_by_an_unknown_key_has_an_invalid_signature(jwks_file: Path) -> None:
    impostor = ed25519_signer("yard-1")
    failure = await refusal(verifier_for(jwks_file), impostor.mint())
    assert failure.code == "invalid_token" and "signature" in failure.description
    stranger = ed25519_signer("yard-unknown")
    assert (await refusal(verifier_for(jwks_file), stranger.mint())).code == "invalid_token"


@pytest.mark.anyio
async def test_a_tampered_payload_has_an_invalid_signature(signer: Signer, jwks_file: Path) -> None:
    header, _, signature = signer.mint().split(".")
    forged = jwt.utils.base64url_encode(json.dumps({"iss": ISSUER, "sub": "root"}).encode()).decode()
    failure = await refusal(verifier_for(jwks_file), f"{header}.{forged}.{signature}")
    assert failure.code == "invalid_token" and "signature" in failure.description


@pytest.mark.anyio
async def test_algorithms_are_refused_outside_the_mode(tmp_path: Path, signer: Signer, rsa_signer: Signer) -> None:
    jwks = write_jwks(tmp_path / "jwks.json", signer, rsa_signer)
    branchyard = verifier_for(jwks, algorithms=("EdDSA",))
    assert "EdDSA" in (await refusal(branchyard, rsa_signer.mint())).description
    idp = verifier_for(jwks, algorithms=("RS256", "ES256"))
    assert "RS256 or ES256" in (await refusal(idp, signer.mint())).description


@pytest.mark.anyio
async def test_a_key_of_the_wrong_type_or_algorithm_is_refused(tmp_path: Path, signer: Signer) -> None:
    raw = x25519.X25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    x_jwk = {"kty": "OKP", "crv": "X25519", "x": jwt.utils.base64url_encode(raw).decode(), "kid": signer.kid}
    replaced = write_jwks(tmp_path / "x.json", Signer(signer.kid, "EdDSA", None, x_jwk))
    assert (await refusal(verifier_for(replaced), signer.mint())).code == "invalid_token"
    declared = write_jwks(tmp_path / "alg.json", Signer(signer.kid, "EdDSA", None, {**signer.jwk, "alg": "RS256"}))
    assert (await refusal(verifier_for(declared), signer.mint())).code == "invalid_token"
    encryption = write_jwks(tmp_path / "use.json", Signer(signer.kid, "EdDSA", None, {**signer.jwk, "use": "enc"}))
    assert (await refusal(verifier_for(encryption), signer.mint())).code == "invalid_token"


@pytest.mark.anyio
async def test_a_short_rsa_key_is_refused(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    weak = Signer("weak", "RS256", key, {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "weak"})
    verifier = verifier_for(write_jwks(tmp_path / "jwks.json", weak))
    with pytest.warns(InsecureKeyLengthWarning):
        token = weak.mint()
    assert (await refusal(verifier, token)).code == "invalid_token"


@pytest.mark.anyio
@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "a.b", "x" * 70_000, "eyJhbGciOiJub25lIn0.e30."])
async def test_garbage_and_unsigned_tokens_are_invalid_token(jwks_file: Path, token: str) -> None:
    assert (await refusal(verifier_for(jwks_file), token)).code == "invalid_token"


@pytest.mark.anyio
async def test_a_crit_header_is_refused(signer: Signer, jwks_file: Path) -> None:
    assert (await refusal(verifier_for(jwks_file), signer.mint(crit=["exp"]))).code == "invalid_token"


@pytest.mark.anyio
@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer", "Token abc"])
async def test_no_bearer_is_401_invalid_request(jwks_file: Path, header: str | None) -> None:
    with pytest.raises(AuthFailure) as caught:
        await verifier_for(jwks_file).authenticate(header)
    assert (caught.value.status, caught.value.code) == (401, "invalid_request")
    assert code_info("invalid_request").kind == "error"


# --- the JWKS --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_file_jwks_is_reread_so_rotation_is_immediate(tmp_path: Path, signer: Signer) -> None:
    path = write_jwks(tmp_path / "jwks.json", signer)
    verifier = verifier_for(path)
    fresh = ed25519_signer("yard-2")
    assert (await refusal(verifier, fresh.mint())).code == "invalid_token"
    write_jwks(path, signer, fresh)
    assert (await verifier.verify(fresh.mint())).id == "local:ada"
    write_jwks(path, fresh)
    assert (await refusal(verifier, signer.mint())).code == "invalid_token"
    assert (await verifier.verify(fresh.mint())).id == "local:ada"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "content",
    [
        pytest.param(None, id="missing"),
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b'{"keys": {}}', id="keys-not-a-list"),
        pytest.param(b'{"keys": ["x"]}', id="key-not-an-object"),
        pytest.param(b"[]", id="not-an-object"),
        pytest.param(b'{"keys": [], "pad": "' + b"x" * MAX_JWKS_BYTES + b'"}', id="over-256-kib"),
    ],
)
async def test_an_unreadable_jwks_fails_closed(tmp_path: Path, signer: Signer, content: bytes | None) -> None:
    path = tmp_path / "jwks.json"
    if content is not None:
        path.write_bytes(content)
    failure = await refusal(verifier_for(path), signer.mint())
    assert (failure.status, failure.code) == (401, "invalid_token")


class KeyHost:
    """An https JWKS endpoint behind httpx.MockTransport that counts its fetches."""

    def __init__(self, *signers: Signer) -> None:
        self.signers = list(signers)
        self.fetches = 0
        self.status = 200
        self.body: bytes | None = None

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.fetches += 1
        assert request.url == httpx.URL("https://yard.example/.well-known/jwks.json")
        body = self.body if self.body is not None else json.dumps({"keys": [s.jwk for s in self.signers]}).encode()
        return httpx.Response(self.status, content=body)


def https_verifier(host: KeyHost, clock: Callable[[], float]) -> JwtVerifier:
    client = httpx.AsyncClient(transport=httpx.MockTransport(host.handler))
    return JwtVerifier(ISSUER, AUDIENCE, "https://yard.example/.well-known/jwks.json", client=client, clock=clock)


@pytest.mark.anyio
async def test_an_https_jwks_is_fetched_once_and_cached_for_five_minutes(signer: Signer) -> None:
    host = KeyHost(signer)
    now = [float(NOW)]
    verifier = https_verifier(host, lambda: now[0])
    for _ in range(3):
        await verifier.verify(signer.mint())
    assert host.fetches == 1
    now[0] += 301
    await verifier.verify(signer.mint({"iat": now[0], "exp": now[0] + 600}))
    assert host.fetches == 2


@pytest.mark.anyio
async def test_an_https_kid_miss_refetches_once_at_most_every_ten_seconds(signer: Signer) -> None:
    host = KeyHost(signer)
    now = [float(NOW)]
    verifier = https_verifier(host, lambda: now[0])
    await verifier.verify(signer.mint())
    fresh = ed25519_signer("yard-2")
    host.signers.append(fresh)
    assert (await refusal(verifier, fresh.mint())).code == "invalid_token"
    assert host.fetches == 1
    now[0] += 11
    assert (await verifier.verify(fresh.mint({"iat": now[0], "exp": now[0] + 600}))).id == "local:ada"
    assert host.fetches == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "body"),
    [(500, None), (302, b""), (200, b"<html>"), (200, b'{"keys": [], "pad": "' + b"x" * MAX_JWKS_BYTES + b'"}')],
)
async def test_an_https_jwks_failure_fails_closed(signer: Signer, status: int, body: bytes | None) -> None:
    host = KeyHost(signer)
    host.status, host.body = status, body
    failure = await refusal(https_verifier(host, lambda: NOW), signer.mint())
    assert failure.code == "invalid_token"


@pytest.mark.anyio
async def test_an_unreachable_https_jwks_fails_closed(signer: Signer) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(down))
    verifier = JwtVerifier(ISSUER, AUDIENCE, "https://yard.example/jwks.json", client=client, clock=lambda: NOW)
    assert (await refusal(verifier, signer.mint())).code == "invalid_token"


@pytest.mark.parametrize(
    ("uri", "options"),
    [
        ("http://yard.example/jwks.json", {}),
        ("https://user:pw@yard.example/jwks.json", {"client": None}),
        ("https://yard.example/jwks.json", {}),
        ("file://remote-host/jwks.json", {}),
        ("ftp://yard.example/jwks.json", {}),
        ("file:///jwks.json", {"leeway_seconds": 301}),
        ("file:///jwks.json", {"leeway_seconds": -1}),
        ("file:///jwks.json", {"algorithms": ("HS256",)}),
        ("file:///jwks.json", {"algorithms": ()}),
        ("file:///jwks.json", {"max_lifetime_seconds": 0}),
    ],
)
def test_an_unusable_verifier_configuration_is_a_config_error(uri: str, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as caught:
        JwtVerifier(ISSUER, AUDIENCE, uri, **options)
    assert caught.value.code == "config/invalid"


def test_an_empty_issuer_or_audience_is_a_config_error() -> None:
    for issuer, audience in (("", AUDIENCE), (ISSUER, "")):
        with pytest.raises(ConfigError):
            JwtVerifier(issuer, audience, "file:///jwks.json")


# --- headers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("Bearer abc.def.ghi", "abc.def.ghi"),
        ("bearer abc", "abc"),
        ("BEARER\tabc ", "abc"),
        ("  Bearer abc", "abc"),
        ("Bearer", None),
        ("Bearer a b", None),
        ("Basic abc", None),
        ("Bearerabc", None),
        (None, None),
    ],
)
def test_the_bearer_is_parsed_case_insensitively(value: str | None, token: str | None) -> None:
    assert bearer_from_header(value) == token


def test_www_authenticate_names_the_error_and_the_https_resource_metadata() -> None:
    failure = AuthFailure(code="invalid_token", description='Token claim "by_turn" is wrong.')
    header = www_authenticate(failure, "https://gateway.example/mcp")
    assert header == (
        'Bearer realm="mcp", '
        'resource_metadata="https://gateway.example/.well-known/oauth-protected-resource", '
        'error="invalid_token", '
        "error_description=\"Token claim 'by_turn' is wrong.\""
    )


def test_www_authenticate_omits_resource_metadata_for_a_plain_http_or_absent_resource() -> None:
    failure = AuthFailure(code="invalid_request", description="No bearer.")
    expected = 'Bearer realm="mcp", error="invalid_request", error_description="No bearer."'
    assert www_authenticate(failure, "http://127.0.0.1:8080/mcp") == expected
    assert www_authenticate(failure) == expected
