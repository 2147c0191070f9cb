"""A running exporter: the tracer the runtime reports to, the queue and thread behind it, the metrics.

:func:`start_telemetry` builds it from :class:`~anvil.telemetry.settings.TelemetrySettings` (None for
``none``: the caller then leaves every ``RuntimeContext.tracer`` None and nothing is imported). Which
sink carries the spans:

================  ===================================================================================
``otlp``          OTLP/HTTP protobuf (:class:`~anvil.telemetry.export.HttpSink`, the spans encoded by
                  :mod:`anvil.telemetry.otlp`), or OTLP/gRPC (the SDK's gRPC exporter)
``cloud_trace``   OTLP/HTTP to ``telemetry.googleapis.com`` with the runtime identity's token
                  (:mod:`anvil.telemetry.google`)
``console``       the SDK's console exporter, on stderr (stdout carries the protocol and the URL line)
================  ===================================================================================

Why OTLP/HTTP spans are encoded by us and not by the SDK's ``OTLPSpanExporter``: see
:mod:`anvil.telemetry.export` (measured: the SDK's encoder puts tracing over the 10 % CPU target). The SDK
exporters (gRPC spans, every metric exporter) are given the settings the CLI read (endpoint, headers,
timeout, compression, TLS files) explicitly: the SDK reads ``OTEL_EXPORTER_OTLP_TIMEOUT`` as seconds
where the specification says milliseconds, and the CLI reads it as the specification says.

Metrics go the same way every ``metric_interval_s`` through the SDK's OTLP (HTTP or gRPC) or console
metric exporter, from :class:`~anvil.telemetry.aggregates.Aggregates`. Everything the export thread needs is
imported and built here, before the listener starts: an import on that thread while the event loop and the
MCP SDK's loader import too can meet Python's module-lock deadlock detection, which would fail a call.
"""

from __future__ import annotations

import logging
import platform
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from anvil import __version__
from anvil.runtime.tracing import Attribute
from anvil.telemetry.aggregates import Aggregates, PrometheusSeries
from anvil.telemetry.export import HttpSink, SdkSink, SpanQueue, quiet_sdk_logs, shown_url
from anvil.telemetry.google import METRICS_PATH, TELEMETRY_ENDPOINT, TRACES_PATH, GoogleAuth
from anvil.telemetry.otlp import encode_resource, encode_scope
from anvil.telemetry.sampling import Sampler
from anvil.telemetry.settings import TelemetrySettings
from anvil.telemetry.spans import Recorder, SpanRecord

__all__ = ["SCOPE", "Telemetry", "start_telemetry"]

_log = logging.getLogger("anvil.telemetry")
#: The instrumentation scope every span and metric is reported under.
SCOPE: Final = ("anvil", __version__)
#: The longest shutdown waits for the last batch (Cloud Run allows 10 s after SIGTERM).
SHUTDOWN_S: Final = 3.0


class Telemetry:
    """The tracer (:attr:`tracer`), the aggregates, the export queue and the metric exporter.

    Args:
        settings: What to export where.
        resource: The resource attributes every span and metric carries.
        traces: The span sink; metrics: the SDK metric exporter (None: no metric export).
        project: The Google project (``cloud_trace``), for Cloud Logging's trace field.
    """

    def __init__(
        self,
        settings: TelemetrySettings,
        resource: Mapping[str, Attribute],
        traces: Callable[[Sequence[SpanRecord]], bool],
        metrics: Any,
        *,
        project: str | None = None,
    ) -> None:
        self.settings = settings
        self.resource = dict(resource)
        self.project = project
        self._metrics = metrics
        self.queue = SpanQueue(
            traces,
            max_queue=settings.max_queue,
            batch=settings.batch,
            delay_s=settings.delay_s,
            tick=self.export_metrics if metrics is not None else None,
            tick_s=settings.metric_interval_s,
        )
        self.aggregates = Aggregates(self.queue.dropped)
        self.tracer = Recorder(  # one queue: the export thread counts each span as it takes it
            self.queue.counted_by(self.aggregates), sampler=Sampler(settings.sampler, settings.sampler_ratio)
        )

    def export_metrics(self) -> None:
        """Export every series once (the export thread calls it every ``metric_interval_s``)."""
        if self._metrics is None:
            return
        from opentelemetry.sdk.metrics.export import MetricExportResult

        data = self.aggregates.metrics_data(self.resource, SCOPE)
        if self._metrics.export(data) != MetricExportResult.SUCCESS:
            _log.warning("anvil: the metric exporter could not deliver the metrics (kept for the next export)")

    def prometheus(self) -> PrometheusSeries:
        """The collector adding the upstream, token and drop series to ``/metrics``."""
        return PrometheusSeries(self.aggregates)

    def describe(self) -> str:
        """One line for the operator: what is exported, where, and how it is bounded."""
        s = self.settings
        if s.exporter == "console":
            where = "to stderr"
        elif s.exporter == "cloud_trace":
            where = f"to {TELEMETRY_ENDPOINT} (project {self.project})"
        else:
            where = f"over OTLP/{'gRPC' if s.traces_protocol == 'grpc' else 'HTTP'} to {shown_url(s.traces_endpoint)}"
        return (
            f"anvil: telemetry: traces and metrics {where} ({s.exporter}); batches of {s.batch} spans every "
            f"{s.delay_s:g} s, at most {s.max_queue} queued (more are dropped and counted), metrics every "
            f"{s.metric_interval_s:g} s"
        )

    def shutdown(self, timeout_s: float = SHUTDOWN_S, *, final: bool = True) -> None:
        """Export what is queued (and, when ``final``, the metrics once more), then stop; waits at most
        ``timeout_s`` (an exporter still retrying then is left to its daemon thread)."""
        self.queue.shutdown(timeout_s, tick=final)


def _resource(settings: TelemetrySettings, service: str, project: str | None) -> dict[str, Attribute]:
    resource: dict[str, Attribute] = {
        "service.name": service,
        "service.version": __version__,
        "service.instance.id": str(uuid.uuid4()),
        "telemetry.sdk.language": "python",
        "process.runtime.name": platform.python_implementation().lower(),
        "process.runtime.version": platform.python_version(),
    }
    resource.update(dict(settings.resource))
    if project is not None and "gcp.project_id" not in resource:
        resource["gcp.project_id"] = project
    return resource


def start_telemetry(
    settings: TelemetrySettings,
    *,
    service: str,
    google: Callable[[], tuple[Any, str | None]] | None = None,
) -> Telemetry | None:
    """The running telemetry for ``settings`` (None when the exporter is ``none``).

    Args:
        settings: What to export where.
        service: The default ``service.name`` (``OTEL_SERVICE_NAME`` in ``settings.resource`` wins).
        google: Finds the Google credentials and their project (``cloud_trace``; default
            :func:`anvil.telemetry.google.google_credentials`; a test passes its own).

    Raises:
        ValueError: ``cloud_trace`` without credentials or a project, or an unusable endpoint.
    """
    if not settings.enabled:
        return None
    project: str | None = None
    auth: GoogleAuth | None = None
    if settings.exporter == "cloud_trace":
        from anvil.telemetry.google import google_credentials

        try:
            credentials, found = (google or google_credentials)()
        except Exception as exc:  # DefaultCredentialsError and kin: said in the operator's words
            raise ValueError(f"no Google credentials were found ({type(exc).__name__})") from None
        project = dict(settings.resource).get("gcp.project_id") or found
        if not project:
            raise ValueError("the Google project is unknown: set OTEL_RESOURCE_ATTRIBUTES=gcp.project_id=PROJECT")
        auth = GoogleAuth(credentials, project)
    resource = _resource(settings, service, project)
    traces = _trace_sink(settings, resource, auth)
    metrics = _metric_exporter(settings, auth)
    quiet_sdk_logs()
    Aggregates().metrics_data(resource, SCOPE)  # imports what the metric export needs, on this thread
    return Telemetry(settings, resource, traces, metrics, project=project)


def _trace_sink(
    settings: TelemetrySettings, resource: Mapping[str, Attribute], auth: GoogleAuth | None
) -> Callable[[Sequence[SpanRecord]], bool]:
    encoded, scope = encode_resource(resource), encode_scope(*SCOPE)
    if auth is not None:
        return HttpSink(
            TELEMETRY_ENDPOINT + TRACES_PATH,
            resource=encoded,
            scope=scope,
            headers=auth,
            timeout_s=settings.timeout_s,
            compression=settings.compression,
        )
    if settings.exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return SdkSink(ConsoleSpanExporter(out=sys.stderr), resource, SCOPE)
    if settings.traces_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(**_grpc_options(settings.traces_endpoint, settings.traces_headers, settings))
        return SdkSink(exporter, resource, SCOPE)
    return HttpSink(
        settings.traces_endpoint,
        resource=encoded,
        scope=scope,
        headers=dict(settings.traces_headers),
        timeout_s=settings.timeout_s,
        compression=settings.compression,
        tls=settings.traces_tls,
    )


def _http_compression(settings: TelemetrySettings) -> Any:
    from opentelemetry.exporter.otlp.proto.http import Compression

    return Compression.Gzip if settings.compression == "gzip" else Compression.NoCompression


def _grpc_options(endpoint: str, headers: tuple[tuple[str, str], ...], settings: TelemetrySettings) -> dict[str, Any]:
    from grpc import Compression

    return {
        "endpoint": endpoint,
        "insecure": endpoint.startswith("http://"),
        "headers": tuple((name.lower(), value) for name, value in headers),
        "timeout": settings.timeout_s,
        "compression": Compression.Gzip if settings.compression == "gzip" else Compression.NoCompression,
    }


def _metric_exporter(settings: TelemetrySettings, auth: GoogleAuth | None) -> Any:
    """The SDK metric exporter the settings name."""
    if settings.exporter == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(out=sys.stderr)
    if settings.exporter == "otlp" and settings.metrics_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcExporter

        return GrpcExporter(**_grpc_options(settings.metrics_endpoint, settings.metrics_headers, settings))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    compression = _http_compression(settings)
    if auth is not None:
        return OTLPMetricExporter(
            endpoint=TELEMETRY_ENDPOINT + METRICS_PATH,
            timeout=settings.timeout_s,
            compression=compression,
            session=auth.session(),
        )
    return OTLPMetricExporter(
        settings.metrics_endpoint,
        *settings.metrics_tls,
        headers=dict(settings.metrics_headers),
        timeout=settings.timeout_s,
        compression=compression,
    )
