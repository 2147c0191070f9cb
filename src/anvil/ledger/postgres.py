"""``postgresql:``: the shared durable ledger on PostgreSQL or AlloyDB (psycopg 3, async pool).

URI: a libpq connection URI, ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME[?PARAMS]`` (``postgres://``
too), where ``namespace=NS`` (the deployment namespace) is ours and every other parameter goes to libpq
unchanged (``sslmode``, ``options``, ...). Rows live in one table per namespace,
``anvil_idempotency_<16 hex>`` (:func:`~anvil.air.deployment.collection_group`), so two deployments
sharing one database never share rows.

The schema is created only by :meth:`PostgresLedger.initialize` (``anvil ledger init URI``, and ``anvil
serve`` at start-up when the role may create tables); a missing table is reported by readiness
(``database_not_found``), never created by it. Every primitive is one autocommitted statement, so
one round trip: ``INSERT ... ON CONFLICT DO NOTHING`` creates if absent, ``UPDATE``/``DELETE ... WHERE
version = %s`` are conditioned on the opaque version token the row was read at. Connections come from an
async pool; connecting, waiting for a pooled connection and every statement are bounded (connect
timeout, pool timeout, ``statement_timeout`` and ``lock_timeout``), so a stopped or stuck database
fails each call closed within seconds instead of queueing it.

Errors never repeat the URI, the host or the SQL: driver faults become ``LedgerError("ledger/unavailable")``.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import Any, ClassVar, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import (
    ROW_FIELDS,
    Ledger,
    LedgerOptions,
    LedgerRow,
    Sharing,
    namespace_table,
    row_from_values,
    row_values,
)

__all__ = ["PostgresLedger", "postgres_location"]

_SCHEMES: Final = ("postgresql", "postgres")
_TABLE_NAME: Final = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_POOL_MAX: Final = 8
_PROBE_WAIT_S: Final = 1.0
_COLUMNS: Final = ROW_FIELDS
_URI_HINT: Final = "Use postgresql://USER@HOST:PORT/DBNAME, optionally ?namespace=NS."
_HINT: Final = "Check that the database answers and `anvil ledger init` created the table."


def postgres_location(uri: str) -> tuple[str, str | None]:
    """The libpq conninfo (without ``namespace``) and the namespace of a ``postgresql:`` URI.

    Raises:
        ConfigError: not a ``postgresql://`` or ``postgres://`` URI with a host, or a repeated or
            empty namespace (``config/invalid``; the message never repeats the URI).
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
    namespaces = [value for name, value in params if name == "namespace"]
    if len(namespaces) > 1 or (namespaces and not namespaces[0]):
        raise ConfigError("config/invalid", "ANVIL_LEDGER may name one namespace.", hint=_URI_HINT)
    rest = [(name, value) for name, value in params if name != "namespace"]
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(rest), ""))
    return conninfo, namespaces[0] if namespaces else None


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


class PostgresLedger(Ledger):
    """A ledger in one PostgreSQL table, shared by every process and host that reaches the database."""

    scheme: ClassVar[str] = "postgresql"
    durable: ClassVar[bool] = True
    sharing: ClassVar[Sharing] = "cluster"

    def __init__(self, conninfo: str, options: LedgerOptions | None = None) -> None:
        """Prepare a ledger over ``conninfo`` (the pool opens on first use).

        Raises:
            ConfigError: the namespace is malformed (``config/invalid``).
        """
        super().__init__(options)
        self._conninfo = conninfo
        self._table = namespace_table(self.options.namespace)
        if not _TABLE_NAME.match(self._table):
            raise ConfigError("config/invalid", "A ledger table name must be a lowercase identifier.")
        self._pool: Any = None
        wait = self.options.lock_timeout_seconds
        self._wait = wait
        ms = int(wait * 1000)
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, math.ceil(wait)),
            "options": f"-c statement_timeout={ms} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={ms}",
        }
        cols = ", ".join(_COLUMNS)
        marks = ", ".join(["%s"] * len(_COLUMNS))
        sets = ", ".join(f"{name} = %s" for name in _COLUMNS)
        table = self._table
        self._sql_create = (
            f"INSERT INTO {table} (doc_id, version, {cols}) VALUES (%s, %s, {marks}) ON CONFLICT (doc_id) DO NOTHING"
        )
        self._sql_read = f"SELECT version, {cols} FROM {table} WHERE doc_id = %s"
        self._sql_update = f"UPDATE {table} SET version = %s, {sets} WHERE doc_id = %s AND version = %s"
        self._sql_delete = f"DELETE FROM {table} WHERE doc_id = %s AND version = %s"

    @classmethod
    def from_uri(cls, uri: str, options: LedgerOptions) -> PostgresLedger:
        """Open ``postgresql://...`` (or ``postgres://...``), ``?namespace=NS`` optional.

        Raises:
            ConfigError: the URI is malformed (``config/invalid``).
        """
        conninfo, namespace = postgres_location(uri)
        if namespace is not None:
            options = replace(options, namespace=namespace)
        return cls(conninfo, options)

    @property
    def table(self) -> str:
        """The table rows live in."""
        return self._table

    # --- connections ------------------------------------------------------------------------------

    async def _opened(self) -> Any:
        if self._pool is None:
            from psycopg_pool import AsyncConnectionPool

            pool = AsyncConnectionPool(
                self._conninfo,
                min_size=1,
                max_size=_POOL_MAX,
                kwargs=self._connect_kwargs,
                timeout=self._wait,
                reconnect_timeout=max(5.0, self._wait),
                open=False,
                name="anvil-ledger",
            )
            await pool.open(wait=False)
            self._pool = pool
        return self._pool

    @asynccontextmanager
    async def _connection(self, wait: float | None = None) -> AsyncIterator[Any]:
        with _mapped():
            pool = await self._opened()
            async with pool.connection(timeout=self._wait if wait is None else wait) as conn:
                yield conn

    async def _execute(self, sql: str, params: tuple[object, ...]) -> int:
        async with self._connection() as conn:
            cursor = await conn.execute(sql, params)
            return int(cursor.rowcount)

    async def close(self) -> None:
        """Close the pool (a later call opens a new one)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # --- schema -----------------------------------------------------------------------------------

    async def initialize(self) -> None:
        """``CREATE TABLE IF NOT EXISTS`` the namespace's table; idempotent.

        Raises:
            LedgerError: the database cannot be reached or the role may not create tables
                (``ledger/unavailable``).
        """
        sql = (
            f"CREATE TABLE IF NOT EXISTS {self._table} ("
            "doc_id text PRIMARY KEY, version text NOT NULL, status text NOT NULL, fingerprint text NOT NULL, "
            "reservation_id text, started_at double precision, operation_id text, trace_id text, "
            "result_json text, response_status integer, expires_at double precision, "
            "retain_until double precision)"
        )
        from psycopg import errors

        async with self._connection() as conn:
            try:
                await conn.execute(sql)
            except (errors.UniqueViolation, errors.DuplicateTable):
                pass  # another process created it at the same moment (IF NOT EXISTS is not atomic in the catalog)

    # --- primitives -------------------------------------------------------------------------------

    async def _create_if_absent(self, document: str, row: LedgerRow) -> str | None:
        """One ``INSERT ... ON CONFLICT DO NOTHING``: the primary key admits one creator per document."""
        version = secrets.token_hex(8)
        created = await self._execute(self._sql_create, (document, version, *row_values(row)))
        return version if created == 1 else None

    async def _read(self, document: str) -> LedgerRow | None:
        """One ``SELECT`` by primary key."""
        async with self._connection() as conn:
            cursor = await conn.execute(self._sql_read, (document,))
            return _row(await cursor.fetchone())

    async def _update_if_version(
        self, document: str, version: str, row: LedgerRow, *, final: bool = False
    ) -> str | None:
        """One ``UPDATE ... WHERE doc_id = %s AND version = %s`` that also issues a fresh version."""
        fresh = secrets.token_hex(8)
        changed = await self._execute(self._sql_update, (fresh, *row_values(row), document, version))
        return fresh if changed == 1 else None

    async def _delete_if_version(self, document: str, version: str) -> bool:
        """One ``DELETE ... WHERE doc_id = %s AND version = %s``."""
        return await self._execute(self._sql_delete, (document, version)) == 1

    async def _probe(self) -> str:
        """Read one status (never a result) from the table; never creates it."""
        import psycopg
        from psycopg import errors

        try:
            pool = await self._opened()
            async with pool.connection(timeout=_PROBE_WAIT_S) as conn:
                await conn.execute(f"SELECT status FROM {self._table} LIMIT 1")
        except (errors.UndefinedTable, errors.InvalidCatalogName):
            return "database_not_found"
        except (errors.InsufficientPrivilege, errors.InvalidAuthorizationSpecification):
            return "permission_denied"
        except (psycopg.Error, OSError, TimeoutError):
            return "unavailable"
        return "ok"
