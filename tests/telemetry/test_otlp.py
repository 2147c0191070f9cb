"""Spans written as OTLP protobuf read back field by field with ``opentelemetry-proto``."""

from __future__ import annotations

from types import MappingProxyType

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from anvil.telemetry import otlp
from anvil.telemetry.otlp import encode_resource, encode_scope, encode_traces
from anvil.telemetry.spans import SpanRecord
from tests.telemetry.receiver import decode_value
from tests.telemetry.span_records import record


def decoded(*records: SpanRecord) -> trace_service_pb2.ExportTraceServiceRequest:
    resource = encode_resource({"service.name": "payments", "service.instance.id": "i-1"})
    body = encode_traces(records, resource, encode_scope("anvil", "0.1.0"))
    return trace_service_pb2.ExportTraceServiceRequest.FromString(body)


def test_a_span_reads_back_with_its_ids_times_kind_attributes_and_flags() -> None:
    message = decoded(record())
    [resource_spans] = message.resource_spans
    assert {a.key: decode_value(a.value) for a in resource_spans.resource.attributes} == {
        "service.name": "payments",
        "service.instance.id": "i-1",
    }
    [scope_spans] = resource_spans.scope_spans
    assert (scope_spans.scope.name, scope_spans.scope.version) == ("anvil", "0.1.0")
    [span] = scope_spans.spans
    assert span.trace_id.hex() == "4bf92f3577b34da6a3ce929d0e0e4736" and span.span_id.hex() == "00f067aa0ba902b7"
    assert span.parent_span_id.hex() == "0000000000001234" and span.name == "POST" and span.kind == 3
    assert (span.start_time_unix_nano, span.end_time_unix_nano) == (
        1_700_000_000_000_000_000,
        1_700_000_000_002_000_000,
    )
    assert {a.key: decode_value(a.value) for a in span.attributes} == {
        "http.request.method": "POST",
        "http.response.status_code": 201,
        "ok": True,
        "ratio": 0.5,
    }
    assert span.status.code == 0 and span.flags == 0x101  # sampled, parent known to be local


def test_an_error_sets_the_error_status_and_error_type_and_a_remote_root_says_so() -> None:
    failed = record(parent_id=0, remote=True, sampled=False, attributes={"n": -3})
    failed.error = "timeout"
    [span] = decoded(failed).resource_spans[0].scope_spans[0].spans
    assert span.parent_span_id == b"" and span.status.code == 2
    assert {a.key: decode_value(a.value) for a in span.attributes} == {"n": -3, "error.type": "timeout"}
    assert span.flags == 0x300


def test_many_spans_and_unicode_names_encode_in_one_request() -> None:
    spans = [record(name=f"tools/call outil-é-{n}", span_id=n + 1, attributes={"k": "v" * n}) for n in range(300)]
    [scope_spans] = decoded(*spans).resource_spans[0].scope_spans
    assert [s.name for s in scope_spans.spans] == [f"tools/call outil-é-{n}" for n in range(300)]
    assert decode_value(scope_spans.spans[299].attributes[0].value) == "v" * 299


def test_a_key_holding_true_in_one_span_and_1_in_another_reads_back_as_each() -> None:
    spans = [record(span_id=n + 1, attributes={"k": value}) for n, value in enumerate((True, 1, 1.0, "1", True))]
    read = [decode_value(s.attributes[0].value) for s in decoded(*spans).resource_spans[0].scope_spans[0].spans]
    assert [(type(v), v) for v in read] == [(bool, True), (int, 1), (float, 1.0), (str, "1"), (bool, True)]


def test_a_shapes_fixed_attributes_read_back_beside_each_spans_own_and_each_shape_keeps_its_own() -> None:
    get = MappingProxyType({"http.request.method": "GET", "server.port": 443, "url.template": "/a/{id}"})
    post = MappingProxyType({"http.request.method": "POST", "server.port": 8080})
    spans = [
        record(span_id=n + 1, attributes=({"anvil.upstream.attempt": n} if n % 3 else {}), fixed=shape)
        for n, shape in enumerate((get, post, get, post, get))
    ]
    read = [
        {a.key: decode_value(a.value) for a in span.attributes}
        for span in decoded(*spans).resource_spans[0].scope_spans[0].spans
    ]
    assert read[0] == {"http.request.method": "GET", "server.port": 443, "url.template": "/a/{id}"}
    assert read[1] == {"http.request.method": "POST", "server.port": 8080, "anvil.upstream.attempt": 1}
    assert read[4] == {**get, "anvil.upstream.attempt": 4} and read[3] == dict(post)
    assert [span.attributes for span in spans] == [
        dict(shape) | span.own for shape, span in zip((get, post, get, post, get), spans, strict=True)
    ]


def test_a_ledger_reference_reads_back_but_is_not_kept_among_the_pairs_that_recur() -> None:
    spans = [record(span_id=n + 1, attributes={"anvil.ledger.reference": f"led_{n}", "ok": True}) for n in range(3)]
    read = [
        {a.key: decode_value(a.value) for a in span.attributes}
        for span in decoded(*spans).resource_spans[0].scope_spans[0].spans
    ]
    assert [found["anvil.ledger.reference"] for found in read] == ["led_0", "led_1", "led_2"]
    assert not any(key == "anvil.ledger.reference" for key, _ in otlp._pairs)
