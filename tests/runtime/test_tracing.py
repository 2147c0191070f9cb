"""The runtime's tracing seam: W3C traceparent parsing and the call's one trace id."""

from __future__ import annotations

import re

import pytest

from anvil.runtime.tracing import Parent, current_span, current_trace_id, parse_traceparent, trace_id_text


def test_a_valid_traceparent_names_the_trace_the_parent_and_the_sampled_flag() -> None:
    found = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert found == Parent(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True)
    assert parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00") == Parent(
        0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, False
    )
    # a later version may carry more fields
    assert parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra") is not None


@pytest.mark.parametrize(
    "value",
    [
        None,
        42,
        "",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # zero parent id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  # version 00 has no more fields
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  # short
        "x" * 600,
    ],
)
def test_anything_else_is_no_parent(value: object) -> None:
    assert parse_traceparent(value) is None


def test_outside_a_traced_call_the_trace_id_keeps_its_uuid_shape() -> None:
    assert current_span() is None
    first, second = current_trace_id(), current_trace_id()
    assert re.fullmatch(r"trace_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", first)
    assert first != second
    assert trace_id_text(0xABC) == "trace_" + "0" * 29 + "abc"


_T, _S = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.mark.parametrize(
    "header",
    [
        f"00-{_T}-{_S}-01",
        f"00-{_T}-{_S}-00",
        f"00-{_T}-{_S}-03",
        f"01-{_T}-{_S}-01-later-fields",
        f"cc-{_T}-{_S}-01-",
        f" 00-{_T}-{_S}-01 ",
        f"ff-{_T}-{_S}-01",
        f"00-{'0' * 32}-{_S}-01",
        f"00-{_T}-{'0' * 16}-01",
        f"00-{_T.upper()}-{_S}-01",
        f"00-{_T}-{_S}-01-extra",
        f"00-{_T}-{_S}-1",
        f"0-{_T}-{_S}-01",
        f"00-{_T}-{_S}",
        f"zz-{_T}-{_S}-01",
        f"cc-{_T}-{_S}-01.x",
        "",
    ],
)
def test_a_traceparent_is_read_as_the_opentelemetry_apis_propagator_reads_it(header: str) -> None:
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = trace.get_current_span(TraceContextTextMapPropagator().extract({"traceparent": header}))
    found = context.get_span_context()
    theirs = (found.trace_id, found.span_id, found.trace_flags.sampled) if found.is_valid else None
    ours = parse_traceparent(header)
    assert (None if ours is None else (ours.trace_id, ours.span_id, ours.sampled)) == theirs
