"""``/metrics``: Prometheus text from a per-listener registry (prometheus-client).

Series (every one lives in the listener's own :class:`~prometheus_client.CollectorRegistry`, never the
process-global one, so two listeners in one process do not mix):

* ``anvil_tool_calls_total{tool, outcome}`` - calls answered by the fleet, by wire tool name and
  outcome (``ok``, ``dry_run`` or the envelope code, e.g. ``policy_denied``, ``conflict``);
* ``anvil_tool_call_duration_seconds{tool}`` - a histogram of the time each call took in the gateway;
* ``anvil_ledger_outcomes_total{outcome}`` - what the idempotency ledger did for each executed call
  (``none``, ``reserved``, ``replay``, ``in_progress``, ``conflict``);
* ``anvil_ledger_in_progress_refusals_total`` - calls refused because another call held their key.

With tracing on, :meth:`FleetMetrics.add_collector` adds the telemetry's own series (upstream attempt
latency, OAuth2 token requests, dropped spans: :class:`anvil.telemetry.aggregates.PrometheusSeries`); they
are this process's (with ``--workers`` each worker answers its own).

Call series are fed by the fleet (:class:`~anvil.serve.fleet.CallObserver`); ledger series by the
executor's audit record (:class:`ObservedAuditSink` sits in front of the audit line sink, so metrics
work with or without ``ANVIL_AUDIT_FILE``). Children are cached per label set, so a call costs two
dict lookups and two increments. Under ``anvil serve --workers N`` every worker writes its series to
one shared folder and each ``/metrics`` answer sums them over the workers (prometheus-client's
multiprocess mode), so a scrape that lands on any worker sees the whole listener.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from anvil._types import JSONObject
from anvil.runtime.audit import AuditSink, RecordSink, write_audit

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["LATENCY_BUCKETS", "METRICS_PATH", "FleetMetrics", "ObservedAuditSink", "metrics_route"]

METRICS_PATH: Final = "/metrics"
#: Histogram buckets in seconds: a gateway call is usually a few milliseconds.
LATENCY_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class FleetMetrics:
    """The listener's counters and histogram (see the module docstring).

    Args:
        registry: Where the series live (default: a fresh registry of their own).
        multiprocess_dir: The folder that worker processes of one listener share (``anvil serve
            --workers N`` sets it, and ``PROMETHEUS_MULTIPROC_DIR`` to it, for every worker):
            :meth:`render` then answers the sum over every worker, whichever worker is scraped.
    """

    def __init__(self, registry: CollectorRegistry | None = None, *, multiprocess_dir: str | None = None) -> None:
        # prometheus-client is imported, and the series made, on first use (a call, a scrape, a collector),
        # not at start: the first tools/list does not wait for it.
        self._registry = registry
        self.multiprocess_dir = multiprocess_dir
        self._series: tuple[Any, Any, Any, Any] | None = None  # calls, latency, ledger, in-progress refusals
        self._call_children: dict[tuple[str, str], Any] = {}
        self._latency_children: dict[str, Any] = {}
        self._ledger_children: dict[str, Any] = {}
        self._collectors: list[Any] = []

    @property
    def registry(self) -> CollectorRegistry:
        """Where the series live (made on first use unless one was given)."""
        if self._registry is None:
            from prometheus_client import CollectorRegistry

            self._registry = CollectorRegistry(auto_describe=True)
        return self._registry

    def _made(self) -> tuple[Any, Any, Any, Any]:
        if self._series is None:
            from prometheus_client import Counter, Histogram

            registry = self.registry
            self._series = (
                Counter(
                    "anvil_tool_calls",
                    "Tool calls answered, by wire tool name and outcome code.",
                    ("tool", "outcome"),
                    registry=registry,
                ),
                Histogram(
                    "anvil_tool_call_duration_seconds",
                    "Time a tool call took in the gateway, in seconds.",
                    ("tool",),
                    buckets=LATENCY_BUCKETS,
                    registry=registry,
                ),
                Counter(
                    "anvil_ledger_outcomes",
                    "What the idempotency ledger did for each executed call.",
                    ("outcome",),
                    registry=registry,
                ),
                Counter(
                    "anvil_ledger_in_progress_refusals",
                    "Calls refused because another call holds their idempotency key.",
                    registry=registry,
                ),
            )
        return self._series

    def add_collector(self, collector: Any) -> None:
        """Add a prometheus-client collector's series to every :meth:`render` (this process's only)."""
        self._made()
        self._collectors.append(collector)
        if self.multiprocess_dir is None:
            self.registry.register(collector)

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        """Count one call of ``tool`` ending in ``outcome`` and record its duration."""
        key = (tool, outcome)
        counter = self._call_children.get(key)
        if counter is None:
            counter = self._call_children[key] = self._made()[0].labels(tool, outcome)
        counter.inc()
        histogram = self._latency_children.get(tool)
        if histogram is None:
            histogram = self._latency_children[tool] = self._made()[1].labels(tool)
        histogram.observe(seconds)

    def observe_record(self, record: JSONObject) -> None:
        """Count the ledger outcome of one executed call (an executor audit record)."""
        state = str(record.get("ledger") or "none")
        counter = self._ledger_children.get(state)
        if counter is None:
            counter = self._ledger_children[state] = self._made()[2].labels(state)
        counter.inc()
        if state == "in_progress" and record.get("error_code") == "conflict":
            self._made()[3].inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every series (summed over the workers in multiprocess mode)."""
        from prometheus_client import CollectorRegistry, generate_latest

        self._made()
        if self.multiprocess_dir is None:
            return bytes(generate_latest(self.registry))
        from prometheus_client.multiprocess import MultiProcessCollector

        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        for collector in self._collectors:
            merged.register(collector)
        return bytes(generate_latest(merged))


class ObservedAuditSink:
    """An audit sink that feeds :class:`FleetMetrics` and passes each record on to ``target``.

    Args:
        metrics: The metrics to feed.
        target: The audit sink behind it (a :class:`~anvil.runtime.audit.GatewayAuditSink`), or None.
    """

    def __init__(self, metrics: FleetMetrics, target: AuditSink | RecordSink | None = None) -> None:
        self.metrics = metrics
        self.target = target

    def write_record(self, record: JSONObject) -> None:
        """Hand the record to the target (failures logged there), then count it."""
        write_audit(self.target, record)
        self.metrics.observe_record(record)

    def write(self, line: str) -> None:
        """Pass a formatted line to a line sink target (no metrics: a line carries no record)."""
        if self.target is not None and isinstance(self.target, AuditSink):
            self.target.write(line)


def metrics_route(metrics: FleetMetrics) -> Route:
    """``GET /metrics``: the Prometheus text of ``metrics`` (``cache-control: no-store``)."""

    async def endpoint(request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST, headers={"cache-control": "no-store"})

    return Route(METRICS_PATH, endpoint, methods=["GET"])
