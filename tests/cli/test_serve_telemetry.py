"""What ``anvil serve`` reads to observe itself: the exporter, the OTLP variables, log lines, /metrics auth."""

from __future__ import annotations

import ast
import re

import pytest

from anvil.air.runtime_env import OTEL_ENV, is_registered
from anvil.cli.serve_telemetry import Observation, log_format, metrics_auth, observation, telemetry_settings
from anvil.errors import ConfigError
from anvil.telemetry.settings import TelemetrySettings
from tests.air.test_runtime_env import CLI, variable_names


def test_none_is_the_default_and_reads_nothing_else() -> None:
    assert telemetry_settings({"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus"}, "payments") == TelemetrySettings()
    assert not TelemetrySettings().enabled


def test_otlp_follows_the_standard_variables() -> None:
    settings = telemetry_settings(
        {
            "ANVIL_OTEL_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.internal:4318/",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://metrics.internal/custom",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k%3D1,x-team=pay",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-trace=1",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=ignored",
            "OTEL_SERVICE_NAME": "payments-gw",
            "OTEL_BSP_MAX_QUEUE_SIZE": "100",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "512",
            "OTEL_BSP_SCHEDULE_DELAY": "250",
            "OTEL_METRIC_EXPORT_INTERVAL": "15000",
        },
        "payments",
    )
    assert settings.exporter == "otlp" and settings.traces_protocol == "http/protobuf"
    assert settings.traces_endpoint == "https://collector.internal:4318/v1/traces"
    assert settings.metrics_endpoint == "https://metrics.internal/custom"
    assert settings.traces_headers == (("x-api-key", "k=1"), ("x-team", "pay"), ("x-trace", "1"))
    assert settings.metrics_headers == (("x-api-key", "k=1"), ("x-team", "pay"))
    assert "k=1" not in repr(settings)  # header values (API keys) never show
    assert (settings.timeout_s, settings.compression, settings.max_queue, settings.batch) == (2.5, "gzip", 100, 100)
    assert (settings.delay_s, settings.metric_interval_s) == (0.25, 15.0)
    assert dict(settings.resource) == {"deployment.environment": "prod", "service.name": "payments-gw"}


def test_the_sampler_and_the_tls_files_follow_the_standard_variables() -> None:
    default = telemetry_settings({"ANVIL_OTEL_EXPORTER": "otlp"}, "s")
    assert (default.sampler, default.sampler_ratio, default.traces_tls) == ("parentbased_always_on", 1.0, (None,) * 3)
    settings = telemetry_settings(
        {
            "ANVIL_OTEL_EXPORTER": "otlp",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.25",
            "OTEL_EXPORTER_OTLP_CERTIFICATE": "/etc/ca.pem",
            "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/etc/key.pem",
            "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/etc/cert.pem",
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "/etc/traces-ca.pem",
            "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY": "/etc/metrics-key.pem",
            "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": "/etc/metrics-cert.pem",
            "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": "",
            "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": "",
            "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE": "",
        },
        "s",
    )
    assert (settings.sampler, settings.sampler_ratio) == ("parentbased_traceidratio", 0.25)
    assert settings.traces_tls == ("/etc/traces-ca.pem", "/etc/key.pem", "/etc/cert.pem")
    assert settings.metrics_tls == ("/etc/ca.pem", "/etc/metrics-key.pem", "/etc/metrics-cert.pem")
    ignored = {"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "always_on", "OTEL_TRACES_SAMPLER_ARG": "x"}
    assert telemetry_settings(ignored, "s").sampler_ratio == 1.0  # the argument of a sampler without one


def test_grpc_keeps_the_endpoint_as_it_is_and_defaults_to_4317() -> None:
    grpc = telemetry_settings({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "s")
    assert (grpc.traces_protocol, grpc.traces_endpoint) == ("grpc", "http://localhost:4317")
    mixed = telemetry_settings({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, "s")
    assert (mixed.traces_protocol, mixed.metrics_protocol) == ("grpc", "http/protobuf")
    assert mixed.metrics_endpoint == "http://localhost:4318/v1/metrics"
    console = telemetry_settings({"ANVIL_OTEL_EXPORTER": "console"}, "fleet")
    assert console.exporter == "console" and dict(console.resource)["service.name"] == "fleet"


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"ANVIL_OTEL_EXPORTER": "jaeger"}, "ANVIL_OTEL_EXPORTER"),
        ({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        (
            {"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ),
        ({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS"),
        ({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_COMPRESSION": "br"}, "OTEL_EXPORTER_OTLP_COMPRESSION"),
        ({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_METRIC_EXPORT_INTERVAL": "5"}, "OTEL_METRIC_EXPORT_INTERVAL"),
        ({"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "jaeger_remote"}, "OTEL_TRACES_SAMPLER"),
        (
            {"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "25%"},
            "OTEL_TRACES_SAMPLER_ARG",
        ),
        (
            {"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
            "OTEL_TRACES_SAMPLER_ARG",
        ),
    ],
)
def test_a_malformed_value_is_config_invalid_naming_its_variable(variables: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        telemetry_settings(variables, "s")
    assert caught.value.code == "config/invalid"
    assert named in caught.value.message or named in (caught.value.hint or "")


def test_metrics_need_the_bearer_outside_dev_unless_told_otherwise() -> None:
    assert metrics_auth({}, None, "prod") and metrics_auth({}, None, "staging")
    assert not metrics_auth({}, None, "dev")
    assert metrics_auth({"ANVIL_METRICS_AUTH": "on"}, None, "dev")
    assert not metrics_auth({"ANVIL_METRICS_AUTH": "off"}, None, "prod")
    assert metrics_auth({"ANVIL_METRICS_AUTH": "off"}, "on", "prod")  # the flag wins
    with pytest.raises(ConfigError):
        metrics_auth({}, "yes", "prod")
    with pytest.raises(ConfigError):
        metrics_auth({"ANVIL_METRICS_AUTH": "1"}, None, "prod")


def test_log_lines_are_text_unless_json() -> None:
    assert log_format({}) == "text" and log_format({"ANVIL_LOG_FORMAT": "json"}) == "json"
    with pytest.raises(ConfigError):
        log_format({"ANVIL_LOG_FORMAT": "xml"})


def test_every_variable_read_is_registered() -> None:
    names = variable_names(CLI)
    assert {"ANVIL_OTEL_EXPORTER", "ANVIL_LOG_FORMAT", "ANVIL_METRICS_AUTH"} <= set(names)
    assert all(is_registered(name) for name in ("ANVIL_OTEL_EXPORTER", "ANVIL_LOG_FORMAT", "ANVIL_METRICS_AUTH"))
    read: set[str] = set()
    for path in sorted(CLI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"OTEL_[A-Z_]+", node.value)
            ):
                read.add(node.value)
    assert read == {var.name for var in OTEL_ENV}


def test_the_observation_gathers_the_three_and_refuses_before_anything_binds() -> None:
    found = observation({"ANVIL_OTEL_EXPORTER": "console", "ANVIL_LOG_FORMAT": "json"}, None, service="s", env="prod")
    assert (found.telemetry.exporter, found.log_format, found.metrics_auth) == ("console", "json", True)
    assert observation({}, None, service="s", env="dev") == Observation()
    with pytest.raises(ConfigError):
        observation({"ANVIL_OTEL_EXPORTER": "zipkin"}, None, service="s", env="dev")
