"""FastMCP ``from_openapi`` and this gateway side by side, in one run, on the payments spec and its mock.

    .venv/bin/python bench/compare.py [--calls N] [--official-calls N] [--seconds S] [--rss-calls N]
                                      [--cold-runs N] [--rounds R] [--skip-workers]
                                      [--postgres URL] [--sqlite-normal] [--memory-ledger]
                                      [--official-only] [--ledger-dir DIR]

``make bench`` runs it. The first run makes ``.bench-venv/`` (gitignored) and installs FastMCP into it
from PyPI with pip; later runs reuse it. Processes, all on 127.0.0.1:

* the payments mock (``bench/gateway.py --mock payments``), the one upstream every server calls;
* FastMCP: ``FastMCP.from_openapi(spec, client=httpx2.AsyncClient(base_url=mock))`` served over
  Streamable HTTP in its stateless JSON mode (its cheapest), from ``.bench-venv``;
* this gateway: ``python -m anvil serve BUNDLE --http 127.0.0.1:PORT`` (env ``prod``, a SQLite ledger
  in a scratch folder of the checkout, or of ``--ledger-dir``, so its syncs reach a real disk; the
  output's last line names the folder and its filesystem type,
  inbound auth ``none``), and the same with ``--workers 2``; with ``--postgres URL`` also one worker on
  a PostgreSQL ledger (a fresh namespace of that test database; by default ``$ANVIL_TEST_POSTGRES_URL``
  when it is set, as ``.ci/services.sh`` sets it), and with ``--sqlite-normal`` one
  worker on the SQLite ``?synchronous=normal`` opt-in (reservations not synced: process-crash-safe,
  not power-loss-safe), and with ``--memory-ledger`` one worker in env ``dev`` on the per-process
  ``memory:`` ledger (no I/O at all: what a keyed write costs when the ledger costs nothing).

Clients, both in this process: the *light* client is a minimal raw JSON-RPC client (one keep-alive
HTTP/1.1 connection per session, requests pre-encoded, a hand-rolled response reader), so its rows
are bound by the server; the *official* client is ``mcp.client.Client(url, mode="legacy")``.

All servers run at once; each row is split into ``--rounds`` rounds that visit the servers in turn, so
a shared machine whose load changes during the run weighs on every column alike. Rows (medians; each
loop is bounded by its count and by ``--max-seconds``):

* cold start: spawn to the first answered ``tools/list`` (light client polling), median of
  ``--cold-runs`` spawns (this gateway's package is byte-compiled first, as a wheel install leaves it);
* read latency p50/p99 (``GET /customers/cus_123`` through each server's tool), sequential, light and
  official client; server CPU per call from ``/proc/PID/stat`` (utime + stime, summed over the
  workers) over the light sequential loop;
* throughput: 8 light sessions for ``--seconds``, calls/s and server CPU per call under that load;
* keyed write: ``createRefund`` with a fresh ``_meta.idempotency_key`` per call (this gateway reserves
  and completes a SQLite ledger row each time), sequential p50, server CPU per call and its ratio to
  the read p50;
* the mock alone: the same light connection sends the read's ``GET`` and the write's ``POST`` (fresh
  ``Idempotency-Key``) straight to the mock in the same rounds. The mock's POST costs more than its
  GET, which weighs on every server's write / read ratio (most on the fastest read), so the table
  also gives each server's *own* write / read: its p50s less the mock's direct p50s;
* this disk's synced commit: in the same rounds, this process times SQLite inserts into a WAL file
  in the scratch folder with ``synchronous=FULL`` and with ``NORMAL``; the difference of the p50s is
  what one durable reservation pays the disk (its flush), which no code of ours can remove. For the
  columns whose ledger syncs a reservation (SQLite; PostgreSQL when its server runs with ``fsync`` and
  ``synchronous_commit`` on, else the column says ``server fsync off``) the table also gives write /
  read with that one synced commit taken off the write p50;
* official client: the read and the keyed write (fresh ``_meta.idempotency_key`` per call), p50s and
  write / read (the issue's target is the official client's), in paired rounds: alternating blocks of
  10 reads and 10 writes per server, reads first in one round and writes first in the next, each
  block after one unrecorded call (the first read after writes would carry the last write's leftover
  work; see :func:`_official_rows`). ``--official-only`` measures just these rows (and cold start);
* search, budget cut, tracing (``bench/compare_paths.py``; ``--skip-paths`` leaves them out): more
  one-worker gateways, one in search mode (an ``anvil_search_tools`` call), one with a response budget
  that cuts the customer read, each timed in the same rounds as the plain read of the anvil column (p50,
  server CPU per call, p50 over the read's); and one exporting traces to a loopback OTLP sink with its
  untraced twin (the customer read), measured as a pair in alternating rounds (p50s, every thread's CPU
  per call over the whole row, the traced CPU over the twin's; ``bench/compare_paths.py`` alone runs
  just this pair);
* memory: server RSS (``/proc/PID/status``, summed over workers) after warm-up and after
  ``--rss-calls`` more calls over 8 sessions, and the growth.

Ratios are this gateway's figure over FastMCP's; the targets come from shared/spec/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml
from compare_paths import (
    BUDGET_TOKENS,
    PAIR,
    OtlpSink,
    PathServer,
    choose_calls,
    measure_pair,
    measure_paths,
    path_servers,
)

REPO = Path(__file__).resolve().parent.parent
PAYMENTS = REPO / "examples" / "payments"
BENCH_VENV = REPO / ".bench-venv"
TOKEN = "bench-token"
SESSIONS = 8
#: A connection idle this long is replaced before its next request (uvicorn closes one after 5 s).
IDLE_RECONNECT_S = 4.0
FASTMCP_REQUIREMENT = "fastmcp>=4.2,<5"
FASTMCP_SERVER = """
import json, sys
import httpx2
from fastmcp import FastMCP

spec_path, base_url, port, token, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
with open(spec_path, encoding="utf-8") as handle:
    spec = json.load(handle)
client = httpx2.AsyncClient(base_url=base_url, headers={"authorization": f"Bearer {token}"}, timeout=30)
server = FastMCP.from_openapi(spec, client=client, name="payments")
server.run(
    transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False, log_level="warning",
    stateless_http=mode == "stateless", json_response=mode == "stateless",
)
"""


# --- processes ---------------------------------------------------------------------------------------


#: Ports already handed out in this run: the kernel may offer a port again once its probe socket
#: closes, before the server it was meant for has bound it (two servers then share one port and the
#: rows measure the wrong one).
_HANDED_OUT: set[int] = set()


def _free_port() -> int:
    """A loopback port nothing listens on now and no earlier call of this run handed out."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def _ensure_fastmcp() -> Path:
    """``.bench-venv/bin/python`` with FastMCP installed (made on first use with venv and pip)."""
    python = BENCH_VENV / "bin" / "python"
    if python.exists():
        probe = subprocess.run([str(python), "-c", "import fastmcp, httpx2"], capture_output=True, check=False)
        if probe.returncode == 0:
            return python
    print("bench: installing FastMCP into .bench-venv (first run only) ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", FASTMCP_REQUIREMENT], check=True)
    return python


def _pids(process: subprocess.Popen[bytes]) -> list[int]:
    """The server's processes: itself, plus its children when it supervises workers."""
    try:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    except OSError:
        children = []
    return [int(pid) for pid in children] or [process.pid]


def _cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def _mock() -> Iterator[str]:
    command = [sys.executable, str(REPO / "bench" / "gateway.py"), "--mock", "payments"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise SystemExit("the payments mock did not start")
        yield str(json.loads(line)["url"])
    finally:
        _stop(process)


# --- the light client ----------------------------------------------------------------------------


class LightSession:
    """A minimal JSON-RPC client over one keep-alive HTTP/1.1 connection (Content-Length or chunked)."""

    def __init__(self, port: int, path: str = "/mcp") -> None:
        self.port = port
        self.path = path
        self.session_id: str | None = None
        self.version: str | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next = 0
        self._used = math.inf

    async def open(self) -> None:
        await self.connect()
        answer = await self.rpc(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench-light", "version": "1"},
            },
        )
        self.version = answer.get("result", {}).get("protocolVersion", "2025-11-25")
        await self.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()

    async def post(self, body: bytes) -> tuple[int, bytes]:
        assert self._reader is not None and self._writer is not None
        headers = [
            f"POST {self.path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            f"Content-Length: {len(body)}",
        ]
        if self.session_id:
            headers.append(f"Mcp-Session-Id: {self.session_id}")
        if self.version:
            headers.append(f"Mcp-Protocol-Version: {self.version}")
        status, fields, payload = await self.exchange(headers, body)
        if "mcp-session-id" in fields:
            self.session_id = fields["mcp-session-id"]
        if status == 307 and "location" in fields:
            self.path = urlsplit(fields["location"]).path or "/"
            return await self.post(body)
        if fields.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in payload.decode().splitlines() if line.startswith("data:")]
            payload = (data[-1] if data else "").encode()
        return status, payload

    async def connect(self) -> None:
        """Open the keep-alive connection only (no MCP handshake: for plain HTTP to the mock)."""
        self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._used = time.monotonic()
        sock = self._writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def exchange(self, headers: list[str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send one request (its request line and headers given) and read the whole answer."""
        if time.monotonic() - self._used > IDLE_RECONNECT_S:
            # uvicorn closes a connection idle for 5 s (its keep-alive timeout), as other rows run:
            # a fresh connection, as any HTTP client opens in place of a stale one.
            await self.close()
            await self.connect()
        assert self._reader is not None and self._writer is not None
        self._writer.write(("\r\n".join(headers) + "\r\n\r\n").encode() + body)
        head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {}
        for line in lines[1:]:
            if ":" in line:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
        if "content-length" in fields:
            payload = await self._reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding") == "chunked":
            parts = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).strip(), 16)
                if size == 0:
                    await self._reader.readuntil(b"\r\n")
                    break
                parts.append(await self._reader.readexactly(size))
                await self._reader.readexactly(2)
            payload = b"".join(parts)
        else:
            payload = b""
        self._used = time.monotonic()
        return status, fields, payload

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        status, payload = await self.post(json.dumps(message).encode())
        if status != 200:
            raise RuntimeError(f"{method} answered HTTP {status}: {payload[:200]!r}")
        answer: dict[str, Any] = json.loads(payload)
        return answer


async def _checked_call(session: LightSession, name: str, arguments: dict[str, Any], meta: Any = None) -> None:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    answer = await session.rpc("tools/call", params)
    result = answer.get("result")
    if result is None or result.get("isError"):
        raise SystemExit(f"{name} failed: {json.dumps(answer)[:400]}")


class DirectClient:
    """The light client's HTTP/1.1 connection, speaking plain HTTP to the mock: the floor every server
    stands on (the read's GET and the write's POST with a fresh ``Idempotency-Key``)."""

    def __init__(self, mock_url: str) -> None:
        parts = urlsplit(mock_url)
        self.port = int(parts.port or 80)
        self.session = LightSession(self.port)
        self._refund = json.dumps({"amount": 1, "currency": "EUR"}).encode()

    async def read(self, _: int) -> None:
        status, _fields, _body = await self.session.exchange(
            ["GET /customers/cus_123 HTTP/1.1", f"Host: 127.0.0.1:{self.port}", f"Authorization: Bearer {TOKEN}"],
            b"",
        )
        if status != 200:
            raise SystemExit(f"direct GET answered {status}")

    async def write(self, index: int) -> None:
        headers = [
            "POST /payments/pay_123/refunds HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            f"Authorization: Bearer {TOKEN}",
            "Content-Type: application/json",
            f"Idempotency-Key: direct-{time.monotonic_ns()}-{index}",
            f"Content-Length: {len(self._refund)}",
        ]
        status, _fields, _body = await self.session.exchange(headers, self._refund)
        if status != 201:
            raise SystemExit(f"direct POST answered {status}")


# --- one server's measurements -----------------------------------------------------------------------


@dataclass
class Server:
    """One server under test: how to start it, and what it calls its tools."""

    label: str
    command: list[str]
    env: dict[str, str]
    port: int
    read: str = ""
    write: str = ""
    keyed: bool = False
    #: Its ledger syncs every reservation to this machine's disk before the upstream call.
    synced: bool = False
    process: subprocess.Popen[bytes] | None = None
    figures: dict[str, float] = field(default_factory=dict)


def _synced_commits(path: Path, count: int) -> tuple[list[float], list[float]]:
    """``count`` timed one-row inserts into the WAL file ``path`` with ``synchronous=FULL``, then as
    many with ``NORMAL``, in milliseconds: the disk's flush is the difference."""
    import sqlite3

    timed: dict[str, list[float]] = {"FULL": [], "NORMAL": []}
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS probe (doc_id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID")
        for level, found in timed.items():
            conn.execute(f"PRAGMA synchronous = {level}")
            for index in range(count):
                began = time.perf_counter()
                conn.execute("INSERT INTO probe VALUES (?, ?)", (f"{level}-{time.monotonic_ns()}-{index}", "x" * 200))
                found.append((time.perf_counter() - began) * 1000)
        conn.execute("DELETE FROM probe")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return timed["FULL"], timed["NORMAL"]


def _postgres_syncs(url: str) -> bool:
    """Whether the PostgreSQL server at ``url`` flushes a commit to its disk (``fsync`` on and
    ``synchronous_commit`` not ``off``; the test servers of ``.ci/services.sh`` run with both off)."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            fsync = conn.execute("SHOW fsync").fetchone()
            commit = conn.execute("SHOW synchronous_commit").fetchone()
    except psycopg.Error as exc:
        raise SystemExit(
            f"bench: the PostgreSQL server of --postgres cannot be asked ({type(exc).__name__}); "
            "check the URL, or pass --postgres '' to leave the column out"
        ) from None
    return bool(fsync and commit and fsync[0] == "on" and commit[0] != "off")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


async def _cold_start(server: Server, deadline_s: float = 60.0) -> float:
    started = time.perf_counter()
    server.process = subprocess.Popen(server.command, env=server.env, stdout=subprocess.DEVNULL)
    while time.perf_counter() - started < deadline_s:
        if server.process.poll() is not None:
            raise SystemExit(f"{server.label} exited at start-up ({server.process.returncode})")
        session = LightSession(server.port)
        try:
            await session.open()
            listed = await session.rpc("tools/list")
            elapsed = (time.perf_counter() - started) * 1000
            _name_tools(server, listed["result"]["tools"])
            return elapsed
        except (OSError, RuntimeError, asyncio.IncompleteReadError, KeyError):
            await asyncio.sleep(0.005)
        finally:
            await session.close()
    raise SystemExit(f"{server.label} did not answer tools/list within {deadline_s} s")


def _name_tools(server: Server, tools: list[dict[str, Any]]) -> None:
    for tool in tools:
        folded = tool["name"].lower().replace("_", "")
        if "getcustomer" in folded:
            server.read = tool["name"]
        elif "createrefund" in folded:
            server.write = tool["name"]
    if not server.read or not server.write:
        raise SystemExit(f"{server.label} lists no customer read / refund write tool: {[t['name'] for t in tools]}")


async def _sequential(
    call: Callable[[int], Awaitable[None]], calls: int, warmup: int, budget_s: float
) -> tuple[list[float], int]:
    for index in range(warmup):
        await call(-1 - index)
    latencies: list[float] = []
    deadline = time.perf_counter() + budget_s
    for index in range(calls):
        began = time.perf_counter()
        await call(index)
        latencies.append((time.perf_counter() - began) * 1000)
        if time.perf_counter() > deadline:
            break
    return latencies, len(latencies)


async def _load(server: Server, seconds: float, max_calls: int) -> tuple[int, float]:
    """8 light sessions calling the read tool until ``seconds`` pass or ``max_calls`` are made."""
    sessions = [LightSession(server.port) for _ in range(SESSIONS)]
    for session in sessions:
        await session.open()
    done = 0
    stop_at = time.perf_counter() + seconds

    async def worker(session: LightSession) -> None:
        nonlocal done
        while time.perf_counter() < stop_at and done < max_calls:
            await _checked_call(session, server.read, {"customer_id": "cus_123"})
            done += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker(session) for session in sessions))
    elapsed = time.perf_counter() - began
    for session in sessions:
        await session.close()
    return done, elapsed


async def _start_path(server: PathServer, command: list[str], deadline_s: float = 60.0) -> list[dict[str, Any]]:
    """Start a configured gateway; its tools once it answers ``tools/list``."""
    server.process = subprocess.Popen(command, env=server.env, stdout=subprocess.DEVNULL)
    started = time.perf_counter()
    while time.perf_counter() - started < deadline_s:
        if server.process.poll() is not None:
            raise SystemExit(f"anvil, {server.key}: exited at start-up ({server.process.returncode})")
        session = LightSession(server.port)
        try:
            await session.open()
            tools: list[dict[str, Any]] = (await session.rpc("tools/list"))["result"]["tools"]
            return tools
        except (OSError, RuntimeError, asyncio.IncompleteReadError, KeyError):
            await asyncio.sleep(0.02)
        finally:
            await session.close()
    raise SystemExit(f"anvil, {server.key}: did not answer tools/list within {deadline_s} s")


async def _measure_paths(main: Server, paths: list[tuple[PathServer, list[str]]], args: argparse.Namespace) -> None:
    """The search, budget-cut and tracing rows (bench/compare_paths.py), into ``main``'s figures."""
    sessions: dict[str, Any] = {}
    for server, command in paths:
        choose_calls(server, await _start_path(server, command), main.read)
        sessions[server.key] = session = LightSession(server.port)
        await session.open()
    reference = LightSession(main.port)
    await reference.open()
    await _sequential(lambda _: _checked_call(reference, main.read, {"customer_id": "cus_123"}), 0, 30, 60)
    figures, read_p50 = await measure_paths(
        [server for server, _ in paths if server.key not in PAIR],
        sessions,
        lambda _: _checked_call(reference, main.read, {"customer_id": "cus_123"}),
        lambda server: _cpu_seconds([server.process.pid]) if server.process is not None else 0.0,
        _sequential,
        _percentile,
        max(30, args.calls // 2),
        args.rounds,
        args.max_seconds,
        _checked_call,
    )
    main.figures["paths_read_p50"] = read_p50
    for key, found in figures.items():
        main.figures[f"{key}_p50"] = found["p50"]
        main.figures[f"{key}_cpu_ms"] = found["cpu_ms"]
        main.figures[f"{key}_over_read"] = found["over_read"]
    await _measure_tracing(main, paths, sessions, args)
    for session in (*sessions.values(), reference):
        await session.close()


#: Calls recorded per block of the official-client rows (each block starts with one unrecorded call).
OFFICIAL_BLOCK: Final = 10


async def _official_rows(
    servers: list[Server], args: argparse.Namespace, mock_url: str, probe: Path, floor: dict[str, float]
) -> None:
    """The official client's read and keyed write p50s, and write / read, in paired rounds.

    Each server gets ``--official-calls`` reads and as many writes, in blocks of :data:`OFFICIAL_BLOCK`:
    every round visits the servers in turn and runs one read block and one write block on each, reads
    first in even rounds and writes first in odd ones, so a machine whose load changes weighs on both
    kinds alike. Each block starts with one unrecorded call: the first read after writes would carry
    the last write's own leftover work (its closed connection, the spare it opens after its answer,
    the WAL it grew), which belongs to the write; the first write after reads has none of the write
    before's to carry. Inside a block each call follows one of its kind, as in a steady stream of
    them; a call-by-call interleaving instead moves part of each write's cost onto the read after it.
    The mock's payment is reset before every round (each write refunds 1 of its 5000), and this disk's
    synced and unsynced commit are timed on ``probe`` in every round (``floor``'s ``official_full_p50``
    and ``official_normal_p50``): what a reservation's sync cost while these rows ran.
    """
    import httpx
    from mcp.client import Client

    per_server = max(1, args.official_calls)
    rounds = max(1, math.ceil(per_server / OFFICIAL_BLOCK))
    reads: dict[str, list[float]] = {server.label: [] for server in servers}
    writes: dict[str, list[float]] = {server.label: [] for server in servers}
    commits: tuple[list[float], list[float]] = ([], [])
    async with contextlib.AsyncExitStack() as stack:
        calls: dict[str, tuple[Callable[[int], Awaitable[None]], Callable[[int], Awaitable[None]]]] = {}
        for server in servers:
            client = await stack.enter_async_context(Client(f"http://127.0.0.1:{server.port}/mcp", mode="legacy"))
            calls[server.label] = _official_calls(server, client)
        for server in servers:  # warm-up: both kinds, interleaved
            read, write = calls[server.label]
            for index in range(20):
                await read(-1 - index)
                await write(-1 - index)
        mock = await stack.enter_async_context(httpx.AsyncClient(base_url=mock_url))
        for round_index in range(rounds):
            await mock.post("/__reset")
            full, normal = _synced_commits(probe, 5)
            commits[0].extend(full)
            commits[1].extend(normal)
            block = min(OFFICIAL_BLOCK, per_server - round_index * OFFICIAL_BLOCK)
            for server in servers:
                read, write = calls[server.label]
                kinds = [(read, reads), (write, writes)]
                for call, into in kinds if round_index % 2 == 0 else kinds[::-1]:
                    await call(-1)  # the block's unrecorded first call (see above)
                    found, _ = await _sequential(call, block, 0, args.max_seconds)
                    into[server.label] += found
    floor["official_full_p50"] = _percentile(commits[0], 0.5)
    floor["official_normal_p50"] = _percentile(commits[1], 0.5)
    for server in servers:
        server.figures["official_p50"] = _percentile(reads[server.label], 0.5)
        server.figures["official_write_p50"] = _percentile(writes[server.label], 0.5)
        server.figures["official_write_read"] = server.figures["official_write_p50"] / server.figures["official_p50"]


def _official_calls(
    server: Server, client: Any
) -> tuple[Callable[[int], Awaitable[None]], Callable[[int], Awaitable[None]]]:
    """The official client's read and write of ``server`` (a fresh ``_meta.idempotency_key`` per keyed write)."""
    refund: dict[str, Any] = {"payment_id": "pay_123", "amount": 1, "currency": "EUR"}
    if server.keyed:
        refund["confirm"] = True
    tag = f"official-{server.port}-{time.monotonic_ns()}"
    counter = iter(range(10**9))

    async def read(_: int) -> None:
        result = await client.call_tool(server.read, {"customer_id": "cus_123"})
        if result.is_error:
            raise SystemExit(f"{server.label}: official client read failed")

    async def write(_: int) -> None:
        meta = {"idempotency_key": f"{tag}-{next(counter)}"} if server.keyed else None
        result = await client.call_tool(server.write, refund, meta=meta)
        if result.is_error:
            raise SystemExit(f"{server.label}: official client write failed")

    return read, write


def _filesystem(path: Path) -> str:
    """The type of the filesystem ``path`` lives on (the longest mount point holding it, from
    ``/proc/mounts``), or ``unknown``."""
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return "unknown"
    real, best, kind = str(path.resolve()), "", "unknown"
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def _ledger_note(folder: Path, floor: dict[str, float]) -> str:
    """Where the SQLite ledgers (and the synced-commit probe) live, for the table's footer, with the
    probe's synced / unsynced commit p50s timed in the official-client rounds when they ran."""
    kind = _filesystem(folder)
    note = f"SQLite ledgers (env prod, synchronous=FULL reservations) and the synced-commit probe in {folder} ({kind})"
    if kind in ("tmpfs", "ramfs"):
        note += ": a memory filesystem, whose sync costs nothing; pass --ledger-dir on a disk for the real cost"
    if "official_full_p50" in floor:
        note += (
            f"; its synced / unsynced commit in the official-client rounds: p50 {floor['official_full_p50']:.3f} / "
            f"{floor['official_normal_p50']:.3f} ms"
        )
    return note + "."


async def _measure_tracing(
    main: Server, paths: list[tuple[PathServer, list[str]]], sessions: dict[str, Any], args: argparse.Namespace
) -> None:
    """The tracing row, paired with its untraced twin (:func:`compare_paths.measure_pair`), into ``main``'s figures:
    four times the rounds of the other rows, alternating, every thread's CPU over the whole row."""
    pair = {server.key: server for server, _ in paths if server.key in PAIR}
    if len(pair) == len(PAIR):
        main.figures.update(
            await measure_pair(
                (pair[PAIR[0]], pair[PAIR[1]]),
                sessions,
                _sequential,
                _percentile,
                max(30, args.calls // 2),
                4 * args.rounds,
                args.max_seconds,
                _checked_call,
            )
        )


async def _measure(
    servers: list[Server],
    args: argparse.Namespace,
    mock_url: str,
    floor: dict[str, float],
    probe: Path,
    paths: list[tuple[PathServer, list[str]]] | None = None,
) -> None:
    """Every row for every server, interleaved: each row runs in ``--rounds`` rounds that visit the
    servers in turn, so a machine whose load changes during the run weighs on every column alike.
    ``floor`` receives the mock's own p50s (``get_p50``, ``post_p50``) and this disk's synced and
    unsynced commit p50s (``full_p50``, ``normal_p50``, timed on the file ``probe``), measured in the
    same rounds."""
    import httpx

    rounds = args.rounds
    colds: dict[str, list[float]] = {server.label: [] for server in servers}
    for _ in range(args.cold_runs):
        for server in servers:
            if server.process is not None:
                _stop(server.process)
            colds[server.label].append(await _cold_start(server))
    sessions: dict[str, LightSession] = {}
    pids: dict[str, list[int]] = {}
    for server in servers:
        server.figures["cold_ms"] = statistics.median(colds[server.label])
        assert server.process is not None
        pids[server.label] = _pids(server.process)
        sessions[server.label] = session = LightSession(server.port)
        await session.open()

    if args.official_only:
        for session in sessions.values():
            await session.close()
        await _official_rows(servers, args, mock_url, probe, floor)
        return

    def reader(server: Server) -> Callable[[int], Awaitable[None]]:
        session = sessions[server.label]
        return lambda _: _checked_call(session, server.read, {"customer_id": "cus_123"})

    direct = DirectClient(mock_url)
    await direct.session.connect()
    await _sequential(direct.read, 0, 50, args.max_seconds)
    for server in servers:
        await _sequential(reader(server), 0, 50, args.max_seconds)
    latencies: dict[str, list[float]] = {server.label: [] for server in servers}
    cpu: dict[str, float] = dict.fromkeys(latencies, 0.0)
    floor_reads: list[float] = []
    for _ in range(rounds):
        found, _ = await _sequential(direct.read, max(1, args.calls // rounds), 0, args.max_seconds)
        floor_reads += found
        for server in servers:
            before = _cpu_seconds(pids[server.label])
            try:
                found, _ = await _sequential(reader(server), max(1, args.calls // rounds), 0, args.max_seconds)
            except (OSError, asyncio.IncompleteReadError) as exc:
                raise SystemExit(f"{server.label}: the read loop lost its connection ({exc!r})") from exc
            cpu[server.label] += _cpu_seconds(pids[server.label]) - before
            latencies[server.label] += found
    floor["get_p50"] = _percentile(floor_reads, 0.5)
    for server in servers:
        found = latencies[server.label]
        server.figures["cpu_read_ms"] = cpu[server.label] * 1000 / len(found)
        server.figures["read_p50"], server.figures["read_p99"] = _percentile(found, 0.5), _percentile(found, 0.99)

    async with httpx.AsyncClient(base_url=mock_url) as mock:
        await mock.post("/__reset")  # every write refunds 1 of the mock payment's 5000
        writes: dict[str, list[float]] = {server.label: [] for server in servers}
        write_cpu: dict[str, float] = dict.fromkeys(writes, 0.0)
        floor_writes: list[float] = []
        commits: tuple[list[float], list[float]] = ([], [])
        per_round = max(1, min(args.calls, 4000 // (len(servers) + 1) - 40) // rounds)
        for round_index in range(rounds):
            found, _ = await _sequential(direct.write, per_round, 10 if round_index == 0 else 0, args.max_seconds)
            floor_writes += found
            full, normal = _synced_commits(probe, max(20, per_round // 2))
            commits[0].extend(full)
            commits[1].extend(normal)
            for server in servers:
                session = sessions[server.label]
                refund: dict[str, Any] = {"payment_id": "pay_123", "amount": 1, "currency": "EUR"}
                if server.keyed:
                    refund["confirm"] = True
                tag = f"bench-{server.port}-{round_index}-{time.monotonic_ns()}"

                async def write(
                    index: int,
                    session: LightSession = session,
                    server: Server = server,
                    refund: dict[str, Any] = refund,
                    tag: str = tag,
                ) -> None:
                    meta = {"idempotency_key": f"{tag}-{index}"} if server.keyed else None
                    await _checked_call(session, server.write, refund, meta)

                if round_index == 0:
                    await _sequential(write, 0, 10, args.max_seconds)
                before = _cpu_seconds(pids[server.label])
                found, _ = await _sequential(write, per_round, 0, args.max_seconds)
                write_cpu[server.label] += _cpu_seconds(pids[server.label]) - before
                writes[server.label] += found
        await mock.post("/__reset")
    await direct.session.close()
    floor["post_p50"] = _percentile(floor_writes, 0.5)
    floor["full_p50"], floor["normal_p50"] = _percentile(commits[0], 0.5), _percentile(commits[1], 0.5)
    flush = max(0.0, floor["full_p50"] - floor["normal_p50"])
    for server in servers:
        figures = server.figures
        figures["write_p50"] = _percentile(writes[server.label], 0.5)
        figures["cpu_write_ms"] = write_cpu[server.label] * 1000 / len(writes[server.label])
        figures["write_read"] = figures["write_p50"] / figures["read_p50"]
        own_write, own_read = figures["write_p50"] - floor["post_p50"], figures["read_p50"] - floor["get_p50"]
        figures["own_write_read"] = own_write / own_read
        if server.synced:
            figures["flushless_write_read"] = (figures["write_p50"] - flush) / figures["read_p50"]
        await sessions[server.label].close()

    await _official_rows(servers, args, mock_url, probe, floor)

    done: dict[str, int] = dict.fromkeys(latencies, 0)
    spent: dict[str, float] = dict.fromkeys(latencies, 0.0)
    cpu = dict.fromkeys(latencies, 0.0)
    for _ in range(rounds):
        for server in servers:
            before = _cpu_seconds(pids[server.label])
            count, elapsed = await _load(server, args.seconds / rounds, 10**7)
            cpu[server.label] += _cpu_seconds(pids[server.label]) - before
            done[server.label] += count
            spent[server.label] += elapsed
    for server in servers:
        server.figures["throughput"] = done[server.label] / spent[server.label]
        server.figures["cpu_load_ms"] = cpu[server.label] * 1000 / done[server.label]

    if paths:
        await _measure_paths(servers[1], paths, args)

    if args.rss_calls:
        for server in servers:
            server.figures["rss_before"] = _rss_mb(pids[server.label])
        for _ in range(rounds):
            for server in servers:
                await _load(server, args.max_seconds * 10, max(1, args.rss_calls // rounds))
        for server in servers:
            server.figures["rss_after"] = _rss_mb(pids[server.label])
            server.figures["rss_growth"] = (server.figures["rss_after"] / server.figures["rss_before"] - 1) * 100


# --- the table ---------------------------------------------------------------------------------------

_PATH_TITLES: Final = {
    "search": "search call p50 (anvil_search_tools, ANVIL_DISCLOSURE=search), light client, ms",
    "budget": f"budget-cut read p50 (ANVIL_RESULT_TOKEN_BUDGET={BUDGET_TOKENS}), light client, ms",
    "tracing": "read p50, tracing on (ANVIL_OTEL_EXPORTER=otlp to a loopback sink), light client, ms",
}

ROWS = (
    ("cold start to first tools/list, ms", "cold_ms", "{:.0f}", "<= 0.17x"),
    ("read p50, light client, ms", "read_p50", "{:.2f}", ""),
    ("read p99, light client, ms", "read_p99", "{:.2f}", ""),
    ("server CPU per read call, sequential, ms", "cpu_read_ms", "{:.3f}", "<= 0.5x"),
    ("read p50, official client, ms", "official_p50", "{:.2f}", ""),
    ("write p50 (keyed for anvil), official client, ms", "official_write_p50", "{:.2f}", ""),
    ("write / read p50, official client", "official_write_read", "{:.2f}x", "<= 1.3x (anvil)"),
    (f"throughput, {SESSIONS} sessions, calls/s", "throughput", "{:.0f}", ">= 3x (1 worker), >= 4x (2)"),
    (f"server CPU per call, {SESSIONS} sessions, ms", "cpu_load_ms", "{:.3f}", ""),
    ("write p50 (keyed for anvil), ms", "write_p50", "{:.2f}", ""),
    ("server CPU per write call, sequential, ms", "cpu_write_ms", "{:.3f}", ""),
    ("write / read p50", "write_read", "{:.2f}x", "<= 1.2x (anvil, SQLite and PostgreSQL)"),
    ("own write / read p50 (each less the mock's direct p50)", "own_write_read", "{:.2f}x", ""),
    ("write / read p50, the disk's one synced commit taken off", "flushless_write_read", "{:.2f}x", ""),
    ("plain read p50 in the rounds of the search and budget rows, light client, ms", "paths_read_p50", "{:.2f}", ""),
    (_PATH_TITLES["search"], "search_p50", "{:.2f}", ""),
    ("  its server CPU per call, ms", "search_cpu_ms", "{:.3f}", ""),
    ("  search p50 / plain read p50", "search_over_read", "{:.2f}x", ""),
    (_PATH_TITLES["budget"], "budget_p50", "{:.2f}", ""),
    ("  its server CPU per call, ms", "budget_cpu_ms", "{:.3f}", ""),
    ("  budget-cut p50 / plain read p50", "budget_over_read", "{:.2f}x", ""),
    (_PATH_TITLES["tracing"], "tracing_p50", "{:.2f}", ""),
    ("  its untraced twin's read p50 (started alike, alternating rounds), ms", "tracing_plain_p50", "{:.2f}", ""),
    ("  traced p50 / the twin's p50", "tracing_over_read", "{:.2f}x", ""),
    ("  traced server CPU per call (every thread, the export's included), ms", "tracing_cpu_ms", "{:.3f}", ""),
    ("  the twin's server CPU per call, ms", "tracing_plain_cpu_ms", "{:.3f}", ""),
    ("  traced CPU over the twin's, %", "tracing_cpu_over_plain", "{:+.1f}", "<= +10 %"),
    ("RSS after warm-up, MB", "rss_before", "{:.1f}", ""),
    ("RSS after the calls, MB", "rss_after", "{:.1f}", ""),
    ("RSS growth, %", "rss_growth", "{:+.1f}", "<= +10 %"),
)


#: Rows that are ratios or growths already: no column-over-FastMCP ratio for them.
_NO_RATIO: Final = frozenset(
    {
        "write_read",
        "official_write_read",
        "own_write_read",
        "flushless_write_read",
        "rss_growth",
        "search_over_read",
        "budget_over_read",
        "tracing_over_read",
        "tracing_cpu_over_plain",
    }
)


def _table(servers: list[Server], args: argparse.Namespace, floor: dict[str, float]) -> str:
    base = servers[0]
    head = ["metric", *(server.label for server in servers)]
    head += [f"{server.label} / {base.label}" for server in servers[1:]]
    head.append("target")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for title, key, form, target in ROWS:
        if not any(key in server.figures for server in servers):
            continue
        cells = [title]
        cells += [form.format(server.figures[key]) if key in server.figures else "-" for server in servers]
        for server in servers[1:]:
            mine, theirs = server.figures.get(key), base.figures.get(key)
            ratio = "" if key in _NO_RATIO or not mine or not theirs else f"{mine / theirs:.2f}x"
            cells.append(ratio)
        cells.append(target)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"sequential rows: {args.calls} calls after 50 warm-up; official client: {args.official_calls} reads and "
        f"as many writes per server in alternating blocks of {OFFICIAL_BLOCK} (each after one unrecorded call); "
        f"throughput: {args.seconds:g} s; memory: {args.rss_calls} calls over {SESSIONS} sessions; "
        f"cold start: median of {args.cold_runs}; server CPU from /proc (utime+stime), summed over workers; "
        f"each row in {args.rounds} rounds visiting the servers in turn. The mock alone (the light "
        f"client's connection, plain HTTP): GET p50 {floor.get('get_p50', 0):.2f} ms, POST (fresh "
        f"Idempotency-Key) p50 {floor.get('post_p50', 0):.2f} ms. This disk's synced commit (SQLite WAL insert, "
        f"synchronous=FULL / NORMAL, this process): p50 {floor.get('full_p50', 0):.3f} / "
        f"{floor.get('normal_p50', 0):.3f} ms."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run FastMCP and this gateway side by side and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=2000, help="sequential calls per row (default 2000)")
    parser.add_argument("--official-calls", type=int, default=300, help="official-client calls (default 300)")
    parser.add_argument("--seconds", type=float, default=8.0, help="throughput window in seconds (default 8)")
    parser.add_argument("--rss-calls", type=int, default=25_000, help="calls between the RSS samples (default 25000)")
    parser.add_argument("--cold-runs", type=int, default=3, help="spawns for the cold-start median (default 3)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time bound per loop (default 60)")
    parser.add_argument(
        "--fastmcp-mode",
        choices=("stateless", "sessions"),
        default="stateless",
        help="FastMCP's transport: stateless JSON (default) or its default sessions with SSE answers",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds each row is split into (default 3)")
    parser.add_argument("--skip-workers", action="store_true", help="leave out the --workers 2 column")
    parser.add_argument("--skip-paths", action="store_true", help="leave out the search, budget-cut and tracing rows")
    parser.add_argument(
        "--official-only",
        action="store_true",
        help="measure only cold start and the official client's read and keyed write rows (no paths, no load)",
    )
    parser.add_argument(
        "--ledger-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the SQLite ledgers and the synced-commit probe live (default: a scratch folder in the "
        "checkout, on its disk; a memory filesystem such as tmpfs would hide the sync a write pays)",
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get("ANVIL_TEST_POSTGRES_URL", ""),
        metavar="URL",
        help="add a column on this test PostgreSQL ledger (default: $ANVIL_TEST_POSTGRES_URL when set)",
    )
    parser.add_argument(
        "--sqlite-normal", action="store_true", help="add a column on the SQLite ?synchronous=normal opt-in"
    )
    parser.add_argument(
        "--memory-ledger",
        action="store_true",
        help="add a column in env dev on the memory: ledger (keyed writes with a ledger that does no I/O)",
    )
    args = parser.parse_args(argv)
    if not (1 <= args.calls <= 100_000 and 1 <= args.official_calls <= 10_000 and 0 < args.seconds <= 120):
        parser.error("--calls 1..100000, --official-calls 1..10000, --seconds up to 120")
    if not (0 <= args.rss_calls <= 200_000 and 1 <= args.cold_runs <= 10 and 1 <= args.rounds <= 10):
        parser.error("--rss-calls 0..200000, --cold-runs 1..10, --rounds 1..10")
    fastmcp_python = _ensure_fastmcp()
    import compileall

    import anvil

    # The cold start reads bytecode as an installed wheel does (pip compiles it; FastMCP's is), not source
    # compiled at each spawn (a checkout run with PYTHONDONTWRITEBYTECODE has none).
    compileall.compile_dir(Path(anvil.__file__).parent, quiet=1)
    sys.path.insert(0, str(REPO / "bench"))
    from gateway import _compile, _token_variable  # the gateway bench's compile and credential helpers

    if args.official_only:
        args.skip_paths, args.rss_calls = True, 0
    ledger_parent = args.ledger_dir if args.ledger_dir is not None else REPO
    if not ledger_parent.is_dir():
        parser.error(f"--ledger-dir {ledger_parent} is not a folder")
    with (
        tempfile.TemporaryDirectory(prefix="anvil-compare-") as scratch,
        tempfile.TemporaryDirectory(prefix=".bench-ledgers-", dir=ledger_parent) as ledgers,
        _mock() as mock_url,
    ):
        folder, ledger_folder = Path(scratch), Path(ledgers)
        bundle = _compile(folder / "workspace")["payments"]
        spec = folder / "payments.json"
        spec.write_text(json.dumps(yaml.safe_load((PAYMENTS / "openapi.yaml").read_text())), encoding="utf-8")
        script = folder / "fastmcp_server.py"
        script.write_text(FASTMCP_SERVER, encoding="utf-8")
        base_env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
        anvil_env = {
            **base_env,
            "ANVIL_ENV": "prod",
            "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
            "ANVIL_BASE_URL": mock_url,
            _token_variable(bundle): TOKEN,
        }
        servers = []
        floor: dict[str, float] = {}
        port = _free_port()
        servers.append(
            Server(
                f"FastMCP ({args.fastmcp_mode})",
                [str(fastmcp_python), str(script), str(spec), mock_url, str(port), TOKEN, args.fastmcp_mode],
                base_env,
                port,
            )
        )
        for workers in (1,) if args.skip_workers else (1, 2):
            port = _free_port()
            command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", f"127.0.0.1:{port}"]
            if workers > 1:
                command += ["--workers", str(workers)]
            env = {**anvil_env, "ANVIL_LEDGER": f"sqlite:///{ledger_folder / f'ledger-{workers}.db'}"}
            label = f"anvil, {workers} worker{'s' if workers > 1 else ''}"
            servers.append(Server(label, command, env, port, keyed=True, synced=True))
        extra: list[tuple[str, dict[str, str], bool]] = []
        if args.postgres:
            namespace = f"compare-{os.getpid()}-{time.monotonic_ns() % 10**9}"
            uri = f"{args.postgres}{'&' if '?' in args.postgres else '?'}namespace={namespace}"
            syncs = _postgres_syncs(args.postgres)
            extra.append(("postgresql" if syncs else "postgresql (server fsync off)", {"ANVIL_LEDGER": uri}, syncs))
        if args.sqlite_normal:
            uri = f"sqlite:///{ledger_folder / 'ledger-normal.db'}?synchronous=normal"
            extra.append(("sqlite sync=normal", {"ANVIL_LEDGER": uri}, False))
        if args.memory_ledger:
            extra.append(("memory: (dev)", {"ANVIL_LEDGER": "memory:", "ANVIL_ENV": "dev"}, False))
        for name, settings, synced in extra:
            port = _free_port()
            command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", f"127.0.0.1:{port}"]
            env = {**anvil_env, **settings}
            servers.append(Server(f"anvil, {name}", command, env, port, keyed=True, synced=synced))
        sink = None if args.skip_paths else OtlpSink()
        paths: list[tuple[PathServer, list[str]]] = []
        for path in path_servers(_free_port, sink.url) if sink is not None else []:
            path.env = {**anvil_env, "ANVIL_LEDGER": f"sqlite:///{folder / f'ledger-{path.key}.db'}", **path.env}
            command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", f"127.0.0.1:{path.port}"]
            paths.append((path, command))
        try:
            print(f"bench: measuring {', '.join(server.label for server in servers)} ...", file=sys.stderr, flush=True)
            asyncio.run(_measure(servers, args, mock_url, floor, ledger_folder / "synced-commit.db", paths))
            note = _ledger_note(ledger_folder, floor)
        finally:
            for server in servers:
                if server.process is not None:
                    _stop(server.process)
            for path, _ in paths:
                if path.process is not None:
                    _stop(path.process)
            if sink is not None:
                sink.close()
    print(_table(servers, args, floor))
    print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
