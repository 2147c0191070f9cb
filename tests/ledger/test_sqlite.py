"""What the SQLite backend adds to the contract: WAL, full sync, durability across reopen, honest faults."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from ledger_support import FakeClock

from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import LedgerOptions, document_id
from anvil.ledger.sqlite import SqliteLedger

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
    assert held.reference.startswith("sqlite/anvil_idempotency/")


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
