"""What one execution returns: an :class:`Outcome` carrying its :class:`ExecutionRecord`."""

from __future__ import annotations

from typing import Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.runtime.envelope import ErrorEnvelope

__all__ = ["ExecutionRecord", "LedgerState", "Outcome", "OutcomeKind"]

OutcomeKind = Literal["success", "error", "dry_run"]
#: What the ledger did for this call.
LedgerState = Literal["none", "reserved", "replay", "in_progress", "conflict"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionRecord:
    """The non-secret facts of one call; :meth:`to_json` is the audit line.

    ``principal`` is ``anonymous`` or a ``sha256:`` digest of the verified principal; ``ledger_id`` is
    the caller's idempotency key itself (ADR-0030 §5: the ledger's id, which audits join on);
    ``key_forwarded`` says whether an idempotency key went upstream; ``status`` is the last upstream
    status received (or the replayed one).
    """

    trace_id: str
    operation: str
    principal: str
    outcome: OutcomeKind
    error_code: str | None
    status: int | None
    attempts: int
    duration_ms: float
    effect_class: str
    ledger: LedgerState
    ledger_id: str | None
    key_forwarded: bool
    staged_for: str | None
    dry_run: bool

    def to_json(self) -> JSONObject:
        """The audit line's fields, in a fixed order."""
        return {
            "trace_id": self.trace_id,
            "operation": self.operation,
            "principal": self.principal,
            "outcome": self.outcome,
            "error_code": self.error_code,
            "status": self.status,
            "attempts": self.attempts,
            "duration_ms": round(self.duration_ms, 3),
            "effect_class": self.effect_class,
            "ledger": self.ledger,
            "ledger_id": self.ledger_id,
            "idempotency_key_forwarded": self.key_forwarded,
            "staged_for": self.staged_for,
            "dry_run": self.dry_run,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """The result of :func:`anvil.runtime.executor.execute`.

    Attributes:
        kind: ``success``, ``error`` or ``dry_run``.
        status: the upstream (or replayed) HTTP status on success.
        data: the upstream's parsed answer on success (None for an empty body).
        envelope: the error on ``error``.
        plan: the redacted request plan on ``dry_run``.
        record: the execution record (also the audit line).
        idempotency_key: the key actually sent upstream (or that a replay answered for), else None.
        replayed: True when the ledger answered with a stored result and the upstream was not called.
        replay_unavailable: on a success that the ledger cannot store for replay (over its ceiling),
            why; the key stays reserved for reconciliation. None otherwise.
        attempts: upstream attempts made by this call.
        trace_id: this call's trace id.
    """

    kind: OutcomeKind
    status: int | None = None
    data: JSONValue = None
    envelope: ErrorEnvelope | None = None
    plan: JSONObject | None = None
    record: ExecutionRecord
    idempotency_key: str | None = None
    replayed: bool = False
    replay_unavailable: str | None = None
    attempts: int = 0
    trace_id: str

    @property
    def ok(self) -> bool:
        """True for a success (including a replay)."""
        return self.kind == "success"

    @property
    def code(self) -> str | None:
        """The envelope code on error, else None."""
        return self.envelope.code if self.envelope is not None else None
