"""One attempt on the wire, and what a failed last attempt means (original-core §6.4-§6.6).

:func:`send_once` is the single boundary where ``httpx`` exceptions are translated: a timeout or a
transport failure becomes an :class:`Answer` with a retry ``condition``, ``after_response`` saying
whether the upstream had begun answering, and ``maybe_received`` saying whether the request may have
reached it. Either makes a write's outcome uncertain (it may have committed), so its reservation is kept:
only a failure that provably happened before the request left (no connection, no pooled connection) is a
terminal failure that releases it. A complete non-2xx answer releases it only when its status proves that
nothing was applied (:func:`proves_nothing_applied`, a closed list). Redirects are never followed and
bodies above the size limit are refused; both count as failures after the response began.

Both clients hand :func:`read_answer` the body as received and it decodes ``gzip``/``deflate`` itself,
bounded: the bytes received and the bytes decoded each count against the size limit, and a compressed
stream that is corrupt, stops short or is followed by more bytes is a broken answer (:class:`BrokenBody`).

The client is either an ``httpx.AsyncClient`` (tests, ``anvil run``) or an :class:`UpstreamClient`
such as :class:`anvil.runtime.connections.PooledUpstream` (what ``anvil serve`` uses: it costs a
fraction of httpx's CPU per request); both follow the rules above.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.model import Operation
from anvil.runtime.envelope import CODE_TABLE, ErrorEnvelope, map_upstream_error

if TYPE_CHECKING:  # httpx is imported by whoever made an httpx client; a served gateway never loads it
    import httpx

    from anvil.runtime.request import WireRequest

__all__ = [
    "ACCEPT_ENCODING",
    "Answer",
    "BrokenBody",
    "UpstreamClient",
    "failure_envelope",
    "names_dns_failure",
    "parse_data",
    "proves_nothing_applied",
    "read_answer",
    "send_once",
    "strict_json",
]

_DNS_HINTS: Final = ("name or service not known", "nodename nor servname", "getaddrinfo", "name resolution")
#: The content codings the clients ask for (``accept-encoding``) and decode.
_CODINGS: Final = frozenset({"gzip", "x-gzip", "deflate"})
#: The ``accept-encoding`` both clients send unless the request names its own.
ACCEPT_ENCODING: Final = "gzip, deflate"


class BrokenBody(Exception):
    """The body cannot be used: its compressed stream is corrupt, stops short, or has bytes after its end."""


def proves_nothing_applied(status: int) -> bool:
    """Whether a complete answer with ``status`` proves the upstream applied nothing (a closed list).

    A 4xx other than 408 refuses the request as it was sent (429 included), and 503 says the service
    took nothing on. Every other status, including 408, every 5xx but 503 (501, 505, 507, a proxy's
    520-530, 598, 599) and any status outside the registry, can be sent after the origin received the
    request, so a write answered with it may have committed.
    """
    return (400 <= status <= 499 and status != 408) or status == 503


@dataclass(slots=True)
class Answer:
    """One attempt's result: a status and body, or a transport failure (``condition``)."""

    status: int | None = None
    body: bytes = b""
    request_id: str | None = None
    retry_after: str | None = None
    condition: str | None = None
    after_response: bool = False
    maybe_received: bool = False
    oversized: bool = False

    @property
    def uncertain(self) -> bool:
        """The upstream may have acted on the request although no complete answer came back."""
        return self.after_response or self.maybe_received

    @property
    def ok(self) -> bool:
        """A complete 2xx answer."""
        return self.status is not None and 200 <= self.status <= 299 and not self.after_response

    @property
    def possibly_committed(self) -> bool:
        """A failed write may have been applied: the answer is uncertain, or its status proves nothing."""
        if self.uncertain:
            return True
        return self.status is not None and not self.ok and not proves_nothing_applied(self.status)


class UpstreamClient(Protocol):
    """An upstream HTTP client other than httpx: one attempt, classified as :class:`Answer` (module docstring)."""

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
        """Send one request under a total deadline of ``timeout_ms`` and read at most ``max_bytes``;
        a ``write`` never goes out on a connection that carried another request."""


def names_dns_failure(text: str) -> bool:
    """Whether a connect error's text says the host name did not resolve."""
    lowered = text.lower()
    return any(hint in lowered for hint in _DNS_HINTS)


class _Inflater:
    """One ``gzip``/``deflate`` body decoded as it arrives, at most ``limit + 1`` bytes per chunk (one past the
    limit is enough to refuse)."""

    __slots__ = ("_deflate", "_limit", "_stream")

    def __init__(self, coding: str, limit: int) -> None:
        self._deflate = coding == "deflate"
        self._limit = limit
        self._stream: Any = None

    def feed(self, chunk: bytes) -> bytes:
        """The bytes ``chunk`` decodes to.

        Raises:
            BrokenBody: the stream is corrupt, or bytes follow its end (they would pile up unread).
        """
        stream = self._stream
        if stream is None:
            wbits = 16 + zlib.MAX_WBITS
            if self._deflate:  # deflate is zlib-wrapped by the standard, raw by some servers
                wbits = zlib.MAX_WBITS if chunk[0] & 0x0F == 8 else -zlib.MAX_WBITS
            stream = self._stream = zlib.decompressobj(wbits)
        elif stream.eof:
            raise BrokenBody
        try:
            out: bytes = stream.decompress(chunk, self._limit + 1)
        except zlib.error:
            raise BrokenBody from None
        if stream.unused_data:
            raise BrokenBody
        return out

    def finish(self) -> None:
        """Raises :class:`BrokenBody` when the stream stopped short: what was decoded is not the whole body."""
        if self._stream is not None and not self._stream.eof:
            raise BrokenBody


async def read_answer(
    status: int,
    header: Callable[[str], str | None],
    chunks: AsyncIterator[bytes],
    *,
    max_bytes: int,
    head: bool = False,
    encoded: bool = False,
) -> Answer:
    """Read one upstream answer, whichever client received it: a redirect is never followed and a body
    over ``max_bytes`` (declared or streamed) is refused; both count as failures after the response began.
    The answer to a ``head`` request has no body, so the length it declares is not a size.

    With ``encoded``, ``chunks`` are the body as received: a ``gzip``/``deflate`` body is decoded here,
    and the bytes received count against ``max_bytes`` as well as the bytes decoded.

    Raises:
        BrokenBody: an ``encoded`` body's compressed stream is corrupt, stops short or has bytes after its end.
    """
    answer = Answer(status=status, request_id=header("x-request-id"), retry_after=header("retry-after"))
    if 300 <= status <= 399:
        answer.after_response = True
        return answer
    declared = header("content-length")
    if not head and declared is not None and declared.isdigit() and int(declared) > max_bytes:
        answer.after_response = answer.oversized = True
        return answer
    coding = (header("content-encoding") or "").strip().lower() if encoded else ""
    inflater = _Inflater(coding, max_bytes) if coding in _CODINGS else None
    parts: list[bytes] = []
    size = received = 0
    async for chunk in chunks:
        received += len(chunk)
        if inflater is not None and chunk and received <= max_bytes:
            chunk = inflater.feed(chunk)
        size += len(chunk)
        if size > max_bytes or received > max_bytes:
            answer.after_response = answer.oversized = True
            return answer
        parts.append(chunk)
    if inflater is not None:
        inflater.finish()
    answer.body = b"".join(parts)
    return answer


async def send_once(
    client: httpx.AsyncClient | UpstreamClient,
    wire: WireRequest,
    *,
    timeout_ms: int,
    max_bytes: int,
    write: bool = False,
) -> Answer:
    """Send ``wire`` once under a total deadline of ``timeout_ms`` and read at most ``max_bytes``.

    A ``write`` goes to an :class:`UpstreamClient` as one (the served client sends it on a new connection
    of its own); an httpx client pools as httpx does.
    """
    exchange = getattr(client, "exchange", None)
    if exchange is not None:
        answer: Answer = await exchange(
            wire.method,
            wire.url,
            wire.headers,
            wire.content,
            timeout_ms=timeout_ms,
            max_bytes=max_bytes,
            write=write,
        )
        return answer
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    #: Failures that happen before any request byte is written.
    not_sent = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
    headers = list(wire.headers)
    if not any(name.lower() == "accept-encoding" for name, _ in headers):
        headers.append(("accept-encoding", ACCEPT_ENCODING))  # only what read_answer decodes
    request = client.build_request(
        wire.method,
        wire.url,
        headers=headers,
        content=wire.content,
        timeout=httpx.Timeout(timeout_ms / 1000),
    )
    began = False
    try:
        with anyio.fail_after(timeout_ms / 1000):
            response = await client.send(request, stream=True, follow_redirects=False)
            began = True
            # The body as received, decoded by read_answer within the limit (httpx's own decoders are
            # unbounded); a transport that hands over a body already read (httpx.MockTransport) is in memory.
            read = response.is_stream_consumed
            try:
                return await read_answer(
                    response.status_code,
                    response.headers.get,
                    response.aiter_bytes() if read else response.aiter_raw(),
                    max_bytes=max_bytes,
                    head=wire.method == "HEAD",
                    encoded=not read,
                )
            finally:
                await response.aclose()
    except not_sent as exc:
        # No connection was made (or none was free): the request never left, nothing can have committed.
        dns = names_dns_failure(str(exc))
        condition = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection_reset"
        return Answer(condition="dns_failure" if dns else condition)
    except (TimeoutError, httpx.TimeoutException):
        return Answer(condition="timeout", after_response=began, maybe_received=True)
    except httpx.TransportError:
        return Answer(condition="connection_reset", after_response=began, maybe_received=True)
    except BrokenBody:
        return Answer(condition="connection_reset", after_response=True, maybe_received=True)


def _no_constant(name: str) -> JSONValue:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a JSON number out of range")  # 1e999 would parse as inf
    return value


def strict_json(body: bytes) -> JSONValue:
    """``body`` parsed as JSON that can be written back as JSON and UTF-8 unchanged.

    Raises:
        ValueError: ``body`` is not such JSON: not JSON at all, ``NaN``/``Infinity``, a number beyond a
            double's range, a lone surrogate escape, or nesting deeper than the parser goes.
    """
    text = body.decode(json.detect_encoding(body))  # strictly: json.loads(bytes) would let surrogates pass
    try:
        data: JSONValue = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if b"\\u" in body:  # only an escape can make a lone surrogate
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # UnicodeEncodeError is a ValueError
    return data


def parse_data(body: bytes) -> JSONValue:
    """An answer body as data: None when empty, parsed JSON when it is strict JSON (:func:`strict_json`),
    else the text (so a stored result always serializes, and an odd answer is never a ledger fault)."""
    if not body:
        return None
    try:
        return strict_json(body)
    except ValueError:
        return body.decode("utf-8", errors="replace")


def failure_envelope(
    op: Operation, last: Answer, *, trace_id: str, retry_safe: bool, details: dict[str, JSONValue] | None
) -> ErrorEnvelope:
    """The envelope for a failed last attempt: the status table for a usable answer, else a generic
    transport message (transport error text is never surfaced)."""
    if last.status is not None and not last.oversized and not 300 <= last.status <= 399:
        return map_upstream_error(
            op,
            status=last.status,
            body=last.body,
            request_id=last.request_id,
            trace_id=trace_id,
            retry_safe=retry_safe,
            details=details,
        )
    if last.status is not None:
        code, message = "unknown_upstream_error", f"The upstream answer for {op.id} could not be used."
    elif last.condition == "timeout":
        code, message = "upstream_timeout", f"The upstream did not answer {op.id} in time."
    else:
        code, message = "upstream_unavailable", f"The upstream could not be reached for {op.id}."
    retryable = CODE_TABLE[code].retryable
    upstream: dict[str, JSONValue] | None = None
    if last.status is not None:
        upstream = {"status": last.status}
        if last.request_id:
            upstream["request_id"] = last.request_id
    return ErrorEnvelope(
        code=code,
        message=message,
        retryable=retryable,
        safe_to_retry=retryable and retry_safe,
        operation=op.id,
        trace_id=trace_id,
        upstream=upstream,
        details=details,
    )
