"""Ledger throughput: reserve + complete per second and per-pair latency, per backend, 1 and 4 processes.

    .venv/bin/python bench/ledger.py [--ops N] [--postgres URL] [--firestore HOST:PORT]

Each process runs N sequential reserve+complete pairs on fresh keys (the ledger's share of one keyed
write). Rows: ``memory:`` in one process; ``sqlite:`` (WAL; the reservation synced, the completion not
waited on); ``sqlite-n``, the ``?synchronous=normal`` opt-in (the reservation not synced either:
process-crash-safe, not power-loss-safe); PostgreSQL (``--postgres``, default
``$ANVIL_TEST_POSTGRES_URL``) and the Firestore emulator (``--firestore``, default
``$FIRESTORE_EMULATOR_HOST``) in one process and in 4 processes sharing one store. A backend whose
service is not given is shown as skipped. ops/s is the total pairs over the wall time from a common
start; p50/p99 are per-pair latencies across every process.

A second table runs the executor itself (``anvil.runtime.executor.execute``, env ``prod``) against the
payments mock on loopback, sequentially: a read (``payments.customers.get``) and a keyed write
(``payments.refunds.create`` with a fresh key per call, so each one reserves and completes a row), and
prints keyed write / read at p50 per backend (target: at most 1.2x, shared/spec/performance.md; held on
SQLite and PostgreSQL).
Loopback only; every run uses a fresh table/collection.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from multiprocessing.synchronize import Barrier
from pathlib import Path
from queue import Queue

import anyio
import httpx

from anvil.ledger.registry import open_ledger

REPO = Path(__file__).resolve().parent.parent


async def _pairs(uri: str, ops: int, prefix: str) -> list[float]:
    ledger = open_ledger(uri)
    latencies: list[float] = []
    try:
        await ledger.initialize()
        await ledger.reserve(f"{prefix}-warmup", "fp")  # opens the file, the pool or the channel
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


def _worker(uri: str, ops: int, prefix: str, barrier: Barrier, results: Queue[Timing], emulator: str) -> None:
    if emulator:
        os.environ["FIRESTORE_EMULATOR_HOST"] = emulator
    barrier.wait()
    started = time.perf_counter()
    latencies = anyio.run(_pairs, uri, ops, prefix)
    results.put((started, time.perf_counter(), latencies))


def _measure(uri: str, ops: int, processes: int, emulator: str) -> tuple[float, float, float]:
    if processes == 1:
        started = time.perf_counter()
        latencies = anyio.run(_pairs, uri, ops, "solo")
        wall = time.perf_counter() - started
    else:
        spawn = multiprocessing.get_context("spawn")
        barrier = spawn.Barrier(processes)
        results = spawn.Queue()
        workers = [
            spawn.Process(target=_worker, args=(uri, ops, f"p{n}", barrier, results, emulator))
            for n in range(processes)
        ]
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


def _serve_mock() -> tuple[str, object]:
    """The payments mock under uvicorn on a free loopback port, in a daemon thread."""
    import importlib.util
    import socket
    import threading

    import uvicorn

    spec = importlib.util.spec_from_file_location("bench_payments_mock", REPO / "examples/payments/mock_upstream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(module.create_app(module.State()), log_level="error", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


async def _executor_ratio(uri: str, calls: int, bundle: Path, upstream: str) -> tuple[float, float]:
    from anvil.bundle.read import read_bundle
    from anvil.runtime.context import CallOptions, RuntimeContext
    from anvil.runtime.credentials import credential_profile, expected_env
    from anvil.runtime.executor import execute

    document = read_bundle(bundle)
    ops = {op.id: op for op in document.operations}
    read, write = ops["payments.customers.get"], ops["payments.refunds.create"]
    credentials = {
        name: "bench-token"
        for op in (read, write)
        for name in expected_env(op.auth, credential_profile("default", op.auth))
    }
    ledger = open_ledger(uri)
    await ledger.initialize()
    try:
        async with httpx.AsyncClient() as client:
            context = RuntimeContext(
                service_id=document.service.id,
                base_url=upstream,
                client=client,
                env="dev" if uri == "memory:" else "prod",  # prod refuses required-key writes without durability
                allowed_hosts=("127.0.0.1",),
                credentials=credentials,
                ledger=ledger,
            )
            timings: dict[str, list[float]] = {"read": [], "write": []}
            for index in range(calls + 20):
                started = time.perf_counter()
                got = await execute(read, {"customer_id": "cus_123"}, context)
                read_s = time.perf_counter() - started
                refund = {"payment_id": "pay_123", "amount": 1, "currency": "EUR", "confirm": True}
                started = time.perf_counter()
                done = await execute(write, refund, context, CallOptions(idempotency_key=f"bench-{uuid.uuid4().hex}"))
                write_s = time.perf_counter() - started
                assert got.kind == "success" and done.kind == "success", (got.code, done.code)
                if index >= 20:  # warm-up
                    timings["read"].append(read_s)
                    timings["write"].append(write_s)
    finally:
        await ledger.close()
    return statistics.median(timings["read"]) * 1000, statistics.median(timings["write"]) * 1000


def _ratio_table(calls: int, postgres: str, folder: Path) -> None:
    from anvil.cli.compile import compile_bundle

    bundle = folder / "payments"
    source = REPO / "examples" / "payments"
    compile_bundle(
        source / "openapi.yaml", out=bundle, manifest=source / "anvil.yaml", service_id="payments", root=REPO
    )
    upstream, server = _serve_mock()
    rows = [
        ("memory", "memory:"),
        ("sqlite", f"sqlite:///{folder / 'ratio.db'}"),
        ("sqlite-n", f"sqlite:///{folder / 'ratio-n.db'}?synchronous=normal"),
    ]
    if postgres:
        rows.append(("postgresql", _namespaced(postgres, f"ratio-{uuid.uuid4().hex[:8]}")))
    print()
    print(f"{'executor':<11} {'read p50':>9} {'write p50':>10} {'write/read':>11}")
    try:
        for name, uri in rows:
            read_ms, write_ms = anyio.run(_executor_ratio, uri, calls, bundle, upstream)
            print(f"{name:<11} {read_ms:>9.3f} {write_ms:>10.3f} {write_ms / read_ms:>10.2f}x")
    finally:
        server.should_exit = True  # type: ignore[attr-defined]


def _namespaced(base: str, namespace: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}namespace={namespace}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=1000, help="reserve+complete pairs per process (default 1000)")
    parser.add_argument("--postgres", default=os.environ.get("ANVIL_TEST_POSTGRES_URL", ""), help="a test database URL")
    parser.add_argument("--firestore", default=os.environ.get("FIRESTORE_EMULATOR_HOST", ""), help="emulator HOST:PORT")
    parser.add_argument("--calls", type=int, default=300, help="executor calls per kind (default 300)")
    args = parser.parse_args()
    if args.firestore:
        os.environ["FIRESTORE_EMULATOR_HOST"] = args.firestore
    run = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="anvil-ledger-bench-") as folder:
        rows: list[tuple[str, int, str | None]] = [
            ("memory", 1, "memory:"),
            ("sqlite", 1, f"sqlite:///{Path(folder) / 'solo.db'}"),
            ("sqlite", 4, f"sqlite:///{Path(folder) / 'shared.db'}"),
            ("sqlite-n", 1, f"sqlite:///{Path(folder) / 'solo-n.db'}?synchronous=normal"),
        ]
        for processes in (1, 4):
            pg = _namespaced(args.postgres, f"bench-{run}-{processes}") if args.postgres else None
            rows.append(("postgresql", processes, pg))
        for processes in (1, 4):
            fs = f"firestore://demo-bench/(default)/bench-{run}-{processes}" if args.firestore else None
            rows.append(("firestore", processes, fs))
        print(f"{'backend':<11} {'processes':>9} {'ops/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
        for name, processes, uri in rows:
            if uri is None:
                print(f"{name:<11} {processes:>9} {'skipped (no service given)':>27}")
                continue
            rate, p50, p99 = _measure(uri, args.ops, processes, args.firestore)
            print(f"{name:<11} {processes:>9} {rate:>9.0f} {p50:>8.3f} {p99:>8.3f}")
        _ratio_table(args.calls, args.postgres, Path(folder))


if __name__ == "__main__":
    main()
