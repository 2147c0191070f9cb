"""The OAuth2 token cache a runtime context holds: exchanged tokens per grant, one request per grant at a time.

Apart from :mod:`anvil.runtime.oauth` so that building a context (at start-up, for every served bundle)
does not load the token exchange and the request and upstream modules it needs: a context only exchanges
a token on a call (cold start).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import field
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio

from anvil._dataclass import dataclass
from anvil._types import JSONValue

if TYPE_CHECKING:
    import httpx

    from anvil.runtime.upstream import UpstreamClient

__all__ = ["CachedToken", "Grant", "TokenCache", "TokenFailure"]


class TokenFailure(Exception):
    """No token could be had: ``code`` is a registered detail code, ``message`` names no secret."""

    def __init__(self, code: str, message: str, **details: JSONValue) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, JSONValue] = {"code": code, **details}

    @property
    def transient(self) -> bool:
        """A timeout, an unreachable endpoint or a 5xx: trying again later may succeed (nothing was sent)."""
        return self.code == "oauth/token_endpoint_unavailable"

    def copy(self) -> TokenFailure:
        """The same failure, for another call that waited on the request (each raises its own)."""
        return TokenFailure(self.code, self.message, **{k: v for k, v in self.details.items() if k != "code"})


class Grant(Protocol):
    """What the cache needs of a grant (:class:`anvil.runtime.oauth.ClientCredentials`): its cache key."""

    def cache_key(self) -> tuple[str, ...]:
        """The grant's identity: one cached token per key."""
        ...


G = TypeVar("G", bound=Grant)


@dataclass(frozen=True, slots=True)
class CachedToken:
    """An exchanged token and the clock time after which it is fetched again."""

    value: str = field(repr=False)
    refresh_at: float


class _Flight:
    """One token request that every call needing the same token waits for."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.token: CachedToken | None = None
        self.failure: TokenFailure | None = None


class TokenCache:
    """Exchanged tokens per grant, kept until their refresh time; one request per grant at a time.

    One per :class:`~anvil.runtime.context.RuntimeContext` (so per served bundle and process). Used from
    one event loop: the single flight relies on that, not on a thread lock.
    """

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, ...], CachedToken] = {}
        self._flights: dict[tuple[str, ...], _Flight] = {}
        self.issued = 0
        """How many tokens this cache obtained (for tests and reports; never the tokens themselves)."""

    def __repr__(self) -> str:
        return f"TokenCache(grants={len(self._tokens)}, issued={self.issued})"

    async def token(
        self,
        grant: G,
        *,
        client: httpx.AsyncClient | UpstreamClient,
        timeout_ms: int,
        clock: Callable[[], float],
        exchange: Callable[[G, httpx.AsyncClient | UpstreamClient, int, Callable[[], float]], Awaitable[CachedToken]],
        stale: str | None = None,
    ) -> str:
        """A token for ``grant``: the cached one while fresh, else one fetched by a single request
        (``exchange``) that concurrent callers share (they share its failure too). ``stale`` is a token
        the upstream refused: it is dropped if still cached, and a token another call already fetched in
        its place is used.

        Raises:
            TokenFailure: the exchange failed.
        """
        key = grant.cache_key()
        while True:
            cached = self._tokens.get(key)
            if cached is not None and (cached.value == stale or clock() >= cached.refresh_at):
                del self._tokens[key]
                cached = None
            if cached is not None:
                return cached.value
            flight = self._flights.get(key)
            if flight is None:
                return await self._lead(key, exchange(grant, client, timeout_ms, clock))
            await flight.done.wait()
            if flight.failure is not None:
                raise flight.failure.copy()
            if flight.token is not None:
                return flight.token.value
            # the leading call was cancelled before it finished: try again (one of the waiters leads)

    async def _lead(self, key: tuple[str, ...], exchanged: Awaitable[CachedToken]) -> str:
        flight = self._flights[key] = _Flight()
        try:
            token = await exchanged
            self.issued += 1
            self._tokens[key] = flight.token = token
            return token.value
        except TokenFailure as failure:
            flight.failure = failure
            raise
        finally:
            del self._flights[key]
            flight.done.set()
