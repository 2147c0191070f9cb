"""Ledger throughput: reserve + complete per second and per-pair latency, per backend.

    .venv/bin/python bench/ledger.py [--ops N]

Each process runs N sequential reserve+complete pairs on fresh keys (the write path of one keyed call).
Rows: ``memory:`` in one process; ``sqlite:`` in one process and in 4 processes sharing one file
(WAL, synchronous=FULL, so every completion is synced to disk). ops/s is the total pairs over the
wall time from a common start; p50/p99 are per-pair latencies across every process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path
from queue import Queue

import anyio

from anvil.ledger.registry import open_ledger


async def _pairs(uri: str, ops: int, prefix: str) -> list[float]:
    ledger = open_ledger(uri)
    latencies: list[float] = []
    try:
        await ledger.reserve(f"{prefix}-warmup", "fp")  # opens the file and creates the table
        for index in range(ops):
            key = f"{prefix}-{index}"
            started = time.perf_counter()
            await ledger.reserve(key, "fingerprint")
            await ledger.complete(key, {"id": index, "status": "succeeded"}, 201)
            latencies.append(time.perf_counter() - started)
    finally:
        await ledger.close()
    return latencies


Timing = tuple[float, float, list[float]]  # start, end, per-pair latencies


def _worker(uri: str, ops: int, prefix: str, barrier: Barrier, results: Queue[Timing]) -> None:
    barrier.wait()
    started = time.perf_counter()
    latencies = anyio.run(_pairs, uri, ops, prefix)
    results.put((started, time.perf_counter(), latencies))


def _measure(uri: str, ops: int, processes: int) -> tuple[float, float, float]:
    if processes == 1:
        started = time.perf_counter()
        latencies = anyio.run(_pairs, uri, ops, "solo")
        wall = time.perf_counter() - started
    else:
        spawn = multiprocessing.get_context("spawn")
        barrier = spawn.Barrier(processes)
        results = spawn.Queue()
        workers = [spawn.Process(target=_worker, args=(uri, ops, f"p{n}", barrier, results)) for n in range(processes)]
        for worker in workers:
            worker.start()
        collected = [results.get(timeout=600) for _ in workers]
        for worker in workers:
            worker.join()
        wall = max(end for _, end, _ in collected) - min(start for start, _, _ in collected)
        latencies = [value for _, _, values in collected for value in values]
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    return len(latencies) / wall, p50, p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=2000, help="reserve+complete pairs per process (default 2000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="anvil-ledger-bench-") as folder:
        rows = [
            ("memory:", 1, "memory:"),
            ("sqlite:", 1, f"sqlite:///{Path(folder) / 'solo.db'}"),
            ("sqlite:", 4, f"sqlite:///{Path(folder) / 'shared.db'}"),
        ]
        print(f"{'backend':<8} {'processes':>9} {'ops/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
        for name, processes, uri in rows:
            rate, p50, p99 = _measure(uri, args.ops, processes)
            print(f"{name:<8} {processes:>9} {rate:>9.0f} {p50:>8.3f} {p99:>8.3f}")


if __name__ == "__main__":
    main()
