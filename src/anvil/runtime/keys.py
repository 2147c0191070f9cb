"""Idempotency keys: the portable key rule, scopes, request fingerprints and ledger keys (original-ledger §1.5).

* A caller key is 1-255 bytes of visible ASCII (``!``..``~``): no space, control character or non-ASCII.
* ``request_fingerprint(name, input, scope) = sha256(name \\0 canonical(scope) \\0 canonical(input))``.
* The stored fingerprint binds the *replay scope* (the ledger scope plus the verified principal), so
  two callers reusing one raw key conflict instead of reading each other's results.
* A derived key is ``anvil-`` + the first 32 hex of the fingerprint: the request's coordinate, which
  names its ledger row. The key *sent upstream* under a ledger reservation is
  :func:`reservation_key`: unique to that reservation, so an identical write made on purpose after the
  derived-key window is a new write upstream too, not one an upstream that keeps keys for days dedupes.
* The ledger key is the fingerprint of the JSON-encoded caller key under the *ledger scope* (no
  principal); the ledger hashes it once more into the document id.

The scope is the same for every call of one operation under one context, so its canonical text (and
the replay scope's, per principal) is rendered once and kept (:func:`scope_texts`): a keyed call
hashes only its own input.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.canonical import canonical_json

__all__ = [
    "ANONYMOUS",
    "LEDGER_KEY_NAME",
    "MAX_KEY_BYTES",
    "ScopeTexts",
    "derived_key",
    "is_portable_key",
    "ledger_key",
    "ledger_scope",
    "principal_of",
    "replay_scope",
    "request_fingerprint",
    "reservation_key",
    "scope_texts",
    "text_fingerprint",
    "upstream_identity",
]

MAX_KEY_BYTES: Final = 255
#: The fingerprint name that turns a caller key into a ledger key.
LEDGER_KEY_NAME: Final = "anvil.idempotency.ledger-key"
#: The fingerprint name that turns a derived reservation into the key it sends upstream.
RESERVATION_KEY_NAME: Final = "anvil.idempotency.reservation-key"
_PORTABLE: Final = re.compile(r"^[\x21-\x7e]{1,255}$")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
#: Names that are the IPv4 loopback address by definition (RFC 6761 §6.3), whatever a resolver says.
_LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost."})
#: The anonymous principal: no verified inbound identity, the key is a shared operation coordinate.
ANONYMOUS: Final[JSONObject] = {"kind": "anonymous"}


def is_portable_key(value: object) -> bool:
    """True for a string of 1-255 visible ASCII characters (``[\\x21-\\x7e]``; ASCII, so bytes = chars)."""
    return isinstance(value, str) and _PORTABLE.fullmatch(value) is not None


def request_fingerprint(name: str, value: JSONValue, scope: Mapping[str, JSONValue] | None = None) -> str:
    """sha256 hex of ``name \\0 [canonical(scope) \\0] canonical(value)``; key order never matters."""
    return text_fingerprint(name, value, None if scope is None else canonical_json(scope))


def text_fingerprint(name: str, value: JSONValue, scope_text: str | None) -> str:
    """:func:`request_fingerprint` with the scope already rendered as canonical JSON (``scope_text``)."""
    head = name + "\x00" if scope_text is None else name + "\x00" + scope_text + "\x00"
    return hashlib.sha256((head + canonical_json(value)).encode("utf-8")).hexdigest()


def derived_key(fingerprint: str) -> str:
    """The key derived for ``keyDerivation: request_fingerprint``: ``anvil-`` + 32 hex."""
    return "anvil-" + fingerprint[:32]


def reservation_key(fingerprint: str, started_at: float) -> str:
    """The key a reservation of a derived-key request sends upstream: ``anvil-`` + the first 32 hex of
    :func:`text_fingerprint` of ``"<fingerprint>:<started_at in whole milliseconds>"`` under
    ``anvil.idempotency.reservation-key``.

    Both inputs are stored on the ledger row (its fingerprint, and the instant it was reserved, which
    stays when the row completes), so every attempt and retry of one reservation, on any instance
    that reads the row, sends the same key, and a replay reports the key its first call sent; a new
    reservation of the same request (after the window, or after an unambiguous failure released the
    row) starts at another instant and sends another key. The shape is :func:`derived_key`'s, so
    every carrier that accepts a derived key accepts it.
    """
    instant = round(started_at * 1000)  # stores keep milliseconds at least: one spelling per instant
    return "anvil-" + text_fingerprint(RESERVATION_KEY_NAME, f"{fingerprint}:{instant}", None)[:32]


def ledger_key(key: str, scope: Mapping[str, JSONValue] | str) -> str:
    """The ledger key of a caller key under the ledger scope (the principal is deliberately absent);
    ``scope`` may be given as its canonical JSON text (:attr:`ScopeTexts.ledger`)."""
    text = scope if isinstance(scope, str) else canonical_json(scope)
    return text_fingerprint(LEDGER_KEY_NAME, key, text)


def _host(host: str) -> str:
    """A host in one spelling: lower case, IP literals in canonical form, ``localhost`` as 127.0.0.1."""
    host = host.lower()
    if host in _LOOPBACK_NAMES:
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.rstrip(".") or host


@lru_cache(maxsize=256)
def upstream_identity(base_url: str) -> str:
    """The base URL as a scope coordinate, so gateways that spell one upstream differently share keys.

    No userinfo, query or fragment; scheme and host lower-cased; IP literals canonical (``0:0::1`` is
    ``::1``); ``localhost`` is ``127.0.0.1`` (the one loopback name that is the same host by
    definition); a trailing dot on a host name dropped; the default port dropped; ``/`` for an empty
    path, otherwise trailing slashes trimmed. Unparseable input is kept raw (the host allowlist
    refuses it later).
    """
    try:
        parts = urlsplit(base_url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return base_url
    if not parts.scheme or not host:
        return base_url
    scheme = parts.scheme.lower()
    host = _host(host)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((scheme, netloc, path, "", ""))


def ledger_scope(
    *, service_id: str, environment: str, base_url: str, auth_profile: str, credential_profile: str
) -> JSONObject:
    """The ledger-document namespace: service, environment, upstream and credential profile (not the caller)."""
    return {
        "serviceId": service_id,
        "environment": environment,
        "upstream": upstream_identity(base_url),
        "authProfile": auth_profile,
        "credentialProfile": credential_profile,
    }


def replay_scope(scope: Mapping[str, JSONValue], principal: Mapping[str, JSONValue]) -> JSONObject:
    """The ledger scope plus the principal: what a stored fingerprint binds."""
    return {**scope, "principal": dict(principal)}


@dataclass(frozen=True, slots=True)
class ScopeTexts:
    """One ledger scope rendered once: its fields (in :func:`ledger_scope` order) and canonical JSON."""

    items: tuple[tuple[str, str], ...]
    ledger: str

    def scope(self) -> JSONObject:
        """A fresh copy of the scope as :func:`ledger_scope` returns it."""
        return dict(self.items)

    def replay(self, principal: Mapping[str, JSONValue]) -> str:
        """The canonical JSON of :func:`replay_scope` of this scope and ``principal`` (kept per principal
        when its claims are plain strings, as :func:`principal_of` makes them)."""
        frozen: list[tuple[str, str | None]] = []
        for name, value in principal.items():
            if value is not None and not isinstance(value, str):  # 1 == True == 1.0 would share a cache slot
                return canonical_json(replay_scope(dict(self.items), principal))
            frozen.append((name, value))
        return _replay_text(self.items, tuple(frozen))


@lru_cache(maxsize=1024)
def _replay_text(items: tuple[tuple[str, str], ...], principal: tuple[tuple[str, str | None], ...]) -> str:
    return canonical_json(replay_scope(dict(items), dict(principal)))


@lru_cache(maxsize=256)
def scope_texts(
    *, service_id: str, environment: str, base_url: str, auth_profile: str, credential_profile: str
) -> ScopeTexts:
    """:func:`ledger_scope` with its canonical JSON, rendered once per distinct scope and kept."""
    scope = ledger_scope(
        service_id=service_id,
        environment=environment,
        base_url=base_url,
        auth_profile=auth_profile,
        credential_profile=credential_profile,
    )
    return ScopeTexts(tuple((name, str(value)) for name, value in scope.items()), canonical_json(scope))


def _claim(claims: Mapping[str, JSONValue], *names: str) -> str | None:
    for name in names:
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def principal_of(claims: Mapping[str, JSONValue] | None) -> JSONObject | None:
    """The stable principal of a verified inbound identity, ``{"kind": "anonymous"}`` without one.

    Only stable identifiers count (issuer, subject, object id, authorized party, tenant), so a rotated
    token for the same caller still replays. Returns None when an identity is present but names no
    issuer, or none of subject / object id / authorized party: replay protection then refuses.
    """
    if claims is None:
        return dict(ANONYMOUS)
    issuer = _claim(claims, "iss")
    subject = _claim(claims, "sub")
    object_id = _claim(claims, "oid")
    party = _claim(claims, "azp", "client_id")
    if issuer is None or (subject is None and object_id is None and party is None):
        return None
    return {
        "issuer": issuer,
        "subject": subject,
        "objectId": object_id,
        "authorizedParty": party,
        "tenant": _claim(claims, "tid", "tenant"),
    }
