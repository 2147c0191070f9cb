"""What a proof lane run covers and how it is bounded: the operations it selects, its progress lines,
when it must stop, and how it says that its record covers less than the whole bundle.

A lane (``selftest``, ``conformance``, ``simulate``) takes a :class:`LaneScope`:

* ``operations``: glob patterns (``fnmatch``, case-sensitive) over each approved operation's AIR id,
  canonical name and tool name; empty selects every approved operation;
* ``progress``: called with one line per operation (``[3/465] selftest pagerduty.addons.create``);
* ``stop`` and ``time_cap_s``: checked between operations; once either holds, the lane stops
  starting operations and writes what it has, marked incomplete;
* ``startup_timeout_s``: how long each child process (``anvil mock``, ``anvil serve``) may take to
  announce itself.

A record that covers less than every approved operation carries ``incomplete: {reason, operationsRun,
operationsApproved}`` (:func:`incomplete_marker`); :func:`anvil.proof.records.judge_record` never
counts such a record as fresh evidence. A record of a bundle that approves no operation carries
``nothingToProve: {reason, operationsApproved: 0}`` (:func:`nothing_to_prove_marker`): the lane had
nothing to prove, which is neither a pass nor a failure (judged ``skipped``).
"""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.model import Operation

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_S",
    "NOTHING_TO_PROVE",
    "LaneScope",
    "StopSignal",
    "incomplete_marker",
    "nothing_to_prove_marker",
    "select_operations",
]

#: How long a lane waits for a child process to announce its URL unless told otherwise.
DEFAULT_STARTUP_TIMEOUT_S: Final = 30.0
#: Why a lane run on a bundle that approves no operation proves nothing, and how to approve one.
NOTHING_TO_PROVE: Final = (
    "nothing to prove: the bundle approves no operation; approve one in its manifest "
    "(`anvil approve anvil.yaml <operation-id>`, or `anvil init --approve reads`), recompile with "
    "`anvil compile` and run the lane again"
)


class StopSignal:
    """A flag the CLI sets from a signal handler (SIGINT, SIGTERM); lanes read it between operations."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def set(self, reason: str) -> None:
        """Ask the lane to stop after the operation in flight, saying why (the first reason is kept)."""
        if self.reason is None:
            self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        """True once :meth:`set` was called."""
        return self._event.is_set()


def _matches(op: Operation, patterns: Sequence[str]) -> bool:
    names = (op.id, op.canonical_name, op.mcp.tool_name)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)


def select_operations(operations: Sequence[Operation], patterns: Sequence[str]) -> list[Operation]:
    """The approved operations of ``operations`` (in order) that one of ``patterns`` names; all when empty."""
    approved = [op for op in operations if op.is_approved]
    return approved if not patterns else [op for op in approved if _matches(op, patterns)]


@dataclass(slots=True, kw_only=True)
class LaneScope:
    """How one lane run is bounded and reported (see the module docstring)."""

    operations: tuple[str, ...] = ()
    progress: Callable[[str], None] | None = None
    stop: StopSignal = field(default_factory=StopSignal)
    time_cap_s: float | None = None
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    clock: Callable[[], float] = time.monotonic
    _started: float | None = None
    _run: int = 0
    _total: int = 0

    def begin(self, total: int) -> None:
        """Start the clock for the time cap; ``total`` operations are about to run."""
        self._started = self.clock()
        self._total = total
        self._run = 0

    def should_stop(self) -> bool:
        """True when the lane must not start another operation (a signal, or the time cap reached)."""
        if self.stop.is_set():
            return True
        if self.time_cap_s is not None and self._started is not None:
            if self.clock() - self._started >= self.time_cap_s:
                self.stop.set(f"the time cap of {self.time_cap_s:g} s was reached")
                return True
        return False

    def step(self, lane: str, op: Operation, detail: str = "") -> None:
        """Count one operation as started and print its progress line."""
        self._run += 1
        if self.progress is not None:
            tail = f" {detail}" if detail else ""
            self.progress(f"[{self._run}/{self._total}] {lane} {op.id}{tail}")

    @property
    def run(self) -> int:
        """How many operations were started."""
        return self._run

    def stopped_reason(self) -> str | None:
        """Why the run stopped early, or None when it was not stopped."""
        return self.stop.reason if self.stop.is_set() else None


def incomplete_marker(
    scope: LaneScope, *, selected: int, approved: int, finished: int, left_out: str | None = None
) -> JSONObject | None:
    """The record's ``incomplete`` object, or None when the run covered every approved operation.

    Args:
        scope: The run's scope (its patterns and stop reason).
        selected: How many approved operations the patterns selected.
        approved: How many operations the bundle approves.
        finished: How many of the selected operations ran to the end.
        left_out: A part of the lane that did not run although every operation did (a stop just after).
    """
    reasons: list[str] = []
    if selected < approved:
        reasons.append(
            f"--operations {' '.join(scope.operations)} selected {selected} of {approved} approved operations"
        )
    stopped = scope.stopped_reason()
    if stopped is not None and finished < selected:
        reasons.append(f"stopped ({stopped}) after {finished} of {selected} operations")
    elif stopped is not None and left_out is not None:
        reasons.append(f"stopped ({stopped}) before {left_out}")
    if not reasons:
        return None
    return {"reason": "; ".join(reasons), "operationsRun": finished, "operationsApproved": approved}


def nothing_to_prove_marker(approved: int) -> JSONObject | None:
    """The record's ``nothingToProve`` object when the bundle approves no operation (``approved`` is 0), else None."""
    if approved:
        return None
    return {"reason": NOTHING_TO_PROVE, "operationsApproved": 0}
