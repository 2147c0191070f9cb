"""Which traces are exported: the OpenTelemetry specification's samplers, by ``OTEL_TRACES_SAMPLER``.

The names and their meaning are the specification's (and the SDK's, ``opentelemetry.sdk.trace.sampling``):

=============================  ===========================================================================
``always_on``                  every trace
``always_off``                 none
``traceidratio``               a trace when its id's low 64 bits are below ``round(ratio * 2**64)``
                               (``OTEL_TRACES_SAMPLER_ARG``, 0..1, default 1): the same decision for a trace
                               id in every service that samples by ratio
``parentbased_always_on``      the caller's decision when a ``traceparent`` came in, else every trace
                               (the default)
``parentbased_always_off``     the caller's decision, else none
``parentbased_traceidratio``   the caller's decision, else by ratio
=============================  ===========================================================================

A decision is taken once per call, when its span starts (:meth:`Sampler.sampled`); the call's child spans
share it. An unsampled call still has its trace id (envelope, audit, ledger) and is counted in the metrics;
its spans are not exported. The sampler is ours rather than the SDK's object: the SDK's ``should_sample``
wants an OpenTelemetry ``Context`` holding the parent span, which costs more per call than the decision
itself; the tests check that both decide alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from anvil._dataclass import dataclass

__all__ = ["DEFAULT_SAMPLER", "SAMPLERS", "Sampler"]

#: ``OTEL_TRACES_SAMPLER`` values served.
SAMPLERS: Final[tuple[str, ...]] = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
#: The specification's default.
DEFAULT_SAMPLER: Final = "parentbased_always_on"
_LOW_64: Final = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class Sampler:
    """One of :data:`SAMPLERS` with its ratio (used by the ``traceidratio`` ones only).

    Raises:
        ValueError: an unknown name, or a ratio outside 0..1.
    """

    name: str = DEFAULT_SAMPLER
    ratio: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in SAMPLERS:
            raise ValueError(f"unknown sampler {self.name!r}")
        if not 0.0 <= self.ratio <= 1.0:
            raise ValueError("a sampling ratio is between 0 and 1")

    @property
    def bound(self) -> int:
        """Trace ids whose low 64 bits are below it are sampled by ratio (the SDK's ``TraceIdRatioBased``)."""
        return round(self.ratio * (_LOW_64 + 1))

    def sampled(self, trace_id: int, parent_sampled: bool | None) -> bool:
        """Whether a call of ``trace_id`` is exported; ``parent_sampled`` is the caller's flag (None: no
        ``traceparent`` came in)."""
        name = self.name
        if parent_sampled is not None and name.startswith("parentbased_"):
            return parent_sampled
        if name.endswith("always_on"):
            return True
        if name.endswith("always_off"):
            return False
        return trace_id & _LOW_64 < self.bound

    def decider(self) -> Callable[[int, bool | None], bool]:
        """:meth:`sampled` as one cheap function (taken once per call span: the default's is a single test)."""
        name, bound = self.name, self.bound
        if name == "parentbased_always_on":
            return lambda trace_id, parent_sampled: parent_sampled is not False
        if name == "parentbased_always_off":
            return lambda trace_id, parent_sampled: parent_sampled is True
        if name == "always_on":
            return lambda trace_id, parent_sampled: True
        if name == "always_off":
            return lambda trace_id, parent_sampled: False
        if name == "parentbased_traceidratio":
            return lambda trace_id, parent_sampled: (
                parent_sampled if parent_sampled is not None else trace_id & _LOW_64 < bound
            )
        return lambda trace_id, parent_sampled: trace_id & _LOW_64 < bound
