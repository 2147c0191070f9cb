"""The PostgreSQL ledger's hot statements sent through libpq directly (``psycopg.pq``), one round trip each.

A reservation's ``INSERT``, a completion's ``UPDATE`` and a release's ``DELETE`` return only a row
count, so they need none of psycopg's cursor machinery (adapters, row makers, the query rewriter):
:func:`execute` prepares the statement once per connection (``$n`` placeholders, parameter types
inferred by the server from the table), then sends it with text parameters and waits for the
result with the connection's socket on the event loop. ``bench/compare.py``'s PostgreSQL column
measures what that saves per keyed write.

The connection stays psycopg's: the pool opens, checks and discards it, and reads still go through
``AsyncConnection.execute``. This module only runs on a connection nobody else is using (the ledger's
held/pool bookkeeping guarantees it) and leaves it idle after a complete exchange. After anything else
(a cancellation, the deadline, a connection that failed) the statement's fate is unknown and the
connection may be mid-exchange: :func:`execute` leaves it ``idle`` False and the caller closes it,
exactly as when psycopg loses a connection. A server error (a constraint, ``statement_timeout``) is
raised as psycopg's own exception class for its SQLSTATE, after the exchange completed.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import weakref
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["execute", "idle", "numbered"]

_MARK: Final = re.compile(r"%s")
#: The statements prepared on each connection (by name); forgotten with the connection.
_PREPARED: weakref.WeakKeyDictionary[Any, set[bytes]] = weakref.WeakKeyDictionary()
#: Each statement's name, derived from its text (a handful of statements per ledger table).
_NAMES: dict[str, bytes] = {}


def numbered(sql: str) -> str:
    """``sql`` with psycopg's ``%s`` placeholders as libpq's ``$1 .. $n`` (the ledger's SQL has no other ``%``)."""
    counter = iter(range(1, 1000))
    return _MARK.sub(lambda _match: f"${next(counter)}", sql)


def _text(value: object) -> bytes | None:
    """A parameter in PostgreSQL's text format (the ledger stores text, integers and doubles)."""
    if isinstance(value, str):  # most of a row: first
        if "\x00" in value:  # libpq sends a text parameter only up to its first NUL: refused, as psycopg does
            from psycopg import errors

            raise errors.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return value.encode("utf-8")
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError("the ledger stores no booleans")
    if isinstance(value, int):
        return str(value).encode("ascii")
    if isinstance(value, float):
        if value != value:
            return b"NaN"
        if value in (float("inf"), float("-inf")):
            return b"Infinity" if value > 0 else b"-Infinity"
        return repr(value).encode("ascii")  # repr round-trips a double exactly
    raise TypeError(f"the ledger stores no {type(value).__name__}")


async def _ready(loop: asyncio.AbstractEventLoop, fd: int, *, write: bool = False) -> None:
    """Until the socket ``fd`` is readable (or writable)."""
    waiter: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not waiter.done():
            waiter.set_result(None)

    (loop.add_writer if write else loop.add_reader)(fd, wake)
    try:
        await waiter
    finally:
        (loop.remove_writer if write else loop.remove_reader)(fd)


async def _results(pgconn: Any) -> list[Any]:
    """Flush what was sent and gather every result of the one command in flight."""
    loop = asyncio.get_running_loop()
    fd = pgconn.socket
    while pgconn.flush() == 1:  # the connection is non-blocking (psycopg's async connections are)
        await _ready(loop, fd, write=True)
    results: list[Any] = []
    while True:
        while pgconn.is_busy():
            await _ready(loop, fd)
            pgconn.consume_input()  # raises OperationalError when the connection failed
        result = pgconn.get_result()
        if result is None:
            return results
        results.append(result)


def _checked(results: list[Any], conn: Any) -> Any:
    """The command's result; a server error as psycopg raises it (after the exchange completed)."""
    from psycopg import errors, pq

    last = None
    for result in results:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            raise errors.error_from_result(result, encoding=conn.info.encoding)
        last = result
    if last is None or last.status != pq.ExecStatus.COMMAND_OK:
        raise errors.InterfaceError("the ledger statement returned no command result")
    return last


async def execute(conn: Any, sql: str, params: Sequence[object]) -> int:
    """Run ``sql`` (``$n`` placeholders, no rows returned) on psycopg connection ``conn``; its row count.

    Raises:
        psycopg.Error: the server refused the statement (its SQLSTATE's class), the connection failed, or
            a text value holds a NUL byte (``DataError``, nothing sent).
        TypeError: a parameter the ledger never stores.
    """
    from psycopg import errors

    pgconn = conn.pgconn
    name = _NAMES.get(sql)
    if name is None:
        digest = hashlib.sha1(sql.encode("utf-8"), usedforsecurity=False).hexdigest()[:16]
        name = _NAMES[sql] = b"anvil_" + digest.encode("ascii")
    prepared = _PREPARED.setdefault(conn, set())
    values = [_text(value) for value in params]  # before anything is sent: a bad value changes nothing
    for _attempt in range(2):
        if name not in prepared:
            pgconn.send_prepare(name, sql.encode("utf-8"))
            _checked(await _results(pgconn), conn)
            prepared.add(name)
        pgconn.send_query_prepared(name, values)
        try:
            done = _checked(await _results(pgconn), conn)
        except errors.InvalidSqlStatementName:
            # Deallocated behind our back (psycopg sends DEALLOCATE ALL after a rollback): nothing ran.
            prepared.discard(name)
            continue
        return int(done.command_tuples or 0)
    raise errors.InterfaceError("the ledger statement could not stay prepared")


def idle(conn: Any) -> bool:
    """Whether ``conn`` is between exchanges (after a cancellation it may still have one in flight)."""
    from psycopg import pq

    return bool(conn.pgconn.transaction_status == pq.TransactionStatus.IDLE)
