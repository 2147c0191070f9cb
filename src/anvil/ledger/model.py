"""The ledger's data: the options every backend receives, the row and its stored fields, and where rows live.

A table (a Firestore collection group) is derived from the deployment namespace
(:func:`namespace_table`); operator tools that know only a row's sanitized reference may name the table
directly (:attr:`LedgerOptions.table`), but only one of the names a namespace derives
(:data:`LEDGER_TABLE`), so no tool ever touches a table the gateway could not have used.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil.air.deployment import COLLECTION_PREFIX, NAMESPACE_PATTERN, collection_group
from anvil.errors import ConfigError, LedgerError

__all__ = [
    "DEFAULT_BINDING_TTL_SECONDS",
    "DEFAULT_LOCK_TIMEOUT_SECONDS",
    "DEFAULT_RESULT_TTL_SECONDS",
    "LEDGER_TABLE",
    "MAX_TTL_SECONDS",
    "ROW_FIELDS",
    "TABLE_NAME",
    "LedgerOptions",
    "LedgerRow",
    "is_whole",
    "namespace_table",
    "options_table",
    "row_from_values",
    "row_values",
]

#: Completed-result retention when none is configured: seven days.
DEFAULT_RESULT_TTL_SECONDS: Final = 604_800
#: How long a completed row keeps what binds its key (fingerprint, no result): thirty days.
DEFAULT_BINDING_TTL_SECONDS: Final = 2_592_000
#: How long one ledger call may wait for a lock, a connection or an answer before failing closed.
DEFAULT_LOCK_TIMEOUT_SECONDS: Final = 5.0
MIN_TTL_SECONDS: Final = 60
#: The longest a result may replay: one year.
MAX_TTL_SECONDS: Final = 31_536_000
MAX_BINDING_SECONDS: Final = 10 * 31_536_000
#: A table name the SQL backends accept: a lowercase identifier PostgreSQL does not truncate.
TABLE_NAME: Final = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
#: The tables a namespace derives (:func:`namespace_table`): the only ones a table option may name.
LEDGER_TABLE: Final = re.compile(r"^" + COLLECTION_PREFIX.rstrip("_") + r"(?:_[0-9a-f]{16})?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerOptions:
    """Settings every backend receives from :func:`anvil.ledger.registry.open_ledger`.

    ``result_ttl_seconds`` is how long a completed result replays (60 s to 365 days);
    ``binding_ttl_seconds`` how long a completed row keeps its fingerprint after that, so reuse of
    the key by another principal or for another request still conflicts (60 s to 10 years; never
    shorter than the result's own retention); ``lock_timeout_seconds`` bounds each ledger call's
    wait for a lock, a connection or an answer (0.1 to 60 s); ``namespace`` is the deployment
    namespace the table/collection is derived from when the URI does not name one; ``table`` names
    that table directly instead, for operator tools that know it only from a row's reference (it must
    be one a namespace derives: :data:`LEDGER_TABLE`); ``clock`` returns wall-clock seconds since the
    epoch (injected so expiry can be tested without waiting); ``reservation_ids`` makes the
    unguessable ownership token of each reservation (a test seam).
    """

    result_ttl_seconds: int = DEFAULT_RESULT_TTL_SECONDS
    binding_ttl_seconds: int = DEFAULT_BINDING_TTL_SECONDS
    lock_timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_SECONDS
    namespace: str | None = None
    table: str | None = None
    clock: Callable[[], float] = time.time
    reservation_ids: Callable[[], str] = lambda: uuid.uuid4().hex

    def __post_init__(self) -> None:
        ttl = self.result_ttl_seconds
        if not is_whole(ttl, MIN_TTL_SECONDS, MAX_TTL_SECONDS):
            raise ConfigError(
                "config/invalid",
                f"The ledger result TTL must be an integer from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS} seconds.",
                hint="Set ANVIL_LEDGER_RESULT_TTL_SECONDS to a whole number of seconds.",
            )
        if not is_whole(self.binding_ttl_seconds, MIN_TTL_SECONDS, MAX_BINDING_SECONDS):
            raise ConfigError(
                "config/invalid",
                f"The ledger binding TTL must be an integer from {MIN_TTL_SECONDS} to {MAX_BINDING_SECONDS} seconds.",
                hint="Set ANVIL_LEDGER_BINDING_TTL_SECONDS to a whole number of seconds.",
            )
        wait = self.lock_timeout_seconds
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0.1 <= wait <= 60:
            raise ConfigError(
                "config/invalid",
                "The ledger lock timeout must be from 0.1 to 60 seconds.",
                hint="Set ANVIL_LEDGER_LOCK_TIMEOUT_MS to a whole number of milliseconds from 100 to 60000.",
            )
        if self.namespace is not None and not NAMESPACE_PATTERN.match(self.namespace):
            raise ConfigError("config/invalid", "A ledger namespace must be 1-128 characters of A-Z a-z 0-9 _ . ~ -.")
        if self.table is not None and not LEDGER_TABLE.match(self.table):
            raise ConfigError(
                "config/invalid", "A ledger table must be anvil_idempotency or anvil_idempotency_ and 16 hex."
            )


def is_whole(value: object, low: int, high: int) -> bool:
    """True for an ``int`` (never a ``bool``) from ``low`` to ``high``."""
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high


def namespace_table(namespace: str | None) -> str:
    """The table/collection rows live in: :func:`~anvil.air.deployment.collection_group` of the
    namespace, or ``anvil_idempotency`` when none is known (one deployment per database).

    Raises:
        ConfigError: the namespace is malformed (``config/invalid``).
    """
    if namespace is None:
        return COLLECTION_PREFIX.rstrip("_")
    if not NAMESPACE_PATTERN.match(namespace):
        raise ConfigError("config/invalid", "A ledger namespace must be 1-128 characters of A-Z a-z 0-9 _ . ~ -.")
    return collection_group(namespace)


def options_table(options: LedgerOptions) -> str:
    """The table ``options`` choose: the named :attr:`~LedgerOptions.table`, else the namespace's.

    Raises:
        ConfigError: the namespace is malformed (``config/invalid``).
    """
    return options.table if options.table is not None else namespace_table(options.namespace)


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerRow:
    """One ledger record (original-ledger §1.3). Never holds the caller key, identity or credentials.

    ``version`` is the backend's opaque concurrency token for the row as read (Firestore's update
    time, a database row version); a fresh token is issued on every write, so a stale holder can
    never match a row that was deleted and created again. Times are epoch seconds.
    """

    status: Literal["in_progress", "completed"]
    fingerprint: str
    version: str = ""
    reservation_id: str | None = None
    started_at: float | None = None
    operation_id: str | None = None
    trace_id: str | None = None
    result_json: str | None = None
    response_status: int | None = None
    expires_at: float | None = None
    retain_until: float | None = None


#: The stored fields of a row besides its version, in the one order every backend reads and writes them.
ROW_FIELDS: Final = (
    "status",
    "fingerprint",
    "reservation_id",
    "started_at",
    "operation_id",
    "trace_id",
    "result_json",
    "response_status",
    "expires_at",
    "retain_until",
)


def row_values(row: LedgerRow) -> tuple[object, ...]:
    """``row``'s stored fields in :data:`ROW_FIELDS` order (spelled out: this runs on every write)."""
    return (
        row.status,
        row.fingerprint,
        row.reservation_id,
        row.started_at,
        row.operation_id,
        row.trace_id,
        row.result_json,
        row.response_status,
        row.expires_at,
        row.retain_until,
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _seconds(value: object) -> float | None:
    return None if value is None else float(str(value))


def row_from_values(version: object, values: Sequence[object]) -> LedgerRow:
    """A row read back as ``version`` plus its fields in :data:`ROW_FIELDS` order (database column types
    differ per backend, so every value is converted to the row's own type).

    Raises:
        LedgerError: ``ledger/corrupt_row`` for an unknown status or a field that does not convert.
    """
    status, fingerprint, reservation_id, started_at, operation_id, trace_id, result, code, expires, keep = values
    if status not in ("in_progress", "completed"):
        raise LedgerError("ledger/corrupt_row", "A ledger row has an unknown status.")
    try:
        return LedgerRow(
            status=status,
            fingerprint=str(fingerprint),
            version=str(version),
            reservation_id=_text(reservation_id),
            started_at=_seconds(started_at),
            operation_id=_text(operation_id),
            trace_id=_text(trace_id),
            result_json=_text(result),
            response_status=None if code is None else int(str(code)),
            expires_at=_seconds(expires),
            retain_until=_seconds(keep),
        )
    except ValueError as exc:
        raise LedgerError("ledger/corrupt_row", "A ledger row holds a field of the wrong type.") from exc
