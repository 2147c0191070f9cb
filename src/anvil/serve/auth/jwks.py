"""JSON Web Key Sets for token verification: where keys come from and which key verifies a token.

* ``file:`` sets are re-read on every verification, so rotating the file takes effect at once.
* ``https:`` sets are fetched with an injected ``httpx.AsyncClient`` (no redirects) and cached for five
  minutes; a forced refresh (a ``kid`` miss) is rate-limited to one fetch per ten seconds so random
  ``kid`` values cannot turn the gateway into a request amplifier against the key host.
* A set is ``{"keys": [<JWK object>, ...]}`` of at most 256 KiB. Any read or parse failure raises
  :class:`JwksError`, which verification answers with ``invalid_token`` (fail closed).

Keys are matched to the token's algorithm before use: ``EdDSA`` needs ``OKP``/``Ed25519``, ``RS256`` an
``RSA`` key (at least 2048 bits), ``ES256`` an ``EC``/``P-256`` key; a key that declares ``alg`` must
declare the token's, and one that declares ``use`` must say ``sig``. Only public members are loaded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote, urlsplit

import anyio

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.errors import AnvilError, ConfigError

if TYPE_CHECKING:  # httpx and PyJWT load only when a token mode uses them (cold start)
    import httpx
    import jwt

__all__ = [
    "CACHE_SECONDS",
    "MAX_JWKS_BYTES",
    "REFRESH_INTERVAL_SECONDS",
    "SUPPORTED_ALGORITHMS",
    "JwksError",
    "JwksSource",
    "KeyUnfit",
    "select_key",
    "signing_key",
]

#: A key set larger than this is refused.
MAX_JWKS_BYTES: Final = 256 * 1024
#: How long an ``https:`` key set is reused.
CACHE_SECONDS: Final = 300.0
#: The least time between two fetches of an ``https:`` key set (a ``kid`` miss forces one).
REFRESH_INTERVAL_SECONDS: Final = 10.0
_FETCH_TIMEOUT_SECONDS: Final = 10.0
#: Algorithm -> (required ``kty``, required ``crv`` or None).
SUPPORTED_ALGORITHMS: Final[Mapping[str, tuple[str, str | None]]] = {
    "EdDSA": ("OKP", "Ed25519"),
    "RS256": ("RSA", None),
    "ES256": ("EC", "P-256"),
}
_PUBLIC_MEMBERS: Final[Mapping[str, tuple[str, ...]]] = {
    "OKP": ("crv", "x"),
    "RSA": ("n", "e"),
    "EC": ("crv", "x", "y"),
}


class JwksError(AnvilError):
    """The key set could not be read or parsed; verification fails closed with ``invalid_token``."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_token", message)


class KeyUnfit(AnvilError):
    """The selected key cannot verify the token's algorithm (``invalid_token``)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_token", message)


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def _parse(data: bytes) -> tuple[JSONObject, ...]:
    if len(data) > MAX_JWKS_BYTES:
        raise JwksError("The JWKS document is larger than 256 KiB.")
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError):
        raise JwksError("The JWKS document is not valid JSON.") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list) or not all(isinstance(key, dict) for key in keys):
        raise JwksError("The JWKS document is not an object with a 'keys' list of objects.")
    return tuple(keys)


@dataclass(frozen=True, slots=True)
class _Location:
    """Where a JWKS URI points: its scheme and the URL or file path to read."""

    scheme: str
    target: str


def _locate(uri: str) -> _Location:
    try:
        parts = urlsplit(uri)
    except ValueError:
        raise ConfigError("config/invalid", "The JWKS URI does not parse.") from None
    if parts.username is not None or parts.password is not None:
        raise ConfigError("config/invalid", "The JWKS URI must not carry user information.")
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path:
            raise ConfigError("config/invalid", "A file: JWKS URI must name a local path (file:///path/jwks.json).")
        from urllib.request import url2pathname  # urllib.request loads http.client and email: not at start

        return _Location("file", url2pathname(unquote(parts.path)))
    if scheme == "https":
        if not parts.hostname:
            raise ConfigError("config/invalid", "An https: JWKS URI must name a host.")
        return _Location("https", uri)
    raise ConfigError("config/invalid", "The JWKS URI must be a file: or https: URL.")


class JwksSource:
    """Where a verifier's keys come from: a ``file:`` or ``https:`` URL.

    Args:
        uri: the key set's location.
        client: the HTTP client for an ``https:`` set (required then; redirects are never followed).
        clock: wall-clock seconds (a test seam).

    Raises:
        ConfigError: ``config/invalid`` for an unusable URI, or an ``https:`` URI without a client.
    """

    def __init__(
        self, uri: str, *, client: httpx.AsyncClient | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._location = _locate(uri)
        if self._location.scheme == "https" and client is None:
            raise ConfigError("config/invalid", "An https: JWKS needs an HTTP client.")
        self._client = client
        self._clock = clock
        self._cached: tuple[JSONObject, ...] | None = None
        self._fetched_at = float("-inf")
        self._lock = anyio.Lock()

    @property
    def scheme(self) -> str:
        """``file`` or ``https``."""
        return self._location.scheme

    async def keys(self, *, refresh: bool = False) -> tuple[JSONObject, ...]:
        """The current keys; ``refresh`` asks for a fresh read (after a ``kid`` miss).

        Raises:
            JwksError: the set cannot be read, is too large, or does not parse.
        """
        if self._location.scheme == "file":
            return self._read_file()
        async with self._lock:
            age = self._clock() - self._fetched_at
            fresh = self._cached is not None and (
                age < REFRESH_INTERVAL_SECONDS or (not refresh and age < CACHE_SECONDS)
            )
            if fresh and self._cached is not None:
                return self._cached
            keys = await self._fetch()
            self._cached, self._fetched_at = keys, self._clock()
            return keys

    def _read_file(self) -> tuple[JSONObject, ...]:
        try:
            with Path(self._location.target).open("rb") as handle:
                data = handle.read(MAX_JWKS_BYTES + 1)
        except OSError:
            raise JwksError("The JWKS file cannot be read.") from None
        return _parse(data)

    async def _fetch(self) -> tuple[JSONObject, ...]:
        assert self._client is not None  # checked in __init__
        try:
            async with self._client.stream(
                "GET",
                self._location.target,
                headers={"accept": "application/json"},
                follow_redirects=False,
                timeout=_FETCH_TIMEOUT_SECONDS,
            ) as response:
                if response.status_code != 200:
                    raise JwksError(f"The JWKS endpoint answered HTTP {response.status_code}.")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise JwksError("The JWKS document is larger than 256 KiB.")
        except _http_error():
            raise JwksError("The JWKS endpoint could not be reached.") from None
        return _parse(bytes(body))


def select_key(keys: Sequence[JSONObject], kid: str | None) -> JSONObject | None:
    """The key for a token: the one whose ``kid`` matches, or the only key when the token names none.

    Returns None when no key (or, ambiguously, more than one) fits.
    """
    if kid is None:
        return keys[0] if len(keys) == 1 else None
    matches = [key for key in keys if key.get("kid") == kid]
    return matches[0] if len(matches) == 1 else None


def _http_error() -> type[Exception]:
    """``httpx.HTTPError``, imported on first use."""
    import httpx

    return httpx.HTTPError


def signing_key(jwk: Mapping[str, object], algorithm: str) -> jwt.PyJWK:
    """Load the public part of ``jwk`` for ``algorithm`` after checking that they fit.

    Raises:
        KeyUnfit: wrong key type or curve, a declared ``alg`` other than the token's, ``use`` other than
            ``sig``, missing members, or key material that does not load.
    """
    kty, crv = SUPPORTED_ALGORITHMS[algorithm]
    if jwk.get("kty") != kty or (crv is not None and jwk.get("crv") != crv):
        raise KeyUnfit(f"The signing key is not a {kty}{'/' + crv if crv else ''} key, as {algorithm} needs.")
    if "alg" in jwk and jwk["alg"] != algorithm:
        raise KeyUnfit(f"The signing key declares another algorithm than the token's {algorithm}.")
    if "use" in jwk and jwk["use"] != "sig":
        raise KeyUnfit("The signing key is not a signature key (use).")
    public: dict[str, object] = {"kty": kty}
    for member in _PUBLIC_MEMBERS[kty]:
        value = jwk.get(member)
        if not isinstance(value, str) or not value:
            raise KeyUnfit(f"The signing key lacks its '{member}' member.")
        public[member] = value
    import jwt

    try:
        return jwt.PyJWK(public, algorithm=algorithm)
    except (jwt.PyJWTError, ValueError, TypeError, KeyError):
        raise KeyUnfit("The signing key material does not load.") from None
