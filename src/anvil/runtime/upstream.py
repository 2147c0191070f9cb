"""One attempt on the wire, and what a failed last attempt means (original-core §6.4-§6.6).

:func:`send_once` is the single boundary where ``httpx`` exceptions are translated: a timeout or a
transport failure becomes an :class:`Answer` with a retry ``condition``, ``after_response`` saying
whether the upstream had begun answering, and ``maybe_received`` saying whether the request may have
reached it. Either makes a write's outcome uncertain (it may have committed), so its reservation is kept:
only a failure that provably happened before the request left (no connection, no pooled connection) is a
terminal failure that releases it. Redirects are never followed and bodies above the size limit are
refused; both count as failures after the response began.

The client is either an ``httpx.AsyncClient`` (tests, ``anvil run``) or an :class:`UpstreamClient`
such as :class:`anvil.runtime.connections.PooledUpstream` (what ``anvil serve`` uses: it costs a
fraction of httpx's CPU per request); both follow the rules above.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

import anyio

from anvil._types import JSONValue
from anvil.air.model import Operation
from anvil.runtime.envelope import CODE_TABLE, ErrorEnvelope, map_upstream_error

if TYPE_CHECKING:  # httpx is imported by whoever made an httpx client; a served gateway never loads it
    import httpx

    from anvil.runtime.request import WireRequest

__all__ = [
    "Answer",
    "UpstreamClient",
    "failure_envelope",
    "names_dns_failure",
    "parse_data",
    "read_answer",
    "send_once",
]

_DNS_HINTS: Final = ("name or service not known", "nodename nor servname", "getaddrinfo", "name resolution")


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
    ) -> Answer:
        """Send one request under a total deadline of ``timeout_ms`` and read at most ``max_bytes``."""


def names_dns_failure(text: str) -> bool:
    """Whether a connect error's text says the host name did not resolve."""
    lowered = text.lower()
    return any(hint in lowered for hint in _DNS_HINTS)


async def read_answer(
    status: int,
    header: Callable[[str], str | None],
    chunks: AsyncIterator[bytes],
    *,
    max_bytes: int,
    head: bool = False,
) -> Answer:
    """Read one upstream answer, whichever client received it: a redirect is never followed and a body
    over ``max_bytes`` (declared or streamed) is refused; both count as failures after the response began.
    The answer to a ``head`` request has no body, so the length it declares is not a size."""
    answer = Answer(status=status, request_id=header("x-request-id"), retry_after=header("retry-after"))
    if 300 <= status <= 399:
        answer.after_response = True
        return answer
    declared = header("content-length")
    if not head and declared is not None and declared.isdigit() and int(declared) > max_bytes:
        answer.after_response = answer.oversized = True
        return answer
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            answer.after_response = answer.oversized = True
            return answer
        parts.append(chunk)
    answer.body = b"".join(parts)
    return answer


async def send_once(
    client: httpx.AsyncClient | UpstreamClient, wire: WireRequest, *, timeout_ms: int, max_bytes: int
) -> Answer:
    """Send ``wire`` once under a total deadline of ``timeout_ms`` and read at most ``max_bytes``."""
    exchange = getattr(client, "exchange", None)
    if exchange is not None:
        answer: Answer = await exchange(
            wire.method, wire.url, wire.headers, wire.content, timeout_ms=timeout_ms, max_bytes=max_bytes
        )
        return answer
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    #: Failures that happen before any request byte is written.
    not_sent = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
    request = client.build_request(
        wire.method,
        wire.url,
        headers=list(wire.headers),
        content=wire.content,
        timeout=httpx.Timeout(timeout_ms / 1000),
    )
    began = False
    try:
        with anyio.fail_after(timeout_ms / 1000):
            response = await client.send(request, stream=True, follow_redirects=False)
            began = True
            try:
                return await read_answer(
                    response.status_code,
                    response.headers.get,
                    response.aiter_bytes(),
                    max_bytes=max_bytes,
                    head=wire.method == "HEAD",
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


def parse_data(body: bytes) -> JSONValue:
    """An answer body as data: None when empty, parsed JSON when it parses, else the text."""
    if not body:
        return None
    try:
        return json.loads(body)
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
