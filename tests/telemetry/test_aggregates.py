"""The metrics derived from spans: counted at the next fold, and never behind a read of the series."""

from __future__ import annotations

from collections.abc import Sequence

from anvil.runtime.tracing import bind_span
from anvil.telemetry.aggregates import MAX_PENDING, Aggregates
from anvil.telemetry.pipeline import Telemetry
from anvil.telemetry.settings import TelemetrySettings
from anvil.telemetry.spans import SpanRecord
from tests.telemetry.span_records import record


def test_a_call_that_just_ended_is_in_the_next_snapshot_though_its_spans_wait_for_export() -> None:
    exported: list[SpanRecord] = []

    def sink(batch: Sequence[SpanRecord]) -> bool:
        exported.extend(batch)
        return True

    settings = TelemetrySettings(exporter="otlp", delay_s=3600, metric_interval_s=3600)
    telemetry = Telemetry(settings, {"service.name": "payments"}, sink, None)
    tracer = telemetry.tracer
    call = tracer.start_call("tools/call refund", "server", {"gen_ai.tool.name": "refund", "anvil.outcome": "ok"}, None)
    with bind_span(call):
        attempt = tracer.start("POST", "client", {"server.address": "api.example", "http.request.method": "POST"})
        attempt.set("http.response.status_code", 201)
        attempt.end()
    call.end()
    snapshot = telemetry.aggregates.snapshot()  # what /metrics and the metric export read
    assert snapshot["calls"] == {("refund", "ok", ""): 1} and snapshot["ledger"] == {"none": 1}
    assert [h.count for h in snapshot["upstream"].values()] == [1] and exported == []
    telemetry.shutdown(2, final=False)
    assert [span.name for span in exported] == ["POST", "tools/call refund"]
    assert telemetry.aggregates.snapshot()["calls"] == {("refund", "ok", ""): 1}  # counted once


def test_a_backlog_the_export_thread_has_not_folded_is_folded_by_the_next_span_past_the_bound() -> None:
    aggregates = Aggregates()
    add = aggregates.adder()
    call = record(kind=2, attributes={"gen_ai.tool.name": "t", "anvil.outcome": "ok"})
    for _ in range(MAX_PENDING + 1):
        add(call)
    assert not aggregates.pending and aggregates.calls == {("t", "ok", ""): MAX_PENDING + 1}
