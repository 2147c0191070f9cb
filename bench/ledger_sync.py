"""Where a keyed write's ledger time goes on this disk: the SQLite ledger's work and its sync, in one process.

    .venv/bin/python bench/ledger_sync.py [--pairs N] [--gap-ms MS] [--dir DIR]

Two tables, each from one process so a shared machine's load weighs on every row alike:

* **ledger**: ``memory:``, SQLite ``synchronous=normal`` (the opt-in: no sync) and SQLite ``full`` (the
  default: the reservation synced, here always on the event loop) reserve and complete ``N`` fresh keys,
  interleaved call by call; p50 of each step and of the pair's thread CPU (the sync's kernel time
  included), with ``--gap-ms`` (default 1) idle between two writes, as a gateway has between a caller's
  calls. ``normal - memory`` is the ledger's own work (SQLite's statements, its file locks and WAL
  append, the identity ``stat``, the Python around them); ``full - normal`` is what the sync adds.
  On a VM both grow with the gap: a thread that waits for the disk (or the next call) lets its vCPU
  halt and resumes cold (``--gap-ms 0`` is the back-to-back best case).
* **synced commit**: one-page inserts with ``synchronous=FULL`` into a WAL that grows (a fresh file),
  then into the same WAL after a checkpoint restarted it (the frames overwrite blocks already
  written), then again with no gap between commits. A growing file also commits the filesystem's
  journal on each sync (its size changed). ``compare.py``'s probe truncates its WAL every round and
  runs its five commits back to back: a growing WAL, without the gap a gateway's writes have. A gateway
  grows its WAL over its first cycle of :data:`anvil.ledger.sqlite._CHECKPOINT_EVERY` writes (half as
  many keyed writes), then overwrites it after each checkpoint.

The files live in ``--dir`` (default: a scratch folder of the checkout, so the syncs reach its disk).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from anvil.ledger.base import Ledger, LedgerOptions, ReserveContext
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.sqlite import SqliteLedger

REPO = Path(__file__).resolve().parent.parent
RESULT = {"id": "re_1", "object": "refund", "amount": 1, "currency": "EUR", "payment": "pay_123", "status": "succeeded"}


def _p50_us(values: list[int]) -> float:
    return statistics.median(values) / 1000


async def _ledgers(folder: Path, pairs: int, gap_s: float) -> None:
    ledgers: dict[str, Ledger] = {
        "memory:": MemoryLedger(LedgerOptions()),
        "sqlite synchronous=normal": SqliteLedger(str(folder / "normal.db"), reservation_sync="NORMAL"),
        # A budget no commit reaches: every synced reservation on the event loop, the sync's time included.
        "sqlite full (default)": SqliteLedger(str(folder / "full.db"), inline_sync_budget_s=3600.0),
    }
    context = ReserveContext(operation_id="createRefund", trace_id="0af7651916cd43dd8448eb211c80319c")
    steps: dict[str, tuple[list[int], list[int], list[int]]] = {name: ([], [], []) for name in ledgers}
    for ledger in ledgers.values():
        await ledger.initialize()
    for index in range(-20, pairs):
        for name, ledger in ledgers.items():
            key = f"bench-{index}"
            cpu = time.thread_time_ns()
            began = time.perf_counter_ns()
            await ledger.reserve(key, "f" * 64, context)
            reserved = time.perf_counter_ns()
            await ledger.complete(key, RESULT, 201)
            if index >= 0:
                steps[name][0].append(reserved - began)
                steps[name][1].append(time.perf_counter_ns() - reserved)
                steps[name][2].append(time.thread_time_ns() - cpu)
            await asyncio.sleep(gap_s)  # the caller's own time between two calls
    for ledger in ledgers.values():
        await ledger.close()
    head = f"| ledger ({pairs} pairs, {gap_s * 1000:g} ms apart) |"
    print(f"{head} reserve p50, us | complete p50, us | pair thread CPU p50, us |")
    print("|---|---|---|---|")
    for name, (reserves, completes, cpus) in steps.items():
        print(f"| {name} | {_p50_us(reserves):.0f} | {_p50_us(completes):.0f} | {_p50_us(cpus):.0f} |")


def _commits(folder: Path, count: int, gap_s: float) -> None:
    gap = f"{gap_s * 1000:g} ms apart"
    timed: dict[str, list[int]] = {
        f"growing WAL, {gap}": [],
        f"overwritten WAL (after a checkpoint), {gap}": [],
        "overwritten WAL, back to back": [],
    }
    with contextlib.closing(sqlite3.connect(folder / "probe.db", isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE probe (doc_id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID")
        for kind, found in timed.items():
            for index in range(count):
                began = time.perf_counter_ns()
                conn.execute("INSERT INTO probe VALUES (?, ?)", (f"{kind}-{index}", "x" * 300))
                found.append(time.perf_counter_ns() - began)
                if not kind.endswith("back to back"):
                    time.sleep(gap_s)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # the next commit restarts the WAL
    print(f"\n| synced commit ({count} each) | p50, us |")
    print("|---|---|")
    for kind, commits in timed.items():
        print(f"| {kind} | {_p50_us(commits):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500, help="reserve+complete pairs per ledger (default 500)")
    parser.add_argument("--gap-ms", type=float, default=1.0, help="idle time between two writes (default 1)")
    parser.add_argument("--dir", type=Path, default=REPO, help="where the files live (default: the checkout)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=".bench-ledger-sync-", dir=args.dir) as scratch:
        folder = Path(scratch)
        gap_s = max(0.0, args.gap_ms / 1000)
        asyncio.run(_ledgers(folder, max(1, args.pairs), gap_s))
        _commits(folder, max(1, args.pairs // 3), gap_s)
    print(f"\nfiles in {args.dir} ({os.statvfs(args.dir).f_bsize}-byte blocks)")


if __name__ == "__main__":
    main()
