"""OTEL_TRACES_SAMPLER's six samplers decide as the SDK's samplers of the same name, once per call."""

from __future__ import annotations

import random

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import sampling
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from anvil.runtime.tracing import bind_span, parse_traceparent
from anvil.telemetry.sampling import SAMPLERS, Sampler
from anvil.telemetry.spans import Recorder


def sdk_sampler(name: str, ratio: float) -> sampling.Sampler:
    return {
        "always_on": sampling.ALWAYS_ON,
        "always_off": sampling.ALWAYS_OFF,
        "traceidratio": sampling.TraceIdRatioBased(ratio),
        "parentbased_always_on": sampling.DEFAULT_ON,
        "parentbased_always_off": sampling.DEFAULT_OFF,
        "parentbased_traceidratio": sampling.ParentBasedTraceIdRatio(ratio),
    }[name]


def sdk_decides(sampler: sampling.Sampler, trace_id: int, parent_sampled: bool | None) -> bool:
    context = None
    if parent_sampled is not None:
        parent = SpanContext(trace_id, 0xB7, is_remote=True, trace_flags=TraceFlags(1 if parent_sampled else 0))
        context = trace.set_span_in_context(NonRecordingSpan(parent))
    return sampler.should_sample(context, trace_id, "tools/call t").decision.is_sampled()


@pytest.mark.parametrize("name", SAMPLERS)
def test_each_sampler_decides_as_the_sdks_sampler_of_that_name(name: str) -> None:
    draw = random.Random(7).getrandbits
    ids = [draw(128) or 1 for _ in range(400)] + [1, (1 << 64) - 1, 1 << 127, (1 << 62) - 1, 1 << 62]
    for ratio in (0.0, 0.25, 1.0):
        ours, theirs = Sampler(name, ratio), sdk_sampler(name, ratio)
        decide = ours.decider()  # what the recorder asks per call
        for trace_id in ids:
            for parent in (None, True, False):
                expected = sdk_decides(theirs, trace_id, parent)
                assert ours.sampled(trace_id, parent) == expected == decide(trace_id, parent), (ratio, parent)


def test_a_ratio_samples_about_that_share_of_new_traces_and_the_calls_children_share_the_decision() -> None:
    recorder = Recorder(lambda span: None, sampler=Sampler("parentbased_traceidratio", 0.25))
    calls = [recorder.start_call("tools/call t", "server", {}, None) for _ in range(2000)]
    assert 400 < sum(call.sampled for call in calls) < 600
    for call in calls[:50]:
        with bind_span(call):
            assert recorder.start("anvil.gates").sampled == call.sampled
    unsampled_caller = parse_traceparent("00-" + "a" * 32 + "-" + "b" * 16 + "-00")
    sampled_caller = parse_traceparent("00-" + "a" * 32 + "-" + "b" * 16 + "-01")
    assert not recorder.start_call("t", "server", {}, unsampled_caller).sampled
    assert recorder.start_call("t", "server", {}, sampled_caller).sampled  # the caller's decision wins


def test_always_off_exports_nothing_and_a_plain_ratio_ignores_the_caller() -> None:
    off = Recorder(lambda span: None, sampler=Sampler("always_off"))
    assert not off.start_call("t", "server", {}, None).sampled and not off.start("GET").sampled
    ratio = Recorder(lambda span: None, sampler=Sampler("traceidratio", 0.0))
    assert not ratio.start_call("t", "server", {}, parse_traceparent("00-" + "a" * 32 + "-" + "b" * 16 + "-01")).sampled


def test_an_unknown_sampler_or_a_ratio_outside_0_to_1_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown sampler"):
        Sampler("jaeger_remote")
    with pytest.raises(ValueError, match="between 0 and 1"):
        Sampler("traceidratio", 1.5)
