"""The metrics a traced gateway keeps, derived from its spans as they end, and how they are exported.

Every span that ends is counted, sampled or not, exported or dropped, and never on the event loop: a running
exporter queues every ended span once, in the export queue (:meth:`anvil.telemetry.export.SpanQueue.counted_by`:
one length check and one append), and :meth:`Aggregates.fold_from` counts what is queued in one pass under one
lock - on the export thread before each batch, and before any read of the series (:meth:`Aggregates.snapshot`
calls :attr:`Aggregates.source`), so ``/metrics`` is never behind. No OpenTelemetry call. The
series:

==================================  =============================================================  =========
OpenTelemetry name                  attributes                                                     from
==================================  =============================================================  =========
``anvil.tool.calls``                ``gen_ai.tool.name``, ``anvil.outcome``, ``anvil.effect_class``  call span
``anvil.tool.call.duration`` (s)    ``gen_ai.tool.name``                                           call span
``anvil.ledger.outcomes``           ``anvil.idempotency.outcome`` (``none`` when no key was held)  call span
``http.client.request.duration``    ``server.address``, ``http.request.method``,                   attempt
(s)                                 ``http.response.status_code`` or ``error.type``
``anvil.oauth.token_requests``      ``anvil.oauth.result``: ``cache_hit``, ``exchanged``, ``failed``  token
``anvil.telemetry.spans_dropped``   ``reason``: ``queue_full``, ``export_failed``                  exporter
==================================  =============================================================  =========

:meth:`Aggregates.metrics_data` hands them to the SDK's metric exporters as the SDK's own ``MetricsData``
(cumulative sums and explicit-bucket histograms); :class:`PrometheusSeries` adds the last three to
``/metrics`` (the first three are there already, fed by the listener).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from anvil.runtime.tracing import Attribute
from anvil.telemetry.spans import KINDS, SpanRecord

__all__ = ["BUCKETS", "Aggregates", "Histogram", "PrometheusSeries"]

#: Explicit histogram bounds in seconds (the listener's ``/metrics`` buckets).
BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_CLIENT: Final = KINDS["client"]
_SERVER: Final = KINDS["server"]
_TOKEN: Final = "anvil.oauth.token"


class Histogram:
    """Explicit-bucket counts, their sum and count (cumulative)."""

    __slots__ = ("count", "counts", "maximum", "minimum", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.count = 0
        self.total = 0.0
        self.minimum = float("inf")
        self.maximum = 0.0

    def record(self, seconds: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.count += 1
        self.total += seconds
        if seconds < self.minimum:
            self.minimum = seconds
        if seconds > self.maximum:
            self.maximum = seconds

    def copy(self) -> Histogram:
        """A snapshot."""
        other = Histogram()
        other.counts, other.count, other.total = list(self.counts), self.count, self.total
        other.minimum, other.maximum = self.minimum, self.maximum
        return other


class Aggregates:
    """The series above, updated as spans end; read (under a lock) by the exporters."""

    def __init__(self, dropped: Callable[[], Mapping[str, int]] | None = None) -> None:
        self._lock = threading.Lock()
        self.calls: dict[tuple[str, str, str], int] = {}
        self.call_time: dict[str, Histogram] = {}
        self.ledger: dict[str, int] = {}
        self.upstream: dict[tuple[str, str, str], Histogram] = {}
        self.tokens: dict[str, int] = {}
        self._dropped = dropped or dict
        self.started_ns = time.time_ns()
        self.source: Callable[[], None] | None = None
        """Counts the spans queued elsewhere (the export queue's), run by :meth:`fold` (None: none)."""

    def observe(self, record: SpanRecord) -> None:
        """Count what ``record`` says now, if it is a call, an upstream attempt or a token request."""
        with self._lock:
            self._count(record)

    def fold(self) -> None:
        """Count what :attr:`source` has queued (any thread)."""
        if self.source is not None:
            self.source()

    def fold_from(self, queue: deque[SpanRecord], keep: Callable[[SpanRecord], None]) -> None:
        """Take every span of ``queue`` and count it, in one pass under the lock (any thread); ``keep``
        receives each sampled one (for export). Taken under the lock, so a read of the series after it never
        misses a span taken by another thread but not yet counted."""
        if not queue:
            return
        take, count = queue.popleft, self._count
        with self._lock:
            for _ in range(len(queue)):  # taken one by one: the event loop may append meanwhile
                record = take()
                count(record)
                if record.sampled:
                    keep(record)

    def _count(self, record: SpanRecord) -> None:
        """Count one span (the lock held)."""
        kind = record.kind
        if kind == _SERVER:
            get, shared = record.own.get, record.fixed.get
            tool = str(get("gen_ai.tool.name") or shared("gen_ai.tool.name", ""))
            effect = str(get("anvil.effect_class") or shared("anvil.effect_class", ""))
            key = (tool, str(get("anvil.outcome", "")), effect)
            ledger = str(get("anvil.idempotency.outcome", "none"))
            self.calls[key] = self.calls.get(key, 0) + 1
            self.ledger[ledger] = self.ledger.get(ledger, 0) + 1
            histogram = self.call_time.get(tool)
            if histogram is None:
                histogram = self.call_time[tool] = Histogram()
            histogram.record((record.end_ns - record.start_ns) / 1e9)
        elif kind == _CLIENT:
            get, shared = record.own.get, record.fixed.get
            outcome = record.error or str(get("http.response.status_code", ""))
            address = get("server.address") or shared("server.address", "")
            upstream = (str(address), str(get("http.request.method") or shared("http.request.method", "")), outcome)
            histogram = self.upstream.get(upstream)
            if histogram is None:
                histogram = self.upstream[upstream] = Histogram()
            histogram.record((record.end_ns - record.start_ns) / 1e9)
        elif record.name == _TOKEN:
            if record.error is not None:
                result = "failed"
            else:
                result = "cache_hit" if record.own.get("anvil.oauth.cache_hit") else "exchanged"
            self.tokens[result] = self.tokens.get(result, 0) + 1

    @property
    def dropped(self) -> dict[str, int]:
        """Spans dropped so far, by reason."""
        return dict(self._dropped())

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of every series, the pending spans counted first (for an exporter on another
        thread, or ``/metrics``)."""
        self.fold()
        with self._lock:
            return {
                "calls": dict(self.calls),
                "call_time": {key: value.copy() for key, value in self.call_time.items()},
                "ledger": dict(self.ledger),
                "upstream": {key: value.copy() for key, value in self.upstream.items()},
                "tokens": dict(self.tokens),
                "dropped": self.dropped,
            }

    def metrics_data(self, resource: Mapping[str, Attribute], scope: tuple[str, str]) -> Any:
        """Every series as the SDK's ``MetricsData`` (imports the SDK: call it from the export thread)."""
        from opentelemetry.sdk.metrics.export import (
            AggregationTemporality,
            Histogram as HistogramData,
            HistogramDataPoint,
            Metric,
            MetricsData,
            NumberDataPoint,
            ResourceMetrics,
            ScopeMetrics,
            Sum,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        data = self.snapshot()
        start, now = self.started_ns, time.time_ns()
        cumulative = AggregationTemporality.CUMULATIVE

        def counter(name: str, description: str, points: Iterator[tuple[dict[str, Attribute], int]]) -> Any:
            numbers = [NumberDataPoint(attrs, start, now, value) for attrs, value in points]
            return Metric(name, description, "1", Sum(numbers, cumulative, is_monotonic=True))

        def histogram(name: str, description: str, points: Iterator[tuple[dict[str, Attribute], Histogram]]) -> Any:
            shown = [
                HistogramDataPoint(attrs, start, now, h.count, h.total, h.counts, list(BUCKETS), h.minimum, h.maximum)
                for attrs, h in points
                if h.count
            ]
            return Metric(name, description, "s", HistogramData(shown, cumulative))

        metrics = [
            counter(
                "anvil.tool.calls",
                "Tool calls answered, by tool, outcome and effect class.",
                (
                    ({"gen_ai.tool.name": t, "anvil.outcome": o, "anvil.effect_class": e}, n)
                    for (t, o, e), n in data["calls"].items()
                ),
            ),
            histogram(
                "anvil.tool.call.duration",
                "Time a tool call took in the gateway.",
                (({"gen_ai.tool.name": tool}, h) for tool, h in data["call_time"].items()),
            ),
            counter(
                "anvil.ledger.outcomes",
                "What the idempotency ledger did for each call.",
                (({"anvil.idempotency.outcome": key}, n) for key, n in data["ledger"].items()),
            ),
            histogram(
                "http.client.request.duration",
                "Each upstream attempt's duration.",
                (
                    ({"server.address": s, "http.request.method": m, **_status(o)}, h)
                    for (s, m, o), h in data["upstream"].items()
                ),
            ),
            counter(
                "anvil.oauth.token_requests",
                "OAuth2 tokens a call needed: from the cache, exchanged, or failed.",
                (({"anvil.oauth.result": key}, n) for key, n in data["tokens"].items()),
            ),
            counter(
                "anvil.telemetry.spans_dropped",
                "Spans not exported: the queue was full, or the exporter failed.",
                (({"reason": key}, n) for key, n in data["dropped"].items()),
            ),
        ]
        scope_metrics = ScopeMetrics(InstrumentationScope(*scope), [m for m in metrics if m.data.data_points], "")
        return MetricsData([ResourceMetrics(Resource(dict(resource)), [scope_metrics], "")])


def _status(outcome: str) -> dict[str, Attribute]:
    return {"http.response.status_code": int(outcome)} if outcome.isdigit() else {"error.type": outcome}


class PrometheusSeries:
    """A prometheus-client collector adding the upstream, token and drop series to ``/metrics``:

    * ``anvil_upstream_attempt_duration_seconds{server_address, method}``;
    * ``anvil_oauth_token_requests_total{result}``;
    * ``anvil_telemetry_spans_dropped_total{reason}``.
    """

    def __init__(self, aggregates: Aggregates) -> None:
        self._aggregates = aggregates

    def collect(self) -> Iterator[Any]:
        """The three families, from a snapshot."""
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        data = self._aggregates.snapshot()
        upstream = HistogramMetricFamily(
            "anvil_upstream_attempt_duration_seconds",
            "Each upstream attempt's duration, in seconds.",
            labels=("server_address", "method"),
        )
        merged: dict[tuple[str, str], Histogram] = {}
        for (server, method, _), histogram in data["upstream"].items():
            into = merged.setdefault((server, method), Histogram())
            into.counts = [a + b for a, b in zip(into.counts, histogram.counts, strict=True)]
            into.count += histogram.count
            into.total += histogram.total
        for labels, histogram in merged.items():
            running, buckets = 0, []
            for bound, count in zip((*BUCKETS, float("inf")), histogram.counts, strict=True):
                running += count
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
            upstream.add_metric(list(labels), buckets, histogram.total)
        yield upstream
        tokens = CounterMetricFamily(
            "anvil_oauth_token_requests", "OAuth2 tokens calls needed, by result.", labels=("result",)
        )
        for result, count in sorted(data["tokens"].items()):
            tokens.add_metric([result], count)
        yield tokens
        dropped = CounterMetricFamily(
            "anvil_telemetry_spans_dropped", "Spans not exported, by reason.", labels=("reason",)
        )
        for reason in ("queue_full", "export_failed"):
            dropped.add_metric([reason], data["dropped"].get(reason, 0))
        yield dropped
