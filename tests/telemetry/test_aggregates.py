"""The metrics derived from spans: counted at the next fold, and never behind a read of the series."""

from __future__ import annotations

from collections.abc import Sequence

from anvil.runtime.tracing import bind_span
from anvil.telemetry.aggregates import Aggregates
from anvil.telemetry.export import SpanQueue
from anvil.telemetry.pipeline import Telemetry
from anvil.telemetry.settings import TelemetrySettings
from anvil.telemetry.spans import Recorder, SpanRecord


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


def test_one_queue_counts_every_span_once_exports_the_sampled_and_counts_a_span_that_finds_it_full() -> None:
    exported: list[SpanRecord] = []
    queue = SpanQueue(lambda batch: exported.extend(batch) or True, max_queue=4, batch=1000, delay_s=3600)
    aggregates = Aggregates(queue.dropped)
    finished = queue.counted_by(aggregates)
    sampled = iter([True, False] * 4)
    tracer = Recorder(finished, sampler=None)
    for _ in range(8):
        call = tracer.start_call(
            "tools/call t", "server", {"anvil.outcome": "ok"}, None, fixed={"gen_ai.tool.name": "t"}
        )
        call.sampled = next(sampled)
        call.end()
    assert aggregates.snapshot()["calls"] == {("t", "ok", ""): 8}  # 4 queued, folded by the read; 4 counted at once
    assert queue.queue_full == 2  # the sampled two of the four that found the queue full
    queue.flush(2)
    assert len(exported) == 2 and all(span.sampled for span in exported)
    assert aggregates.snapshot()["calls"] == {("t", "ok", ""): 8}  # counted once
    queue.shutdown(1, tick=False)
