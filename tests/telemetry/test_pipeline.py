"""start_telemetry: the sink each exporter gets, cloud_trace configured offline, metrics derived from spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from anvil.runtime.tracing import bind_span
from anvil.telemetry.export import HttpSink, SdkSink
from anvil.telemetry.google import TELEMETRY_ENDPOINT, GoogleAuth
from anvil.telemetry.pipeline import start_telemetry
from anvil.telemetry.settings import TelemetrySettings
from anvil.telemetry.spans import Recorder
from tests.telemetry.receiver import Receiver, pki


class FakeCredentials:
    """google-auth credentials of the test's own: a token that needs one refresh."""

    def __init__(self) -> None:
        self.token: str | None = None
        self.refreshed = 0

    @property
    def valid(self) -> bool:
        return self.token is not None

    def refresh(self, request: Any) -> None:
        self.refreshed += 1
        self.token = f"ya29.planted-{self.refreshed}"

    def apply(self, headers: dict[str, str]) -> None:
        headers["authorization"] = f"Bearer {self.token}"


def test_none_starts_nothing() -> None:
    assert start_telemetry(TelemetrySettings(), service="payments") is None


def test_cloud_trace_sends_otlp_to_googles_endpoint_with_the_runtime_identitys_token() -> None:
    credentials = FakeCredentials()
    telemetry = start_telemetry(
        TelemetrySettings(exporter="cloud_trace"), service="payments", google=lambda: (credentials, "acme-prod-1")
    )
    assert telemetry is not None
    try:
        sink = telemetry.queue._sink
        assert isinstance(sink, HttpSink) and sink.url == f"{TELEMETRY_ENDPOINT}/v1/traces"
        assert telemetry.resource["gcp.project_id"] == "acme-prod-1" and telemetry.project == "acme-prod-1"
        assert telemetry.resource["service.name"] == "payments"
        auth = sink._headers
        assert isinstance(auth, GoogleAuth)
        assert auth() == {"authorization": "Bearer ya29.planted-1", "x-goog-user-project": "acme-prod-1"}
        assert auth()["authorization"] == "Bearer ya29.planted-1" and credentials.refreshed == 1  # still valid
        assert "planted" not in repr(auth) and "telemetry.googleapis.com" in telemetry.describe()
        assert isinstance(telemetry._metrics, OTLPMetricExporter)
    finally:
        telemetry.shutdown(0.5, final=False)  # nothing is sent to Google from a test


def test_the_session_of_the_sdks_exporters_sends_googles_token_refreshed_when_it_expires(receiver: Receiver) -> None:
    credentials = FakeCredentials()
    auth = GoogleAuth(credentials, "acme-prod-1")
    assert "planted" not in repr(auth)
    sink = SdkSink(OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces", session=auth.session()), {}, ("a", "1"))
    recorder = Recorder(lambda span: None)
    assert sink([recorder.start("a")]) and sink([recorder.start("b")])
    credentials.token = None  # expired
    assert sink([recorder.start("c")])
    sink.close()
    tokens = [headers["authorization"] for headers in receiver.headers]
    assert tokens == ["Bearer ya29.planted-1", "Bearer ya29.planted-1", "Bearer ya29.planted-2"]
    assert {headers["x-goog-user-project"] for headers in receiver.headers} == {"acme-prod-1"}


def test_cloud_trace_needs_credentials_and_a_project() -> None:
    def missing() -> tuple[Any, str | None]:
        raise RuntimeError("no ADC")

    with pytest.raises(ValueError, match="no Google credentials"):
        start_telemetry(TelemetrySettings(exporter="cloud_trace"), service="s", google=missing)
    with pytest.raises(ValueError, match=r"gcp\.project_id"):
        start_telemetry(
            TelemetrySettings(exporter="cloud_trace"), service="s", google=lambda: (FakeCredentials(), None)
        )
    named = TelemetrySettings(exporter="cloud_trace", resource=(("gcp.project_id", "named-1"),))
    telemetry = start_telemetry(named, service="s", google=lambda: (FakeCredentials(), None))
    assert telemetry is not None and telemetry.project == "named-1"
    telemetry.shutdown(0.5, final=False)


def test_console_writes_spans_and_metrics_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = start_telemetry(TelemetrySettings(exporter="console", delay_s=0.01), service="payments")
    assert telemetry is not None
    call = telemetry.tracer.start_call("tools/call t", "server", {"gen_ai.tool.name": "t", "anvil.outcome": "ok"}, None)
    with bind_span(call):
        telemetry.tracer.start("anvil.gates").end()
    call.end()
    telemetry.shutdown(5)
    out = capsys.readouterr()
    assert out.out == ""  # stdout carries the protocol and the URL line, never telemetry
    assert '"name": "tools/call t"' in out.err and '"name": "anvil.gates"' in out.err
    assert "anvil.tool.calls" in out.err


def test_otlp_http_exports_spans_and_metrics_derived_from_them(receiver: Receiver) -> None:
    settings = TelemetrySettings(
        exporter="otlp",
        traces_endpoint=f"{receiver.url}/v1/traces",
        metrics_endpoint=f"{receiver.url}/v1/metrics",
        delay_s=0.01,
        metric_interval_s=60,
    )
    telemetry = start_telemetry(settings, service="payments")
    assert telemetry is not None
    tracer = telemetry.tracer
    for outcome in ("ok", "conflict"):
        call = tracer.start_call(
            "tools/call refund",
            "server",
            {"gen_ai.tool.name": "refund", "anvil.effect_class": "irreversible", "anvil.outcome": outcome},
            None,
        )
        with bind_span(call):
            tracer.start("anvil.oauth.token", "internal", {"anvil.oauth.cache_hit": outcome == "conflict"}).end()
            attempt = tracer.start("POST", "client", {"server.address": "api.example", "http.request.method": "POST"})
            attempt.set("http.response.status_code", 201)
            attempt.end()
        call.set("anvil.idempotency.outcome", "reserved" if outcome == "ok" else "conflict")
        call.end(None if outcome == "ok" else "conflict")
    telemetry.shutdown(5)  # the last batch and one metric export
    assert len(receiver.spans) == 6
    points = {(name, tuple(sorted(attrs.items()))): value for name, attrs, value in receiver.metrics}
    calls = {attrs: value for (name, attrs), value in points.items() if name == "anvil.tool.calls"}
    assert calls == {
        (("anvil.effect_class", "irreversible"), ("anvil.outcome", outcome), ("gen_ai.tool.name", "refund")): 1
        for outcome in ("ok", "conflict")
    }
    assert points[("anvil.ledger.outcomes", (("anvil.idempotency.outcome", "conflict"),))] == 1
    assert points[("anvil.oauth.token_requests", (("anvil.oauth.result", "exchanged"),))] == 1
    assert points[("anvil.oauth.token_requests", (("anvil.oauth.result", "cache_hit"),))] == 1
    upstream = (("http.request.method", "POST"), ("http.response.status_code", 201), ("server.address", "api.example"))
    assert points[("http.client.request.duration", upstream)] == 2  # a histogram's count
    assert points[("anvil.tool.call.duration", (("gen_ai.tool.name", "refund"),))] == 2


def test_otlp_http_sends_the_configured_headers_gzip_and_timeout_not_the_sdks_reading_of_the_timeout(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")  # milliseconds; the SDK alone would read seconds
    settings = TelemetrySettings(
        exporter="otlp",
        traces_endpoint=f"{receiver.url}/v1/traces",
        traces_headers=(("x-team", "pay"),),
        compression="gzip",
        timeout_s=2.0,
        delay_s=0.01,
    )
    telemetry = start_telemetry(settings, service="payments")
    assert telemetry is not None
    sink = telemetry.queue._sink
    assert isinstance(sink, HttpSink) and sink._timeout == 2.0
    assert telemetry._metrics._client._timeout == 2.0  # the SDK's metric exporter, told explicitly
    telemetry.tracer.start_call("tools/call t", "server", {"gen_ai.tool.name": "t"}, None).end()
    telemetry.shutdown(5, final=False)
    assert [span.name for span in receiver.spans] == ["tools/call t"]
    assert receiver.headers[0]["x-team"] == "pay" and receiver.headers[0]["content-encoding"] == "gzip"


def test_the_tls_files_reach_both_exporters_and_an_unreadable_one_stops_the_start(tmp_path: Path) -> None:
    ca, key, cert = pki(tmp_path)
    tls = (str(ca), str(key), str(cert))
    settings = TelemetrySettings(
        exporter="otlp",
        traces_endpoint="https://collector.internal/v1/traces",
        metrics_endpoint="https://collector.internal/v1/metrics",
        traces_tls=tls,
        metrics_tls=tls,
        delay_s=60,
    )
    telemetry = start_telemetry(settings, service="payments")
    assert telemetry is not None
    try:
        sink = telemetry.queue._sink
        assert isinstance(sink, HttpSink) and sink._context is not None
        session = telemetry._metrics._client._transport._session
        assert (session.verify, session.cert) == (str(ca), (str(cert), str(key)))
    finally:
        telemetry.shutdown(0.5, final=False)
    missing = TelemetrySettings(
        exporter="otlp", traces_endpoint="https://c/v1/traces", traces_tls=(str(tmp_path / "none.pem"), None, None)
    )
    with pytest.raises(ValueError, match="TLS file"):
        start_telemetry(missing, service="payments")


def test_the_sampler_settings_decide_what_is_exported_and_every_call_is_counted(receiver: Receiver) -> None:
    settings = TelemetrySettings(
        exporter="otlp", traces_endpoint=f"{receiver.url}/v1/traces", delay_s=0.01, sampler="always_off"
    )
    telemetry = start_telemetry(settings, service="payments")
    assert telemetry is not None
    telemetry.tracer.start_call("tools/call t", "server", {"gen_ai.tool.name": "t"}, None).end()
    telemetry.shutdown(2, final=False)
    assert receiver.spans == [] and sum(telemetry.aggregates.calls.values()) == 1


def test_an_unsampled_call_is_counted_but_not_exported(receiver: Receiver) -> None:
    from anvil.runtime.tracing import parse_traceparent

    settings = TelemetrySettings(exporter="otlp", traces_endpoint=f"{receiver.url}/v1/traces", delay_s=0.01)
    telemetry = start_telemetry(settings, service="payments")
    assert telemetry is not None
    parent = parse_traceparent("00-" + "c" * 32 + "-" + "d" * 16 + "-00")
    telemetry.tracer.start_call("tools/call t", "server", {"gen_ai.tool.name": "t"}, parent).end()
    telemetry.queue.flush(2)
    assert receiver.spans == [] and sum(telemetry.aggregates.calls.values()) == 1
    telemetry.shutdown(1, final=False)
    telemetry.queue._thread.join(2)
    assert not telemetry.queue._thread.is_alive()
