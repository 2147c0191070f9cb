"""What the PostgreSQL backend adds to the contract: its URI, an explicit schema step, bounded failures."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from contextlib import suppress
from urllib.parse import quote

import anyio
import pytest
from psycopg.conninfo import conninfo_to_dict
from services import postgres_ledger, postgres_uri, require, search_path_traps

from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import Ledger, LedgerOptions, document_id
from anvil.ledger.postgres import PostgresLedger, postgres_location, postgres_target
from anvil.ledger.registry import open_ledger

pytestmark = pytest.mark.anyio


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_uri_keeps_libpq_parameters_and_takes_the_namespace_for_the_table() -> None:
    conninfo, namespace = postgres_location(
        "postgresql://app:s3cret@db.internal:5433/ledger?sslmode=require&namespace=payments"
    )
    assert (conninfo, namespace) == ("postgresql://app:s3cret@db.internal:5433/ledger?sslmode=require", "payments")
    spaced, _ = postgres_location("postgresql://db/ledger?options=-c%20search_path%3Dapp&namespace=payments")
    assert conninfo_to_dict(spaced)["options"] == "-c search_path=app"  # a space is never sent as a '+'
    ledger = open_ledger("postgres://app@db.internal/ledger?namespace=payments")
    assert isinstance(ledger, PostgresLedger) and (ledger.durable, ledger.sharing) == (True, "cluster")
    assert ledger.table == "anvil_idempotency_df384ae97c77ad30" and ledger.scheme == "postgresql"


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql:///no-host",
        "postgresql://app:s3cret@db/ledger#frag",
        "postgresql://app:s3cret@db/ledger?namespace=a&namespace=b",
        "postgresql://app:s3cret@db/ledger?namespace=",
        "postgresql://app:s3cret@db/ledger?namespace=bad/ns",
        "postgresql://app:s3cret@db/ledger?schema=",
        "postgresql://app:s3cret@db/ledger?schema=a&schema=b",
        "postgresql://app:s3cret@db/ledger?schema=Ledger",
        "postgresql://app:s3cret@db/ledger?schema=led-ger",
        "postgresql://app:s3cret@db/ledger?schema=pg_temp",
        "postgresql://app:s3cret@db/ledger?schema=pg_catalog",
        "postgresql://app:s3cret@db/ledger?schema=information_schema",
        "postgresql://app:s3cret@db/ledger?schema=" + "a" * 64,
        "postgresql://app:s3cret@db",
        "postgresql://app:s3cret@db/",
    ],
)
def test_a_malformed_uri_is_a_boot_error_that_never_echoes_the_password(uri: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_ledger(uri)
    assert refused.value.code == "config/invalid"
    assert "s3cret" not in f"{refused.value} {refused.value.hint}"


def test_the_schema_is_a_uri_option_that_defaults_to_public_and_never_reaches_libpq() -> None:
    target = postgres_target("postgresql://app@db/ledger?schema=ledger_1&sslmode=require&namespace=payments")
    assert (target.conninfo, target.namespace, target.schema) == (
        "postgresql://app@db/ledger?sslmode=require",
        "payments",
        "ledger_1",
    )
    assert postgres_target("postgresql://app@db/ledger").schema == "public"
    ledger = open_ledger("postgresql://app@db/ledger?schema=_ledger&namespace=payments")
    assert isinstance(ledger, PostgresLedger) and ledger.schema == "_ledger"
    assert ledger.location["schema"] == "_ledger" and ledger.location["table"] == "anvil_idempotency_df384ae97c77ad30"


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("postgresql://app@LOCALHOST/ledger", "postgresql://auditor:s3cret@127.0.0.1:5432/ledger", True),
        ("postgresql://app@[0:0::1]:6000/ledger", "postgresql://app@[::1]:6000/ledger?sslmode=disable", True),
        ("postgresql://app@db/ledger", "postgresql://app@db/ledger?options=-c%20search_path%3Dapp", True),
        ("postgresql://app@db/x?dbname=ledger", "postgresql://app@other/ledger?host=db", True),
        ("postgresql://app@db/ledger", "postgresql://app@db/ledger?schema=app", False),
        ("postgresql://app@db/ledger", "postgresql://app@db/other", False),
        ("postgresql://app@db/ledger", "postgresql://app@db:5433/ledger", False),
        ("postgresql://app@db/ledger", "postgresql://app@db2/ledger", False),
        ("postgresql://app@db/ledger", "postgresql://app@db/ledger?namespace=payments", False),
    ],
)
def test_two_uris_give_one_location_exactly_when_their_statements_reach_one_table(
    first: str, second: str, same: bool
) -> None:
    one, two = open_ledger(first), open_ledger(second)
    assert (one.location == two.location) is same
    assert set(one.location) == {"backend", "host", "port", "database", "schema", "table"}
    assert "s3cret" not in f"{one.location} {two.location}" and "auditor" not in str(two.location)  # no login


async def test_two_roles_and_a_search_path_option_reach_one_table_so_a_16_way_race_reserves_once() -> None:
    base = postgres_uri(require("postgres"), f"t-{uuid.uuid4().hex[:12]}")
    with search_path_traps(require("postgres")) as traps:
        first = open_ledger(base)
        assert await first.initialize() is True  # as the database owner, in public
        ledgers = [first, open_ledger(traps.as_role(base)), open_ledger(traps.with_search_path(base))]
        elsewhere = open_ledger(f"{base}&schema={traps.spare}")
        outcomes: list[str] = []
        try:
            assert [await ledger.initialize() for ledger in ledgers[1:]] == [False, False]
            assert await elsewhere.initialize() is True  # a schema of its own: created, and a table in it
            assert ledgers[0].location == ledgers[1].location == ledgers[2].location != elsewhere.location

            async def reserve(index: int) -> None:
                found = await ledgers[index % 3].reserve("split-key", "f" * 64)
                outcomes.append(found.outcome)

            async with anyio.create_task_group() as group:
                for index in range(16):
                    group.start_soon(reserve, index)
            assert sorted(outcomes) == ["in_progress"] * 15 + ["reserved"]
            assert (await elsewhere.reserve("split-key", "f" * 64)).outcome == "reserved"  # another table
        finally:
            for ledger in [*ledgers, elsewhere]:
                await ledger.close()


async def test_an_unreachable_database_fails_calls_closed_and_readiness_in_time() -> None:
    ledger = open_ledger(
        f"postgresql://app:s3cret@127.0.0.1:{_closed_port()}/ledger?namespace=x",
        options=LedgerOptions(lock_timeout_seconds=1.0),
    )
    try:
        started = time.monotonic()
        ready = await ledger.check_readiness()
        assert (ready.ready, ready.code) == (False, "unavailable")
        assert time.monotonic() - started < 2.5
        with pytest.raises(LedgerError) as refused:
            await ledger.reserve("k", "fp")
        assert refused.value.code == "ledger/unavailable"
        assert "s3cret" not in f"{refused.value} {refused.value.hint}" and "127.0.0.1" not in str(refused.value)
        assert time.monotonic() - started < 10
    finally:
        await ledger.close()


async def test_a_missing_table_is_reported_by_readiness_and_only_init_creates_it() -> None:
    uri = postgres_uri(require("postgres"), f"t-{uuid.uuid4().hex[:12]}")
    ledger = open_ledger(uri)
    try:
        ready = await ledger.check_readiness()
        assert (ready.ready, ready.code) == (False, "database_not_found")
        assert (await ledger.check_readiness()).code == "database_not_found"  # the probe created nothing
        with pytest.raises(LedgerError):
            await ledger.reserve("k", "fp")
        await ledger.initialize()
        await ledger.initialize()  # idempotent
        assert (await ledger.check_readiness()).ready
        assert (await ledger.reserve("k", "fp")).outcome == "reserved"
    finally:
        await ledger.close()


async def test_init_from_many_processes_at_once_is_idempotent() -> None:
    uri = postgres_uri(require("postgres"), f"t-{uuid.uuid4().hex[:12]}")
    ledgers = [open_ledger(uri) for _ in range(6)]
    created: list[bool] = []
    try:

        async def initialize(ledger: Ledger) -> None:
            created.append(await ledger.initialize())

        async with anyio.create_task_group() as group:
            for ledger in ledgers:
                group.start_soon(initialize, ledger)
        assert all([(await ledger.check_readiness()).ready for ledger in ledgers])
        assert sorted(created) == [False] * 5 + [True]  # exactly one of them says it created the table
    finally:
        for ledger in ledgers:
            await ledger.close()


# --- the keyed write's hot path (shared/spec/performance.md) ---------------------------------------------


async def test_completions_commit_asynchronously_and_reservations_keep_a_durable_server_setting() -> None:
    base = require("postgres")
    async with postgres_ledger(base) as ledger:
        assert (await ledger.reserve("k", "fp")).outcome == "reserved"
        await ledger.complete("k", {"id": 1}, 201)
        assert await ledger.setting("synchronous_commit", completion=True) == "off"
        import psycopg

        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as plain:
            server = (await (await plain.execute("SHOW synchronous_commit")).fetchone())[0]
        expected = "on" if server == "off" else server  # never lowered for reservations, raised from off
        assert await ledger.setting("synchronous_commit") == expected
        assert await ledger.setting("statement_timeout", completion=True) == "5s"  # still bounded
        replay = await ledger.reserve("k", "fp")
        assert (replay.outcome, replay.result, replay.status) == ("replay", {"id": 1}, 201)
        with pytest.raises(ConfigError) as refused:
            await ledger.setting("work_mem")
        assert refused.value.code == "config/invalid"


@pytest.mark.parametrize(("asked", "reservations"), [("off", "on"), ("remote_write", "remote_write")])
async def test_a_uri_that_turns_synchronous_commit_off_still_gets_durable_reservations(
    asked: str, reservations: str
) -> None:
    base = require("postgres")
    own = quote(f"-c synchronous_commit={asked} -c lock_timeout=60s")
    uri = postgres_uri(f"{base}{'&' if '?' in base else '?'}options={own}", f"t-{uuid.uuid4().hex[:12]}")
    ledger = open_ledger(uri, options=LedgerOptions(lock_timeout_seconds=2.0))
    assert isinstance(ledger, PostgresLedger)
    try:
        await ledger.initialize()
        assert (await ledger.reserve("k", "fp")).outcome == "reserved"
        assert await ledger.setting("synchronous_commit") == reservations  # the URI's options are kept...
        assert await ledger.setting("lock_timeout") == "2s"  # ...and the ledger's bounds still win
        assert await ledger.setting("synchronous_commit", completion=True) == "off"
        await ledger.complete("k", {"id": 1}, 201)
        assert (await ledger.reserve("k", "fp")).outcome == "replay"
    finally:
        await ledger.close()


async def test_held_connections_the_server_drops_are_replaced_and_the_next_write_still_lands() -> None:
    base = require("postgres")
    app = f"anvil-held-{uuid.uuid4().hex[:12]}"
    uri = postgres_uri(f"{base}{'&' if '?' in base else '?'}application_name={app}", f"t-{uuid.uuid4().hex[:12]}")
    ledger = open_ledger(uri)
    import psycopg

    try:
        await ledger.initialize()
        await ledger.reserve("k1", "fp")
        await ledger.complete("k1", {"id": 1}, 201)
        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as admin:
            cursor = await admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s", (app,)
            )
            assert (await cursor.fetchone())[0] >= 2  # the held reservation and completion connections
        assert (await ledger.reserve("k2", "fp")).outcome == "reserved"  # sent again on a fresh connection
        await ledger.complete("k2", {"id": 2}, 201)
        assert (await ledger.reserve("k2", "fp")).result == {"id": 2}
        assert (await ledger.reserve("k1", "fp")).result == {"id": 1}
    finally:
        await ledger.close()


async def test_calls_in_flight_when_the_ledger_closes_end_with_their_own_answer() -> None:
    import psycopg

    base = require("postgres")
    failures: list[BaseException] = []

    async def complete(ledger: PostgresLedger, key: str) -> None:
        try:
            await ledger.complete(key, {"key": key}, 201)
        except BaseException as exc:
            failures.append(exc)

    async with postgres_ledger(base, lock_timeout_seconds=10.0) as ledger:
        for key in ("a", "b"):
            assert (await ledger.reserve(key, "fp")).outcome == "reserved"
        started = time.monotonic()
        async with await psycopg.AsyncConnection.connect(base) as blocker:
            await blocker.execute(f"SELECT 1 FROM {ledger.table} FOR UPDATE")
            async with anyio.create_task_group() as group:
                group.start_soon(complete, ledger, "a")  # on the held completion connection
                group.start_soon(complete, ledger, "b")  # on one from the completion pool
                await anyio.sleep(0.5)
                await ledger.close()  # while both wait for the row locks
                assert (await ledger.reserve("c", "fp")).outcome == "reserved"  # new pools
                await ledger.complete("c", {"key": "c"}, 201)
                await blocker.rollback()
        assert failures == []
        assert time.monotonic() - started < 8  # well inside the 12 s client deadline: nothing waited it out
        for key in ("a", "b", "c"):
            assert (await ledger.reserve(key, "fp")).result == {"key": key}
    assert ledger._pools == {} and ledger._held == {}


class _FreezingProxy:
    """A loopback TCP proxy to the test database that can stop forwarding (a database that stops answering)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.frozen = False
        self.tasks: set[asyncio.Task[None]] = set()
        self.writers: list[asyncio.StreamWriter] = []

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with suppress(OSError):
            while data := await reader.read(65536):
                while self.frozen:
                    await asyncio.sleep(3600)
                writer.write(data)
                await writer.drain()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        if self.frozen:
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers.append(up_writer)
        for pipe in (self._pipe(reader, up_writer), self._pipe(up_reader, writer)):
            task = asyncio.ensure_future(pipe)
            self.tasks.add(task)

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in self.writers:
            writer.close()


async def test_a_database_that_stops_answering_fails_reads_and_writes_closed_within_the_client_deadline() -> None:
    from urllib.parse import urlsplit, urlunsplit

    base = urlsplit(require("postgres"))
    assert base.port is not None
    proxy = _FreezingProxy(base.port)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    netloc = f"{base.netloc.rsplit('@', 1)[0]}@127.0.0.1:{port}" if "@" in base.netloc else f"127.0.0.1:{port}"
    uri = urlunsplit((base.scheme, netloc, base.path, base.query, ""))
    ledger = open_ledger(
        postgres_uri(uri, f"t-{uuid.uuid4().hex[:12]}"), options=LedgerOptions(lock_timeout_seconds=1.0)
    )
    try:
        await ledger.initialize()
        assert (await ledger.reserve("k", "fp")).outcome == "reserved"
        proxy.frozen = True
        for call in (lambda: ledger.inspect(ledger.reference(document_id("k"))), lambda: ledger.complete("k", 1)):
            started = time.monotonic()
            with anyio.move_on_after(30) as guard, pytest.raises(LedgerError) as refused:
                await call()
            assert not guard.cancelled_caught  # it did not hang
            assert refused.value.code == "ledger/unavailable"
            assert time.monotonic() - started < 12  # a read waits its deadline once, never forever
    finally:
        proxy.close()
        server.close()
        await ledger.close()
