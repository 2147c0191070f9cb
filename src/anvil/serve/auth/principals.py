"""Callers: the principal a request runs as, and static bearer principals from a file (original-gateway §1.5).

A :class:`Principal` is what an authenticator hands the listener: an id, scopes, an optional grant
(``None`` skips the grant gate; ``()`` allows nothing), the token's attribution, and whether the identity
was verified. A verified principal is bound into the idempotency ledger's replay fingerprint (seed 001
§5) through :meth:`Principal.ledger_identity`, so two callers reusing one raw key conflict instead of
reading each other's results.

The principals file (JSON, or YAML for any other suffix) holds only token *hashes*::

    {"principals": [
      {"id": "ci-bot", "token_sha256": "<64 hex of sha256(token)>", "scopes": ["*"],
       "grants": [{"connector": "github", "operations": ["*"], "mode": "read"}]}
    ]}

``scopes`` defaults to ``["*"]``; ``grants`` is optional (absent: no grant gate). Unknown keys, a raw
token, duplicate ids or hashes are refused with ``config/invalid``; no message ever echoes a value from
the file. Operators make the hash with :func:`hash_token`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.errors import ConfigError
from anvil.serve.auth.grants import GrantEntry, GrantError, grant_json, parse_grants

__all__ = [
    "ANONYMOUS",
    "MAX_PRINCIPALS_FILE_BYTES",
    "STATIC_ISSUER",
    "Attribution",
    "Principal",
    "PrincipalRecord",
    "find_record",
    "hash_token",
    "load_principals",
    "parse_principals",
]

#: The issuer bound into the ledger identity of a principal authenticated by the principals file.
STATIC_ISSUER: Final = "anvil:principals"
#: A principals file larger than this is refused (it holds hashes, not data).
MAX_PRINCIPALS_FILE_BYTES: Final = 1024 * 1024
_HASH: Final = re.compile(r"^(?:sha256:)?([0-9a-fA-F]{64})$")
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
_ENTRY_KEYS: Final = frozenset({"id", "token_sha256", "scopes", "grants"})
_RAW_TOKEN_KEYS: Final = frozenset({"token", "bearer", "secret", "password"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Attribution:
    """Who the call is for, as the token says (``by_tenant``, ``by_branch``, ``by_turn``); empty values dropped."""

    tenant: str | None = None
    branch: str | None = None
    turn: str | None = None

    def to_json(self) -> JSONObject:
        """``{tenant?, branch?, turn?}`` with absent values omitted."""
        pairs = (("tenant", self.tenant), ("branch", self.branch), ("turn", self.turn))
        return {key: value for key, value in pairs if value is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """The caller a request runs as.

    Attributes:
        id: the principal id (a token's ``sub``, a principals-file ``id``, or ``anonymous``).
        scopes: scopes held; ``*`` holds every scope.
        grants: the grant, or None when no grant gate applies (an empty tuple allows nothing).
        attribution: the token's tenant / branch / turn.
        issuer: who vouched for the identity (a token's ``iss``; :data:`STATIC_ISSUER` for the file).
        subject: the identity's subject at that issuer.
        verified: the identity was authenticated (a signed token or a known bearer hash).
        token_id: the token's ``jti``, if any.
        expires_at: the token's ``exp`` (epoch seconds), if any.
        purpose: the token's ``by_purpose`` (``connect`` for a connect token), if any.
    """

    id: str
    scopes: tuple[str, ...] = ("*",)
    grants: tuple[GrantEntry, ...] | None = None
    attribution: Attribution = field(default_factory=Attribution)
    issuer: str | None = None
    subject: str | None = None
    verified: bool = False
    token_id: str | None = None
    expires_at: float | None = None
    purpose: str | None = None

    def has_scope(self, scope: str) -> bool:
        """True when the principal holds ``scope`` (or ``*``)."""
        return "*" in self.scopes or scope in self.scopes

    def ledger_identity(self) -> JSONObject | None:
        """The identity the executor binds into the replay fingerprint (``CallOptions.identity``).

        Claims-shaped (``iss``, ``sub`` and, when the token names one, ``tenant``), as
        :func:`anvil.runtime.keys.principal_of` reads them. Only stable identifiers are included, so a
        fresh token for the same caller still replays; a new turn or grant does not change it.

        Returns:
            None for an unverified principal: the key is then a shared operation coordinate.
        """
        if not self.verified or self.issuer is None or self.subject is None:
            return None
        identity: JSONObject = {"iss": self.issuer, "sub": self.subject}
        if self.attribution.tenant is not None:
            identity["tenant"] = self.attribution.tenant
        return identity

    def session_fingerprint(self) -> str:
        """What an MCP session is bound to: base64url(sha256(JSON of ``{iss, sub, jti, turn, exp, grants}``)).

        A different token (new turn, jti or grant) gives a different fingerprint; an unverified
        principal is ``anonymous``.
        """
        if not self.verified:
            return "anonymous"
        bound: JSONObject = {
            "iss": self.issuer,
            "sub": self.subject if self.subject is not None else self.id,
            "jti": self.token_id,
            "turn": self.attribution.turn,
            "exp": self.expires_at,
            "grants": None if self.grants is None else grant_json(self.grants),
        }
        digest = hashlib.sha256(json.dumps(bound, sort_keys=True, separators=(",", ":")).encode()).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def to_json(self) -> JSONObject:
        """``{id, scopes, grants, attribution}`` (grants null when no gate applies)."""
        return {
            "id": self.id,
            "scopes": list(self.scopes),
            "grants": None if self.grants is None else grant_json(self.grants),
            "attribution": self.attribution.to_json(),
        }


#: The caller when inbound auth is off: every scope, no grant gate, nothing bound into the ledger.
ANONYMOUS: Final = Principal(id="anonymous")


@dataclass(frozen=True, slots=True, kw_only=True)
class PrincipalRecord:
    """One principals-file entry: the principal and the sha256 hex of its bearer token (never the token)."""

    principal: Principal
    token_sha256: str


def hash_token(token: str) -> str:
    """The lowercase sha256 hex of a bearer token, as the principals file stores it.

    Raises:
        ValueError: the token is empty or holds whitespace or control characters.
    """
    if not token or any(ch.isspace() for ch in token) or _CONTROL.search(token):
        raise ValueError("a bearer token must be non-empty and hold no whitespace or control characters")
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _fail(source: str, message: str) -> ConfigError:
    return ConfigError(
        "config/invalid",
        f"Principals file {source}: {message}",
        hint='Expected {"principals": [{"id", "token_sha256", "scopes"?, "grants"?}]} with token hashes only.',
    )


def _parse_record(source: str, index: int, raw: JSONValue) -> PrincipalRecord:
    where = f"principal {index}"
    if not isinstance(raw, Mapping):
        raise _fail(source, f"{where} is not an object.")
    raw_keys = sorted(key for key in raw if isinstance(key, str) and key.lower() in _RAW_TOKEN_KEYS)
    if raw_keys:
        raise _fail(source, f"{where} holds a raw credential under {raw_keys[0]!r}; store token_sha256 instead.")
    if any(key not in _ENTRY_KEYS for key in raw):
        # The key itself is not echoed: a mistaken "<token>: <id>" mapping would print the token.
        raise _fail(source, f"{where} has a key other than id, token_sha256, scopes and grants.")
    principal_id = raw.get("id")
    if not isinstance(principal_id, str) or not principal_id.strip() or len(principal_id) > 256:
        raise _fail(source, f"{where} needs an id of 1-256 characters.")
    if _CONTROL.search(principal_id):
        raise _fail(source, f"{where} has an id with control characters.")
    digest = raw.get("token_sha256")
    found = _HASH.match(digest) if isinstance(digest, str) else None
    if found is None:
        raise _fail(source, f"{where} needs token_sha256: 64 hex characters (see hash_token).")
    scopes = raw.get("scopes", ["*"])
    if not isinstance(scopes, list) or not all(isinstance(scope, str) and scope for scope in scopes):
        raise _fail(source, f"{where} has scopes that are not a list of non-empty strings.")
    grants: tuple[GrantEntry, ...] | None = None
    if "grants" in raw:
        try:
            grants = parse_grants(raw["grants"])
        except GrantError as exc:
            raise _fail(source, f"{where}: {exc.message}") from None
    principal = Principal(
        id=principal_id,
        scopes=tuple(scopes),
        grants=grants,
        issuer=STATIC_ISSUER,
        subject=principal_id,
        verified=True,
    )
    return PrincipalRecord(principal=principal, token_sha256=found.group(1).lower())


def parse_principals(data: JSONValue, source: str = "<principals>") -> tuple[PrincipalRecord, ...]:
    """Parse a decoded principals document.

    Args:
        data: the decoded JSON/YAML value.
        source: how messages name the document (a file name, not an absolute path, in output).

    Returns:
        The records in file order.

    Raises:
        ConfigError: ``config/invalid`` for any problem; messages name entries and keys, never values.
    """
    if not isinstance(data, Mapping) or set(data) != {"principals"}:
        raise _fail(source, "the document must be an object with exactly one key, 'principals'.")
    entries = data["principals"]
    if not isinstance(entries, list) or not entries:
        raise _fail(source, "'principals' must be a non-empty list.")
    records = tuple(_parse_record(source, index, raw) for index, raw in enumerate(entries))
    seen_ids: dict[str, int] = {}
    seen_hashes: dict[str, int] = {}
    for index, record in enumerate(records):
        if record.principal.id in seen_ids:
            raise _fail(source, f"principals {seen_ids[record.principal.id]} and {index} share an id.")
        if record.token_sha256 in seen_hashes:
            raise _fail(source, f"principals {seen_hashes[record.token_sha256]} and {index} share a token.")
        seen_ids[record.principal.id] = index
        seen_hashes[record.token_sha256] = index
    return records


def _decode(path: Path, text: str) -> JSONValue:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(path.name, f"not valid JSON (line {exc.lineno}, column {exc.colno}).") from None
    import yaml  # only a YAML principals file needs the parser (a listener without one starts faster)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # The parser's own text quotes the offending line, which may be a secret: report the position only.
        mark = getattr(exc, "problem_mark", None)
        where = "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"
        raise _fail(path.name, f"not valid YAML{where}.") from None


def load_principals(path: Path) -> tuple[PrincipalRecord, ...]:
    """Read and parse a principals file (JSON for ``.json``, YAML otherwise).

    Raises:
        ConfigError: ``config/invalid`` when the file is missing, unreadable, too large (over 1 MiB),
            not UTF-8, not JSON/YAML, or breaks a rule of :func:`parse_principals`.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PRINCIPALS_FILE_BYTES + 1)
    except OSError:
        raise _fail(path.name, "cannot be read.") from None
    if len(data) > MAX_PRINCIPALS_FILE_BYTES:
        raise _fail(path.name, "is larger than 1 MiB.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(path.name, "is not UTF-8.") from None
    return parse_principals(_decode(path, text), path.name)


def find_record(records: Sequence[PrincipalRecord], token_sha256: str) -> PrincipalRecord | None:
    """The record whose hash equals ``token_sha256``, comparing against every record in constant time."""
    match: PrincipalRecord | None = None
    for record in records:
        if hmac.compare_digest(record.token_sha256, token_sha256):
            match = record
    return match
