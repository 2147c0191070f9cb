"""The idempotency ledger: one policy (:class:`Ledger`) over backends chosen by URI scheme."""

from anvil.ledger.base import (
    MAX_RESULT_BYTES,
    Ledger,
    LedgerOptions,
    Readiness,
    Reservation,
    ReserveContext,
    safe_reference,
)
from anvil.ledger.registry import open_ledger, register_scheme

__all__ = [
    "MAX_RESULT_BYTES",
    "Ledger",
    "LedgerOptions",
    "Readiness",
    "Reservation",
    "ReserveContext",
    "open_ledger",
    "register_scheme",
    "safe_reference",
]
