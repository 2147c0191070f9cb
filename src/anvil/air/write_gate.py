"""The write gate's permanent blocker: why a write can never be enabled as compiled.

``anvil status`` enables a write only with fresh evidence, a reviewed store and an upstream key the
ledger can carry (seed 001 §3). Evidence can be refreshed; a missing idempotency carrier cannot: a
write that sends no key (mode ``none``), or whose key resolves to no request coordinate, stays blocked
whatever the proof lanes say, however good its undo. :func:`never_enabled` says so, in one sentence
that ``anvil init``, ``anvil inspect`` and ``anvil status`` share; :func:`undo_never_enabled` says it
of the undo a write declares (a compensation by a PATCH or a POST ``/cancel`` has no key either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from anvil.air.carrier import resolve_carrier
from anvil.air.model import Operation

__all__ = ["NO_CARRIER", "UNRESOLVED_CARRIER", "never_enabled", "undo_never_enabled"]

NO_CARRIER: Final = (
    "it has no idempotency carrier: a lost answer cannot be told from no call, so a retry repeats the effect"
)
UNRESOLVED_CARRIER: Final = "its idempotency carrier does not resolve to an exact request coordinate"


def never_enabled(op: Operation) -> str | None:
    """Why the write gate can never enable ``op`` as compiled (no evidence lifts it), or None (a read,
    or a write whose key the ledger can carry)."""
    if op.is_read:
        return None
    mode = op.idempotency.mode
    if mode == "none":
        return NO_CARRIER
    if mode in ("required", "key_supported") and resolve_carrier(op).binding is None:
        return UNRESOLVED_CARRIER
    return None


def undo_never_enabled(op: Operation, operations: Mapping[str, Operation]) -> str | None:
    """Why the undo ``op`` declares (its inverse, else its compensation) can never be enabled as
    compiled, or None: the undo is itself a write with no idempotency carrier (a PATCH to a terminal
    status, a POST ``/cancel``), so the gate never enables the call that would undo ``op``."""
    follow = op.effect.inverse or op.effect.compensate
    target = operations.get(follow.operation) if follow is not None else None
    why = never_enabled(target) if target is not None else None
    if target is None or why is None:
        return None
    return f"its undo {target.id} is a write the write gate never enables as compiled: {why}"
