"""The served upstream client: keep-alive HTTP/1.1 connections per upstream host, parsed by ``httptools``.

``anvil serve`` hands every bundle's :class:`~anvil.runtime.context.RuntimeContext` one
:class:`PooledUpstream`. It is a lean client on asyncio transports (uvloop's when installed) with the
``httptools`` (llhttp) response parser uvicorn also uses: a request is one ``write`` of bytes built
once, an answer is parsed where it is received, and a finished connection goes back to its host's
pool. ``bench/upstream.py`` measures it against httpx and aiohttp on the payments mock; it spends a
fraction of either's CPU per request, which is most of a gateway call's upstream cost.

The pool keeps idle connections per (scheme, host, port), the warmest first, at most
``limit_per_host`` open to one host at once (a call past that waits for one, within its deadline);
an idle connection older than ``keepalive_seconds``, one the upstream closed or one that received
bytes nobody asked for is never reused. Only reads reuse connections: a write (``exchange(...,
write=True)``, which the executor passes for every operation that is not a read) goes out on a
connection that never carried a request, asks for ``connection: close`` and is never followed on it,
because no used connection can be proven idle: an answer nobody asked for may be in flight and would be
read as the write's. So that a write does not wait for a connect, each write, once its answer is in,
opens its host's next *spare* in the background: a connection no request has been written on, taken by
the next write if it is still open and younger than :data:`SPARE_SECONDS` (1 s; bytes arriving on it
close it, as on any idle connection; an older one is closed, since an upstream closing an unused
connection as a write goes out would leave that write's outcome uncertain). Opened after the answer, not
as the write goes out, the upstream accepts it while the gateway answers its own caller, not while it
handles the write. No cookie
is kept, no redirect is followed, no proxy is used, and the request target is sent exactly as
:mod:`anvil.runtime.request` encoded it. HTTPS uses the system's trust store
(``ssl.create_default_context``) with the host name checked.

:meth:`PooledUpstream.exchange` is the same contract as the ``httpx`` branch of
:func:`anvil.runtime.upstream.send_once`: one attempt under a total deadline, the body read up to a
size limit (the bytes received and the bytes ``gzip``/``deflate`` decodes to, so neither a small
compressed body nor bytes after its compressed stream can grow past it), and every failure mapped to
an :class:`~anvil.runtime.upstream.Answer` that says whether the request can have reached the
upstream: only a failure before the request was written (no connection, no
free connection in time, a refused TLS handshake) provably did not. Headers are bounded
(:data:`MAX_HEADER_BYTES`); a malformed answer is a transport failure after the response began.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Sequence
from typing import Final, cast
from urllib.parse import urlsplit

from anvil import __version__
from anvil.runtime.upstream import ACCEPT_ENCODING, Answer, BrokenBody, names_dns_failure, read_answer

__all__ = ["MAX_HEADER_BYTES", "SPARE_SECONDS", "PooledUpstream"]

#: The most bytes of response headers read before the answer counts as malformed.
MAX_HEADER_BYTES: Final = 64 * 1024
#: How long a write's spare connection (never used) is kept: well under any upstream's idle timeout for
#: a connection that sent nothing, so the upstream does not close it as the write goes out.
SPARE_SECONDS: Final = 1.0
#: Headers the client sets itself; a request's own copies are dropped (they would contradict the framing).
_OWN: Final = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
_Key = tuple[str, str, int]  # scheme, host, port
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_USER_AGENT: Final = f"anvil/{__version__}"
_ORIGINS: dict[str, tuple[_Key, str]] = {}
_ORIGINS_KEPT: Final = 256
#: The largest request after which its connection may carry another one (see _Connection.finished).
_REUSE_BYTES: Final = 64 * 1024
_ORIGIN: Final = re.compile(r"[^/?#]*//[^/?#]*")
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
#: Control characters no request line or header value may hold (CR and LF are counted apart; HTAB is
#: allowed inside a header value by RFC 9110): C0 controls, DEL and the C1 controls.
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class _Broken(Exception):
    """The answer cannot be used: the connection closed early or the bytes are not HTTP/1.1."""


class _Connection(asyncio.Protocol):
    """One upstream connection and the answer being parsed on it (one request at a time)."""

    def __init__(self) -> None:
        import httptools

        self._errors = (httptools.HttpParserError, httptools.HttpParserUpgrade)
        self.parser = httptools.HttpResponseParser(self)  # one per connection: llhttp parses answer after answer
        self.transport: asyncio.Transport | None = None
        self.ended = False  # the upstream closed its side, or the connection failed
        self.eof = False  # the upstream ended its side in order (FIN), not by a reset
        self.active = False  # a request is out on it; bytes arriving otherwise are unsolicited
        self.idle_since = 0.0
        self.opened = time.monotonic()
        self.sent = 0  # the size of the request last written
        self._waiter: asyncio.Future[None] | None = None
        self._begin(head_only=False)

    def _begin(self, *, head_only: bool) -> None:
        self.head_only = head_only
        self.status = 0
        self.headers: dict[str, str] = {}  # lower-cased name -> the first value
        self.head_bytes = 0  # bytes received before the headers were complete (informational answers too)
        self.header_bytes = 0  # the headers' own size, as parsed
        self.since_body = 0  # bytes received since the headers or the last body part (chunk lines, trailers)
        self.headers_done = False
        self.informational = False
        self.complete = False
        self.body: list[bytes] = []
        self.broken = False
        self.extra = False  # a second answer followed the first: the connection is not reused
        self.keep_alive = False

    # --- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if not self.active:
            self.close()  # nobody asked: the connection's framing can no longer be trusted
            return
        self.since_body += len(data)
        try:
            self.parser.feed_data(data)
        except self._errors:
            self.broken = True
        if not self.headers_done:
            # httptools gathers a header whole before calling back: bound what arrives before the body.
            self.head_bytes += len(data)
            self.broken = self.broken or self.head_bytes > MAX_HEADER_BYTES
        elif self.since_body > MAX_HEADER_BYTES:
            self.broken = True  # the same for a chunked body's trailers (and chunk lines): bound what is not body
        if self.broken:
            self.close()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = self.eof = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._wake()

    # --- httptools callbacks (after a complete answer, every callback only marks the extra bytes) ---

    def on_message_begin(self) -> None:
        self.extra = self.extra or self.complete

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.complete:
            return
        self.header_bytes += len(name) + len(value) + 4
        if self.header_bytes > MAX_HEADER_BYTES:  # whole headers that arrived in one read
            self.broken = True
            raise ValueError("headers too large")  # stops the parser: feed_data raises its callback error
        self.headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1").strip())

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        self.status = self.parser.get_status_code()
        self.informational = 100 <= self.status <= 199
        if not self.informational:
            self.headers_done = True
            self.since_body = 0
            if self.head_only:
                self.complete = True  # a HEAD answer has no body, whatever its content-length says

    def on_body(self, body: bytes) -> None:
        self.since_body = 0
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.complete:
            return
        if self.informational:  # 100 Continue / 103 Early Hints: the answer follows on the same connection
            self.headers, self.header_bytes, self.informational = {}, 0, False
            return
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()  # llhttp answers this only inside the callback

    # --- the exchange's side ------------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Until the next bytes, end or failure arrive."""
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def send(self, data: bytes, *, head_only: bool) -> None:
        """Start one request: reset the answer state and write ``data`` in one piece.

        Raises:
            _Broken: the connection ended before it was written to (the request provably did not leave).
        """
        assert self.transport is not None
        if self.ended or self.transport.is_closing():  # under uvloop, a reset at accept is often seen by now
            raise _Broken
        self._begin(head_only=head_only)
        self.active = True
        self.sent = len(data)
        self.transport.write(data)

    async def answer_headers(self) -> None:
        """Until the answer's status and headers are in."""
        while not self.headers_done:
            if self.broken or self.ended:
                raise _Broken
            await self.wait()

    def until_close(self) -> bool:
        """The answer's body ends where the connection ends (no length and not chunked)."""
        return "content-length" not in self.headers and "transfer-encoding" not in self.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        """The answer's body as it arrives (still encoded)."""
        while True:
            if self.body:
                data = b"".join(self.body) if len(self.body) > 1 else self.body[0]
                self.body.clear()
                yield data
            elif self.complete:
                return
            elif self.broken:
                raise _Broken
            elif self.ended:
                if self.until_close() and self.eof and self.status not in (204, 304):
                    # llhttp is never told of the end: an until-close body ends at a clean end only (a reset
                    # can cut it anywhere).
                    self.complete = True
                    return
                raise _Broken
            else:
                await self.wait()

    def reusable(self, now: float, keepalive: float) -> bool:
        """Whether this idle connection may carry the next request."""
        transport = self.transport
        return (
            not self.ended
            and transport is not None
            and not transport.is_closing()
            and now - self.idle_since < keepalive
        )

    def finished(self) -> bool:
        """Whether the answer was read whole and the connection may carry another request."""
        # An answer can come before the request is written whole (an early 413, say): the next request
        # would follow the rest of that body, on a connection the upstream may no longer read as framed.
        # (asyncio's TLS transport counts only what it has not encrypted yet, so over TLS this sees less.)
        # So a request over _REUSE_BYTES is never followed on its connection: TLS may still hold part of it.
        written = (
            self.sent <= _REUSE_BYTES and self.transport is not None and self.transport.get_write_buffer_size() == 0
        )
        return written and self.complete and self.keep_alive and not (self.head_only or self.extra or self.ended)

    def close(self) -> None:
        """Close the connection now (its answer, if any, is abandoned)."""
        self.ended = True
        if self.transport is not None:
            self.transport.close()


def _origin(url: str) -> tuple[_Key, str, int]:
    """Where ``url`` goes, its ``host`` header and where its request target starts."""
    matched = _ORIGIN.match(url)
    origin = matched.group(0) if matched is not None else url
    found = _ORIGINS.get(origin)
    if found is None:
        parts = urlsplit(origin)
        scheme = parts.scheme.lower()
        host = parts.hostname
        if scheme not in _DEFAULT_PORTS or not host or parts.username is not None:
            raise ValueError("only http(s)://HOST[:PORT]/... URLs are sent")
        port = parts.port or _DEFAULT_PORTS[scheme]
        shown = f"[{host}]" if ":" in host else host
        authority = shown if port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"
        if len(_ORIGINS) >= _ORIGINS_KEPT:
            _ORIGINS.clear()  # a bounded cache: upstream origins are few, a hostile caller's are not kept
        found = _ORIGINS[origin] = ((scheme, host, port), authority)
    return found[0], found[1], len(origin)


def _request_bytes(
    method: str, url: str, headers: Sequence[tuple[str, str]], content: bytes | None, *, close: bool = False
) -> tuple[_Key, bytes]:
    """Where ``url`` goes and the request's bytes (raises ValueError for what cannot be sent as is);
    ``close`` asks the upstream to close the connection after its answer."""
    key, authority, start = _origin(url)
    target = url[start:].partition("#")[0] or "/"
    if target[0] != "/":
        target = "/" + target  # an origin followed directly by a query
    lines = [f"{method} {target} HTTP/1.1", f"host: {authority}"]
    if close:
        lines.append("connection: close")
    named: set[str] = set()
    for name, value in headers:
        lowered = name.lower()
        if lowered in _OWN:
            continue
        if _TOKEN.match(name) is None:
            raise ValueError("a header name is not an HTTP token")
        named.add(lowered)
        lines.append(f"{name}: {value}")
    if "user-agent" not in named:
        lines.append(f"user-agent: {_USER_AGENT}")
    if "accept-encoding" not in named:
        lines.append(f"accept-encoding: {ACCEPT_ENCODING}")
    if content is not None or method in _BODY_METHODS:
        lines.append(f"content-length: {len(content or b'')}")
    text = "\r\n".join(lines)
    # Only the separators may break a line: one more CR or LF, or any other control character, and
    # nothing is sent.
    breaks = len(lines) - 1
    if (
        text.count("\r") != breaks
        or text.count("\n") != breaks
        or _CONTROL.search(text) is not None
        or " " in target
        or "\t" in target
    ):
        raise ValueError("a request line or header holds a line break, a control character or a space")
    return key, text.encode("latin-1") + b"\r\n\r\n" + (content or b"")


class PooledUpstream:
    """A pooled HTTP/1.1 client for upstream calls (see the module docstring).

    Args:
        limit_per_host: The most connections open to one upstream host at once.
        keepalive_seconds: How long an idle connection is kept for reuse.
        spare_seconds: How long a write's spare connection is kept unused (:data:`SPARE_SECONDS`).
    """

    def __init__(
        self, *, limit_per_host: int = 64, keepalive_seconds: float = 30.0, spare_seconds: float = SPARE_SECONDS
    ) -> None:
        self._limit_per_host = limit_per_host
        self._keepalive = keepalive_seconds
        self._spare_seconds = spare_seconds
        self._idle: dict[_Key, list[_Connection]] = {}
        self._slots: dict[_Key, asyncio.Semaphore] = {}
        self._tls: ssl.SSLContext | None = None
        self._generation = 0  # one more at each aclose: a connection out on a call then is not pooled after it
        self._spares: dict[_Key, _Connection] = {}  # per host, one never-used connection for the next write
        self._opening: dict[_Key, asyncio.Task[None]] = {}  # the spare being opened, per host

    async def aclose(self) -> None:
        """Close every pooled connection (a later call opens new ones; one in use now closes when its call ends)."""
        self._generation += 1
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for conn in connections:
                conn.close()
        spares, self._spares = self._spares, {}
        for conn in spares.values():
            conn.close()
        opening, self._opening = self._opening, {}
        for task in opening.values():
            task.cancel()

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()  # the trust store loads once, on the first HTTPS call
        return self._tls

    async def _checkout(self, key: _Key, *, fresh: bool) -> _Connection:
        now = time.monotonic()
        if fresh:
            spare = self._spares.pop(key, None)
            if spare is not None:
                # Never written on (bytes arriving on it closed it): no answer can be on its way.
                if spare.reusable(now, self._spare_seconds):
                    return spare
                spare.close()
            return await self._connect(key)
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()  # the most recently used: the warmest, the least likely closed by the upstream
            if conn.reusable(now, self._keepalive):
                return conn
            conn.close()
        return await self._connect(key)

    async def _connect(self, key: _Key) -> _Connection:
        scheme, host, port = key
        tls = scheme == "https"
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(
            _Connection, host, port, ssl=self._context() if tls else None, server_hostname=host if tls else None
        )
        return conn

    def _prepare(self, key: _Key) -> None:
        """Open the host's next spare in the background (one at a time per host)."""
        if key not in self._opening:
            self._opening[key] = asyncio.get_running_loop().create_task(self._open_spare(key, self._generation))

    async def _open_spare(self, key: _Key, generation: int) -> None:
        try:
            conn = await self._connect(key)
        except (OSError, ValueError):
            return  # the next write connects itself and says what failed
        finally:
            if generation == self._generation:
                self._opening.pop(key, None)
        if generation != self._generation or key in self._spares:
            conn.close()
            return
        conn.idle_since = conn.opened = time.monotonic()
        self._spares[key] = conn
        # Not taken in time: closed, so no unused connection stays open at the upstream.
        asyncio.get_running_loop().call_later(self._spare_seconds, self._expire, key, conn)

    def _expire(self, key: _Key, conn: _Connection) -> None:
        if self._spares.get(key) is conn:
            del self._spares[key]
            conn.close()

    def _checkin(self, key: _Key, conn: _Connection) -> None:
        conn.active = False
        conn.idle_since = time.monotonic()
        self._idle.setdefault(key, []).append(conn)

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Sequence[tuple[str, str]],
        content: bytes | None,
        *,
        timeout_ms: int,
        max_bytes: int,
        write: bool = False,
    ) -> Answer:
        """Send one request and read its answer (see :func:`anvil.runtime.upstream.send_once`).

        A ``write`` goes out on a connection no request was written on (the host's spare, opened in the
        background after the write before was answered, or a new one) with ``connection: close``, and that connection
        carries nothing else: a used connection cannot be proven idle (an answer nobody asked for may be
        on its way), and a write must never take such an answer for its own.

        Raises:
            ValueError: the URL or a header cannot be sent as is (nothing was sent).
        """
        key, data = _request_bytes(method, url, headers, content, close=write)
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = asyncio.Semaphore(self._limit_per_host)
        sent = began = False
        generation = self._generation
        conn: _Connection | None = None
        reuse = False
        try:
            async with asyncio.timeout(timeout_ms / 1000):  # the client is asyncio's (transports) anyway
                async with slots:
                    try:
                        conn = await self._checkout(key, fresh=write)
                        conn.send(data, head_only=method == "HEAD")
                        sent = True
                        await conn.answer_headers()
                        began = True
                        answer = await read_answer(
                            conn.status,
                            conn.headers.get,
                            conn.chunks(),
                            max_bytes=max_bytes,
                            head=conn.head_only,
                            encoded=True,
                        )
                        reuse = not write and conn.finished() and not answer.after_response
                        return answer
                    finally:
                        if conn is not None:
                            if reuse and generation == self._generation:
                                self._checkin(key, conn)
                            else:
                                conn.close()
                        if write and sent and generation == self._generation:
                            # The next write's spare, now that this one's answer is in (module docstring); none
                            # after aclose, which closed the pool while this write was out.
                            self._prepare(key)
        except TimeoutError:
            return Answer(condition="timeout", after_response=began, maybe_received=sent)
        except (_Broken, BrokenBody, OSError) as exc:
            if not sent:
                # No connection was made (or its TLS handshake failed): the request never left.
                dns = isinstance(exc, socket.gaierror) or names_dns_failure(str(exc))
                return Answer(condition="dns_failure" if dns else "connection_reset")
            return Answer(condition="connection_reset", after_response=began, maybe_received=True)
