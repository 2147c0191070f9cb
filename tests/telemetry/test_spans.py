"""The recorder: call spans continue a caller's trace, children hang under the bound call, ids are OTel's."""

from __future__ import annotations

import re

from anvil.runtime.tracing import bind_span, current_trace_id, parse_traceparent
from anvil.telemetry.spans import Recorder, SpanRecord


def test_a_call_continues_the_callers_trace_and_its_children_hang_under_it() -> None:
    ended: list[SpanRecord] = []
    recorder = Recorder(ended.append)
    parent = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    call = recorder.start_call("tools/call t", "server", {"gen_ai.tool.name": "t"}, parent)
    assert call.trace_id == "trace_4bf92f3577b34da6a3ce929d0e0e4736" and call.parent_id == 0x00F067AA0BA902B7
    assert call.remote and call.sampled
    with bind_span(call):
        assert current_trace_id() == call.trace_id
        child = recorder.start("anvil.gates")
        child.end("confirmation_required")
    call.end()
    call.end("ignored")  # a second end changes nothing
    assert ended == [child, call] and call.error is None
    assert (child.trace, child.parent_id, child.error) == (call.trace, call.span_id, "confirmation_required")
    assert child.traceparent() == f"00-4bf92f3577b34da6a3ce929d0e0e4736-{child.span_id:016x}-01"


def test_a_new_trace_is_sampled_and_an_unsampled_callers_is_kept_unsampled() -> None:
    recorder = Recorder(lambda span: None)
    fresh = recorder.start_call("tools/call t", "server", {}, None)
    assert fresh.sampled and fresh.parent_id == 0 and not fresh.remote
    assert re.fullmatch(r"trace_[0-9a-f]{32}", fresh.trace_id) and fresh.trace
    quiet = recorder.start_call("t", "server", {}, parse_traceparent("00-" + "a" * 32 + "-" + "b" * 16 + "-00"))
    assert not quiet.sampled and quiet.traceparent().endswith("-00")


def test_a_span_outside_any_call_is_a_root_and_ids_are_never_zero() -> None:
    draws = iter([0, 0, 7, 0, 9])
    recorder = Recorder(lambda span: None, rng=lambda bits: next(draws))
    span = recorder.start("GET", "client", {"a": 1})
    assert (span.trace, span.span_id, span.parent_id, span.kind) == (7, 9, 0, 3)


def test_the_traceparent_sent_upstream_is_read_back_by_the_opentelemetry_apis_propagator() -> None:
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    recorder = Recorder(lambda span: None)
    for caller in ("01", "00"):
        parent = parse_traceparent(f"00-{'4b' * 16}-{'0f' * 8}-{caller}")
        call = recorder.start_call("tools/call t", "server", {}, parent)
        with bind_span(call):
            attempt = recorder.start("POST", "client")
        carrier = {"traceparent": attempt.traceparent()}
        found = trace.get_current_span(TraceContextTextMapPropagator().extract(carrier)).get_span_context()
        assert (found.trace_id, found.span_id, found.trace_flags.sampled) == (call.trace, attempt.span_id, call.sampled)
        injected: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(injected, trace.set_span_in_context(trace.NonRecordingSpan(found)))
        assert injected == carrier  # written exactly as the API writes it
