"""What the runtime tells a tracer, and the one trace id a call carries everywhere.

The runtime never imports OpenTelemetry: :class:`Tracer` is the seam it reports to, and
:attr:`~anvil.runtime.context.RuntimeContext.tracer` is None unless ``anvil serve`` was started with an
exporter (:mod:`anvil.telemetry` implements it). Every span site checks that one attribute first, so a
gateway without tracing pays a ``None`` test per site and nothing else.

One trace id everywhere: the serving layer starts one span per tool call and binds it
(:func:`bind_span`); :func:`current_trace_id` is then ``trace_<32 hex>``, the OpenTelemetry trace id of
that call, and the envelope's ``trace_id``, the audit line, the ledger row's ``trace_id`` and the spans
all carry it. Without a bound span it is ``trace_<uuid4>`` as before, a fresh one per call.

W3C trace context (``traceparent``: ``00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>``) is
parsed and written here (:func:`parse_traceparent`), so the serving layer can continue a caller's trace
without the SDK.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Final, Literal, Protocol

from anvil._dataclass import dataclass

__all__ = [
    "CALL_SPAN",
    "TRACE_PREFIX",
    "Attribute",
    "Parent",
    "Span",
    "SpanKind",
    "Tracer",
    "bind_span",
    "current_span",
    "current_trace_id",
    "parse_traceparent",
    "trace_id_text",
]

#: Every trace id the gateway shows starts with it (``trace_<32 hex>`` when traced, else ``trace_<uuid4>``).
TRACE_PREFIX: Final = "trace_"
SpanKind = Literal["internal", "server", "client"]
Attribute = str | int | float | bool
_TRACEPARENT: Final = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-[^\s]*)?")


@dataclass(frozen=True, slots=True)
class Parent:
    """A caller's span context, from a W3C ``traceparent``: the trace, the parent span, whether sampled."""

    trace_id: int
    span_id: int
    sampled: bool


def parse_traceparent(value: object) -> Parent | None:
    """The span context a ``traceparent`` value names, or None when it is not a valid one.

    Version ``ff``, an all-zero trace or span id, upper-case hex and anything but a string are invalid
    (W3C Trace Context §3.2); a later version's extra fields are ignored.
    """
    if not isinstance(value, str) or len(value) > 512:
        return None
    found = _TRACEPARENT.fullmatch(value.strip())
    if found is None:
        return None
    version, trace, span, flags = found.groups()
    if version == "ff" or (version == "00" and len(value.strip()) != 55):
        return None
    trace_id, span_id = int(trace, 16), int(span, 16)
    if not trace_id or not span_id:
        return None
    return Parent(trace_id, span_id, bool(int(flags, 16) & 1))


def trace_id_text(trace_id: int) -> str:
    """The gateway's spelling of an OpenTelemetry trace id: ``trace_`` and its 32 lower-case hex digits."""
    return f"{TRACE_PREFIX}{trace_id:032x}"


class Span(Protocol):
    """One operation of a call, as the runtime reports it (attributes never hold a secret or a value)."""

    @property
    def trace_id(self) -> str:
        """``trace_<32 hex>``: the trace this span belongs to."""

    def set(self, key: str, value: Attribute) -> None:
        """Set one attribute (a later value replaces an earlier one)."""

    def rename(self, name: str) -> None:
        """Give the span the name of what it turned out to be (a reservation that replayed)."""

    def end(self, error: str | None = None) -> None:
        """End the span; ``error`` is its ``error.type`` (a code, never a message), None when it succeeded."""

    def traceparent(self) -> str:
        """The W3C ``traceparent`` naming this span as the parent (what an upstream receives)."""


class Tracer(Protocol):
    """Where spans come from (:mod:`anvil.telemetry` implements it)."""

    def start(
        self,
        name: str,
        kind: SpanKind = "internal",
        attributes: Mapping[str, Attribute] | None = None,
        *,
        started: int | None = None,
        fixed: Mapping[str, Attribute] | None = None,
    ) -> Span:
        """A span under the call span bound now (:func:`current_span`), else the root of a new trace.

        ``started`` (epoch ns) backdates it: a step timed before it was known to be worth a span. The
        ``attributes`` mapping becomes the span's own (pass a fresh one). ``fixed`` are attributes every span
        of this shape shares (one mapping kept by the caller and never changed, so a tracer may keep it
        encoded); :meth:`Span.set` never writes one of its keys."""

    def start_call(
        self,
        name: str,
        kind: SpanKind,
        attributes: Mapping[str, Attribute],
        parent: Parent | None,
        *,
        fixed: Mapping[str, Attribute] | None = None,
    ) -> Span:
        """A tool call's span: a child of the caller's ``parent`` when there is one, else a new trace's root
        (``fixed`` as for :meth:`start`)."""


#: The call span bound now (:func:`bind_span`); a tracer reads it directly (one lookup per span, no call).
CALL_SPAN: ContextVar[Span | None] = ContextVar("anvil_call_span", default=None)
_CURRENT: Final = CALL_SPAN


class _Bound:
    """``with bind_span(span):`` - the call span children and trace ids come from inside the block."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span) -> None:
        self._span = span
        self._token: Token[Span | None] | None = None

    def __enter__(self) -> Span:
        self._token = _CURRENT.set(self._span)
        return self._span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)


def bind_span(span: Span) -> _Bound:
    """Bind ``span`` as the current call's span for the ``with`` block."""
    return _Bound(span)


def current_span() -> Span | None:
    """The call span bound now, or None (no tracer, or outside a served call)."""
    return _CURRENT.get()


def current_trace_id() -> str:
    """The bound call's trace id (``trace_<32 hex>``), else a fresh ``trace_<uuid4>``."""
    span = _CURRENT.get()
    if span is not None:
        return span.trace_id
    return f"{TRACE_PREFIX}{uuid.uuid4()}"
