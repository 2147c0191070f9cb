"""What the telemetry exports and where: built by the CLI from ``ANVIL_OTEL_EXPORTER`` and the standard
``OTEL_*`` variables (:mod:`anvil.cli.serve_telemetry`), never read from the environment here."""

from __future__ import annotations

from dataclasses import field
from typing import Final, Literal

from anvil._dataclass import dataclass

__all__ = [
    "DEFAULT_GRPC_ENDPOINT",
    "DEFAULT_HTTP_ENDPOINT",
    "EXPORTERS",
    "PROTOCOLS",
    "Exporter",
    "Protocol",
    "TelemetrySettings",
]

Exporter = Literal["none", "otlp", "cloud_trace", "console"]
#: ``ANVIL_OTEL_EXPORTER`` values.
EXPORTERS: Final[tuple[str, ...]] = ("none", "otlp", "cloud_trace", "console")
Protocol = Literal["http/protobuf", "grpc"]
#: ``OTEL_EXPORTER_OTLP_PROTOCOL`` values served (``http/json`` is not).
PROTOCOLS: Final[tuple[str, ...]] = ("http/protobuf", "grpc")
#: The OTLP defaults of the specification.
DEFAULT_HTTP_ENDPOINT: Final = "http://localhost:4318"
DEFAULT_GRPC_ENDPOINT: Final = "http://localhost:4317"


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySettings:
    """How ``anvil serve`` exports its traces and metrics.

    Attributes:
        exporter: ``none`` (nothing is traced: no SDK import, no span), ``otlp``, ``cloud_trace`` or ``console``.
        traces_protocol, metrics_protocol: ``http/protobuf`` or ``grpc`` (``otlp`` only).
        traces_endpoint, metrics_endpoint: where each signal goes: the full URL over HTTP
            (``.../v1/traces``), the ``http(s)://host:port`` endpoint over gRPC.
        traces_headers, metrics_headers: extra request headers (values never shown).
        timeout_s: the bound on one export request.
        compression: ``none`` or ``gzip``.
        resource: resource attributes (``service.name`` and ``OTEL_RESOURCE_ATTRIBUTES``).
        max_queue, batch, delay_s: the span queue's bound, the batch size and the longest a span waits.
        metric_interval_s: how often the metrics are exported.
        sampler, sampler_ratio: which traces are exported (:mod:`anvil.telemetry.sampling`).
        traces_tls, metrics_tls: the CA certificate, client key and client certificate files of each signal's
            OTLP/HTTP exporter (None: the system's CAs, no client certificate).
    """

    exporter: Exporter = "none"
    traces_protocol: Protocol = "http/protobuf"
    metrics_protocol: Protocol = "http/protobuf"
    traces_endpoint: str = DEFAULT_HTTP_ENDPOINT + "/v1/traces"
    metrics_endpoint: str = DEFAULT_HTTP_ENDPOINT + "/v1/metrics"
    traces_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    metrics_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    timeout_s: float = 10.0
    compression: Literal["none", "gzip"] = "none"
    resource: tuple[tuple[str, str], ...] = ()
    max_queue: int = 2048
    batch: int = 512
    delay_s: float = 5.0
    metric_interval_s: float = 60.0
    sampler: str = "parentbased_always_on"
    sampler_ratio: float = 1.0
    traces_tls: tuple[str | None, str | None, str | None] = (None, None, None)
    metrics_tls: tuple[str | None, str | None, str | None] = (None, None, None)

    @property
    def enabled(self) -> bool:
        """Whether anything is traced."""
        return self.exporter != "none"
