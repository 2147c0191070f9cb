"""What tracing costs: reads and keyed writes with ``ANVIL_OTEL_EXPORTER=otlp`` against ``none``, one run.

    .venv/bin/python bench/otel.py [--calls N] [--rounds R] [--warmup W] [--baseline SRC] [--other SRC]

Processes on loopback: the payments mock (``bench/gateway.py --mock payments``), three ``anvil serve`` gateways
(four with ``--baseline``) on the compiled payments example (env ``prod``, a SQLite ledger each, inbound auth
``none``), this client, and an
OTLP/HTTP receiver in a thread of this process (it reads each export, counts its bytes and answers 200; it does
not decode, so the client's CPU stays with the client):

* ``none`` - no exporter: nothing traced, no OpenTelemetry import;
* ``otlp`` - every call traced and exported to the receiver (``OTEL_BSP_SCHEDULE_DELAY=1000``, default batches);
* ``otlp, black hole`` - exported to a socket that never accepts (``OTEL_EXPORTER_OTLP_TIMEOUT=2000``): what a
  down collector costs a call (nothing, is the claim), and the drops it counts;
* with ``--other SRC`` (another checkout's ``src``), ``otlp, other``: that code exporting to the same receiver,
  so one run compares two ways of exporting (e.g. commit 8b64a0d, whose OTLP/HTTP spans went through the
  SDK's ``OTLPSpanExporter``, against anvil's own encoder here);
* with ``--baseline SRC`` (another checkout's ``src``, e.g. the revision before tracing), ``baseline``: that
  code, untraced, so ``none`` shows what the tracing seam costs a gateway that traces nothing.

Each row runs in ``--rounds`` rounds visiting the gateways in turn (a machine whose load changes weighs on every
column alike) with the official MCP client (:class:`anvil.client.AnvilClient`, one session per gateway):
``payments_get_customer`` (a read) and ``payments_create_refund`` with ``confirm`` and a fresh
``_meta.idempotency_key`` per call (reserve, upstream, complete). Figures: p50/p99 latency and the gateway's
CPU per call from ``/proc/PID/task/*/schedstat`` (every thread's, the export thread's shown apart). The target:
at most 10 % more server CPU per call with tracing on, and no cost with ``none``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway import TOKEN, _compile, _percentile, _start, _stop, _token_variable

from anvil.client import AnvilClient

REPO = Path(__file__).resolve().parent.parent
REFUND = {"payment_id": "pay_123", "amount": 1, "currency": "EUR", "confirm": True}
COLUMNS = ("none", "otlp", "otlp, black hole")


class _Receiver:
    """An OTLP/HTTP sink: reads each POST, counts requests and bytes, answers 200 with an empty message."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                self.rfile.read(size)
                outer.requests += 1
                outer.bytes += size
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def _black_hole() -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """The process's CPU time: its event loop's thread and every other thread's (the export thread's), from
    ``/proc/PID/task/*/schedstat`` (nanoseconds, where ``stat`` counts 10 ms ticks)."""
    main = others = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            spent = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if task.name == str(pid):
            main += spent
        else:
            others += spent
    return main / 1e9, others / 1e9


async def _row(
    calls: dict[str, Callable[[int], Awaitable[None]]],
    pids: dict[str, int],
    count: int,
    rounds: int,
    settle_s: float = 2.5,
) -> dict[str, tuple[list[float], float, float]]:
    """Per gateway: latencies (ms), server CPU per call (ms) and the part of it other threads spent (the
    export thread), over ``rounds`` interleaved rounds (each visits every gateway, in a rotating order, so a
    burst of load elsewhere on the machine weighs on every column alike).

    The CPU is each process's from before the first round to ``settle_s`` after the last: the export thread
    sends a call's spans up to ``OTEL_BSP_SCHEDULE_DELAY`` later, often while another gateway's round runs,
    so counting only a gateway's own rounds would miss most of it (an idle gateway spends next to nothing)."""
    latencies: dict[str, list[float]] = {name: [] for name in calls}
    index = 0
    names = list(calls)
    per_round = max(1, count // rounds)
    before = {name: _cpu_seconds(pids[name]) for name in names}
    for number in range(rounds):
        for name in names[number % len(names) :] + names[: number % len(names)]:
            for _ in range(per_round):
                started = time.perf_counter()
                await calls[name](index)
                latencies[name].append((time.perf_counter() - started) * 1000)
                index += 1
    await asyncio.sleep(settle_s)
    after = {name: _cpu_seconds(pids[name]) for name in names}
    main = {name: after[name][0] - before[name][0] for name in names}
    others = {name: after[name][1] - before[name][1] for name in names}
    return {
        name: (values, (main[name] + others[name]) * 1000 / len(values), others[name] * 1000 / len(values))
        for name, values in latencies.items()
    }


def _table(rows: dict[str, dict[str, tuple[list[float], float, float]]]) -> str:
    lines = [
        "| call | gateway | n | p50 ms | p99 ms | server CPU / call ms | of it, other threads | CPU vs none |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row, found in rows.items():
        base_cpu = found["none"][1]
        for name, (values, cpu, others) in found.items():
            ratio = f"{(cpu / base_cpu - 1) * 100:+.1f} %" if name not in ("none", "baseline") and base_cpu else ""
            if name == "otlp" and "otlp, other" in found:  # this tree's export against the other's
                ratio += f" ({(cpu / found['otlp, other'][1] - 1) * 100:+.1f} % vs other)"
            if name == "none" and "baseline" in found:  # what the seam costs untraced
                ratio = f"{(cpu / found['baseline'][1] - 1) * 100:+.1f} % (vs baseline)"
            p50, p99 = _percentile(values, 0.5), _percentile(values, 0.99)
            shown = f"| {row} | {name} | {len(values)} | {p50:.2f} | {p99:.2f} | {cpu:.3f} | {others:.3f} | {ratio} |"
            lines.append(shown)
    return "\n".join(lines)


async def _measure(urls: dict[str, str], pids: dict[str, int], args: argparse.Namespace) -> str:
    async with AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(AnvilClient.http(url)) for name, url in urls.items()}

        def reader(client: AnvilClient) -> Callable[[int], Awaitable[None]]:
            async def read(_: int) -> None:
                await client.call("payments_get_customer", {"customer_id": "cus_123"})

            return read

        def writer(name: str, client: AnvilClient) -> Callable[[int], Awaitable[None]]:
            tag = f"{name.replace(' ', '').replace(',', '-')}-{time.monotonic_ns()}"

            async def write(index: int) -> None:
                await client.call("payments_create_refund", REFUND, idempotency_key=f"{tag}-{index}")

            return write

        reads = {name: reader(client) for name, client in clients.items()}
        writes = {name: writer(name, client) for name, client in clients.items()}
        await _row(reads, pids, args.warmup * len(reads), 1)
        rows = {"read": await _row(reads, pids, args.calls, args.rounds)}
        rows["keyed write"] = await _row(writes, pids, args.calls, args.rounds)
    return _table(rows)


def _metric(base: str, name: str) -> float:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=600, help="measured calls per row and gateway (default 600)")
    parser.add_argument("--rounds", type=int, default=24, help="rounds each row is split in (default 24)")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up reads per gateway (default 50)")
    parser.add_argument("--baseline", metavar="SRC", help="also serve another checkout's src, untraced")
    parser.add_argument("--other", metavar="SRC", help="also serve another checkout's src, exporting (otlp)")
    args = parser.parse_args(argv)
    gateways = 3 + bool(args.baseline) + bool(args.other)
    if not 1 <= args.calls <= 5000 // gateways:
        parser.error(f"--calls must be 1..{5000 // gateways} (each write refunds 1 of the mock payment's 5000)")
    receiver = _Receiver()
    with tempfile.TemporaryDirectory(prefix="anvil-bench-otel-") as scratch, ExitStack() as stack:
        folder = Path(scratch)
        bundle = _compile(folder / "workspace")["payments"]
        base_env = {key: value for key, value in os.environ.items() if not key.startswith(("ANVIL_", "OTEL_"))}
        mock_process, mock = _start(
            [sys.executable, str(REPO / "bench" / "gateway.py"), "--mock", "payments"], base_env
        )
        stack.callback(_stop, mock_process)
        hole = stack.enter_context(_black_hole())
        exporters: dict[str, dict[str, str]] = {
            **({"baseline": {"PYTHONPATH": str(Path(args.baseline).resolve())}} if args.baseline else {}),
            "none": {},
            "otlp": {
                "ANVIL_OTEL_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                "OTEL_BSP_SCHEDULE_DELAY": "1000",
            },
            **(
                {
                    "otlp, other": {
                        "PYTHONPATH": str(Path(args.other).resolve()),
                        "ANVIL_OTEL_EXPORTER": "otlp",
                        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                        "OTEL_BSP_SCHEDULE_DELAY": "1000",
                    }
                }
                if args.other
                else {}
            ),
            "otlp, black hole": {
                "ANVIL_OTEL_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": hole,
                "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
            },
        }
        urls: dict[str, str] = {}
        pids: dict[str, int] = {}
        for name, extra in exporters.items():
            env = {
                **base_env,
                "ANVIL_ENV": "prod",
                "ANVIL_BASE_URL": mock,
                "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
                "ANVIL_LEDGER": f"sqlite:///{folder / (name.replace(' ', '').replace(',', '-') + '.db')}",
                _token_variable(bundle): TOKEN,
                **extra,
            }
            command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", "127.0.0.1:0"]
            process, url = _start(command, env)
            stack.callback(_stop, process)
            urls[name], pids[name] = url, process.pid
        table = asyncio.run(_measure(urls, pids, args))
        time.sleep(2.5)  # the last batches
        dropped = _metric(urls["otlp, black hole"].removesuffix("/mcp"), "anvil_telemetry_spans_dropped_total")
        lost = _metric(urls["otlp"].removesuffix("/mcp"), "anvil_telemetry_spans_dropped_total")
    receiver.close()
    print(table)
    print()
    print(
        f"receiver: {receiver.requests} OTLP exports, {receiver.bytes / 1024:.0f} KiB; spans dropped: "
        f"{lost:.0f} (otlp), {dropped:.0f} (black hole, counted in anvil_telemetry_spans_dropped_total)"
    )
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (shared: figures under load)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
