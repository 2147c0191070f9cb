"""Spans as the gateway records them: plain records, cheap on the event loop, exported in the background.

The OpenTelemetry SDK's tracer costs 13-35 µs of CPU per span here (measured: a span with four attributes,
started, ended and handed to a processor), several times a whole traced call's budget. So a span is a
:class:`SpanRecord` (slots, two random ids, ``time.time_ns`` twice, its shape's fixed attributes shared, a
dict of its own only when it has any) and the
:class:`Recorder` that makes them implements :class:`anvil.runtime.tracing.Tracer`. An ended record goes
to the ``finished`` callback (:class:`anvil.telemetry.pipeline.Telemetry` aggregates it and queues it for
export); the OTLP encoding (:mod:`anvil.telemetry.otlp`) and the SDK's exporters run on the export thread.

Ids follow OpenTelemetry's: a random non-zero 128-bit trace id and 64-bit span id (``random.getrandbits``,
as the SDK's own generator). A call continues its caller's trace when given a parent (a W3C
``traceparent``); whether it is sampled is the :class:`~anvil.telemetry.sampling.Sampler`'s decision
(``OTEL_TRACES_SAMPLER``; by default the caller's flag, and a root is sampled), taken once per call and
shared by its children: an unsampled call still gets its trace id, and its spans are counted in the
metrics but not exported.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from anvil.runtime.tracing import CALL_SPAN, Attribute, Parent, SpanKind, trace_id_text
from anvil.telemetry.sampling import Sampler

__all__ = ["KINDS", "NO_ATTRIBUTES", "Recorder", "SpanRecord"]

#: OTLP's ``Span.SpanKind`` numbers.
KINDS: Final[dict[str, int]] = {"internal": 1, "server": 2, "client": 3}
_SERVER: Final = KINDS["server"]
_bound: Final = CALL_SPAN.get
_now: Final = time.time_ns
#: The ``fixed`` attributes of a span that has none.
NO_ATTRIBUTES: Final[Mapping[str, Attribute]] = MappingProxyType({})
#: The own attributes of a span started with none, until :meth:`SpanRecord.set` gives it a dict of its own
#: (one object fewer for most gates and ledger spans). Never written.
_NO_OWN: Final[dict[str, Attribute]] = {}
_NONE: Final = NO_ATTRIBUTES


class SpanRecord:
    """One span: its ids, name, kind, times, attributes and ``error.type`` (implements the runtime's ``Span``).

    ``fixed`` holds the attributes every span of its shape shares (a tool's call spans, one upstream's
    attempts): the caller's mapping, kept and never copied or changed, so the encoder keeps it encoded once
    (:mod:`anvil.telemetry.otlp`); ``own`` holds the span's own, which :meth:`set` writes. A key is in one of
    the two, never both; :attr:`attributes` is both together.
    """

    __slots__ = (
        "_finished",
        "_text",
        "end_ns",
        "error",
        "fixed",
        "kind",
        "name",
        "own",
        "parent_id",
        "remote",
        "sampled",
        "span_id",
        "start_ns",
        "trace",
    )

    def __init__(
        self,
        finished: Callable[[SpanRecord], None],
        name: str,
        kind: int,
        trace: int,
        span_id: int,
        parent_id: int,
        sampled: bool,
        remote: bool,
        attributes: dict[str, Attribute],
        started: int | None = None,
        fixed: Mapping[str, Attribute] = NO_ATTRIBUTES,
    ) -> None:
        self._finished = finished
        self._text: str | None = None
        self.name = name
        self.kind = kind
        self.trace = trace
        self.span_id = span_id
        self.parent_id = parent_id  # 0: a root
        self.sampled = sampled
        self.remote = remote  # the parent is the caller's (from a traceparent)
        self.own = attributes
        self.fixed = fixed
        self.start_ns = started or _now()
        self.end_ns = 0
        self.error: str | None = None

    @property
    def trace_id(self) -> str:
        """``trace_<32 hex>``."""
        text = self._text
        if text is None:
            text = self._text = trace_id_text(self.trace)
        return text

    def set(self, key: str, value: Attribute) -> None:
        """Set one attribute."""
        own = self.own
        if own is _NO_OWN:
            own = self.own = {}
        own[key] = value

    @property
    def attributes(self) -> dict[str, Attribute]:
        """The fixed and the own attributes together, a copy (for the SDK's exporters)."""
        return {**self.fixed, **self.own}

    def rename(self, name: str) -> None:
        """Rename the span."""
        self.name = name

    def end(self, error: str | None = None) -> None:
        """End the span once (a second end is ignored) and hand it on."""
        if self.end_ns:
            return
        self.end_ns = _now()
        self.error = error
        self._finished(self)

    def traceparent(self) -> str:
        """``00-<trace>-<this span>-<flags>``."""
        return f"00-{self.trace:032x}-{self.span_id:016x}-{'01' if self.sampled else '00'}"

    @property
    def is_server(self) -> bool:
        """A tool call's span."""
        return self.kind == _SERVER

    def __repr__(self) -> str:
        return f"<SpanRecord {self.name} {self.trace:032x}/{self.span_id:016x}>"


def _nonzero(bits: int, rng: Callable[[int], int]) -> int:
    value = rng(bits)
    while not value:
        value = rng(bits)
    return value


class Recorder:
    """Makes :class:`SpanRecord`s (the runtime's :class:`~anvil.runtime.tracing.Tracer`).

    Args:
        finished: Called with each span as it ends (on the event loop: keep it cheap).
        rng: ``getrandbits`` for the ids (a test seam).
        sampler: Decides which calls are exported (default: ``parentbased_always_on``).
    """

    def __init__(
        self,
        finished: Callable[[SpanRecord], None],
        *,
        rng: Callable[[int], int] = random.getrandbits,
        sampler: Sampler | None = None,
    ):
        self._finished = finished
        self._rng = rng
        self._sampled = (sampler or Sampler()).decider()

    def start(
        self,
        name: str,
        kind: SpanKind = "internal",
        attributes: Mapping[str, Attribute] | None = None,
        *,
        started: int | None = None,
        fixed: Mapping[str, Attribute] | None = None,
    ) -> SpanRecord:
        """A child of the bound call span, else a new trace's root (a dict of ``attributes`` is kept as it is;
        ``fixed``, shared by the spans of one shape, is kept and never changed)."""
        parent = _bound()
        rng = self._rng
        own = attributes if type(attributes) is dict else dict(attributes) if attributes else _NO_OWN
        if type(parent) is SpanRecord:  # the hot case: one lookup, one draw, one record
            return SpanRecord(
                self._finished,
                name,
                KINDS[kind],
                parent.trace,
                rng(64) or _nonzero(64, rng),
                parent.span_id,
                parent.sampled,
                False,
                own,
                started,
                fixed or NO_ATTRIBUTES,
            )
        trace = _nonzero(128, rng)
        sampled = self._sampled(trace, None)
        return SpanRecord(
            self._finished,
            name,
            KINDS[kind],
            trace,
            _nonzero(64, rng),
            0,
            sampled,
            False,
            own,
            started,
            fixed or NO_ATTRIBUTES,
        )

    def start_call(
        self,
        name: str,
        kind: SpanKind,
        attributes: Mapping[str, Attribute],
        parent: Parent | None,
        *,
        fixed: Mapping[str, Attribute] | None = None,
    ) -> SpanRecord:
        """A call's span under the caller's ``parent``, else a new trace's root; sampled as the sampler says
        (``fixed``, shared by the call spans of one shape, is kept and never changed)."""
        rng = self._rng
        if parent is not None:
            trace, parent_id, remote = parent.trace_id, parent.span_id, True
            sampled = self._sampled(trace, parent.sampled)
        else:
            trace, parent_id, remote = rng(128) or _nonzero(128, rng), 0, False
            sampled = self._sampled(trace, None)
        own = attributes if type(attributes) is dict else dict(attributes)
        span_id = rng(64) or _nonzero(64, rng)
        return SpanRecord(
            self._finished,
            name,
            KINDS[kind],
            trace,
            span_id,
            parent_id,
            sampled,
            remote,
            own,
            None,
            fixed or NO_ATTRIBUTES,
        )
