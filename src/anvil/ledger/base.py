"""The idempotency ledger: one policy over four storage primitives (original-ledger §1.2-§1.7).

:class:`Ledger` is a template method. Its public coroutines (:meth:`~Ledger.reserve`,
:meth:`~Ledger.complete`, :meth:`~Ledger.release`, :meth:`~Ledger.check_readiness`) hold every rule
the guarantee table of seed 001 depends on: hashed document ids, the reservation lifecycle, logical
expiry before replay, the replay-size ceiling and the sanitized reference. A backend implements only
the private primitives, which are shaped after Firestore's (create-if-absent, read, and update or
delete conditioned on the version the row was read at), so Firestore, PostgreSQL and SQLite fit one
seam::

    (absent) --reserve: create-if-absent--> in_progress --complete: update-if-version--> completed
    in_progress --release: delete-if-version (owner only)--> (absent)
    completed, expires_at <= now < retain_until: the result is gone, the binding stays:
        same fingerprint --delete-if-version--> re-reserved; another fingerprint --> conflict
    completed, retain_until <= now --delete-if-version--> (absent) --> re-reserved
    in_progress --(never automatically)--> anything     [operator reconciliation only: resolve()]

Ownership is process-local: only the instance that reserved a key may complete or release it, so a
crash between the upstream answer and completion leaves an ``in_progress`` row that never expires.

A completed row keeps its *binding* (the principal-bound fingerprint, never the result) until
``retain_until``, much longer than the result (``binding_ttl_seconds``, 30 days by default): an
upstream that honours raw keys for longer than our result TTL would otherwise hand one caller's
answer to another caller reusing the key, or apply another request under it.
"""

from __future__ import annotations

import abc
import hashlib
import json
import math
import re
from dataclasses import replace
from typing import ClassVar, Final, Literal

import anyio

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.errors import LedgerError
from anvil.ledger.model import (
    DEFAULT_BINDING_TTL_SECONDS,
    DEFAULT_LOCK_TIMEOUT_SECONDS,
    DEFAULT_RESULT_TTL_SECONDS,
    LEDGER_TABLE,
    MAX_TTL_SECONDS,
    ROW_FIELDS,
    TABLE_NAME,
    LedgerOptions,
    LedgerRow,
    is_whole,
    namespace_table,
    options_table,
    row_from_values,
    row_values,
)

__all__ = [
    "DEFAULT_BINDING_TTL_SECONDS",
    "DEFAULT_LOCK_TIMEOUT_SECONDS",
    "DEFAULT_RESULT_TTL_SECONDS",
    "LEDGER_TABLE",
    "MAX_RESULT_BYTES",
    "READINESS_CODES",
    "READINESS_TIMEOUT_SECONDS",
    "ROW_FIELDS",
    "TABLE_NAME",
    "Ledger",
    "LedgerOptions",
    "LedgerRow",
    "Readiness",
    "Reservation",
    "ReserveContext",
    "ReserveOutcome",
    "Sharing",
    "document_id",
    "namespace_table",
    "options_table",
    "row_from_values",
    "row_values",
    "safe_reference",
]

#: The serialized replay-result ceiling (one Firestore document must hold the row; seed 001 §5).
MAX_RESULT_BYTES: Final = 819_200
#: The bound on one readiness probe (``/readyz`` must answer within 2 s even when the store hangs).
READINESS_TIMEOUT_SECONDS: Final = 1.5
#: The closed set of readiness codes a probe returns.
READINESS_CODES: Final = ("ok", "unavailable", "permission_denied", "database_not_found", "invalid_response")
_TIME_TOLERANCE_S: Final = 0.0015  # stores keep milliseconds or microseconds: compare instants, not floats
_CYCLES: Final = 3  # create/read cycles before a contended key is reported in progress
_REFERENCE: Final = re.compile(r"^[a-z][a-z0-9]*/[a-z0-9_]+/[0-9a-f]{64}$")
_DOCUMENT: Final = re.compile(r"^[0-9a-f]{64}$")
_VISIBLE: Final = re.compile(r"^[\x21-\x7e]{1,200}$")

ReserveOutcome = Literal["reserved", "replay", "in_progress", "conflict"]
#: How far a backend's state is shared: one process, every process on one host, or every host.
Sharing = Literal["process", "host", "cluster"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReserveContext:
    """Non-secret correlation stored on a reservation for operator reconciliation."""

    operation_id: str | None = None
    trace_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reservation:
    """What :meth:`Ledger.reserve` found.

    ``reserved``: this process owns a fresh ``in_progress`` row and must complete or release it.
    ``replay``: a completed row for the same request; ``result`` and ``status`` are what to return.
    ``in_progress``: another call holds the key. ``conflict``: the key was used for another request.
    ``reference`` is the sanitized row locator (``<backend>/<table>/<64 hex>``) when one is safe to show;
    ``started_at`` is when the reservation was made: for ``in_progress`` the holding one's, so a caller
    can tell a call still in flight from a quarantined row; for ``reserved`` this one's and for
    ``replay`` the completed row's, so the key a derived reservation sends upstream
    (:func:`anvil.runtime.keys.reservation_key`) is computed from the row by whoever holds or replays it.
    """

    outcome: ReserveOutcome
    result: JSONValue = None
    status: int | None = None
    reference: str | None = None
    started_at: float | None = None


@dataclass(frozen=True, slots=True)
class Readiness:
    """A live, non-mutating probe result: ``ready`` and one of the closed readiness codes
    (``ok``, ``unavailable``, ``permission_denied``, ``database_not_found``, ``invalid_response``)."""

    ready: bool
    code: str


@dataclass(frozen=True, slots=True)
class _Owned:
    """A row this process reserved: the document it lives in and the row as this process holds it."""

    document: str
    row: LedgerRow  # as reserved, with the version this process holds


def document_id(ledger_key: str) -> str:
    """The row's document id: sha256 hex of the ledger key (the raw caller key never reaches storage)."""
    return hashlib.sha256(ledger_key.encode("utf-8")).hexdigest()


def safe_reference(reference: str | None) -> str | None:
    """``reference`` if it has the sanitized ``<backend>/<table>/<64 hex>`` shape, else None.

    The executor surfaces a backend's reference only through this filter, so a backend that put a
    key, a host or a path in its reference would have it dropped rather than shown.
    """
    if reference is not None and _REFERENCE.match(reference):
        return reference
    return None


def _instant(seconds: float) -> float:
    """Epoch seconds cut to whole milliseconds: every store keeps at least that precision."""
    return math.floor(seconds * 1000) / 1000


def _correlation(value: str | None) -> str | None:
    return value if value is not None and _VISIBLE.match(value) else None


def _serialize(result: JSONValue) -> str:
    try:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise LedgerError("ledger/corrupt_row", "The replay result is not JSON-serializable.") from exc


class Ledger(abc.ABC):
    """The ledger seam. Subclasses set ``scheme``, ``durable`` and ``sharing`` and implement the primitives.

    Every primitive is a coroutine that raises only :class:`~anvil.errors.LedgerError` (code
    ``ledger/unavailable``) for backend failures; the public methods translate nothing else.
    """

    #: URI scheme the backend registers under (``sqlite``); also the first reference segment.
    scheme: ClassVar[str]
    #: True only when state survives the process (the fail-closed gate outside dev requires it).
    durable: ClassVar[bool]
    #: How far the state is shared: ``process`` (memory), ``host`` (SQLite file), ``cluster``.
    sharing: ClassVar[Sharing]

    def __init__(self, options: LedgerOptions | None = None) -> None:
        self.options = options or LedgerOptions()
        self._owned: dict[str, _Owned] = {}

    # --- identity ---------------------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def table(self) -> str:
        """The table/collection name rows live in (lowercase ``[a-z0-9_]``; no path, host or secret)."""

    def reference(self, document: str) -> str:
        """The sanitized locator of a row: ``<scheme>/<table>/<document id>``."""
        return f"{self.scheme}/{self.table}/{document}"

    @property
    def namespace(self) -> str | None:
        """The deployment namespace the table derives from; None for the default table or a named one."""
        return self.options.namespace if self.options.table is None else None

    @property
    def location(self) -> dict[str, str]:
        """Where rows live, as two gateways compare it: they share rows exactly when their locations are
        equal. The backend, the store's identity (:meth:`_store_identity`) and the table; never a secret."""
        return {"backend": self.scheme, **self._store_identity(), "table": self.table}

    def describe(self) -> str:
        """:attr:`location` (and the namespace) as one line for an operator: which store and table."""
        where = dict(self.location)
        backend = where.pop("backend")
        namespace = self.namespace
        shown = ", ".join(f"{name} {value}" for name, value in where.items())
        return f"{backend} {shown}" + (f" (namespace {namespace})" if namespace is not None else "")

    def _store_identity(self) -> dict[str, str]:
        """What tells this backend's stores apart (a host and file, a server, database and schema, a
        project); nothing by default. A backend that shares rows across processes should say, or two
        gateways on different stores print one digest."""
        return {}

    # --- policy -----------------------------------------------------------------------------------

    async def reserve(self, ledger_key: str, fingerprint: str, context: ReserveContext | None = None) -> Reservation:
        """Atomically claim ``ledger_key`` for a request with ``fingerprint`` before the upstream call.

        A completed row past its result expiry no longer replays: while its binding lives
        (``retain_until``) another fingerprint still conflicts and the same one is deleted
        (conditioned on its version) and claimed anew; past the binding any request claims it. A
        completed row replays only for the same fingerprint; an ``in_progress`` row is never taken
        over, however old.

        Raises:
            LedgerError: the backend failed (``ledger/unavailable``) or a row is malformed
                (``ledger/corrupt_row``).
        """
        document = document_id(ledger_key)
        reference = self.reference(document)
        reservation_id = self.options.reservation_ids()
        ctx = context or ReserveContext()
        fresh = LedgerRow(
            status="in_progress",
            fingerprint=fingerprint,
            reservation_id=reservation_id,
            started_at=_instant(self.options.clock()),
            operation_id=_correlation(ctx.operation_id),
            trace_id=_correlation(ctx.trace_id),
        )
        for _cycle in range(_CYCLES):
            version = await self._create_if_absent(document, fresh)
            if version is not None:
                held = LedgerRow(
                    status="in_progress",
                    fingerprint=fingerprint,
                    version=version,
                    reservation_id=reservation_id,
                    started_at=fresh.started_at,
                    operation_id=fresh.operation_id,
                    trace_id=fresh.trace_id,
                )
                self._owned[ledger_key] = _Owned(document, held)
                return Reservation(outcome="reserved", reference=reference, started_at=fresh.started_at)
            row = await self._read(document)
            if row is None:
                continue  # released between our create and read: try again
            if row.status == "completed":
                if row.expires_at is None:
                    raise LedgerError("ledger/corrupt_row", "A completed ledger row has no valid expiry.")
                now = self.options.clock()
                if row.expires_at <= now:
                    bound = row.retain_until is not None and row.retain_until > now
                    if bound and row.fingerprint != fingerprint:
                        if row.result_json is not None:  # keep only what binds the key
                            await self._update_if_version(document, row.version, replace(row, result_json=None))
                        return Reservation(outcome="conflict")
                    await self._delete_if_version(document, row.version)
                    continue
                if row.fingerprint != fingerprint:
                    return Reservation(outcome="conflict")
                return self._replay(row, reference)
            if row.status != "in_progress":
                raise LedgerError("ledger/corrupt_row", "A ledger row has an unknown status.")
            if row.fingerprint != fingerprint:
                return Reservation(outcome="conflict")
            if row.reservation_id == reservation_id:  # our create committed but its answer was lost
                self._owned[ledger_key] = _Owned(document, row)
                return Reservation(outcome="reserved", reference=reference, started_at=row.started_at)
            return Reservation(outcome="in_progress", reference=reference, started_at=row.started_at)
        return Reservation(outcome="in_progress", reference=reference)

    def _replay(self, row: LedgerRow, reference: str) -> Reservation:
        status = 200 if row.response_status is None else row.response_status
        if row.result_json is None or not 200 <= status <= 299:
            raise LedgerError("ledger/corrupt_row", "A completed ledger row has no replayable 2xx result.")
        try:
            result = json.loads(row.result_json)
        except ValueError as exc:
            raise LedgerError("ledger/corrupt_row", "A completed ledger row holds unreadable JSON.") from exc
        return Reservation(
            outcome="replay", result=result, status=status, reference=reference, started_at=row.started_at
        )

    def _completed(self, row: LedgerRow, result: JSONValue, status: int, ttl: int | None) -> LedgerRow:
        """``row`` completed with ``result``: correlation fields stay, the reservation id is cleared
        (like Firestore's masked PATCH), the result expires after ``ttl`` and the binding after the
        binding TTL (never before the result).

        Raises:
            LedgerError: ``status`` is not 2xx, ``ttl`` is not a positive whole number of seconds
                (``ledger/corrupt_row``), or the result is over the ceiling (``ledger/result_too_large``).
        """
        if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status <= 299:
            raise LedgerError("ledger/corrupt_row", "A completion status must be an integer from 200 to 299.")
        seconds = self.options.result_ttl_seconds if ttl is None else ttl
        if not is_whole(seconds, 1, MAX_TTL_SECONDS):
            raise LedgerError("ledger/corrupt_row", "A result TTL must be a whole number of seconds.")
        serialized = _serialize(result)
        if len(serialized.encode("utf-8")) > MAX_RESULT_BYTES:
            raise LedgerError(
                "ledger/result_too_large",
                f"The result exceeds the {MAX_RESULT_BYTES}-byte replay ceiling; the reservation was kept.",
                hint="Reconcile the in-progress row with the upstream's own records.",
            )
        now = self.options.clock()
        return LedgerRow(  # built directly, not dataclasses.replace: this runs on every completion
            status="completed",
            fingerprint=row.fingerprint,
            started_at=row.started_at,
            operation_id=row.operation_id,
            trace_id=row.trace_id,
            result_json=serialized,
            response_status=status,
            expires_at=_instant(now + seconds),
            retain_until=_instant(now + max(seconds, self.options.binding_ttl_seconds)),
        )

    async def complete(
        self, ledger_key: str, result: JSONValue, status: int = 200, *, result_ttl_seconds: int | None = None
    ) -> None:
        """Store the successful ``result`` and its 2xx ``status`` on this process's reservation.

        The write is conditioned on the version this process reserved at; if it fails, the row is
        read back and the completion counts only if the row already holds exactly this state.
        ``result_ttl_seconds`` replaces the configured result TTL for this row (a shorter replay
        window for derived keys); it changes only ``expires_at``, never how long the binding lives.

        Raises:
            LedgerError: not owned here or ownership changed (``ledger/not_owner``); the result is
                over :data:`MAX_RESULT_BYTES` (``ledger/result_too_large``, nothing written, the row
                stays in progress); or the backend failed (``ledger/unavailable``).
        """
        owned = self._owned.get(ledger_key)
        if owned is None:
            raise LedgerError("ledger/not_owner", "This process holds no reservation for the key.")
        intended = self._completed(owned.row, result, status, result_ttl_seconds)
        try:
            version = await self._update_if_version(owned.document, owned.row.version, intended, final=True)
        except LedgerError:
            version = None
            if not self._holds(await self._read(owned.document), intended):
                raise
        if version is None and not self._holds(await self._read(owned.document), intended):
            raise LedgerError("ledger/not_owner", "The reservation changed before completion.")
        self._owned.pop(ledger_key, None)

    @staticmethod
    def _holds(row: LedgerRow | None, intended: LedgerRow) -> bool:
        """True when ``row`` is ``intended`` (times compared as instants, to the store's precision)."""
        if row is None:
            return False
        times = ("started_at", "expires_at", "retain_until")
        for name in times:
            mine, theirs = getattr(row, name), getattr(intended, name)
            if (mine is None) != (theirs is None) or (mine is not None and abs(mine - theirs) > _TIME_TOLERANCE_S):
                return False
        return replace(row, version="", started_at=None, expires_at=None, retain_until=None) == replace(
            intended, started_at=None, expires_at=None, retain_until=None
        )

    async def release(self, ledger_key: str) -> None:
        """Drop this process's own in-progress reservation after a terminal, unambiguous failure.

        A key not owned here is a no-op, and a row that changed since (another actor's) is left alone.

        Raises:
            LedgerError: the backend failed (``ledger/unavailable``).
        """
        owned = self._owned.pop(ledger_key, None)
        if owned is not None:
            await self._delete_if_version(owned.document, owned.row.version)

    def owns(self, ledger_key: str) -> bool:
        """True while this process holds an uncompleted reservation for ``ledger_key``."""
        return ledger_key in self._owned

    async def check_readiness(self) -> Readiness:
        """A live, non-mutating probe of the store (never reads a stored result, never creates).

        Bounded by :data:`READINESS_TIMEOUT_SECONDS`: a store that hangs or is locked answers
        ``unavailable`` in time.
        """
        answer = READINESS_CODES[1]  # unavailable, unless the probe answers in time
        with anyio.move_on_after(READINESS_TIMEOUT_SECONDS):
            try:
                answer = await self._probe()
            except LedgerError:
                answer = READINESS_CODES[1]
        if answer not in READINESS_CODES:
            answer = READINESS_CODES[4]  # invalid_response
        return Readiness(answer == "ok", answer)

    async def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release connections. Safe to call twice."""

    # --- operator reconciliation (``anvil ledger init|inspect|resolve``) ---------------------------

    async def initialize(self) -> bool:
        """Create the store's schema (table, file) if absent: explicit and idempotent, never run by a probe.

        Returns:
            True when this call created something (a file, a schema or a table), so a caller can say so:
            a new, empty ledger where one was expected is usually a mistyped path or namespace.

        Raises:
            LedgerError: the store cannot be reached or the role may not create it (``ledger/unavailable``).
        """
        return False

    def document_of(self, reference: str) -> str:
        """The document id of a sanitized ``reference`` to a row of *this* ledger.

        Checked before the store is touched: the shape (``<scheme>/<table>/<64 hex>``), the backend and
        the namespace-derived table must all be this ledger's.

        Raises:
            LedgerError: ``ledger/reference_invalid`` for a malformed reference,
                ``ledger/wrong_collection`` for another backend's or namespace's row.
        """
        parts = reference.split("/")
        if len(parts) != 3 or not _REFERENCE.match(reference) or not _DOCUMENT.match(parts[2]):
            raise LedgerError(
                "ledger/reference_invalid",
                "A ledger reference is <backend>/<table>/<64 hex>, as error details.ledger_reference shows it.",
            )
        if parts[0] != self.scheme:
            raise LedgerError(
                "ledger/wrong_collection",
                f"The reference names a row of a {parts[0]} ledger; this one is {self.scheme}.",
                hint="Pass the exact ANVIL_LEDGER of the gateway that returned the reference.",
            )
        if parts[1] != self.table:
            raise LedgerError(
                "ledger/wrong_collection",
                f"The reference names a row of table {parts[1]}; this ledger keeps its rows in {self.table}.",
                hint="Pass the exact ANVIL_LEDGER of the gateway that returned the reference and --bundle DIR "
                "(the bundle it serves), so the namespace is the gateway's; or name no namespace at all and "
                "the reference's own table is used.",
            )
        return parts[2]

    async def inspect(self, reference: str) -> LedgerRow | None:
        """The row ``reference`` names (with its version), or None when there is none.

        Raises:
            LedgerError: a bad reference (see :meth:`document_of`) or a backend failure.
        """
        return await self._read(self.document_of(reference))

    async def resolve(
        self,
        reference: str,
        *,
        fingerprint: str,
        committed: bool,
        result: JSONValue = None,
        status: int = 200,
    ) -> LedgerRow | None:
        """Reconcile a quarantined reservation: proven not committed (delete) or committed (complete).

        The row is re-read; it must still be the ``in_progress`` reservation with ``fingerprint``, and
        the write is conditioned on that read's version. Elapsed time is never accepted as proof.

        Returns:
            The row as it was before the write.

        Raises:
            LedgerError: ``ledger/row_missing``, ``ledger/row_not_in_progress`` (completed or
                malformed), ``ledger/fingerprint_mismatch``, ``ledger/row_changed`` (the conditional
                write lost to another writer), a bad result (``ledger/corrupt_row``,
                ``ledger/result_too_large``) or a backend failure; nothing is changed then.
        """
        document = self.document_of(reference)
        try:
            row = await self._read(document)
        except LedgerError as exc:
            if exc.code != "ledger/corrupt_row":
                raise
            raise LedgerError("ledger/row_not_in_progress", "The row is malformed; nothing was changed.") from exc
        if row is None:
            raise LedgerError("ledger/row_missing", "No ledger row has this reference; nothing was changed.")
        if row.status != "in_progress":
            raise LedgerError(
                "ledger/row_not_in_progress", "The row is not an in-progress reservation; nothing was changed."
            )
        if row.fingerprint != fingerprint:
            raise LedgerError(
                "ledger/fingerprint_mismatch",
                "The row's fingerprint is not the one given; nothing was changed.",
                hint="Copy the fingerprint from `anvil ledger inspect`.",
            )
        if committed:
            done = await self._update_if_version(document, row.version, self._completed(row, result, status, None))
            changed = done is None
        else:
            changed = not await self._delete_if_version(document, row.version)
        if changed:
            raise LedgerError("ledger/row_changed", "The row changed while it was being resolved; re-inspect it.")
        return row

    # --- primitives -------------------------------------------------------------------------------

    @abc.abstractmethod
    async def _create_if_absent(self, document: str, row: LedgerRow) -> str | None:
        """Atomically insert ``row`` under ``document`` only if no row exists.

        Atomicity: among concurrent creators of one document (in any process the backend is shared
        with) exactly one succeeds. Returns the new row's version token, or None when a row existed
        (the existing row is untouched).
        """

    @abc.abstractmethod
    async def _read(self, document: str) -> LedgerRow | None:
        """A consistent read of the row (with its current version), or None when absent."""

    @abc.abstractmethod
    async def _update_if_version(
        self, document: str, version: str, row: LedgerRow, *, final: bool = False
    ) -> str | None:
        """Replace the row with ``row`` only if its current version is ``version``.

        Atomicity: compare and write are one step; fields ``row`` leaves None are cleared. Returns
        the new version token, or None when the row is absent or its version differs (no write).
        ``final`` marks the completion of a reservation: a backend may make it cheaper than the
        reservation (for SQLite, not synced before returning), because losing it only leaves the
        row in progress, which is the safe, quarantined side.
        """

    @abc.abstractmethod
    async def _delete_if_version(self, document: str, version: str) -> bool:
        """Delete the row only if its current version is ``version``; True when a row was deleted.

        Atomicity: compare and delete are one step; an absent or changed row is left as it is.
        """

    async def _probe(self) -> str:
        """A cheap, non-mutating data-plane check: one of :data:`READINESS_CODES` (or LedgerError)."""
        return "ok"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.scheme}/{self.table}>"
