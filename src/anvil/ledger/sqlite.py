"""``sqlite:``: the embedded durable ledger, safe across processes on one machine.

URIs are spelled as SQLAlchemy spells them: ``sqlite:///relative.db`` (relative to the working
directory) and ``sqlite:////absolute/path.db``. The file runs in WAL mode with ``synchronous=FULL``,
so a completed row survives a crash once ``complete`` returned. Every primitive is one autocommitted
statement (``INSERT ... ON CONFLICT DO NOTHING``, ``UPDATE``/``DELETE ... WHERE version = ?``), which
SQLite's file lock makes atomic across every process sharing the file; a busy file is waited on, not
failed. Calls run in a worker thread so a disk sync never blocks the event loop.

Errors name neither the path nor the SQL: ``sqlite3`` faults become ``LedgerError("ledger/unavailable")``
at one boundary (:func:`_mapped`).
"""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ClassVar, Final, TypeVar

import anyio.to_thread

from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import Ledger, LedgerOptions, LedgerRow, Sharing

__all__ = ["DEFAULT_TABLE", "SqliteLedger", "sqlite_path"]

DEFAULT_TABLE: Final = "anvil_idempotency"
_TABLE_NAME: Final = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_BUSY_TIMEOUT_S: Final = 30.0
_COLUMNS: Final = (
    "status, fingerprint, reservation_id, started_at, operation_id, trace_id, result_json, response_status, expires_at"
)
_URI_HINT: Final = "Use sqlite:///relative.db or sqlite:////absolute/path.db."

T = TypeVar("T")


def sqlite_path(uri: str) -> str:
    """The database file path of a ``sqlite:`` URI (SQLAlchemy spelling).

    Raises:
        ConfigError: not a file URI: a host, a query, an empty path or ``:memory:``
            (``config/invalid``; the message never repeats the path).
    """
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        raise ConfigError(
            "config/invalid", "ANVIL_LEDGER for SQLite must name a file with three slashes.", hint=_URI_HINT
        )
    path = uri[len(prefix) :]
    if not path or path == ":memory:" or path.startswith("file:") or "?" in path or "#" in path or "\x00" in path:
        raise ConfigError("config/invalid", "ANVIL_LEDGER for SQLite must name one database file.", hint=_URI_HINT)
    return path


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise LedgerError(
            "ledger/unavailable",
            "The SQLite ledger could not be read or written.",
            hint="Check that the ledger file is writable and on a local disk.",
        ) from exc


def _row(values: tuple[object, ...] | None) -> LedgerRow | None:
    if values is None:
        return None
    version, status, fingerprint, reservation_id, started_at, operation_id, trace_id, result, code, expires = values
    if status not in ("in_progress", "completed"):
        raise LedgerError("ledger/corrupt_row", "A ledger row has an unknown status.")
    return LedgerRow(
        status=status,
        fingerprint=str(fingerprint),
        version=str(version),
        reservation_id=None if reservation_id is None else str(reservation_id),
        started_at=None if started_at is None else float(str(started_at)),
        operation_id=None if operation_id is None else str(operation_id),
        trace_id=None if trace_id is None else str(trace_id),
        result_json=None if result is None else str(result),
        response_status=None if code is None else int(str(code)),
        expires_at=None if expires is None else float(str(expires)),
    )


def _values(row: LedgerRow) -> tuple[object, ...]:
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
    )


class SqliteLedger(Ledger):
    """A ledger in one SQLite file; one connection per instance, used from one thread at a time."""

    scheme: ClassVar[str] = "sqlite"
    durable: ClassVar[bool] = True
    sharing: ClassVar[Sharing] = "host"

    def __init__(self, path: str, options: LedgerOptions | None = None, *, table: str = DEFAULT_TABLE) -> None:
        """Prepare a ledger over the file at ``path`` (opened on first use).

        Raises:
            ConfigError: ``table`` is not a lowercase identifier (``config/invalid``).
        """
        super().__init__(options)
        if not _TABLE_NAME.match(table):
            raise ConfigError("config/invalid", "A ledger table name must be a lowercase identifier.")
        self._path = os.path.abspath(path)
        self._table = table
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    @classmethod
    def from_uri(cls, uri: str, options: LedgerOptions) -> SqliteLedger:
        """Open ``sqlite:///relative.db`` or ``sqlite:////absolute/path.db``.

        Raises:
            ConfigError: the URI is not a SQLite file URI (``config/invalid``).
        """
        return cls(sqlite_path(uri), options)

    @property
    def table(self) -> str:
        """The table rows live in."""
        return self._table

    # --- connection -------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self._table} ("
                "doc_id TEXT PRIMARY KEY NOT NULL, version TEXT NOT NULL, status TEXT NOT NULL, "
                "fingerprint TEXT NOT NULL, reservation_id TEXT, started_at REAL, operation_id TEXT, "
                "trace_id TEXT, result_json TEXT, response_status INTEGER, expires_at REAL) WITHOUT ROWID"
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock, _mapped():
            if self._conn is None:
                self._conn = self._connect()
            return work(self._conn)

    async def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._run, work)

    async def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def pragma(self, name: str) -> str:
        """The current value of a PRAGMA (``journal_mode``, ``synchronous``), for tests and doctors.

        Raises:
            LedgerError: the file cannot be opened (``ledger/unavailable``).
        """
        if name not in ("journal_mode", "synchronous", "busy_timeout"):
            raise ConfigError("config/invalid", "Only journal_mode, synchronous and busy_timeout can be read.")
        return str(self._run(lambda conn: conn.execute(f"PRAGMA {name}").fetchone()[0]))

    # --- primitives -------------------------------------------------------------------------------

    async def _create_if_absent(self, document: str, row: LedgerRow) -> str | None:
        """One ``INSERT ... ON CONFLICT DO NOTHING``: SQLite's write lock admits one creator per document."""
        version = secrets.token_hex(8)
        sql = (
            f"INSERT INTO {self._table} (doc_id, version, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(doc_id) DO NOTHING"
        )
        created = await self._call(lambda conn: conn.execute(sql, (document, version, *_values(row))).rowcount)
        return version if created == 1 else None

    async def _read(self, document: str) -> LedgerRow | None:
        """One ``SELECT`` (a consistent snapshot in WAL mode)."""
        sql = f"SELECT version, {_COLUMNS} FROM {self._table} WHERE doc_id = ?"
        return _row(await self._call(lambda conn: conn.execute(sql, (document,)).fetchone()))

    async def _update_if_version(self, document: str, version: str, row: LedgerRow) -> str | None:
        """One ``UPDATE ... WHERE doc_id = ? AND version = ?`` that also issues a fresh version."""
        fresh = secrets.token_hex(8)
        sets = ", ".join(f"{name.strip()} = ?" for name in _COLUMNS.split(","))
        sql = f"UPDATE {self._table} SET version = ?, {sets} WHERE doc_id = ? AND version = ?"
        changed = await self._call(lambda conn: conn.execute(sql, (fresh, *_values(row), document, version)).rowcount)
        return fresh if changed == 1 else None

    async def _delete_if_version(self, document: str, version: str) -> bool:
        """One ``DELETE ... WHERE doc_id = ? AND version = ?``."""
        sql = f"DELETE FROM {self._table} WHERE doc_id = ? AND version = ?"
        deleted = await self._call(lambda conn: conn.execute(sql, (document, version)).rowcount)
        return bool(deleted == 1)

    async def _probe(self) -> None:
        """Read one status (never a result) to prove the file opens and the table is readable."""
        await self._call(lambda conn: conn.execute(f"SELECT status FROM {self._table} LIMIT 1").fetchall())
