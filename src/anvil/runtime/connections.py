"""The served upstream client: one pooled ``aiohttp`` session, keep-alive connections per upstream host.

``anvil serve`` hands every bundle's :class:`~anvil.runtime.context.RuntimeContext` one
:class:`PooledUpstream`. Measured against ``httpx`` on the same loopback mock (``bench/compare.py``
and a client-only loop), it spends about a fifth of the CPU per request, which is most of a gateway
call's upstream cost. The connector keeps one keep-alive pool per upstream host (host, port, TLS),
so a call never opens a client or a connection it could reuse; no cookie is ever kept, no redirect
is followed, and the request URL is sent exactly as :mod:`anvil.runtime.request` encoded it.

:meth:`PooledUpstream.exchange` is the same contract as the ``httpx`` branch of
:func:`anvil.runtime.upstream.send_once`: one attempt under a total deadline, the body read up to a
size limit, and every transport failure mapped to an :class:`~anvil.runtime.upstream.Answer` that
says whether the request can have reached the upstream (only a failure to connect provably did not).
The ``httpx`` client stays the seam for tests and for ``anvil run``; both pass the same executor tests
against real loopback mocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

from anvil.runtime.upstream import Answer, names_dns_failure, read_answer

if TYPE_CHECKING:
    import aiohttp

__all__ = ["PooledUpstream"]


class PooledUpstream:
    """A pooled HTTP client for upstream calls (see the module docstring).

    Args:
        limit_per_host: The most connections open to one upstream host at once.
        keepalive_seconds: How long an idle connection is kept for reuse.
    """

    def __init__(self, *, limit_per_host: int = 64, keepalive_seconds: float = 30.0) -> None:
        self._limit_per_host = limit_per_host
        self._keepalive = keepalive_seconds
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        connector = aiohttp.TCPConnector(
            limit=0, limit_per_host=self._limit_per_host, keepalive_timeout=self._keepalive, ttl_dns_cache=300
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("Content-Type",),
            auto_decompress=True,
        )
        return self._session

    async def aclose(self) -> None:
        """Close every pooled connection."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Sequence[tuple[str, str]],
        content: bytes | None,
        *,
        timeout_ms: int,
        max_bytes: int,
    ) -> Answer:
        """Send one request and read its answer (see :func:`anvil.runtime.upstream.send_once`)."""
        import aiohttp
        from yarl import URL

        session = self._session or self._open()
        began = False
        try:
            with anyio.fail_after(timeout_ms / 1000):
                async with session.request(
                    method, URL(url, encoded=True), headers=list(headers), data=content, allow_redirects=False
                ) as response:
                    began = True
                    return await read_answer(
                        response.status, response.headers.get, response.content.iter_any(), max_bytes=max_bytes
                    )
        except aiohttp.ClientConnectorError as exc:
            # No connection was made: the request never left, nothing can have committed.
            dns = isinstance(exc, aiohttp.ClientConnectorDNSError) or names_dns_failure(str(exc))
            return Answer(condition="dns_failure" if dns else "connection_reset")
        except (TimeoutError, aiohttp.ServerTimeoutError):
            return Answer(condition="timeout", after_response=began, maybe_received=True)
        except (aiohttp.ClientError, OSError):
            return Answer(condition="connection_reset", after_response=began, maybe_received=True)
