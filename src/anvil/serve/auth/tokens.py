"""Inbound authentication: bearer parsing, signed-token verification and the 401 answer (original-gateway §1.5).

Three authenticators share one interface (:class:`Authenticator`), so the listener holds any of them:

* :class:`NoAuth` - every request is the anonymous principal (loopback-only serving; the listener
  enforces the bind rule);
* :class:`StaticTokenAuthenticator` - a bearer token whose sha256 is in the principals file;
* :class:`JwtVerifier` - a compact JWS verified against a JWKS with PyJWT and ``cryptography``; its
  ``by_grants`` claim carries the caller's grant.

A refusal is an :class:`AuthFailure`: no bearer is 401 ``invalid_request``; anything else is 401
``invalid_token`` with a description naming what failed (never the token). :func:`www_authenticate`
builds the matching ``WWW-Authenticate`` header.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable
from urllib.parse import urlsplit

from anvil._types import JSONObject, JSONValue
from anvil.errors import AnvilError, ConfigError
from anvil.serve.auth.grants import GrantEntry, GrantError, parse_grants
from anvil.serve.auth.jwks import SUPPORTED_ALGORITHMS, JwksError, JwksSource, KeyUnfit, select_key, signing_key
from anvil.serve.auth.principals import ANONYMOUS, Attribution, Principal, PrincipalRecord, find_record

if TYPE_CHECKING:  # httpx and PyJWT load only when a token mode is configured (cold start)
    import httpx
    import jwt

__all__ = [
    "CONNECT_MAX_LIFETIME_SECONDS",
    "MAX_CLAIM_CHARS",
    "MAX_TOKEN_CHARS",
    "AuthFailure",
    "Authenticator",
    "JwtVerifier",
    "NoAuth",
    "StaticTokenAuthenticator",
    "bearer_from_header",
    "www_authenticate",
]

#: A bearer token longer than this is refused before any parsing.
MAX_TOKEN_CHARS: Final = 64 * 1024
#: ``sub``, ``jti``, ``by_tenant``, ``by_branch`` and ``by_turn`` are at most this long.
MAX_CLAIM_CHARS: Final = 256
#: A connect token (``by_purpose: connect``) lives at most this long (plus leeway).
CONNECT_MAX_LIFETIME_SECONDS: Final = 600
_BEARER: Final = re.compile(r"^[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+([^\s]+)[ \t]*$")
_ATTRIBUTION: Final = (("by_tenant", "tenant"), ("by_branch", "branch"), ("by_turn", "turn"))


class AuthFailure(AnvilError):
    """An inbound request that is refused before anything else runs.

    Attributes:
        status: the HTTP status (401, or 403 for a valid token of the wrong kind).
        code: ``invalid_request`` (no bearer) or ``invalid_token``.
        description: what failed, for the body and ``error_description`` (never the token itself).
    """

    def __init__(self, code: str, description: str, *, status: int = 401) -> None:
        super().__init__(code, description)
        self.status = status
        self.description = description

    def to_json(self) -> JSONObject:
        """The listener's body: ``{"error": {"code", "message"}}``."""
        return {"error": {"code": self.code, "message": self.description}}


def _no_bearer() -> AuthFailure:
    return AuthFailure(code="invalid_request", description="The request carries no bearer token.")


def _invalid(description: str) -> AuthFailure:
    return AuthFailure(code="invalid_token", description=description)


def bearer_from_header(value: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive), else None."""
    if value is None:
        return None
    found = _BEARER.match(value.strip())
    return None if found is None else found.group(1)


def www_authenticate(failure: AuthFailure, resource: str | None = None) -> str:
    """The ``WWW-Authenticate`` value for a refusal.

    ``Bearer realm="mcp"``, then ``resource_metadata="<origin>/.well-known/oauth-protected-resource"``
    only when ``resource`` (the audience) is an https URL, then ``error`` and ``error_description``
    (double quotes in the description become single quotes; control characters become spaces).
    """
    parts = ['Bearer realm="mcp"']
    if resource is not None:
        try:
            url = urlsplit(resource)
            origin = f"https://{url.netloc}" if url.scheme.lower() == "https" and url.hostname else None
        except ValueError:
            origin = None
        if origin is not None and "@" not in origin:
            parts.append(f'resource_metadata="{origin}/.well-known/oauth-protected-resource"')
    description = re.sub(r"[\x00-\x1f\x7f]", " ", failure.description.replace('"', "'").replace("\\", "/"))
    parts += [f'error="{failure.code}"', f'error_description="{description}"']
    return ", ".join(parts)


@runtime_checkable
class Authenticator(Protocol):
    """Turns a request's ``Authorization`` header into a principal, or refuses it."""

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal for the header.

        Raises:
            AuthFailure: the request is not let in.
        """
        ...


class NoAuth:
    """Inbound auth mode ``none``: every request is :data:`~anvil.serve.auth.principals.ANONYMOUS`."""

    async def authenticate(self, authorization: str | None) -> Principal:
        """Always the anonymous principal (``*`` scopes, no grant gate, unverified); the header is ignored."""
        return ANONYMOUS


class StaticTokenAuthenticator:
    """Bearer principals from a principals file: the token's sha256 must equal a stored hash.

    Args:
        records: the parsed principals file (:func:`anvil.serve.auth.principals.load_principals`).
    """

    def __init__(self, records: Sequence[PrincipalRecord]) -> None:
        self._records = tuple(records)

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal whose stored hash matches the bearer token.

        Raises:
            AuthFailure: ``invalid_request`` without a bearer, ``invalid_token`` for an unknown one.
        """
        token = bearer_from_header(authorization)
        if token is None:
            raise _no_bearer()
        if len(token) > MAX_TOKEN_CHARS:
            raise _invalid("The bearer token is too long.")
        record = find_record(self._records, hashlib.sha256(token.encode("utf-8")).hexdigest())
        if record is None:
            raise _invalid("The bearer token is not recognized.")
        return record.principal


def _time_claim(claims: Mapping[str, JSONValue], name: str, label: str) -> float | None:
    value = claims.get(name)
    if value is None and name not in claims:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _invalid(f"Token {label} ({name}) is not a finite number.")
    return float(value)


def _short_string(value: JSONValue) -> bool:
    return isinstance(value, str) and len(value) <= MAX_CLAIM_CHARS


def _string_or_strings(value: JSONValue) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def _unique_object(pairs: list[tuple[str, JSONValue]]) -> JSONObject:
    out: JSONObject = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate member {key}")
        out[key] = value
    return out


def _claims_of(payload: bytes) -> JSONObject:
    try:
        claims = json.loads(payload.decode("utf-8"), parse_constant=_reject_constant, object_pairs_hook=_unique_object)
    except (UnicodeDecodeError, ValueError):
        raise _invalid("Token payload is not a plain JSON object.") from None
    if not isinstance(claims, dict):
        raise _invalid("Token payload is not a plain JSON object.")
    return claims


def _either(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _duration(seconds: int) -> str:
    return {3600: "one hour", 600: "ten minutes"}.get(seconds, f"{seconds} seconds")


class JwtVerifier:
    """Verifies signed bearer tokens (compact JWS) against a JWKS and returns the caller's principal.

    Args:
        issuer: the expected ``iss``.
        audience: the expected ``aud`` (the gateway's own ``/mcp`` URL); a token's ``aud`` may be a string
            or an array containing it.
        jwks_uri: ``file:`` (re-read on every verification) or ``https:`` (cached five minutes).
        leeway_seconds: clock skew allowed on ``exp``, ``nbf``, ``iat`` and the lifetime cap (0-300).
        algorithms: accepted ``alg`` values, a subset of ``EdDSA``, ``RS256``, ``ES256`` (Branchyard mode
            passes ``("EdDSA",)``, the IdP modes ``("RS256", "ES256")``).
        max_lifetime_seconds: the most ``exp`` may lie ahead of now (plus leeway).
        client: the HTTP client for an ``https:`` JWKS.
        clock: wall-clock seconds (a test seam).

    Raises:
        ConfigError: ``config/invalid`` for an empty issuer or audience, a leeway outside 0-300, an
            unsupported algorithm, a non-positive lifetime, or an unusable JWKS URI.
    """

    def __init__(
        self,
        issuer: str,
        audience: str,
        jwks_uri: str,
        *,
        leeway_seconds: int = 60,
        algorithms: Sequence[str] = ("EdDSA", "RS256", "ES256"),
        max_lifetime_seconds: int = 3600,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not issuer or not audience:
            raise ConfigError("config/invalid", "Token verification needs an issuer and an audience.")
        if isinstance(leeway_seconds, bool) or not isinstance(leeway_seconds, int) or not 0 <= leeway_seconds <= 300:
            raise ConfigError("config/invalid", "The token leeway must be an integer from 0 to 300 seconds.")
        if not algorithms or any(alg not in SUPPORTED_ALGORITHMS for alg in algorithms):
            raise ConfigError("config/invalid", "Token algorithms must be chosen from EdDSA, RS256 and ES256.")
        if max_lifetime_seconds <= 0:
            raise ConfigError("config/invalid", "The token lifetime cap must be positive.")
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway_seconds
        self.algorithms = tuple(algorithms)
        self.max_lifetime = max_lifetime_seconds
        self._jwks = JwksSource(jwks_uri, client=client, clock=clock)
        self._clock = clock
        import jwt  # imported here so listeners without token auth never load PyJWT

        self._jws = jwt.PyJWS(options={"verify_signature": True, "enforce_minimum_key_length": True})

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal of the request's bearer token.

        Raises:
            AuthFailure: ``invalid_request`` without a bearer, else ``invalid_token``.
        """
        token = bearer_from_header(authorization)
        if token is None:
            raise _no_bearer()
        return await self.verify(token)

    async def verify(self, token: str) -> Principal:
        """Verify a compact JWS and check its claims (original-gateway §1.5).

        Returns:
            ``{id: sub, scopes: ["*"], grants: by_grants | None, attribution}``, verified, with the
            issuer, subject, ``jti``, ``exp`` and ``by_purpose`` kept for session and ledger binding.

        Raises:
            AuthFailure: ``invalid_token``; the description names the check that failed.
        """
        import jwt

        if len(token) > MAX_TOKEN_CHARS:
            raise _invalid("Token is too long.")
        algorithm, kid = self._header(token)
        key = await self._key(algorithm, kid)
        try:
            decoded = self._jws.decode_complete(token, key=key, algorithms=[algorithm])
        except jwt.InvalidSignatureError:
            raise _invalid("Token signature is invalid.") from None
        except jwt.PyJWTError:
            raise _invalid("Token is malformed or its key is unusable.") from None
        return self._principal(_claims_of(decoded["payload"]))

    def _header(self, token: str) -> tuple[str, str | None]:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _invalid("Token is not a well-formed compact JWS.") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            raise _invalid(f"Token algorithm must be {_either(self.algorithms)}.")
        if "crit" in header or "b64" in header:
            raise _invalid("Token header uses an unsupported extension (crit or b64).")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise _invalid("Token header kid is not a string.")
        return algorithm, kid

    async def _key(self, algorithm: str, kid: str | None) -> jwt.PyJWK:
        try:
            jwk = select_key(await self._jwks.keys(), kid)
            if jwk is None:  # a rotated set: read it once more before refusing
                jwk = select_key(await self._jwks.keys(refresh=True), kid)
        except JwksError as exc:
            raise _invalid(f"The signing keys are unavailable: {exc.message}") from None
        if jwk is None:
            raise _invalid("Token signature is invalid.")
        try:
            return signing_key(jwk, algorithm)
        except KeyUnfit as exc:
            raise _invalid(exc.message) from None

    def _check_times(self, claims: Mapping[str, JSONValue], now: float) -> float:
        leeway = self.leeway
        exp = _time_claim(claims, "exp", "expiration")
        if exp is None:
            raise _invalid("Token has no finite expiration (exp).")
        if now >= exp + leeway:
            raise _invalid("Token expired.")
        nbf = _time_claim(claims, "nbf", "not-before")
        if nbf is not None and nbf > now + leeway:
            raise _invalid("Token is not yet valid (nbf).")
        iat = _time_claim(claims, "iat", "issued-at")
        if iat is not None and iat > now + leeway:
            raise _invalid("Token was issued in the future (iat).")
        if exp - now > self.max_lifetime + leeway:
            raise _invalid(f"Token expiration is more than {_duration(self.max_lifetime)} away.")
        return exp

    def _check_shapes(self, claims: Mapping[str, JSONValue]) -> None:
        for name in ("scope", "email"):
            if name in claims and not isinstance(claims[name], str):
                raise _invalid(f"Token claim {name} is not a string.")
        if "scp" in claims and not _string_or_strings(claims["scp"]):
            raise _invalid("Token claim scp is not a string or a list of strings.")

    def _principal(self, claims: Mapping[str, JSONValue]) -> Principal:
        self._check_shapes(claims)
        issuer = claims.get("iss")
        if not isinstance(issuer, str) or issuer != self.issuer:
            raise _invalid("Token issuer is not the expected issuer.")
        audience = claims.get("aud")
        if not _string_or_strings(audience):
            raise _invalid("Token audience is not a string or a list of strings.")
        if audience != self.audience and not (isinstance(audience, list) and self.audience in audience):
            raise _invalid("Token audience does not name this gateway.")
        now = self._clock()
        exp = self._check_times(claims, now)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > MAX_CLAIM_CHARS:
            raise _invalid("Token subject (sub) must be a non-empty string of at most 256 characters.")
        for name in ("jti", "by_tenant", "by_branch", "by_turn"):
            if name in claims and not _short_string(claims[name]):
                raise _invalid(f"Token claim {name} must be a string of at most 256 characters.")
        grants: tuple[GrantEntry, ...] | None = None
        if "by_grants" in claims:
            try:
                grants = parse_grants(claims["by_grants"])
            except GrantError as exc:
                raise _invalid(f"Token claim by_grants is not a valid grant: {exc.message}") from None
        purpose = self._purpose(claims, exp, now)
        values = {field: claims.get(claim) for claim, field in _ATTRIBUTION}
        attribution = Attribution(**{field: value for field, value in values.items() if value})
        jti = claims.get("jti")
        return Principal(
            id=subject,
            scopes=("*",),
            grants=grants,
            attribution=attribution,
            issuer=issuer,
            subject=subject,
            verified=True,
            token_id=jti if isinstance(jti, str) else None,
            expires_at=exp,
            purpose=purpose,
        )

    def _purpose(self, claims: Mapping[str, JSONValue], exp: float, now: float) -> str | None:
        if "by_purpose" not in claims:
            return None
        if claims["by_purpose"] != "connect":
            raise _invalid("Token claim by_purpose must be 'connect' when present.")
        iat = _time_claim(claims, "iat", "issued-at")
        issued = now if iat is None else min(iat, now)
        if exp - issued > CONNECT_MAX_LIFETIME_SECONDS + self.leeway:
            raise _invalid(f"Connect token expiration is more than {_duration(CONNECT_MAX_LIFETIME_SECONDS)} away.")
        return "connect"
