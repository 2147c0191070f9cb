"""``sqlite:``: the embedded durable ledger, safe across processes on one machine.

URIs are spelled as SQLAlchemy spells them: ``sqlite:///relative.db`` (relative to the working
directory) and ``sqlite:////absolute/path.db``, optionally ``?namespace=NS`` (the deployment namespace
the table name is derived from; else the one ``anvil serve`` passes) and ``synchronous=normal`` (the
opt-in below). The file is created, mode 0600,
by :meth:`SqliteLedger.initialize` (``anvil ledger init``, and ``anvil serve`` at start-up) or by the
first write of an instance that never opened it; a readiness probe never creates anything. The file
an instance first opened is its identity: when the path later names another file (deleted, replaced,
moved: the device and inode differ) every call and every probe fails closed, so a deleted file is
never silently replaced by an empty ledger.

The file runs in WAL mode. A reservation commits with ``synchronous=FULL`` (synced to disk before the
upstream is called); a completion commits with ``synchronous=NORMAL`` (written, synced at the next
checkpoint or reservation), because a completion lost to a power cut only leaves the row in progress:
quarantined, never executed twice. The two levels live on two connections to the one file (the
reservation connection, ``FULL``, which also reads, releases and checkpoints; the completion
connection, ``NORMAL``), so no call switches a PRAGMA. One lock per instance guards both, so the
two never contend for SQLite's file lock inside one process (that wait is SQLite's sleeping busy
handler; the Python lock wakes its waiter at once). A ``FULL`` commit syncs the whole WAL file, so it
also makes every completion appended before it durable.

``?synchronous=normal`` is an explicit opt-in for disks whose sync is slow: reservations (and
releases) commit like completions, written to the WAL but not synced. That is still safe against a
crash or SIGKILL of the process (the write is in the operating system's page cache before the
upstream is called), but NOT against a power cut or an operating-system crash, which may lose a
reservation whose upstream write happened: the key could then be executed twice. Leave it off unless
that trade is acceptable.

Every primitive is one autocommitted statement (``INSERT ... ON
CONFLICT DO NOTHING``, ``UPDATE``/``DELETE ... WHERE version = ?``), which SQLite's file lock makes
atomic across every process sharing the file. Each call waits at most ``lock_timeout_seconds`` (counted
from when it was made) for the process's connection and the file lock together, then fails closed.

Where the work runs. Every call is first tried on the caller's thread *without waiting for
anything*: the connections free, the file lock taken at once (``busy_timeout = 0``; a busy file
fails the statement whole, nothing changed) and the file opened already. Whatever cannot run that
way runs, in order, on one dedicated thread per instance (:class:`~anvil.ledger.worker.SerialWorker`),
which waits for the lock up to the call's budget; no call pays a thread-pool hand-off. A completion
and a read never sync: on the caller's thread they are a WAL append to the page cache or a page
read, microseconds. A *synced* write (a reservation, a release, a reconciliation) runs on the
caller's thread only under the measured rule below, otherwise on the thread, so a slow disk never
blocks the event loop for long.

The measured rule for synced writes: a synced commit on the caller's thread is timed. One that took
more than :data:`_INLINE_SYNC_BUDGET_S` (1 ms, about what a request's own CPU costs), or found the
file busy, or failed, moves synced writes to the worker thread for a cool-down
(:data:`_COOL_DOWN_MIN_S`, doubled by every slow commit after a cool-down up to
:data:`_COOL_DOWN_MAX_S`, halved by every fast one); after it, the next synced commit on the
caller's thread is the new measurement. So a slow or stalling disk blocks the event loop for at most
one commit per cool-down, and never while one is running. (Commits on the worker thread are not
timed: that time includes waiting for the interpreter lock while the loop runs, which says nothing
about the disk.) Where it runs never changes what is durable: a reservation is synced before
:meth:`reserve` returns either way. ``inline_sync_budget_s=0`` keeps every synced write on the thread.

The connections never checkpoint on commit (``wal_autocheckpoint = 0``), so no inline commit ever
does a checkpoint's syncs; the thread runs a passive checkpoint every :data:`_CHECKPOINT_EVERY`
writes instead. (Another process sharing the file checkpoints as it likes.)

Errors name neither the path nor the SQL: ``sqlite3`` faults become ``LedgerError("ledger/unavailable")``
at one boundary (:func:`_mapped`).
"""

from __future__ import annotations

import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import replace
from typing import Any, ClassVar, Final, TypeVar, cast
from urllib.parse import parse_qsl, quote

import anyio.to_thread

from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import (
    ROW_FIELDS,
    TABLE_NAME,
    Ledger,
    LedgerOptions,
    LedgerRow,
    Sharing,
    options_table,
    row_from_values,
    row_values,
)
from anvil.ledger.worker import SerialWorker

__all__ = ["DEFAULT_TABLE", "SqliteLedger", "sqlite_location", "sqlite_path", "sqlite_synchronous"]

DEFAULT_TABLE: Final = "anvil_idempotency"
_PROBE_WAIT_S: Final = 1.0
#: Writes between two passive WAL checkpoints run by the worker thread (a few MB of WAL at most).
_CHECKPOINT_EVERY: Final = 256
#: The longest a synced commit may take and still count toward running synced work inline (see above).
_INLINE_SYNC_BUDGET_S: Final = 0.001
#: How long synced writes stay on the worker thread after a slow (or busy) one on the caller's thread.
_COOL_DOWN_MIN_S: Final = 0.25
#: The longest cool-down, which slow commit after slow commit doubles the cool-down to.
_COOL_DOWN_MAX_S: Final = 60.0
#: A wait acquired this close to its full budget keeps the connection's busy timeout as it is.
_BUSY_SLACK_MS: Final = 20
_SQLITE_BUSY: Final = 5
_SQLITE_LOCKED: Final = 6
_COLUMNS: Final = ", ".join(ROW_FIELDS)
_URI_HINT: Final = (
    "Use sqlite:///relative.db or sqlite:////absolute/path.db, optionally ?namespace=NS and ?synchronous=normal."
)
_SYNC_LEVELS: Final = {"full": "FULL", "normal": "NORMAL"}
_UNAVAILABLE_HINT: Final = "Check that the ledger file exists (anvil ledger init), is writable and on a local disk."

T = TypeVar("T")
_MISSED: Final[Any] = object()  # an inline attempt that could not run; nothing was changed


def _parsed(uri: str) -> tuple[str, dict[str, str]]:
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        raise ConfigError(
            "config/invalid", "ANVIL_LEDGER for SQLite must name a file with three slashes.", hint=_URI_HINT
        )
    path, _, query = uri[len(prefix) :].partition("?")
    bad = not path or path == ":memory:" or path.startswith("file:") or "#" in uri or "\x00" in uri
    params = parse_qsl(query, keep_blank_values=True) if query else []
    names = [name for name, _ in params]
    if bad or any(name not in ("namespace", "synchronous") for name in names) or len(set(names)) != len(names):
        raise ConfigError("config/invalid", "ANVIL_LEDGER for SQLite must name one database file.", hint=_URI_HINT)
    found = dict(params)
    if found.get("synchronous", "full") not in _SYNC_LEVELS:
        raise ConfigError(
            "config/invalid", "The SQLite ledger's synchronous parameter must be full or normal.", hint=_URI_HINT
        )
    return path, found


def sqlite_location(uri: str) -> tuple[str, str | None]:
    """The database file path and the ``namespace`` parameter of a ``sqlite:`` URI (SQLAlchemy spelling).

    Raises:
        ConfigError: not a file URI: a host, an unknown or repeated parameter, an empty path or
            ``:memory:``, or a ``synchronous`` other than ``full``/``normal`` (``config/invalid``; the
            message never repeats the path).
    """
    path, params = _parsed(uri)
    return path, params.get("namespace")


def sqlite_synchronous(uri: str) -> str:
    """How a ``sqlite:`` URI asks reservations to commit: ``FULL`` (the default) or ``NORMAL`` (the opt-in).

    Raises:
        ConfigError: the URI is malformed (see :func:`sqlite_location`).
    """
    return _SYNC_LEVELS[_parsed(uri)[1].get("synchronous", "full")]


def sqlite_path(uri: str) -> str:
    """The database file path of a ``sqlite:`` URI (see :func:`sqlite_location`).

    Raises:
        ConfigError: not a SQLite file URI (``config/invalid``).
    """
    return sqlite_location(uri)[0]


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise LedgerError(
            "ledger/unavailable", "The SQLite ledger could not be read or written.", hint=_UNAVAILABLE_HINT
        ) from exc


def _row(values: Sequence[Any] | None) -> LedgerRow | None:
    return None if values is None else row_from_values(values[0], values[1:])


class _Replaced(Exception):
    """The path no longer names the file this ledger opened."""


class SqliteLedger(Ledger):
    """A ledger in one SQLite file; one connection per instance, used from one thread at a time."""

    scheme: ClassVar[str] = "sqlite"
    durable: ClassVar[bool] = True
    sharing: ClassVar[Sharing] = "host"

    def __init__(
        self,
        path: str,
        options: LedgerOptions | None = None,
        *,
        table: str | None = None,
        reservation_sync: str = "FULL",
        inline_sync_budget_s: float = _INLINE_SYNC_BUDGET_S,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        """Prepare a ledger over the file at ``path`` (opened on first use, never created there).

        ``table`` defaults to the one derived from ``options.namespace``. ``reservation_sync`` is
        ``FULL`` (synced before the upstream call) unless the ``synchronous=normal`` opt-in asks for
        ``NORMAL`` (module docstring: process-crash-safe, not power-loss-safe).
        ``inline_sync_budget_s`` is the measured rule's budget for a synced commit on the caller's
        thread (``0``: never there); ``timer`` measures it (monotonic seconds; a test seam).

        Raises:
            ConfigError: ``table`` is not a lowercase identifier or ``reservation_sync`` is neither
                level (``config/invalid``).
        """
        super().__init__(options)
        chosen = table if table is not None else options_table(self.options)
        if not TABLE_NAME.match(chosen):
            raise ConfigError("config/invalid", "A ledger table name must be a lowercase identifier.")
        if reservation_sync not in _SYNC_LEVELS.values():
            raise ConfigError("config/invalid", "A reservation commits with FULL or NORMAL synchronous.")
        self._reserve_sync = reservation_sync
        self._path = os.path.abspath(path)
        self._table = chosen
        self._lock = threading.Lock()  # guards both connections: they never contend inside this process
        self._conn: sqlite3.Connection | None = None  # reservations, reads, releases, checkpoints
        self._fast: sqlite3.Connection | None = None  # completions (NORMAL); None under the opt-in
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file first opened
        self._busy_ms: dict[sqlite3.Connection, int] = {}  # each connection's busy_timeout as last set
        self._writes = 0  # since the last checkpoint
        self._made = False  # whether the last open created the file or the table (initialize reports it)
        self._sync_budget = max(0.0, float(inline_sync_budget_s))
        self._timer = timer
        self._inline_from = 0.0  # timer value before which synced writes stay on the worker (the rule)
        self._cool_down = 0.0  # the current cool-down, doubled by slow commits and halved by fast ones
        self._synced_where = [0, 0]  # synced writes run on the caller's thread, on the worker thread
        self._worker = SerialWorker("anvil-sqlite-ledger")
        self._sql_create = (
            f"INSERT INTO {chosen} (doc_id, version, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(doc_id) DO NOTHING"
        )
        self._sql_read = f"SELECT version, {_COLUMNS} FROM {chosen} WHERE doc_id = ?"
        sets = ", ".join(f"{name.strip()} = ?" for name in _COLUMNS.split(","))
        self._sql_update = f"UPDATE {chosen} SET version = ?, {sets} WHERE doc_id = ? AND version = ?"
        self._sql_delete = f"DELETE FROM {chosen} WHERE doc_id = ? AND version = ?"

    @classmethod
    def from_uri(cls, uri: str, options: LedgerOptions) -> SqliteLedger:
        """Open ``sqlite:///relative.db`` or ``sqlite:////absolute/path.db`` (``?namespace=NS`` and
        ``?synchronous=normal`` optional).

        Raises:
            ConfigError: the URI is not a SQLite file URI (``config/invalid``).
        """
        path, namespace = sqlite_location(uri)
        if namespace is not None:
            options = replace(options, namespace=namespace)
        return cls(path, options, reservation_sync=sqlite_synchronous(uri))

    @property
    def table(self) -> str:
        """The table rows live in."""
        return self._table

    def _store_identity(self) -> dict[str, str]:
        """The machine and the file, links resolved: processes on one host share one file's rows."""
        return {"host": socket.gethostname(), "file": os.path.realpath(self._path)}

    # --- connection -------------------------------------------------------------------------------

    def _stat(self) -> tuple[int, int]:
        found = os.stat(self._path)
        return (found.st_dev, found.st_ino)

    def _check_identity(self) -> None:
        try:
            now = self._stat()
        except OSError:
            raise _Replaced from None
        if self._identity is not None and now != self._identity:
            raise _Replaced

    def _open(self, *, create: bool, level: str) -> sqlite3.Connection:
        if create and not os.path.exists(self._path):
            try:
                os.close(os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                self._made = True
            except FileExistsError:
                pass  # another process created it a moment ago
        target = f"file:{quote(self._path)}?mode=rw"
        conn = sqlite3.connect(target, uri=True, isolation_level=None, check_same_thread=False, timeout=0.0)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.options.lock_timeout_seconds * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {level}")
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # checkpoints run on the worker thread
            if create:
                self._create_table(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_table(self, conn: sqlite3.Connection) -> None:
        """Create the table unless it exists (checked again under the write lock, so exactly one creator
        learns it made it; an existing table takes no lock)."""
        known = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        if conn.execute(known, (self._table,)).fetchone() is not None:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute(known, (self._table,)).fetchone() is None:
                conn.execute(
                    f"CREATE TABLE {self._table} ("
                    "doc_id TEXT PRIMARY KEY NOT NULL, version TEXT NOT NULL, status TEXT NOT NULL, "
                    "fingerprint TEXT NOT NULL, reservation_id TEXT, started_at REAL, operation_id TEXT, "
                    "trace_id TEXT, result_json TEXT, response_status INTEGER, expires_at REAL, "
                    "retain_until REAL) WITHOUT ROWID"
                )
                self._made = True
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _connection(self, *, create: bool, final: bool) -> sqlite3.Connection:
        if self._identity is not None:
            self._check_identity()
        if self._conn is None:
            # Only the very first open of this instance may create the file; afterwards the file is
            # pinned, so a deleted one is never silently replaced by an empty ledger.
            self._conn = self._open(create=create and self._identity is None, level=self._reserve_sync)
            if self._reserve_sync != "NORMAL":
                try:
                    self._fast = self._open(create=False, level="NORMAL")
                except BaseException:
                    self._close_conn()
                    raise
            full = int(self.options.lock_timeout_seconds * 1000)
            self._busy_ms = {conn: full for conn in (self._conn, self._fast) if conn is not None}
            try:
                opened = self._stat()
            except OSError:
                self._close_conn()
                raise _Replaced from None
            if self._identity is None:
                self._identity = opened
            elif opened != self._identity:
                self._close_conn()
                raise _Replaced
        if final and self._fast is not None:
            return self._fast
        return self._conn

    def _close_conn(self) -> None:
        for conn in (self._fast, self._conn):
            if conn is not None:
                conn.close()
        self._conn = self._fast = None
        self._busy_ms = {}

    def _opened(self, *, create: bool, final: bool = False) -> sqlite3.Connection:
        """The connection for a completion (``final``) or any other call (the caller holds ``_lock``),
        or ``ledger/unavailable`` when the file is gone."""
        try:
            return self._connection(create=create, final=final)
        except _Replaced:
            raise LedgerError(
                "ledger/unavailable",
                "The SQLite ledger file was deleted or replaced since it was opened; failing closed.",
                hint="Restore the original file, or restart after `anvil ledger init` if it is truly gone.",
            ) from None
        except OSError as exc:
            raise LedgerError(
                "ledger/unavailable", "The SQLite ledger file cannot be created.", hint=_UNAVAILABLE_HINT
            ) from exc

    def _busy(self, conn: sqlite3.Connection, ms: int) -> None:
        if ms != self._busy_ms.get(conn):
            conn.execute(f"PRAGMA busy_timeout = {ms}")
            self._busy_ms[conn] = ms

    def _run(
        self,
        work: Callable[[sqlite3.Connection], T],
        wait: float | None = None,
        *,
        create: bool = True,
        deadline: float | None = None,
        final: bool = False,
    ) -> T:
        full = self.options.lock_timeout_seconds if wait is None else wait
        if deadline is None:
            deadline = time.monotonic() + full
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise LedgerError(
                "ledger/unavailable", "The SQLite ledger is busy; nothing was changed.", hint=_UNAVAILABLE_HINT
            )
        try:
            with _mapped():
                conn = self._opened(create=create, final=final)
                remaining = max(1, int((deadline - time.monotonic()) * 1000))
                if wait is None and remaining >= int(full * 1000) - _BUSY_SLACK_MS:
                    remaining = int(full * 1000)  # acquired at once: the usual value, no PRAGMA per call
                self._busy(conn, remaining)
                return work(conn)
        finally:
            self._lock.release()

    async def _call(self, work: Callable[[sqlite3.Connection], T], *, final: bool = False) -> T:
        """Run ``work`` on the worker thread; its wait is counted from now, not from when the thread is free."""
        deadline = time.monotonic() + self.options.lock_timeout_seconds
        return await self._worker.run(lambda: self._run(work, deadline=deadline, final=final))

    def _inline(self, work: Callable[[sqlite3.Connection], T], *, final: bool = False, synced: bool = False) -> T | Any:
        """Try ``work`` on this thread without waiting for anything: :data:`_MISSED` when the
        connections are in use or not yet open, the file lock is taken, or (``synced``) the measured
        rule keeps synced work off this thread (nothing was changed then)."""
        if synced and (self._sync_budget <= 0 or self._timer() < self._inline_from):
            return _MISSED
        if not self._lock.acquire(blocking=False):
            return _MISSED
        try:
            if self._conn is None:
                return _MISSED
            with _mapped():
                conn = self._opened(create=False, final=final)
                self._busy(conn, 0)
                try:
                    done = work(conn)
                except sqlite3.OperationalError as exc:
                    if getattr(exc, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
                        return _MISSED  # the statement failed whole: the thread retries it with a wait
                    raise
                if synced:
                    self._synced_where[0] += 1
                return done
        finally:
            self._lock.release()

    def _timed(self, work: Callable[[sqlite3.Connection], T]) -> Callable[[sqlite3.Connection], T]:
        """``work`` (a synced write on the caller's thread, under ``_lock``) timed for the measured rule:
        a slow commit, a busy file or a failure starts a cool-down (see the module docstring)."""

        def synced(conn: sqlite3.Connection) -> T:
            started = self._timer()
            try:
                done = work(conn)
            except BaseException:
                self._cool(self._timer(), slow=False)
                raise
            finished = self._timer()
            if finished - started > self._sync_budget:
                self._cool(finished, slow=True)
            else:
                self._cool_down /= 2
            return done

        return synced

    def _cool(self, now: float, *, slow: bool) -> None:
        if slow:
            self._cool_down = min(_COOL_DOWN_MAX_S, max(_COOL_DOWN_MIN_S, 2 * self._cool_down))
        self._inline_from = now + max(_COOL_DOWN_MIN_S, self._cool_down)

    async def _write(self, work: Callable[[sqlite3.Connection], T], *, final: bool = False) -> T:
        """Run ``work``: on this thread when it can run at once (a synced write only under the
        measured rule), else on the worker thread."""
        synced = not final and self._reserve_sync != "NORMAL"
        done = self._inline(self._timed(work) if synced else work, final=final, synced=synced)
        if done is not _MISSED:
            return cast(T, done)
        waited = await self._call(work, final=final)
        if synced:
            self._synced_where[1] += 1
        return waited

    @property
    def synced_placement(self) -> tuple[int, int]:
        """How many synced writes ran on the caller's thread and how many on the worker thread (for
        tests and doctors: the measured rule at work)."""
        return self._synced_where[0], self._synced_where[1]

    def _wrote(self) -> None:
        """Count a write; every :data:`_CHECKPOINT_EVERY` writes, queue a passive checkpoint on the thread."""
        self._writes += 1
        if self._writes >= _CHECKPOINT_EVERY:
            self._writes = 0
            self._worker.submit(self._checkpoint)

    def _checkpoint(self) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

        self._run(work)

    async def close(self) -> None:
        """Close the connection after the calls already queued (a later call reopens it, but only the
        file first opened) and let the worker thread exit."""

        def closing_time() -> None:
            with self._lock:
                self._close_conn()

        try:
            await self._worker.run(closing_time)
        finally:
            self._worker.stop()

    def pragma(self, name: str, *, completion: bool = False) -> str:
        """The current value of a PRAGMA (``journal_mode``, ``synchronous``, ``busy_timeout``,
        ``wal_autocheckpoint``) on the reservation connection (or the ``completion`` one), for tests
        and doctors.

        Raises:
            LedgerError: the file cannot be opened (``ledger/unavailable``).
        """
        if name not in ("journal_mode", "synchronous", "busy_timeout", "wal_autocheckpoint"):
            raise ConfigError(
                "config/invalid", "Only journal_mode, synchronous, busy_timeout and wal_autocheckpoint can be read."
            )
        return str(self._run(lambda conn: conn.execute(f"PRAGMA {name}").fetchone()[0], final=completion))

    # --- schema -----------------------------------------------------------------------------------

    def _create(self) -> bool:
        self._made = False
        with _mapped(), closing(self._open(create=True, level=self._reserve_sync)):
            pass
        return self._made

    async def initialize(self) -> bool:
        """Create the file (mode 0600) and the table if absent; idempotent. (The first write of an
        instance that never opened the file does the same; a readiness probe never does.)

        Returns:
            True when this call created the file or the table.

        Raises:
            LedgerError: the file cannot be created or written (``ledger/unavailable``).
        """
        try:
            return await anyio.to_thread.run_sync(self._create)
        except OSError as exc:
            raise LedgerError("ledger/unavailable", "The SQLite ledger file cannot be created.") from exc

    # --- primitives -------------------------------------------------------------------------------

    async def _create_if_absent(self, document: str, row: LedgerRow) -> str | None:
        """One ``INSERT ... ON CONFLICT DO NOTHING``, synced: the reservation is durable before the call
        (with the ``synchronous=normal`` opt-in: written, not synced, and tried on the caller's thread)."""
        version = secrets.token_hex(8)
        sql = self._sql_create
        values = (document, version, *row_values(row))

        def work(conn: sqlite3.Connection) -> int:
            return int(conn.execute(sql, values).rowcount)

        created = await self._write(work)
        self._wrote()
        return version if created == 1 else None

    async def _read(self, document: str) -> LedgerRow | None:
        """One ``SELECT`` (a consistent snapshot in WAL mode; never synced, so first tried inline)."""
        sql = self._sql_read

        def work(conn: sqlite3.Connection) -> Any:
            return conn.execute(sql, (document,)).fetchone()

        found = self._inline(work)
        if found is _MISSED:
            found = await self._call(work)
        return _row(found)

    async def _update_if_version(
        self, document: str, version: str, row: LedgerRow, *, final: bool = False
    ) -> str | None:
        """One ``UPDATE ... WHERE doc_id = ? AND version = ?`` that also issues a fresh version.

        A ``final`` update (a completion) is committed without waiting for a disk sync, and so is
        first tried on the caller's thread (see the module docstring).
        """
        fresh = secrets.token_hex(8)
        sql = self._sql_update
        values = (fresh, *row_values(row), document, version)

        def work(conn: sqlite3.Connection) -> int:
            return int(conn.execute(sql, values).rowcount)

        changed = await self._write(work, final=final)
        self._wrote()
        return fresh if changed == 1 else None

    async def _delete_if_version(self, document: str, version: str) -> bool:
        """One ``DELETE ... WHERE doc_id = ? AND version = ?``."""
        sql = self._sql_delete

        def work(conn: sqlite3.Connection) -> int:
            return int(conn.execute(sql, (document, version)).rowcount)

        return await self._write(work) == 1

    def _check(self) -> str:
        """The probe, in the worker thread: the file is the one first opened, the table is readable and
        the write lock can be taken (then released at once, so nothing changes)."""
        if not os.path.exists(self._path):
            return "database_not_found"
        if not os.access(self._path, os.R_OK | os.W_OK):
            return "permission_denied"

        def work(conn: sqlite3.Connection) -> str:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (self._table,)
            ).fetchone()
            if exists is None:
                return "database_not_found"
            conn.execute(f"SELECT status FROM {self._table} LIMIT 1").fetchall()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return "ok"

        return self._run(work, wait=_PROBE_WAIT_S, create=False)

    async def _probe(self) -> str:
        """Never creates the file or the table; a locked file is ``unavailable``."""
        return await anyio.to_thread.run_sync(self._check, abandon_on_cancel=True)
