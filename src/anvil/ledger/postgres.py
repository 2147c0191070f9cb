"""``postgresql:``: the shared durable ledger on PostgreSQL or AlloyDB (psycopg 3, async pool).

URI: a libpq connection URI, ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME[?PARAMS]`` (``postgres://``
too), where ``namespace=NS`` (the deployment namespace) and ``schema=NAME`` are ours and every other
parameter goes to libpq unchanged (``sslmode``, ``options``, ...). Rows live in one table per namespace,
``anvil_idempotency_<16 hex>`` (:func:`~anvil.air.deployment.collection_group`), so two deployments
sharing one database never share rows, in the schema the URI names (``public`` unless ``schema=``
says otherwise). Every statement names that schema: an unqualified name would follow each session's
``search_path``, so two gateways on one database (a role owning a schema of its own name, or
``?options=-c search_path=...``) would write to two tables and run one key twice. Which rows a
gateway shares is therefore decided by the server (host, port), the database, the schema and the
table, which is what :attr:`PostgresLedger.location` reports.

The schema is created only by :meth:`PostgresLedger.initialize` (``anvil ledger init URI``, and ``anvil
serve`` at start-up when the role may create tables); a missing table is reported by readiness
(``database_not_found``), never created by it. Every primitive is one autocommitted statement, so
one round trip: ``INSERT ... ON CONFLICT DO NOTHING`` creates if absent, ``UPDATE``/``DELETE ... WHERE
version = %s`` are conditioned on the opaque version token the row was read at. Connections come from an
async pool; connecting, waiting for a pooled connection and every statement are bounded (connect
timeout, pool timeout, ``statement_timeout`` and ``lock_timeout``), so a stopped or stuck database
fails each call closed within seconds instead of queueing it.

The hot path: one round trip per reservation and per completion, on a connection this instance holds
(taken from the pool once, so a sequential caller pays no pool checkout), with the statements prepared
on it. The statements that return only a row count (``INSERT``, ``UPDATE``, ``DELETE``) go through libpq
directly (:mod:`anvil.ledger.pgwire`, a fraction of psycopg's cursor CPU); one cancelled or timed out
mid-exchange has the server asked to stop it and its connection closed. Reads keep psycopg's cursor.
Every statement, reads too, runs under a client deadline a little past ``statement_timeout``, so a
database that stops answering fails the call closed instead of holding it forever. A call that finds the
held connection in use takes another from the pool; a connection that fails is handed back to the pool
(which discards a broken one), and the statement is sent again on a fresh connection (at most
:data:`_ATTEMPTS` tries) only when the connection it went out on is dead, never after an answer from the
database (every primitive may be repeated: the policy in :mod:`anvil.ledger.base` reads a lost create's
or update's own row back). A held connection is handed back every :data:`_HELD_FOR_S` seconds so the
pool's lifetime rules still apply.

Completions commit with ``synchronous_commit = off`` on their own pool's connections: the server
answers before the commit record is flushed, because a completion lost to a database crash only
leaves the row in progress (quarantined, never executed twice). Reservations and releases keep the
server's setting unless it is ``off`` (set so for the server, the role or by the URI's ``options``),
which their connections raise to ``on`` once when they connect: a reservation is durable before the
upstream is called, and a synchronous commit also flushes every earlier asynchronous one. (A server
run with ``fsync = off`` flushes nothing; no client setting can change that.) The URI's own
``options`` are kept; the ledger's bounds follow them, so the bounds win where both set a value.

Errors never repeat the URI, the host or the SQL: driver faults become ``LedgerError("ledger/unavailable")``.
"""

from __future__ import annotations

import ipaddress
import math
import re
import secrets
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import replace
from typing import Any, ClassVar, Final
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import anyio

from anvil._dataclass import dataclass
from anvil.errors import ConfigError, LedgerError
from anvil.ledger import pgwire
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

__all__ = ["DEFAULT_SCHEMA", "PostgresLedger", "PostgresTarget", "postgres_location", "postgres_target"]

#: The schema rows live in when the URI names none.
DEFAULT_SCHEMA: Final = "public"

_SCHEMES: Final = ("postgresql", "postgres")
_POOL_MAX: Final = 8
#: Connections in the completion pool (completions are short; reservations keep the larger pool).
_COMPLETION_POOL_MAX: Final = 4
#: How long one connection stays held before it goes back to the pool (its lifetime rules apply then).
_HELD_FOR_S: Final = 300.0
#: Tries of one statement when the connection it was sent on turns out dead (a restarted server).
_ATTEMPTS: Final = 3
_PROBE_WAIT_S: Final = 1.0
#: How much longer than the server's statement_timeout a hot statement waits before giving up its connection.
_CLIENT_SLACK_S: Final = 2.0
#: The longest a cancelled hot statement waits for the server to take its cancel request.
_CANCEL_WAIT_S: Final = 1.0
_COLUMNS: Final = ROW_FIELDS
_URI_HINT: Final = "Use postgresql://USER@HOST:PORT/DBNAME, optionally ?namespace=NS and ?schema=NAME."
_HINT: Final = "Check that the database answers and `anvil ledger init` created the table."
#: A schema the ledger may live in: a lowercase identifier (the same whoever connects, quoted or not).
_SCHEMA: Final = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_DEFAULT_PORT: Final = "5432"
#: The one loopback name that is the same host by definition (RFC 6761 §6.3), whatever a resolver says.
_LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost."})


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    """What a ``postgresql:`` URI names: the libpq conninfo (our parameters removed), the namespace
    (None when the URI names none) and the schema."""

    conninfo: str
    namespace: str | None
    schema: str


def _one(params: list[tuple[str, str]], name: str) -> str | None:
    found = [value for key, value in params if key == name]
    if len(found) > 1 or (found and not found[0]):
        raise ConfigError("config/invalid", f"ANVIL_LEDGER may name one {name}.", hint=_URI_HINT)
    return found[0] if found else None


def _schema(value: str | None) -> str:
    schema = DEFAULT_SCHEMA if value is None else value
    if not _SCHEMA.match(schema) or schema.startswith("pg_") or schema == "information_schema":
        # pg_temp would be a schema per session, the catalogs are the server's: never a shared ledger
        raise ConfigError(
            "config/invalid",
            "The PostgreSQL ledger's schema must be a lowercase identifier, not pg_* or information_schema.",
            hint=_URI_HINT,
        )
    return schema


def postgres_location(uri: str) -> tuple[str, str | None]:
    """The libpq conninfo (without our parameters) and the namespace of a ``postgresql:`` URI.

    Raises:
        ConfigError: see :func:`postgres_target`.
    """
    target = postgres_target(uri)
    return target.conninfo, target.namespace


def postgres_target(uri: str) -> PostgresTarget:
    """The conninfo, namespace and schema of a ``postgresql:`` URI.

    Raises:
        ConfigError: not a ``postgresql://`` or ``postgres://`` URI with a host, a repeated or empty
            namespace or schema, or a schema that is not a lowercase identifier or is ``pg_*`` or
            ``information_schema`` (``config/invalid``; the message never repeats the URI).
    """
    try:
        parts = urlsplit(uri)
        has_host = bool(parts.hostname)
    except ValueError:
        raise ConfigError("config/invalid", "ANVIL_LEDGER PostgreSQL URI is invalid.", hint=_URI_HINT) from None
    if parts.scheme not in _SCHEMES or not has_host or parts.fragment:
        raise ConfigError(
            "config/invalid", "ANVIL_LEDGER for PostgreSQL must be postgresql://HOST/DBNAME.", hint=_URI_HINT
        )
    params = parse_qsl(parts.query, keep_blank_values=True)
    namespace = _one(params, "namespace")
    schema = _schema(_one(params, "schema"))
    rest = [(name, value) for name, value in params if name not in ("namespace", "schema")]
    query = urlencode(rest, quote_via=quote)  # percent-encoded spaces: libpq reads a '+' as a '+'
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, query, ""))
    return PostgresTarget(conninfo, namespace, schema)


def _host(host: str) -> str:
    """One spelling of a server address: lower case, IP literals canonical, ``localhost`` as 127.0.0.1
    (a socket directory stays as it is)."""
    if host.startswith("/") or host.startswith("@"):
        return host
    host = host.lower()
    if host in _LOOPBACK_NAMES:
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.rstrip(".") or host


def _server(conninfo: str) -> dict[str, str]:
    """The server and database a conninfo reaches, as libpq reads it (a query ``host=`` or ``dbname=``
    wins over the URI's own), in one spelling.

    Raises:
        ConfigError: the URI names no database (``config/invalid``): libpq would pick one from the
            login role, so two roles would quietly use two databases.
    """
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        found = conninfo_to_dict(conninfo)
    except ProgrammingError:
        raise ConfigError("config/invalid", "ANVIL_LEDGER PostgreSQL URI is invalid.", hint=_URI_HINT) from None
    database = str(found.get("dbname") or "")
    if not database:
        raise ConfigError("config/invalid", "ANVIL_LEDGER for PostgreSQL must name the database.", hint=_URI_HINT)
    hosts = str(found.get("hostaddr") or found.get("host") or "")
    return {
        "host": ",".join(_host(host) for host in hosts.split(",")),
        "port": str(found.get("port") or _DEFAULT_PORT),
        "database": database,
    }


@contextmanager
def _mapped() -> Iterator[None]:
    import psycopg

    try:
        yield
    except (psycopg.Error, OSError, TimeoutError) as exc:
        raise LedgerError(
            "ledger/unavailable", "The PostgreSQL ledger could not be read or written.", hint=_HINT
        ) from exc


def _row(values: Sequence[Any] | None) -> LedgerRow | None:
    return None if values is None else row_from_values(values[0], values[1:])


def _terminated(exc: Exception) -> bool:
    """The server ended this connection (administrator command, crash or shutdown; SQLSTATE class
    57P): the statement was not committed, and psycopg may not have marked the connection broken yet."""
    return str(getattr(exc, "sqlstate", "") or "").startswith("57P")


async def _durable_commits(conn: Any) -> None:
    """Raise a new reservation connection's ``synchronous_commit`` to ``on`` when it came ``off``
    (every other value already flushes locally, and a stricter one is kept)."""
    cursor = await conn.execute("SELECT current_setting('synchronous_commit')")
    found = await cursor.fetchone()
    if found is not None and str(found[0]) == "off":
        await conn.execute("SET synchronous_commit = on")


class _Lost(Exception):
    """The held connection turned out dead; the statement may be sent once more on a fresh one."""

    def __init__(self, error: Exception) -> None:
        super().__init__("connection lost")
        self.error = error


class PostgresLedger(Ledger):
    """A ledger in one PostgreSQL table, shared by every process and host that reaches the database."""

    scheme: ClassVar[str] = "postgresql"
    durable: ClassVar[bool] = True
    sharing: ClassVar[Sharing] = "cluster"

    def __init__(self, conninfo: str, options: LedgerOptions | None = None, *, schema: str = DEFAULT_SCHEMA) -> None:
        """Prepare a ledger over ``conninfo`` in ``schema`` (the pool opens on first use).

        Raises:
            ConfigError: the namespace or schema is malformed, or the conninfo names no database
                (``config/invalid``).
        """
        super().__init__(options)
        self._conninfo = conninfo
        self._schema = _schema(schema)
        self._server = _server(conninfo)
        self._table = options_table(self.options)
        if not TABLE_NAME.match(self._table):
            raise ConfigError("config/invalid", "A ledger table name must be a lowercase identifier.")
        self._qualified = f'"{self._schema}"."{self._table}"'  # both lowercase identifiers: quoting changes nothing
        self._pools: dict[bool, Any] = {}  # final (completions) -> its pool
        self._held: dict[bool, tuple[Any, float, Any]] = {}  # final -> (held connection, when taken, its pool)
        self._busy: set[Any] = set()  # the held connections a call is using now
        wait = self.options.lock_timeout_seconds
        self._wait = wait
        ms = int(wait * 1000)
        bounds = f"-c statement_timeout={ms} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={ms}"
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, math.ceil(wait)),
            "options": bounds,
        }
        self._completion_kwargs = {**self._connect_kwargs, "options": bounds + " -c synchronous_commit=off"}
        cols = ", ".join(_COLUMNS)
        marks = ", ".join(["%s"] * len(_COLUMNS))
        sets = ", ".join(f"{name} = %s" for name in _COLUMNS)
        table = self._qualified
        self._sql_create = (
            f"INSERT INTO {table} (doc_id, version, {cols}) VALUES (%s, %s, {marks}) ON CONFLICT (doc_id) DO NOTHING"
        )
        self._sql_read = f"SELECT version, {cols} FROM {table} WHERE doc_id = %s"
        self._sql_update = f"UPDATE {table} SET version = %s, {sets} WHERE doc_id = %s AND version = %s"
        self._sql_delete = f"DELETE FROM {table} WHERE doc_id = %s AND version = %s"
        self._numbered = {sql: pgwire.numbered(sql) for sql in (self._sql_create, self._sql_update, self._sql_delete)}

    @classmethod
    def from_uri(cls, uri: str, options: LedgerOptions) -> PostgresLedger:
        """Open ``postgresql://...`` (or ``postgres://...``), ``?namespace=NS`` optional.

        Raises:
            ConfigError: the URI is malformed (``config/invalid``).
        """
        target = postgres_target(uri)
        if target.namespace is not None:
            options = replace(options, namespace=target.namespace)
        return cls(target.conninfo, options, schema=target.schema)

    @property
    def table(self) -> str:
        """The table rows live in (in :attr:`schema`)."""
        return self._table

    @property
    def schema(self) -> str:
        """The schema every statement names."""
        return self._schema

    def _store_identity(self) -> dict[str, str]:
        """The server (host and port as the URI spells them, in one spelling), the database and the schema."""
        return {**self._server, "schema": self._schema}

    # --- connections ------------------------------------------------------------------------------

    async def _opened(self, final: bool = False) -> Any:
        pool = self._pools.get(final)
        if pool is None:
            from psycopg.conninfo import conninfo_to_dict
            from psycopg_pool import AsyncConnectionPool

            kwargs = dict(self._completion_kwargs if final else self._connect_kwargs)
            own = conninfo_to_dict(self._conninfo).get("options")
            if own:  # the URI's options first: a later -c wins, so the ledger's bounds hold
                kwargs["options"] = f"{own} {kwargs['options']}"
            pool = AsyncConnectionPool(
                self._conninfo,
                min_size=1,
                max_size=_COMPLETION_POOL_MAX if final else _POOL_MAX,
                kwargs=kwargs,
                configure=None if final else _durable_commits,
                timeout=self._wait,
                reconnect_timeout=max(5.0, self._wait),
                open=False,
                name="anvil-ledger-complete" if final else "anvil-ledger",
            )
            await pool.open(wait=False)
            self._pools[final] = pool
        return pool

    @asynccontextmanager
    async def _connection(self, wait: float | None = None) -> AsyncIterator[Any]:
        with _mapped():
            pool = await self._opened()
            async with pool.connection(timeout=self._wait if wait is None else wait) as conn:
                yield conn

    @staticmethod
    async def _give_back(pool: Any, conn: Any) -> None:
        """Return ``conn`` to the pool it came from, even when cancelled: the pool resets it, discards it
        when broken, and closes it when that pool was closed meanwhile (another pool refuses it)."""
        with anyio.CancelScope(shield=True):
            await pool.putconn(conn)

    async def _take(self, final: bool) -> tuple[Any, Any, bool]:
        """A connection for one statement, its pool, and whether it is the held one (else a pool checkout)."""
        held = self._held.get(final)
        if held is not None and held[0] not in self._busy:
            conn, since, pool = held
            if not conn.closed and time.monotonic() - since < _HELD_FOR_S:
                self._busy.add(conn)
                return conn, pool, True
            del self._held[final]
            await self._give_back(pool, conn)
        pool = await self._opened(final)
        conn = await pool.getconn(timeout=self._wait)
        if final not in self._held:
            self._held[final] = (conn, time.monotonic(), pool)
            self._busy.add(conn)
            return conn, pool, True
        return conn, pool, False

    def _let_go(self, final: bool, conn: Any) -> bool:
        """Mark held ``conn`` free after a call; True when it is still the held one (:meth:`close` or a
        failure may have let it go meanwhile: then it belongs back in its pool)."""
        self._busy.discard(conn)
        held = self._held.get(final)
        return held is not None and held[0] is conn

    async def _run(self, sql: str, params: tuple[object, ...], *, final: bool = False, fetch: bool = False) -> Any:
        """One statement, one round trip, on the held connection when it is free (see the module docstring)."""
        with _mapped():
            for _attempt in range(_ATTEMPTS - 1):
                try:
                    return await self._once(sql, params, final=final, fetch=fetch)
                except _Lost:
                    continue  # that connection was dead (and is discarded): a fresh one
            try:
                return await self._once(sql, params, final=final, fetch=fetch)
            except _Lost as lost:
                raise lost.error from None

    async def _once(self, sql: str, params: tuple[object, ...], *, final: bool, fetch: bool) -> Any:
        wire = None if fetch else self._numbered.get(sql)
        conn, pool, held = await self._take(final)
        try:
            # The client deadline bounds reads too: a database that stops answering never ends them
            # (statement_timeout runs on the server). anyio's scope keeps cancelling, so psycopg's own
            # cancel-and-wait after an interrupted read is cut short (it closes that connection).
            with anyio.fail_after(self._wait + _CLIENT_SLACK_S):
                if wire is None:
                    cursor = await conn.execute(sql, params, prepare=True)
                    result = await cursor.fetchone() if fetch else int(cursor.rowcount)
                else:  # a row count only: straight through libpq (pgwire)
                    result = await pgwire.execute(conn, wire, params)
        except BaseException as exc:
            if held and self._let_go(final, conn):
                del self._held[final]
            # A connection that died while idle (or that the server ended): not the database's answer.
            error = exc if isinstance(exc, Exception) else None  # a cancellation is never a dead connection
            late = isinstance(exc, TimeoutError)  # the deadline: no answer, so not one to send again either
            dead = error is not None and not late and (conn.closed or conn.broken or _terminated(error))
            if wire is not None and not dead and not conn.closed and not pgwire.idle(conn):
                # Cancelled or past the deadline mid-exchange: ask the server to stop the statement (as
                # psycopg does), then close the connection, which cannot carry another statement.
                with anyio.CancelScope(shield=True):
                    with suppress(Exception):
                        await conn.cancel_safe(timeout=_CANCEL_WAIT_S)
                    await conn.close()
            if dead and not conn.closed:
                with anyio.CancelScope(shield=True):
                    await conn.close()  # psycopg may not have marked it broken: closed, the pool discards it
            await self._give_back(pool, conn)  # a broken connection is discarded there
            if dead and error is not None:
                raise _Lost(error) from exc
            raise
        if not held or not self._let_go(final, conn):
            await self._give_back(pool, conn)
        return result

    async def setting(self, name: str, *, completion: bool = False) -> str:
        """A server setting as the reservation connection (or the ``completion`` one) sees it
        (``synchronous_commit``, ``statement_timeout``, ``lock_timeout``), for tests and doctors.

        Raises:
            ConfigError: another name (``config/invalid``).
            LedgerError: the database cannot be reached (``ledger/unavailable``).
        """
        if name not in ("synchronous_commit", "statement_timeout", "lock_timeout"):
            raise ConfigError("config/invalid", "Only synchronous_commit, statement_timeout and lock_timeout show.")
        found = await self._run("SELECT current_setting(%s)", (name,), final=completion, fetch=True)
        return str(found[0])

    async def close(self) -> None:
        """Hand back the held connections and close the pools (a later call opens new ones)."""
        held, self._held = self._held, {}
        for conn, _since, pool in held.values():
            if conn not in self._busy:  # one a call still uses goes back (to its closed pool) when the call ends
                await self._give_back(pool, conn)
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            await pool.close()

    # --- schema -----------------------------------------------------------------------------------

    async def initialize(self) -> bool:
        """Create the namespace's table in the schema (and a missing schema other than ``public``)
        unless it exists; idempotent.

        Returns:
            True when this call created the table (a creator that loses a race to another learns so).

        Raises:
            LedgerError: the database cannot be reached or the role may not create the table or schema
                (``ledger/unavailable``).
        """
        sql = (
            f"CREATE TABLE {self._qualified} ("
            "doc_id text PRIMARY KEY, version text NOT NULL, status text NOT NULL, fingerprint text NOT NULL, "
            "reservation_id text, started_at double precision, operation_id text, trace_id text, "
            "result_json text, response_status integer, expires_at double precision, "
            "retain_until double precision)"
        )
        from psycopg import errors

        async with self._connection() as conn:
            found = await (await conn.execute("SELECT to_regclass(%s)", (self._qualified,))).fetchone()
            if found is not None and found[0] is not None:
                return False  # no CREATE at all: an existing table takes no lock and logs no error
            try:
                try:
                    await conn.execute(sql)
                except errors.InvalidSchemaName:
                    await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"')
                    await conn.execute(sql)
            except (errors.UniqueViolation, errors.DuplicateTable, errors.DuplicateObject):
                return False  # another process created it at the same moment
        return True

    # --- primitives -------------------------------------------------------------------------------

    async def _create_if_absent(self, document: str, row: LedgerRow) -> str | None:
        """One ``INSERT ... ON CONFLICT DO NOTHING``: the primary key admits one creator per document."""
        version = secrets.token_hex(8)
        created = await self._run(self._sql_create, (document, version, *row_values(row)))
        return version if created == 1 else None

    async def _read(self, document: str) -> LedgerRow | None:
        """One ``SELECT`` by primary key."""
        return _row(await self._run(self._sql_read, (document,), fetch=True))

    async def _update_if_version(
        self, document: str, version: str, row: LedgerRow, *, final: bool = False
    ) -> str | None:
        """One ``UPDATE ... WHERE doc_id = %s AND version = %s`` that also issues a fresh version; a
        ``final`` one (a completion) commits asynchronously (see the module docstring)."""
        fresh = secrets.token_hex(8)
        changed = await self._run(self._sql_update, (fresh, *row_values(row), document, version), final=final)
        return fresh if changed == 1 else None

    async def _delete_if_version(self, document: str, version: str) -> bool:
        """One ``DELETE ... WHERE doc_id = %s AND version = %s``."""
        deleted = await self._run(self._sql_delete, (document, version))
        return bool(deleted == 1)

    async def _probe(self) -> str:
        """Read one status (never a result) from the table; never creates it."""
        import psycopg
        from psycopg import errors

        try:
            pool = await self._opened()
            async with pool.connection(timeout=_PROBE_WAIT_S) as conn:
                await conn.execute(f"SELECT status FROM {self._qualified} LIMIT 1")
        except (errors.UndefinedTable, errors.InvalidCatalogName, errors.InvalidSchemaName):
            return "database_not_found"
        except (errors.InsufficientPrivilege, errors.InvalidAuthorizationSpecification):
            return "permission_denied"
        except (psycopg.Error, OSError, TimeoutError):
            return "unavailable"
        return "ok"
