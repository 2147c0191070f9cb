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
    completed --reserve sees expires_at <= now: delete-if-version--> (absent) --> re-reserved
    in_progress --(never automatically)--> anything     [operator reconciliation only]

Ownership is process-local: only the instance that reserved a key may complete or release it, so a
crash between the upstream answer and completion leaves an ``in_progress`` row that never expires.
"""

from __future__ import annotations

import abc
import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar, Final, Literal

from anvil._types import JSONValue
from anvil.errors import ConfigError, LedgerError

__all__ = [
    "DEFAULT_RESULT_TTL_SECONDS",
    "MAX_RESULT_BYTES",
    "Ledger",
    "LedgerOptions",
    "LedgerRow",
    "Readiness",
    "Reservation",
    "ReserveContext",
    "ReserveOutcome",
    "Sharing",
    "document_id",
    "safe_reference",
]

#: The serialized replay-result ceiling (one Firestore document must hold the row; seed 001 §5).
MAX_RESULT_BYTES: Final = 819_200
#: Completed-result retention when none is configured: seven days.
DEFAULT_RESULT_TTL_SECONDS: Final = 604_800
_MIN_TTL_SECONDS: Final = 60
_MAX_TTL_SECONDS: Final = 31_536_000
_CYCLES: Final = 3  # create/read cycles before a contended key is reported in progress
_REFERENCE: Final = re.compile(r"^[a-z][a-z0-9]*/[a-z0-9_]+/[0-9a-f]{64}$")
_VISIBLE: Final = re.compile(r"^[\x21-\x7e]{1,200}$")

ReserveOutcome = Literal["reserved", "replay", "in_progress", "conflict"]
#: How far a backend's state is shared: one process, every process on one host, or every host.
Sharing = Literal["process", "host", "cluster"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerOptions:
    """Settings every backend receives from :func:`anvil.ledger.registry.open_ledger`.

    ``result_ttl_seconds`` is how long a completed result replays (60 s to 365 days); ``clock``
    returns wall-clock seconds since the epoch (injected so expiry can be tested without waiting).
    """

    result_ttl_seconds: int = DEFAULT_RESULT_TTL_SECONDS
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        ttl = self.result_ttl_seconds
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not _MIN_TTL_SECONDS <= ttl <= _MAX_TTL_SECONDS:
            raise ConfigError(
                "config/invalid",
                f"The ledger result TTL must be an integer from {_MIN_TTL_SECONDS} to {_MAX_TTL_SECONDS} seconds.",
                hint="Set ANVIL_LEDGER_RESULT_TTL_SECONDS to a whole number of seconds.",
            )


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
    ``reference`` is the sanitized row locator (``<backend>/<table>/<64 hex>``) when one is safe to show.
    """

    outcome: ReserveOutcome
    result: JSONValue = None
    status: int | None = None
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class Readiness:
    """A live, non-mutating probe result: ``ready`` and one of the closed readiness codes
    (``ok``, ``unavailable``, ``permission_denied``, ``database_not_found``, ``invalid_response``)."""

    ready: bool
    code: str


@dataclass(frozen=True, slots=True)
class _Owned:
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

    # --- policy -----------------------------------------------------------------------------------

    async def reserve(self, ledger_key: str, fingerprint: str, context: ReserveContext | None = None) -> Reservation:
        """Atomically claim ``ledger_key`` for a request with ``fingerprint`` before the upstream call.

        A completed row past its logical expiry is deleted (conditioned on its version) and claimed
        anew; a completed row is replayed only for the same fingerprint; an ``in_progress`` row is
        never taken over, however old.

        Raises:
            LedgerError: the backend failed (``ledger/unavailable``) or a row is malformed
                (``ledger/corrupt_row``).
        """
        document = document_id(ledger_key)
        reference = self.reference(document)
        reservation_id = uuid.uuid4().hex
        ctx = context or ReserveContext()
        fresh = LedgerRow(
            status="in_progress",
            fingerprint=fingerprint,
            reservation_id=reservation_id,
            started_at=self.options.clock(),
            operation_id=_correlation(ctx.operation_id),
            trace_id=_correlation(ctx.trace_id),
        )
        for _cycle in range(_CYCLES):
            version = await self._create_if_absent(document, fresh)
            if version is not None:
                self._owned[ledger_key] = _Owned(document, replace(fresh, version=version))
                return Reservation(outcome="reserved", reference=reference)
            row = await self._read(document)
            if row is None:
                continue  # released between our create and read: try again
            if row.status == "completed":
                if row.expires_at is None:
                    raise LedgerError("ledger/corrupt_row", "A completed ledger row has no valid expiry.")
                if row.expires_at <= self.options.clock():
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
                return Reservation(outcome="reserved", reference=reference)
            return Reservation(outcome="in_progress", reference=reference)
        return Reservation(outcome="in_progress", reference=reference)

    def _replay(self, row: LedgerRow, reference: str) -> Reservation:
        status = 200 if row.response_status is None else row.response_status
        if row.result_json is None or not 200 <= status <= 299:
            raise LedgerError("ledger/corrupt_row", "A completed ledger row has no replayable 2xx result.")
        try:
            result = json.loads(row.result_json)
        except ValueError as exc:
            raise LedgerError("ledger/corrupt_row", "A completed ledger row holds unreadable JSON.") from exc
        return Reservation(outcome="replay", result=result, status=status, reference=reference)

    async def complete(
        self, ledger_key: str, result: JSONValue, status: int = 200, *, result_ttl_seconds: int | None = None
    ) -> None:
        """Store the successful ``result`` and its 2xx ``status`` on this process's reservation.

        ``result_ttl_seconds`` is how long this result replays; None means the ledger's configured TTL.

        The write is conditioned on the version this process reserved at; if it fails, the row is
        read back and the completion counts only if the row already holds exactly this state.

        Raises:
            LedgerError: not owned here or ownership changed (``ledger/not_owner``); the result is
                over :data:`MAX_RESULT_BYTES` (``ledger/result_too_large``, nothing written, the row
                stays in progress); or the backend failed (``ledger/unavailable``).
        """
        owned = self._owned.get(ledger_key)
        if owned is None:
            raise LedgerError("ledger/not_owner", "This process holds no reservation for the key.")
        if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status <= 299:
            raise LedgerError("ledger/corrupt_row", "A completion status must be an integer from 200 to 299.")
        serialized = _serialize(result)
        if len(serialized.encode("utf-8")) > MAX_RESULT_BYTES:
            raise LedgerError(
                "ledger/result_too_large",
                f"The result exceeds the {MAX_RESULT_BYTES}-byte replay ceiling; the reservation was kept.",
                hint="Reconcile the in-progress row with the upstream's own records.",
            )
        # Like Firestore's masked PATCH: correlation fields stay, the reservation id is cleared.
        intended = replace(
            owned.row,
            status="completed",
            version="",
            reservation_id=None,
            result_json=serialized,
            response_status=status,
            expires_at=self.options.clock()
            + (self.options.result_ttl_seconds if result_ttl_seconds is None else result_ttl_seconds),
        )
        try:
            version = await self._update_if_version(owned.document, owned.row.version, intended)
        except LedgerError:
            version = None
            if not self._holds(await self._read(owned.document), intended):
                raise
        if version is None and not self._holds(await self._read(owned.document), intended):
            raise LedgerError("ledger/not_owner", "The reservation changed before completion.")
        self._owned.pop(ledger_key, None)

    @staticmethod
    def _holds(row: LedgerRow | None, intended: LedgerRow) -> bool:
        return row is not None and replace(row, version="") == intended

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
        """A live, non-mutating probe of the store (never reads a stored result)."""
        try:
            await self._probe()
        except LedgerError:
            return Readiness(False, "unavailable")
        return Readiness(True, "ok")

    async def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release connections. Safe to call twice."""

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
    async def _update_if_version(self, document: str, version: str, row: LedgerRow) -> str | None:
        """Replace the row with ``row`` only if its current version is ``version``.

        Atomicity: compare and write are one step; fields ``row`` leaves None are cleared. Returns
        the new version token, or None when the row is absent or its version differs (no write).
        """

    @abc.abstractmethod
    async def _delete_if_version(self, document: str, version: str) -> bool:
        """Delete the row only if its current version is ``version``; True when a row was deleted.

        Atomicity: compare and delete are one step; an absent or changed row is left as it is.
        """

    async def _probe(self) -> None:  # noqa: B027 - backends with a store override it
        """A cheap data-plane read proving the store is reachable; raises LedgerError when not."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.scheme}/{self.table}>"
