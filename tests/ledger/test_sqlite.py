"""What the SQLite backend adds to the contract: WAL, full sync, durability across reopen, honest faults."""

from __future__ import annotations

import os
import socket
import sqlite3
import stat
import time
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from ledger_support import FakeClock

from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import LedgerOptions, document_id
from anvil.ledger.sqlite import SqliteLedger, sqlite_location

pytestmark = pytest.mark.anyio


def tamper(path: Path, sql: str) -> None:
    """Change the file behind the ledger's back, as a broken tool or a hand edit would."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql)


def open_at(path: Path, clock: FakeClock | None = None) -> SqliteLedger:
    return SqliteLedger(str(path), LedgerOptions(clock=clock or FakeClock()))


async def test_the_file_runs_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "l.db")
    assert ledger.pragma("journal_mode") == "wal"
    assert ledger.pragma("synchronous") == "2"  # FULL
    await ledger.close()


async def test_a_completed_row_survives_closing_and_reopening_the_file(tmp_path: Path) -> None:
    first = open_at(tmp_path / "l.db")
    await first.reserve("k", "fp")
    await first.complete("k", {"id": 1}, 201)
    await first.close()
    second = open_at(tmp_path / "l.db")
    replay = await second.reserve("k", "fp")
    await second.close()
    assert (replay.outcome, replay.result, replay.status) == ("replay", {"id": 1}, 201)


async def test_an_in_progress_row_left_by_a_closed_instance_stays_in_progress(tmp_path: Path) -> None:
    crashed = open_at(tmp_path / "l.db")
    await crashed.reserve("k", "fp")
    await crashed.close()
    survivor = open_at(tmp_path / "l.db")
    held = await survivor.reserve("k", "fp")
    await survivor.close()
    assert held.outcome == "in_progress" and held.reference is not None
    assert held.reference.startswith("sqlite/anvil_idempotency/")  # no namespace: the plain table


async def test_the_file_never_holds_the_ledger_key(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "l.db")
    await ledger.reserve("raw-ledger-key-material", "fp")
    await ledger.complete("raw-ledger-key-material", {"ok": True})
    await ledger.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"raw-ledger-key-material" not in stored
    assert document_id("raw-ledger-key-material").encode() in stored


async def test_a_row_with_an_unknown_status_is_reported_as_corrupt(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "l.db")
    await ledger.reserve("k", "fp")
    tamper(tmp_path / "l.db", "UPDATE anvil_idempotency SET status = 'weird'")
    with pytest.raises(LedgerError) as corrupt:
        await ledger.reserve("k", "fp")
    assert corrupt.value.code == "ledger/corrupt_row"
    await ledger.close()


async def test_a_completed_row_without_an_expiry_is_never_replayed(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "l.db")
    await ledger.reserve("k", "fp")
    await ledger.complete("k", {"ok": True})
    tamper(tmp_path / "l.db", "UPDATE anvil_idempotency SET expires_at = NULL")
    with pytest.raises(LedgerError) as corrupt:
        await ledger.reserve("k", "fp")
    assert corrupt.value.code == "ledger/corrupt_row"
    await ledger.close()


async def test_an_unopenable_file_is_a_ledger_fault_that_names_no_path(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "missing-dir" / "l.db")
    with pytest.raises(LedgerError) as failed:
        await ledger.reserve("k", "fp")
    assert failed.value.code == "ledger/unavailable"
    assert "missing-dir" not in f"{failed.value} {failed.value.hint}"
    ready = await ledger.check_readiness()
    assert (ready.ready, ready.code) == (False, "database_not_found")


def test_a_table_name_must_be_a_lowercase_identifier(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        SqliteLedger(str(tmp_path / "l.db"), table="bad; DROP TABLE x")
    assert refused.value.code == "config/invalid"


# --- files that move, vanish or lock -----------------------------------------------------------------


async def test_the_ledger_file_is_created_readable_by_its_owner_only(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "l.db")
    await ledger.initialize()
    await ledger.reserve("k", "fp")
    await ledger.close()
    assert stat.S_IMODE((tmp_path / "l.db").stat().st_mode) == 0o600
    lazily = open_at(tmp_path / "lazy.db")
    await lazily.reserve("k", "fp")  # the first write of a fresh instance creates it too
    await lazily.close()
    assert stat.S_IMODE((tmp_path / "lazy.db").stat().st_mode) == 0o600


async def test_a_reservation_is_synced_and_a_completion_is_not_waited_on(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "l.db")
    await ledger.reserve("k", "fp")
    assert ledger.pragma("synchronous") == "2"  # FULL: durable before the upstream is called
    await ledger.complete("k", {"ok": True})
    # Two connections, one level each: nothing switches a PRAGMA per call.
    assert ledger.pragma("synchronous", completion=True) == "1"  # NORMAL: a lost completion only quarantines
    assert ledger.pragma("synchronous") == "2"
    await ledger.reserve("k2", "fp")
    assert (ledger.pragma("synchronous"), ledger.pragma("synchronous", completion=True)) == ("2", "1")
    assert ledger.pragma("journal_mode", completion=True) == "wal"
    assert ledger.pragma("wal_autocheckpoint", completion=True) == "0"
    await ledger.close()
    reopened = open_at(tmp_path / "l.db")
    replay = await reopened.reserve("k", "fp")  # the completion connection's write is in the one file
    assert (replay.outcome, replay.result) == ("replay", {"ok": True})
    await reopened.close()


async def test_readiness_of_a_missing_file_is_never_ready_and_creates_nothing(tmp_path: Path) -> None:
    ledger = open_at(tmp_path / "absent.db")
    started = time.monotonic()
    ready = await ledger.check_readiness()
    assert (ready.ready, ready.code) == (False, "database_not_found")
    assert time.monotonic() - started < 10
    assert list(tmp_path.iterdir()) == []
    await ledger.close()


async def test_readiness_of_a_file_without_the_table_is_not_ready_and_creates_no_table(tmp_path: Path) -> None:
    tamper(tmp_path / "l.db", "CREATE TABLE unrelated (x)")
    ledger = open_at(tmp_path / "l.db")
    ready = await ledger.check_readiness()
    await ledger.close()
    assert (ready.ready, ready.code) == (False, "database_not_found")
    with closing(sqlite3.connect(tmp_path / "l.db")) as conn:
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names == {"unrelated"}


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_deleted_or_replaced_file_fails_every_call_and_probe_closed(tmp_path: Path, how: str) -> None:
    path = tmp_path / "l.db"
    ledger = open_at(path)
    await ledger.reserve("k", "fp")
    assert (await ledger.check_readiness()).ready
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if how == "replaced":
        fresh = open_at(path)  # another process starts a fresh ledger at the same path
        await fresh.initialize()
        await fresh.close()
    ready = await ledger.check_readiness()
    assert ready.ready is False
    with pytest.raises(LedgerError) as refused:
        await ledger.reserve("k", "fp")
    assert refused.value.code == "ledger/unavailable"
    await ledger.close()  # closing and reopening does not adopt the other file either
    with pytest.raises(LedgerError):
        await ledger.reserve("other", "fp")
    assert path.exists() is (how == "replaced")


async def test_an_exclusive_lock_fails_each_call_closed_within_its_own_wait_and_readiness_says_unavailable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "l.db"
    ledger = SqliteLedger(str(path), LedgerOptions(lock_timeout_seconds=1.0))
    await ledger.initialize()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        failures: list[float] = []

        async def keyed_write(index: int) -> None:
            with pytest.raises(LedgerError) as refused:
                await ledger.reserve(f"k{index}", "fp")
            assert refused.value.code == "ledger/unavailable"
            failures.append(time.monotonic() - started)

        async with anyio.create_task_group() as group:
            for index in range(4):
                group.start_soon(keyed_write, index)
        assert len(failures) == 4 and max(failures) < 10  # each within its own wait, not 4 waits in a row
        probe_started = time.monotonic()
        ready = await ledger.check_readiness()
        assert (ready.ready, ready.code) == (False, "unavailable")
        assert time.monotonic() - probe_started < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (await ledger.check_readiness()).ready
    assert (await ledger.reserve("after", "fp")).outcome == "reserved"
    await ledger.close()


def test_a_sqlite_uri_may_name_the_namespace_its_table_is_derived_from(tmp_path: Path) -> None:
    assert sqlite_location(f"sqlite:///{tmp_path}/l.db?namespace=payments") == (f"{tmp_path}/l.db", "payments")
    ledger = SqliteLedger.from_uri(f"sqlite:///{tmp_path}/l.db?namespace=payments", LedgerOptions())
    assert ledger.table == "anvil_idempotency_df384ae97c77ad30"
    for bad in ("?mode=ro", "?namespace=a&namespace=b", "?namespace=bad/ns"):
        with pytest.raises(ConfigError) as refused:
            SqliteLedger.from_uri(f"sqlite:///{tmp_path}/l.db{bad}", LedgerOptions())
        assert refused.value.code == "config/invalid"


async def test_the_location_is_the_host_and_the_resolved_file_so_a_link_to_the_file_shares_its_rows(
    tmp_path: Path,
) -> None:
    (tmp_path / "link.db").symlink_to(tmp_path / "l.db")
    real = SqliteLedger.from_uri(f"sqlite:///{tmp_path}/l.db?namespace=payments", LedgerOptions())
    linked = SqliteLedger.from_uri(f"sqlite:///{tmp_path}/link.db?namespace=payments", LedgerOptions())
    other = SqliteLedger.from_uri(f"sqlite:///{tmp_path}/l.db?namespace=orders", LedgerOptions())
    try:
        assert [await real.initialize(), await real.initialize(), await linked.initialize()] == [True, False, False]
        assert await other.initialize() is True  # a new table in an existing file is new too
        assert real.location == linked.location != other.location
        assert real.location == {
            "backend": "sqlite",
            "host": socket.gethostname(),
            "file": os.path.realpath(tmp_path / "l.db"),
            "table": "anvil_idempotency_df384ae97c77ad30",
        }
        assert (await real.reserve("k", "fp")).outcome == "reserved"
        assert (await linked.reserve("k", "fp")).outcome == "in_progress"
        assert (await other.reserve("k", "fp")).outcome == "reserved"
    finally:
        for ledger in (real, linked, other):
            await ledger.close()


async def test_the_synchronous_normal_opt_in_commits_reservations_without_a_sync_and_is_parsed_strictly(
    tmp_path: Path,
) -> None:
    ledger = SqliteLedger.from_uri(f"sqlite:///{tmp_path}/l.db?synchronous=normal", LedgerOptions())
    assert (await ledger.reserve("k", "fp")).outcome == "reserved"
    assert ledger.pragma("synchronous") == "1"  # NORMAL: the opt-in trades power-loss safety for the sync
    await ledger.complete("k", {"id": 1}, 201)
    assert (await ledger.reserve("k", "fp")).outcome == "replay"
    await ledger.close()
    default = SqliteLedger.from_uri(f"sqlite:///{tmp_path}/d.db?synchronous=full&namespace=payments", LedgerOptions())
    await default.reserve("k", "fp")
    assert default.pragma("synchronous") == "2"
    await default.close()
    for bad in ("?synchronous=off", "?synchronous=normal&synchronous=full", "?synchronous="):
        with pytest.raises(ConfigError) as refused:
            SqliteLedger.from_uri(f"sqlite:///{tmp_path}/l.db{bad}", LedgerOptions())
        assert refused.value.code == "config/invalid"
    with pytest.raises(ConfigError) as refused:
        SqliteLedger(str(tmp_path / "l.db"), reservation_sync="OFF")
    assert refused.value.code == "config/invalid"


async def test_a_completion_that_finds_the_file_locked_waits_for_the_lock_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger = SqliteLedger(str(path), LedgerOptions(lock_timeout_seconds=5.0))
    await ledger.reserve("k", "fp")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    done: list[bool] = []

    async def complete() -> None:
        await ledger.complete("k", {"id": 1}, 201)
        done.append(True)

    async with anyio.create_task_group() as group:
        group.start_soon(complete)
        await anyio.sleep(0.3)
        assert not done  # not failed, not written: waiting on the worker thread for the lock
        holder.execute("ROLLBACK")
    holder.close()
    assert done == [True]
    replay = await ledger.reserve("k", "fp")
    assert (replay.outcome, replay.result, replay.status) == ("replay", {"id": 1}, 201)
    await ledger.close()


async def test_commits_never_checkpoint_and_the_worker_keeps_the_wal_bounded(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger = open_at(path)
    await ledger.reserve("warm", "fp")
    assert ledger.pragma("wal_autocheckpoint") == "0"
    for index in range(700):  # 1400 writes: unbounded, the WAL would hold every one of their pages
        await ledger.reserve(f"k{index}", "fp")
        await ledger.complete(f"k{index}", {"id": index, "pad": "x" * 200}, 201)
    await ledger.reserve("last", "fp")  # queued on the worker after every checkpoint, so they have all run
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size < 1000 * 4096  # ~2 MB checkpointed every 256 writes; ~10 MB if never
    await ledger.close()
    reopened = open_at(path)
    assert (await reopened.reserve("k699", "fp")).outcome == "replay"
    await reopened.close()


# --- where a synced write runs: the measured rule (a slow disk never stalls the loop) ------------------


class Stopwatch:
    """A timer the test moves: every reading advances it by ``step`` (so a timed commit seems to take it)."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.now = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def test_a_slow_synced_commit_on_the_loop_moves_synced_writes_to_the_worker_for_a_growing_cool_down(
    tmp_path: Path,
) -> None:
    watch = Stopwatch(0.0002)  # 0.2 ms a reading: well within the 1 ms budget
    ledger = SqliteLedger(str(tmp_path / "l.db"), LedgerOptions(clock=FakeClock()), timer=watch)
    for index in range(5):
        assert (await ledger.reserve(f"a{index}", "fp")).outcome == "reserved"
    assert ledger.synced_placement == (4, 1)  # the first opens the file on the worker; then on the loop
    watch.step = 0.01  # the disk turns slow: 10 ms a commit
    await ledger.reserve("slow", "fp")
    assert ledger.synced_placement == (5, 1)  # measured slow on the loop ...
    watch.step = 0.0
    for index in range(10):
        await ledger.reserve(f"b{index}", "fp")
    assert ledger.synced_placement == (5, 11)  # ... so, during its 0.25 s cool-down, every one waits on the worker
    watch.now += 0.3  # the cool-down is over: the next one on the loop is the new measurement
    watch.step = 0.01
    await ledger.reserve("probe", "fp")
    assert ledger.synced_placement == (6, 11)  # slow again: the cool-down doubles to 0.5 s
    watch.step = 0.0
    watch.now += 0.3
    await ledger.release("probe")
    assert ledger.synced_placement == (6, 12)  # still cooling down (a release is a synced write too)
    watch.now += 0.3
    watch.step = 0.0002
    for index in range(3):
        await ledger.reserve(f"c{index}", "fp")
    assert ledger.synced_placement == (9, 12)  # fast again: back on the loop
    await ledger.close()
    reopened = open_at(tmp_path / "l.db")
    for key in ("a0", "slow", "b9", "c2"):  # every one committed, wherever it ran
        assert (await reopened.reserve(key, "fp")).outcome == "in_progress"
    assert (await reopened.reserve("probe", "fp")).outcome == "reserved"  # the release landed too
    await reopened.close()


async def test_a_synced_write_that_finds_the_file_locked_on_the_loop_waits_on_the_worker(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    watch = Stopwatch(0.0001)
    ledger = SqliteLedger(str(path), LedgerOptions(lock_timeout_seconds=5.0), timer=watch)
    await ledger.reserve("warm", "fp")
    await ledger.reserve("warm2", "fp")
    assert ledger.synced_placement == (1, 1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    done: list[str] = []

    async def reserve() -> None:
        done.append((await ledger.reserve("k", "fp")).outcome)

    async with anyio.create_task_group() as group:
        group.start_soon(reserve)
        await anyio.sleep(0.3)
        assert not done  # neither failed nor blocking the loop: waiting on the worker thread
        holder.execute("ROLLBACK")
    holder.close()
    assert done == ["reserved"]
    assert ledger.synced_placement == (1, 2)
    await ledger.reserve("next", "fp")
    assert ledger.synced_placement == (1, 3)  # a busy file starts a cool-down like a slow commit
    await ledger.release("k")
    await ledger.close()


async def test_a_zero_inline_budget_keeps_every_synced_write_on_the_worker(tmp_path: Path) -> None:
    ledger = SqliteLedger(str(tmp_path / "l.db"), inline_sync_budget_s=0, timer=Stopwatch(0.0))
    for index in range(40):
        await ledger.reserve(f"k{index}", "fp")
        await ledger.release(f"k{index}")
    assert ledger.synced_placement == (0, 80)
    await ledger.close()
