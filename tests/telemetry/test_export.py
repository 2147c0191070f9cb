"""The export queue and its sink: bounded, off the caller's path, every dropped span counted; the records
reach a collector through the SDK's own exporters, read back field by field with ``opentelemetry-proto``."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Sequence
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from anvil.telemetry.export import SDK_EXPORT_LOGGERS, HttpSink, SdkSink, SpanQueue, quiet_sdk_logs, shown_url
from anvil.telemetry.otlp import encode_resource, encode_scope
from anvil.telemetry.spans import Recorder, SpanRecord
from tests.telemetry.receiver import Receiver, black_hole, closed_port, https_receiver, pki
from tests.telemetry.span_records import record

RESOURCE = {"service.name": "payments"}
SCOPE = ("anvil", "0.1.0")


def spans(count: int, name: str = "GET") -> list[SpanRecord]:
    recorder = Recorder(lambda span: None)
    out = []
    for _ in range(count):
        span = recorder.start(name, "client", {"http.request.method": "GET"})
        span.end_ns = span.start_ns + 1000
        out.append(span)
    return out


def http_sink(url: str, **options: object) -> HttpSink:
    return HttpSink(url, resource=encode_resource(RESOURCE), scope=encode_scope(*SCOPE), **options)  # type: ignore[arg-type]


def sdk_http_sink(url: str, timeout: float = 5.0) -> SdkSink:
    """The SDK's OTLP/HTTP exporter behind an :class:`SdkSink` (the SDK's encoder reading our records)."""
    return SdkSink(OTLPSpanExporter(endpoint=url, timeout=timeout), RESOURCE, SCOPE)


def test_a_full_queue_drops_the_new_span_and_counts_it_without_waiting() -> None:
    release = threading.Event()
    delivered: list[int] = []

    def slow(batch: Sequence[SpanRecord]) -> bool:
        release.wait(5)
        delivered.append(len(batch))
        return True

    queue = SpanQueue(slow, max_queue=4, batch=2, delay_s=0.01)
    began = time.perf_counter()
    for span in spans(40):
        queue.submit(span)
    assert time.perf_counter() - began < 0.05  # submitting never waits for the exporter
    assert queue.queue_full >= 30 and queue.dropped()["queue_full"] == queue.queue_full
    release.set()
    queue.flush(5)
    assert sum(delivered) + queue.queue_full == 40 and queue.export_failed == 0
    queue.shutdown(1)


def test_a_batch_the_sink_refuses_or_raises_on_is_counted_as_export_failed() -> None:
    answers = iter([False, True])

    def sink(batch: Sequence[SpanRecord]) -> bool:
        found = next(answers, None)
        if found is None:
            raise OSError("down")
        return found

    queue = SpanQueue(sink, batch=3, delay_s=0.01)
    for _ in range(3):
        for span in spans(3):
            queue.submit(span)
        queue.flush(5)
    assert (queue.export_failed, queue.exported) == (6, 3)
    queue.shutdown(1)


def test_a_record_read_by_the_sdks_encoder_has_its_ids_times_kind_attributes_and_flags(receiver: Receiver) -> None:
    sink = sdk_http_sink(f"{receiver.url}/v1/traces")
    assert sink([record()])
    [span] = receiver.spans
    assert span.resource == RESOURCE and receiver.headers[0]["content-type"] == "application/x-protobuf"
    assert (span.trace, span.span) == ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    assert span.parent == "0000000000001234"
    assert (span.name, span.kind, span.start, span.end) == (
        "POST",
        3,
        1_700_000_000_000_000_000,
        1_700_000_000_002_000_000,
    )
    assert span.attributes == record().attributes
    assert span.status == 0 and span.flags == 0x100  # the parent is known to be local
    sink.close()


def test_an_error_sets_the_error_status_and_error_type_and_a_remote_parent_says_so(receiver: Receiver) -> None:
    failed = record(remote=True, sampled=False, attributes={"n": -3})
    failed.error = "timeout"
    many = [record(name=f"tools/call outil-é-{n}", span_id=n + 1, attributes={"k": "v" * n}) for n in range(300)]
    sink = sdk_http_sink(f"{receiver.url}/v1/traces")
    assert sink([failed, *many])
    span, *rest = receiver.spans
    assert span.status == 2 and span.attributes == {"n": -3, "error.type": "timeout"} and span.flags == 0x300
    assert [s.name for s in rest] == [f"tools/call outil-é-{n}" for n in range(300)]
    assert rest[299].attributes == {"k": "v" * 299}
    sink.close()


def test_the_http_sink_posts_protobuf_with_its_headers_and_gzip(receiver: Receiver) -> None:
    sink = http_sink(f"{receiver.url}/v1/traces", headers={"x-team": "pay"}, compression="gzip")
    assert sink(spans(3, "POST"))
    assert [s.name for s in receiver.spans] == ["POST"] * 3
    assert receiver.headers[0]["x-team"] == "pay" and receiver.headers[0]["content-encoding"] == "gzip"
    assert receiver.spans[0].resource == RESOURCE
    assert sink(spans(1)) and receiver.exports == 2  # the kept connection serves the next batch
    sink.close()


def test_an_endpoint_that_refuses_or_never_answers_is_a_failed_batch_within_the_timeout() -> None:
    assert not http_sink(f"{closed_port()}/v1/traces", timeout_s=1)(spans(1))
    with black_hole() as hole:
        began = time.monotonic()
        assert not http_sink(f"{hole}/v1/traces", timeout_s=0.5)(spans(1))
        assert time.monotonic() - began < 3
    assert shown_url("https://user:pw@collector.example:4318/v1/traces?token=t") == (
        "https://collector.example:4318/v1/traces"
    )


def test_the_http_sink_trusts_the_configured_ca_and_presents_the_client_certificate(tmp_path: Path) -> None:
    ca, key, cert = pki(tmp_path)
    with https_receiver(ca, key, cert) as (url, posted):
        trusted = http_sink(f"{url}/v1/traces", tls=(str(ca), str(key), str(cert)), timeout_s=5)
        assert trusted(spans(1)) and posted == ["/v1/traces"]
        trusted.close()
        assert not http_sink(f"{url}/v1/traces", tls=(str(ca), None, None), timeout_s=5)(spans(1))  # no client cert
        assert not http_sink(f"{url}/v1/traces", timeout_s=5)(spans(1))  # the system's CAs do not know it
        assert posted == ["/v1/traces"]


def test_an_sdk_exporter_that_is_refused_or_black_holed_fails_the_batch_within_its_timeout() -> None:
    began = time.monotonic()
    assert not sdk_http_sink(f"{closed_port()}/v1/traces", timeout=1)(spans(1))
    assert time.monotonic() - began < 3  # the SDK's retries stop at its timeout
    with black_hole() as hole:
        began = time.monotonic()
        assert not sdk_http_sink(f"{hole}/v1/traces", timeout=0.5)(spans(1))
        assert time.monotonic() - began < 3


@pytest.mark.parametrize("sdk", [False, True])
def test_a_black_holed_collector_holds_only_the_export_thread_and_every_span_is_counted(sdk: bool) -> None:
    with black_hole() as hole:
        sink = sdk_http_sink(f"{hole}/v1/traces", 0.3) if sdk else http_sink(f"{hole}/v1/traces", timeout_s=0.3)
        queue = SpanQueue(sink, max_queue=8, batch=4, delay_s=0.01)
        began = time.perf_counter()
        for span in spans(40):
            queue.submit(span)
        assert time.perf_counter() - began < 0.05  # the caller never waits for the collector
        queue.flush(5)
        assert queue.exported == 0 and queue.queue_full + queue.export_failed == 40 and queue.export_failed >= 4
        queue.shutdown(1, tick=False)


def test_an_sdk_exporter_receives_readable_spans() -> None:
    out = io.StringIO()
    failed = spans(1, "anvil.ledger.reserve")[0]
    failed.error = "ledger/unavailable"
    sink = SdkSink(ConsoleSpanExporter(out=out), RESOURCE, SCOPE)
    assert sink([failed])
    shown = out.getvalue()
    assert '"name": "anvil.ledger.reserve"' in shown and '"error.type": "ledger/unavailable"' in shown
    assert '"status_code": "ERROR"' in shown and '"service.name": "payments"' in shown


class _Collector(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.names: list[str] = []

    def Export(self, request: trace_service_pb2.ExportTraceServiceRequest, context: object) -> object:
        self.names += [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        return trace_service_pb2.ExportTraceServiceResponse()


def test_otlp_grpc_delivers_through_the_sdks_grpc_exporter() -> None:
    collector = _Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collector, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        exporter = GrpcSpanExporter(endpoint=f"http://127.0.0.1:{port}", insecure=True, timeout=5)
        assert SdkSink(exporter, RESOURCE, SCOPE)(spans(2, "tools/call t"))
        assert collector.names == ["tools/call t", "tools/call t"]
        exporter.shutdown()
    finally:
        server.stop(0)


def test_the_sdk_exporters_failure_lines_are_kept_to_one_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    quiet_sdk_logs()
    quiet_sdk_logs()  # idempotent: one filter per logger
    logger = logging.getLogger(SDK_EXPORT_LOGGERS[2])
    with caplog.at_level(logging.WARNING, logger=logger.name):
        for _ in range(5):
            logger.error("Failed to export traces to collector:4317, error code: UNAVAILABLE")
    assert len([r for r in caplog.records if r.name == logger.name]) == 1
    assert sum(type(found).__name__ == "_OncePerMinute" for found in logger.filters) == 1
