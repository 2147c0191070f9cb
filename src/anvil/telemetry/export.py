"""Export in the background: a bounded queue, one thread, batches, and every dropped span counted.

:class:`SpanQueue` takes ended spans from the event loop (a length check and a deque append, never a wait)
and its thread hands them to a sink in batches of at most ``batch``, every ``delay_s`` or as soon as a batch
is full. A running exporter queues every ended span, sampled or not, once (:meth:`~SpanQueue.counted_by`):
the thread counts each into the metrics as it takes it (one queue for both, where there were two) and keeps
the sampled ones for export. When the queue holds ``max_queue`` spans a new one is counted at once and, if
sampled, dropped (``queue_full``); a batch the sink cannot deliver is dropped whole (``export_failed``): an
exporter that is down or black-holed costs its own thread a timeout per batch and never a call anything.
The same thread runs the periodic metric export (``tick``).

Sinks:

* :class:`HttpSink` - OTLP/HTTP protobuf (``POST`` of :func:`anvil.telemetry.otlp.encode_traces`), one
  kept-alive connection, a timeout per request, optional gzip, TLS files, headers fixed or from a provider
  (a refreshed Google token). Ours rather than the SDK's ``OTLPSpanExporter``: the SDK's span encoder
  costs about 20 µs of CPU per span here against under 2, which measured (``bench/otel.py``) puts tracing
  at +15-19 % server CPU per call, over the 10 % target.
* :class:`SdkSink` - any OpenTelemetry SDK ``SpanExporter`` (OTLP/gRPC, console), fed the SDK's
  ``ReadableSpan`` built from the records on this thread. The SDK's exporters retry a failing batch with
  backoff until their own timeout, so a down collector holds this thread at most the timeout per batch
  while the event loop goes on queueing (and, once the queue is full, dropping and counting).

:func:`quiet_sdk_logs` keeps the SDK exporters' line per failed batch (and per retry) to one a minute, as
:class:`HttpSink` does its own.
"""

from __future__ import annotations

import gzip
import http.client
import logging
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from anvil.runtime.tracing import Attribute
from anvil.telemetry.aggregates import Aggregates
from anvil.telemetry.otlp import encode_traces
from anvil.telemetry.spans import SpanRecord

__all__ = [
    "SDK_EXPORT_LOGGERS",
    "HttpSink",
    "SdkSink",
    "SpanQueue",
    "quiet_sdk_logs",
    "readable_spans",
    "sdk_resource",
    "shown_url",
]

_log = logging.getLogger("anvil.telemetry")
#: The longest an export failure stays quiet in the log (one line per failing exporter per minute).
_QUIET_S: Final = 60.0
_PROTOBUF: Final = "application/x-protobuf"
#: The loggers the SDK's OTLP exporters report failed exports and retries on.
SDK_EXPORT_LOGGERS: Final = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.common.http",
)


class SpanQueue:
    """The bounded export queue and its thread (see the module docstring).

    Args:
        sink: Delivers one batch; True when it was accepted.
        max_queue: Spans held at most (``OTEL_BSP_MAX_QUEUE_SIZE``, default 2048).
        batch: Spans per export at most (``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``, default 512).
        delay_s: The longest a span waits for its batch (``OTEL_BSP_SCHEDULE_DELAY``, default 5 s).
        tick: Run every ``tick_s`` on the export thread (the metric export), or None.
        fold: Run on the export thread before each pass over the queue, and by :meth:`flush` (counting the
            ended spans into the metrics: :meth:`anvil.telemetry.aggregates.Aggregates.fold`), or None.
    """

    def __init__(
        self,
        sink: Callable[[Sequence[SpanRecord]], bool],
        *,
        max_queue: int = 2048,
        batch: int = 512,
        delay_s: float = 5.0,
        tick: Callable[[], None] | None = None,
        tick_s: float = 60.0,
        fold: Callable[[], None] | None = None,
    ) -> None:
        self._sink = sink
        self.fold = fold
        """Counts the ended spans (set after construction by the telemetry that owns both)."""
        self._max = max(1, max_queue)
        self._batch = max(1, min(batch, self._max))
        self._delay = max(0.001, delay_s)
        self._tick = tick
        self._tick_s = max(0.1, tick_s)
        self._queue: deque[SpanRecord] = deque()
        #: What the thread exports from: the queue itself, or, once :meth:`counted_by`, the counted sampled spans.
        self._outbox = self._queue
        self._wake = threading.Event()
        self._idle = threading.Condition()
        self._busy = False
        self._stopping = False
        self.queue_full = 0
        """Spans dropped because the queue was full."""
        self.export_failed = 0
        """Spans dropped because their batch could not be delivered."""
        self.exported = 0
        """Spans delivered."""
        self._thread = threading.Thread(target=self._run, name="anvil-telemetry-export", daemon=True)
        self._thread.start()

    def counted_by(self, aggregates: Aggregates) -> Callable[[SpanRecord], None]:
        """Merge ``aggregates``' pending spans into this queue, and return what each ended span goes to on the
        event loop: every span, sampled or not, is queued (one length check, one append) and counted when taken
        - by this thread before each pass, or by a read of the series (:meth:`Aggregates.fold` runs
        :attr:`Aggregates.source`) - and the sampled ones wait for export (at most ``max_queue`` of them too).
        A span that finds the queue full is counted at once and, if sampled, dropped (``queue_full``)."""
        queue, limit, batch, wake, observe = self._queue, self._max, self._batch, self._wake, aggregates.observe
        ready: deque[SpanRecord] = deque()
        self._outbox = ready

        def keep(record: SpanRecord) -> None:
            if len(ready) < limit:
                ready.append(record)
            else:
                self.queue_full += 1

        def take() -> None:
            aggregates.fold_from(queue, keep)

        self.fold = aggregates.source = take

        def finished(record: SpanRecord) -> None:
            if len(queue) >= limit:
                observe(record)
                if record.sampled:
                    self.queue_full += 1
                return
            queue.append(record)
            if len(queue) >= batch and not wake.is_set():
                wake.set()

        return finished

    def submit(self, record: SpanRecord) -> None:
        """Queue one ended span (on the event loop: never blocks)."""
        queue = self._queue
        if len(queue) >= self._max:
            self.queue_full += 1
            return
        queue.append(record)
        if len(queue) >= self._batch and not self._wake.is_set():
            self._wake.set()

    def dropped(self) -> dict[str, int]:
        """Spans dropped so far, by reason."""
        return {"queue_full": self.queue_full, "export_failed": self.export_failed}

    def _run(self) -> None:
        next_tick = time.monotonic() + self._tick_s
        while True:
            timeout = self._delay
            if self._tick is not None:
                timeout = max(0.0, min(timeout, next_tick - time.monotonic()))
            self._wake.wait(timeout)
            self._wake.clear()
            if self.fold is not None:
                self._safely(self.fold)
            self._drain()
            if self._tick is not None and (self._stopping or time.monotonic() >= next_tick):
                next_tick = time.monotonic() + self._tick_s
                self._safely(self._tick)
            if self._stopping:
                close = getattr(self._sink, "close", None)
                if callable(close):
                    self._safely(close)
                return

    def _drain(self) -> None:
        with self._idle:
            self._busy = True
        try:
            queue = self._outbox
            while queue:
                batch = [queue.popleft() for _ in range(min(self._batch, len(queue)))]
                if self._deliver(batch):
                    self.exported += len(batch)
                else:
                    self.export_failed += len(batch)
        finally:
            with self._idle:
                self._busy = False
                self._idle.notify_all()

    def _deliver(self, batch: list[SpanRecord]) -> bool:
        return self._safely(lambda: self._sink(batch))

    @staticmethod
    def _safely(work: Callable[[], Any]) -> bool:
        try:
            return bool(work())
        except Exception as exc:  # an exporter fault never reaches a call
            _log.warning("anvil: telemetry export failed: %s", type(exc).__name__)
            return False

    def flush(self, timeout_s: float = 5.0) -> None:
        """Count the ended spans and export what is queued now (waits at most ``timeout_s``)."""
        if self.fold is not None:
            self.fold()
        deadline = time.monotonic() + timeout_s
        self._wake.set()
        with self._idle:
            while (self._outbox or self._busy) and time.monotonic() < deadline:
                self._wake.set()
                self._idle.wait(min(0.05, max(0.0, deadline - time.monotonic())))

    def shutdown(self, timeout_s: float = 5.0, *, tick: bool = True) -> None:
        """Export what is queued, run the tick once more (unless not ``tick``), and stop the thread (waits at
        most ``timeout_s``)."""
        if not tick:
            self._tick = None
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout_s)


class HttpSink:
    """POSTs batches as OTLP/HTTP protobuf to one URL (see the module docstring).

    Args:
        url: The traces URL (``.../v1/traces``).
        resource: The encoded ``Resource``; scope: the encoded ``InstrumentationScope``.
        headers: Extra request headers (``OTEL_EXPORTER_OTLP_HEADERS``), or a callable giving them per
            request (a refreshed bearer token).
        timeout_s: The bound on one request, connect to last byte.
        compression: ``gzip`` or ``none``.
        tls: The CA certificate, client key and client certificate files (``OTEL_EXPORTER_OTLP_CERTIFICATE``
            and kin; None: the system's CAs, no client certificate).

    Raises:
        ValueError: not an http(s) URL, or a TLS file that cannot be read.
    """

    def __init__(
        self,
        url: str,
        *,
        resource: bytes,
        scope: bytes,
        headers: Mapping[str, str] | Callable[[], Mapping[str, str]] = (),  # type: ignore[assignment]
        timeout_s: float = 10.0,
        compression: str = "none",
        tls: tuple[str | None, str | None, str | None] = (None, None, None),
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("an OTLP/HTTP endpoint is an http(s) URL")
        self.url = url
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._resource = resource
        self._scope = scope
        self._headers = headers
        self._timeout = timeout_s
        self._gzip = compression == "gzip"
        self._connection: http.client.HTTPConnection | None = None
        self._quiet_until = 0.0
        self._context: ssl.SSLContext | None = None
        if self._https:  # read here, so a missing file stops the start and never fails a batch
            certificate, key, client = tls
            try:
                self._context = ssl.create_default_context(cafile=certificate)
                if client:
                    self._context.load_cert_chain(client, key)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError(f"an OTLP TLS file cannot be used ({type(exc).__name__})") from None

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            if self._context is not None:
                self._connection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=self._context
                )
            else:
                self._connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        return self._connection

    def __call__(self, batch: Sequence[SpanRecord]) -> bool:
        """Deliver one batch: True on a 2xx answer."""
        body = encode_traces(batch, self._resource, self._scope)
        headers = {"content-type": _PROTOBUF}
        extra = self._headers() if callable(self._headers) else self._headers
        headers.update(dict(extra))
        if self._gzip:
            body = gzip.compress(body, 6)
            headers["content-encoding"] = "gzip"
        try:
            connection = self._connect()
            connection.request("POST", self._target, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            self._complain(type(exc).__name__)
            return False
        if not 200 <= status <= 299:
            self._complain(f"HTTP {status}")
            return False
        return True

    def _complain(self, what: str) -> None:
        now = time.monotonic()
        if now >= self._quiet_until:
            self._quiet_until = now + _QUIET_S
            _log.warning(
                "anvil: the trace exporter could not deliver spans to %s (%s); they are dropped and counted",
                shown_url(self.url),
                what,
            )

    def close(self) -> None:
        """Close the kept connection (the next batch opens a new one)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def shown_url(url: str) -> str:
    """``url`` without user info or query (an operator's endpoint may carry a token in either)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def sdk_resource(resource: Mapping[str, Attribute]) -> Any:
    """The SDK ``Resource`` for ``resource``, its hash computed once: the SDK's span encoder groups spans by
    resource, hashing it once per span, and ``Resource.__hash__`` serializes every attribute to JSON each time
    (a fifth of the encoder's CPU here); the attributes never change, so neither does the hash."""
    from opentelemetry.sdk.resources import Resource

    class _Resource(Resource):
        def __init__(self, attributes: Mapping[str, Attribute]) -> None:
            super().__init__(dict(attributes))
            self._hash = super().__hash__()

        def __hash__(self) -> int:
            return self._hash

        def __eq__(self, other: object) -> bool:
            return super().__eq__(other)

    return _Resource(resource)


def readable_spans(batch: Sequence[SpanRecord], resource: Any, scope: Any) -> list[Any]:
    """The SDK's ``ReadableSpan`` for each record (imports the SDK: the export thread only); ``resource`` and
    ``scope`` are the SDK's ``Resource`` (:func:`sdk_resource`) and ``InstrumentationScope``."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    kinds = {1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT}
    unset, failed = Status(StatusCode.UNSET), Status(StatusCode.ERROR)
    out = []
    for record in batch:
        flags = TraceFlags(1 if record.sampled else 0)
        context = SpanContext(record.trace, record.span_id, False, flags)
        parent = SpanContext(record.trace, record.parent_id, record.remote, flags) if record.parent_id else None
        attributes = record.attributes
        status = unset
        if record.error is not None:
            attributes = {**attributes, "error.type": record.error}
            status = failed
        out.append(
            ReadableSpan(
                name=record.name,
                context=context,
                parent=parent,
                resource=resource,
                attributes=attributes,
                kind=kinds.get(record.kind, SpanKind.INTERNAL),
                status=status,
                start_time=record.start_ns,
                end_time=record.end_ns,
                instrumentation_scope=scope,
            )
        )
    return out


class _OncePerMinute(logging.Filter):
    """Lets one record through per logger per :data:`_QUIET_S` (a black-holed collector fails every batch)."""

    def __init__(self) -> None:
        super().__init__()
        self._quiet_until = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now < self._quiet_until:
            return False
        self._quiet_until = now + _QUIET_S
        return True


def quiet_sdk_logs() -> None:
    """Keep each SDK exporter logger (:data:`SDK_EXPORT_LOGGERS`) to one line a minute (idempotent)."""
    for name in SDK_EXPORT_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(found, _OncePerMinute) for found in logger.filters):
            logger.addFilter(_OncePerMinute())


class SdkSink:
    """Hands batches to an OpenTelemetry SDK ``SpanExporter`` (OTLP/gRPC, console) as
    ``ReadableSpan``s; a batch it reports failed is dropped (and counted by the queue)."""

    def __init__(self, exporter: Any, resource: Mapping[str, Attribute], scope: tuple[str, str]) -> None:
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self.exporter = exporter
        self._resource = sdk_resource(resource)
        self._scope = InstrumentationScope(*scope)
        readable_spans([], self._resource, self._scope)  # imports what the export thread needs, here

    def __call__(self, batch: Sequence[SpanRecord]) -> bool:
        """Deliver one batch: True when the exporter says it succeeded."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.exporter.export(readable_spans(batch, self._resource, self._scope))
        return bool(result == SpanExportResult.SUCCESS)

    def close(self) -> None:
        """Shut the exporter down."""
        self.exporter.shutdown()
