"""The PostgreSQL ledger's hot statements through libpq directly, against a real PostgreSQL."""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from services import postgres_ledger, require

from anvil.errors import LedgerError
from anvil.ledger import pgwire

pytestmark = pytest.mark.anyio


@pytest.fixture
async def conn() -> AsyncIterator[Any]:
    import psycopg

    base = require("postgres")
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as connection:
        table = f"pgwire_{uuid.uuid4().hex[:12]}"
        await connection.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, n integer, x double precision)")
        connection.test_table = table  # type: ignore[attr-defined]
        try:
            yield connection
        finally:
            if not pgwire.idle(connection):  # a test left an exchange in flight: it cannot carry another
                await connection.cancel_safe(timeout=2)
                await connection.close()
            async with await psycopg.AsyncConnection.connect(base, autocommit=True) as other:
                await other.execute(f"DROP TABLE IF EXISTS {table}")


def test_placeholders_are_numbered_for_libpq() -> None:
    assert pgwire.numbered("UPDATE t SET a = %s, b = %s WHERE c = %s") == "UPDATE t SET a = $1, b = $2 WHERE c = $3"


async def test_a_statement_returns_its_row_count_and_values_round_trip_exactly(conn: Any) -> None:
    table = conn.test_table
    insert = pgwire.numbered(f"INSERT INTO {table} (id, n, x) VALUES (%s, %s, %s) ON CONFLICT (id) DO NOTHING")
    values = [("a", 7, 1733000000.1234567), ("b", None, math.inf), ("c", -1, -0.0), ("ü", 2**31 - 1, 5e-324)]
    for row in values:
        assert await pgwire.execute(conn, insert, row) == 1
    assert await pgwire.execute(conn, insert, ("a", 8, 0.0)) == 0  # the conflict: no row
    cursor = await conn.execute(f"SELECT id, n, x FROM {table} ORDER BY id")
    assert sorted(await cursor.fetchall()) == sorted(values)
    assert pgwire.idle(conn)


async def test_a_server_error_is_psycopgs_own_class_and_leaves_the_connection_usable(conn: Any) -> None:
    import psycopg.errors

    with pytest.raises(psycopg.errors.UndefinedTable):
        await pgwire.execute(conn, pgwire.numbered("DELETE FROM no_such_table WHERE id = %s"), ("x",))
    insert = pgwire.numbered(f"INSERT INTO {conn.test_table} (id) VALUES (%s)")
    assert await pgwire.execute(conn, insert, ("after",)) == 1 and pgwire.idle(conn)


async def test_a_statement_deallocated_behind_its_back_is_prepared_again(conn: Any) -> None:
    insert = pgwire.numbered(f"INSERT INTO {conn.test_table} (id) VALUES (%s)")
    assert await pgwire.execute(conn, insert, ("one",)) == 1
    await conn.execute("DEALLOCATE ALL")  # what psycopg sends after a rollback
    assert await pgwire.execute(conn, insert, ("two",)) == 1
    cursor = await conn.execute(f"SELECT count(*) FROM {conn.test_table}")
    assert (await cursor.fetchone())[0] == 2


async def test_a_value_the_ledger_never_stores_is_refused_before_anything_is_sent(conn: Any) -> None:
    insert = pgwire.numbered(f"INSERT INTO {conn.test_table} (id, n) VALUES (%s, %s)")
    for bad in (True, b"bytes", [1]):
        with pytest.raises(TypeError):
            await pgwire.execute(conn, insert, ("x", bad))
    cursor = await conn.execute(f"SELECT count(*) FROM {conn.test_table}")
    assert (await cursor.fetchone())[0] == 0 and pgwire.idle(conn)


async def test_a_statement_cancelled_mid_exchange_leaves_the_connection_not_idle(conn: Any) -> None:
    await conn.execute(f"INSERT INTO {conn.test_table} (id) VALUES ('x')")
    slow = pgwire.numbered(f"UPDATE {conn.test_table} SET n = 1 WHERE id = %s AND pg_sleep(2)::text = ''")
    with anyio.move_on_after(0.3) as scope:
        await pgwire.execute(conn, slow, ("x",))
    assert scope.cancelled_caught
    assert not pgwire.idle(conn)  # the caller must not send another statement on it


async def test_a_ledger_write_cancelled_while_it_waits_leaves_no_half_used_connection() -> None:
    import psycopg

    base = require("postgres")
    async with postgres_ledger(base, lock_timeout_seconds=3.0) as ledger:
        assert (await ledger.reserve("k", "fp")).outcome == "reserved"
        async with await psycopg.AsyncConnection.connect(base) as blocker:  # a transaction holding the row
            await blocker.execute(f"SELECT 1 FROM {ledger.table} FOR UPDATE")
            with anyio.move_on_after(0.3) as scope:
                await ledger.complete("k", {"id": 1}, 201)  # its UPDATE waits for the row lock
            assert scope.cancelled_caught
            await blocker.rollback()
        assert (await ledger.reserve("k2", "fp")).outcome == "reserved"  # the next call runs on a fresh connection
        await ledger.complete("k2", {"id": 2}, 201)
        assert (await ledger.reserve("k2", "fp")).result == {"id": 2}
        assert (await ledger.reserve("k", "fp")).outcome == "in_progress"  # the server cancelled the completion


async def test_a_write_past_the_ledgers_wait_fails_closed_as_unavailable() -> None:
    import psycopg

    base = require("postgres")
    async with postgres_ledger(base, lock_timeout_seconds=1.0) as ledger:
        assert (await ledger.reserve("k", "fp")).outcome == "reserved"
        async with await psycopg.AsyncConnection.connect(base) as blocker:
            await blocker.execute(f"SELECT 1 FROM {ledger.table} FOR UPDATE")
            with pytest.raises(LedgerError) as refused:
                await ledger.complete("k", {"id": 1}, 201)  # lock_timeout (1 s) ends the wait server-side
            await blocker.rollback()
        assert refused.value.code == "ledger/unavailable"
        await ledger.complete("k", {"id": 1}, 201)  # the connection it used is still good (or replaced)
        assert (await ledger.reserve("k", "fp")).result == {"id": 1}


async def test_a_text_value_with_a_nul_byte_is_refused_before_anything_is_sent(conn: Any) -> None:
    import psycopg

    insert = pgwire.numbered(f"INSERT INTO {conn.test_table} (id, n) VALUES (%s, %s)")
    with pytest.raises(psycopg.DataError):  # libpq would send the text only up to the NUL
        await pgwire.execute(conn, insert, ("fp\x00other", 1))
    cursor = await conn.execute(f"SELECT count(*) FROM {conn.test_table}")
    assert (await cursor.fetchone())[0] == 0 and pgwire.idle(conn)


async def test_a_fingerprint_with_a_nul_byte_fails_closed_and_never_stores_a_truncated_binding() -> None:
    async with postgres_ledger(require("postgres")) as ledger:
        with pytest.raises(LedgerError) as refused:
            await ledger.reserve("k", "fp\x00request-a")
        assert refused.value.code == "ledger/unavailable" and not ledger.owns("k")
        assert (await ledger.reserve("k", "fp")).outcome == "reserved"  # no row bound to a cut "fp"
