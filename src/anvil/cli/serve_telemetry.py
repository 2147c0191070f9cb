"""How ``anvil serve`` is observed: the telemetry, log and ``/metrics`` settings, read from the environment.

Anvil's own variables (registered in :mod:`anvil.air.runtime_env`):

* ``ANVIL_OTEL_EXPORTER`` - ``none`` (default: nothing is traced, no OpenTelemetry import), ``otlp``,
  ``cloud_trace`` (the generated Terraform's choice on Cloud Run) or ``console`` (stderr);
* ``ANVIL_LOG_FORMAT`` - ``text`` (default) or ``json`` (one JSON object per line on stderr, with Cloud
  Logging's trace fields; the generated Terraform sets it);
* ``ANVIL_METRICS_AUTH`` (or ``--metrics-auth``, which wins) - ``on``: ``/metrics`` needs the same bearer as
  ``/mcp``; ``off``: it is open. Default: ``on``, except with ``ANVIL_ENV=dev``.

The standard OpenTelemetry variables (:data:`anvil.air.runtime_env.OTEL_ENV`) for ``otlp``:
``OTEL_EXPORTER_OTLP_ENDPOINT`` (the base URL; ``/v1/traces`` and ``/v1/metrics`` are appended over HTTP),
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and ``..._METRICS_ENDPOINT`` (used as they are),
``OTEL_EXPORTER_OTLP_PROTOCOL`` and ``..._TRACES_PROTOCOL``/``..._METRICS_PROTOCOL`` (``http/protobuf``,
the default, or ``grpc``), ``OTEL_EXPORTER_OTLP_HEADERS`` and its per-signal twins (``k=v,k2=v2``,
percent-encoded), ``OTEL_EXPORTER_OTLP_TIMEOUT`` (ms, default 10000), ``OTEL_EXPORTER_OTLP_COMPRESSION``
(``gzip`` or ``none``), ``OTEL_EXPORTER_OTLP_CERTIFICATE``, ``..._CLIENT_KEY`` and
``..._CLIENT_CERTIFICATE`` and their per-signal twins (files: the collector's CA, the client's key and
certificate, over HTTP; the gRPC exporter reads them itself); for every exporter
``OTEL_TRACES_SAMPLER`` (the specification's six: ``parentbased_always_on``, the default, ``always_on``,
``always_off``, ``traceidratio``, ``parentbased_always_off``, ``parentbased_traceidratio``) and
``OTEL_TRACES_SAMPLER_ARG`` (the ratio, 0..1, default 1), ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_BSP_MAX_QUEUE_SIZE`` (2048), ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` (512), ``OTEL_BSP_SCHEDULE_DELAY``
(ms, 5000) and ``OTEL_METRIC_EXPORT_INTERVAL`` (ms, 60000). A malformed value is ``config/invalid``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Final
from urllib.parse import unquote, urlsplit

from anvil._dataclass import dataclass
from anvil.errors import ConfigError
from anvil.telemetry.sampling import SAMPLERS
from anvil.telemetry.settings import (
    DEFAULT_GRPC_ENDPOINT,
    DEFAULT_HTTP_ENDPOINT,
    EXPORTERS,
    PROTOCOLS,
    Exporter,
    Protocol,
    TelemetrySettings,
)

__all__ = ["LOG_FORMATS", "Observation", "log_format", "metrics_auth", "observation", "telemetry_settings"]

LOG_FORMATS: Final = ("text", "json")
_SWITCH: Final = {"on": True, "off": False}
#: The TLS files of an OTLP/HTTP exporter, shared and each signal's own (which wins).
_TLS: Final = {
    "": (
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CLIENT_KEY",
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    ),
    "traces": (
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
    ),
    "metrics": (
        "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
        "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
    ),
}
#: Each signal's own endpoint, protocol and headers variables.
_SIGNALS: Final = {
    "traces": (
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ),
    "metrics": (
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """How ``anvil serve`` is observed: what it exports, how it logs, whether ``/metrics`` wants the bearer."""

    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
    log_format: str = "text"
    metrics_auth: bool = False


def observation(environ: Mapping[str, str], flag: str | None, *, service: str, env: str) -> Observation:
    """The :class:`Observation` from the environment and ``--metrics-auth`` (``flag``); ``service`` is the
    default ``service.name``, ``env`` the normalized ``ANVIL_ENV``.

    Raises:
        ConfigError: ``config/invalid`` for a malformed value.
    """
    return Observation(
        telemetry=telemetry_settings(environ, service),
        log_format=log_format(environ),
        metrics_auth=metrics_auth(environ, flag, env),
    )


def _choice(environ: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = environ.get(name, "").strip() or default
    if value not in allowed:
        raise ConfigError(
            "config/invalid", f"{name} must be one of {', '.join(allowed)}.", hint=f"Unset {name} or fix it."
        )
    return value


def log_format(environ: Mapping[str, str]) -> str:
    """``ANVIL_LOG_FORMAT``: ``text`` or ``json``.

    Raises:
        ConfigError: ``config/invalid`` for another value.
    """
    return _choice(environ, "ANVIL_LOG_FORMAT", LOG_FORMATS, "text")


def metrics_auth(environ: Mapping[str, str], flag: str | None, env: str) -> bool:
    """Whether ``/metrics`` needs the ``/mcp`` bearer: ``--metrics-auth`` or ``ANVIL_METRICS_AUTH`` (``on``,
    ``off``), else on outside ``ANVIL_ENV=dev``.

    Raises:
        ConfigError: ``config/invalid`` for another value.
    """
    if flag is not None:
        if flag not in _SWITCH:
            raise ConfigError("config/invalid", "--metrics-auth must be on or off.")
        return _SWITCH[flag]
    return _SWITCH[_choice(environ, "ANVIL_METRICS_AUTH", ("on", "off"), "off" if env == "dev" else "on")]


def _pairs(environ: Mapping[str, str], name: str) -> tuple[tuple[str, str], ...]:
    """``k=v,k2=v2`` (W3C baggage style, percent-encoded values)."""
    out: list[tuple[str, str]] = []
    for item in environ.get(name, "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("config/invalid", f"{name} must be a comma list of key=value pairs.")
        out.append((unquote(key.strip()), unquote(value.strip())))
    return tuple(out)


def _millis(environ: Mapping[str, str], name: str, default: int, least: int = 1) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < least:
        raise ConfigError("config/invalid", f"{name} must be a whole number of at least {least}.")
    return int(raw)


def _endpoint(environ: Mapping[str, str], signal: str, protocol: str) -> str:
    own = environ.get(_SIGNALS[signal][0], "").strip()
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    grpc = protocol == "grpc"
    url = own or base or (DEFAULT_GRPC_ENDPOINT if grpc else DEFAULT_HTTP_ENDPOINT)
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        name = _SIGNALS[signal][0] if own else "OTEL_EXPORTER_OTLP_ENDPOINT"
        raise ConfigError("config/invalid", f"{name} must be an http(s) URL.")
    if own or grpc:
        return url
    return url.rstrip("/") + f"/v1/{signal}"


def _protocol(environ: Mapping[str, str], signal: str) -> Protocol:
    name = _SIGNALS[signal][1]
    value = environ.get(name, "").strip() or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip() or PROTOCOLS[0]
    if value not in PROTOCOLS:
        raise ConfigError(
            "config/invalid",
            f"The OTLP protocol {value!r} is not served; use http/protobuf or grpc.",
            hint=f"Fix {name} or OTEL_EXPORTER_OTLP_PROTOCOL.",
        )
    return value  # type: ignore[return-value]


def _tls(environ: Mapping[str, str], signal: str) -> tuple[str | None, str | None, str | None]:
    """The CA certificate, client key and client certificate files of ``signal``."""
    found = [
        environ.get(own, "").strip() or environ.get(shared, "").strip() or None
        for own, shared in zip(_TLS[signal], _TLS[""], strict=True)
    ]
    return found[0], found[1], found[2]


def _sampler(environ: Mapping[str, str]) -> tuple[str, float]:
    """``OTEL_TRACES_SAMPLER`` and its ratio (``OTEL_TRACES_SAMPLER_ARG``, for the ``traceidratio`` ones)."""
    name = _choice(environ, "OTEL_TRACES_SAMPLER", SAMPLERS, "parentbased_always_on")
    raw = environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    if not raw or not name.endswith("traceidratio"):
        return name, 1.0
    try:
        ratio = float(raw)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise ConfigError(
            "config/invalid",
            "OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1 (0.25 exports a quarter of the traces).",
        )
    return name, ratio


def telemetry_settings(environ: Mapping[str, str], service: str) -> TelemetrySettings:
    """The telemetry settings (module docstring); ``service`` is ``service.name`` unless ``OTEL_SERVICE_NAME``.

    Raises:
        ConfigError: ``config/invalid`` for an unknown exporter or protocol, or a malformed value.
    """
    exporter: Exporter = _choice(environ, "ANVIL_OTEL_EXPORTER", EXPORTERS, "none")  # type: ignore[assignment]
    if exporter == "none":
        return TelemetrySettings()
    resource = dict(_pairs(environ, "OTEL_RESOURCE_ATTRIBUTES"))
    resource["service.name"] = environ.get("OTEL_SERVICE_NAME", "").strip() or resource.get("service.name") or service
    traces_protocol, metrics_protocol = _protocol(environ, "traces"), _protocol(environ, "metrics")
    shared = _pairs(environ, "OTEL_EXPORTER_OTLP_HEADERS")
    compression = _choice(environ, "OTEL_EXPORTER_OTLP_COMPRESSION", ("none", "gzip"), "none")
    max_queue = _millis(environ, "OTEL_BSP_MAX_QUEUE_SIZE", 2048)
    sampler, ratio = _sampler(environ)
    return TelemetrySettings(
        exporter=exporter,
        traces_protocol=traces_protocol,
        metrics_protocol=metrics_protocol,
        traces_endpoint=_endpoint(environ, "traces", traces_protocol),
        metrics_endpoint=_endpoint(environ, "metrics", metrics_protocol),
        traces_headers=shared + _pairs(environ, _SIGNALS["traces"][2]),
        metrics_headers=shared + _pairs(environ, _SIGNALS["metrics"][2]),
        timeout_s=_millis(environ, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000) / 1000,
        compression=compression,  # type: ignore[arg-type]
        resource=tuple(resource.items()),
        max_queue=max_queue,
        batch=min(_millis(environ, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), max_queue),
        delay_s=_millis(environ, "OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000,
        metric_interval_s=_millis(environ, "OTEL_METRIC_EXPORT_INTERVAL", 60_000, least=100) / 1000,
        sampler=sampler,
        sampler_ratio=ratio,
        traces_tls=_tls(environ, "traces"),
        metrics_tls=_tls(environ, "metrics"),
    )
