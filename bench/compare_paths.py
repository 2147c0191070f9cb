"""The newer paths of ``bench/compare.py``: a search call, a budget-cut answer and a read with tracing on.

FastMCP has none of them, so they are rows of the anvil column only, each beside the plain read of the same
rounds. Three more ``anvil serve`` processes (one worker, the SQLite ledger, as the main column), each
configured for one path:

* ``search``: ``ANVIL_DISCLOSURE=search``; the call is ``anvil_search_tools`` ``{"query": "refund a payment"}``;
* ``budget``: ``ANVIL_RESULT_TOKEN_BUDGET=`` :data:`BUDGET_TOKENS`; the call is the customer read, whose answer
  the budget cuts (checked on the first answer: its ``_meta`` says what was cut);
* ``tracing``: ``ANVIL_OTEL_EXPORTER=otlp`` to a loopback OTLP/HTTP sink in a thread of this process (it reads
  each export and answers 200), ``OTEL_BSP_SCHEDULE_DELAY=1000``; the call is the customer read;
* ``tracing_plain``: its untraced twin, started and warmed the same way, for the tracing row only.

The search and budget rows: sequential light-client calls in the same rounds as the plain anvil read
(``reference``), p50 and the server's CPU per call, and the p50 over the plain read's p50.

The tracing row is paired (:func:`measure_pair`): the traced gateway and its twin in alternating rounds
(which goes first alternates), each one's CPU over the whole row, every thread's, from
``/proc/PID/task/*/schedstat`` (nanoseconds), and a settle after the last round so the export thread's last
batch is counted. Its CPU is then set against the twin's, not against the main column's read row: that row
is measured minutes earlier, in another process, at another machine load (the unpaired comparison once
said +27 % while the plain read's own p50 was 29 % slower in the later rounds than in the read row).

    .venv/bin/python bench/compare_paths.py [--calls N] [--rounds R]

runs the paired tracing row alone (the payments mock, the two gateways), in about half a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

#: The response budget of the budget-cut row, in tokens: well under the customer answer's size.
BUDGET_TOKENS: Final = 12
SEARCH_ARGUMENTS: Final = {"query": "refund a payment"}
#: The tracing row's pair: the traced gateway and its untraced twin.
PAIR: Final = ("tracing", "tracing_plain")
#: After the paired rounds: longer than ``OTEL_BSP_SCHEDULE_DELAY`` (1 s), so the last batch is counted.
SETTLE_S: Final = 1.5


@dataclass
class PathServer:
    """One configured gateway and the call it is measured on."""

    key: str
    title: str
    env: dict[str, str]
    port: int
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None


class OtlpSink:
    """An OTLP/HTTP receiver on loopback, in a thread: reads each export and answers 200."""

    def __init__(self) -> None:
        outer = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.requests += 1
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


def path_servers(ports: Callable[[], int], sink_url: str) -> list[PathServer]:
    """The three configured gateways (their environment on top of the main anvil column's)."""
    return [
        PathServer("search", "search call p50 (anvil_search_tools, ANVIL_DISCLOSURE=search), light, ms",
                   {"ANVIL_DISCLOSURE": "search"}, ports()),
        PathServer("budget", f"budget-cut read p50 (ANVIL_RESULT_TOKEN_BUDGET={BUDGET_TOKENS}), light, ms",
                   {"ANVIL_RESULT_TOKEN_BUDGET": str(BUDGET_TOKENS)}, ports()),
        *tracing_pair(ports, sink_url),
    ]  # fmt: skip


def tracing_pair(ports: Callable[[], int], sink_url: str) -> list[PathServer]:
    """The traced gateway and its untraced twin (the same environment otherwise)."""
    return [
        PathServer("tracing", "read p50, tracing on (otlp to a loopback sink), light, ms",
                   {"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": sink_url,
                    "OTEL_BSP_SCHEDULE_DELAY": "1000"}, ports()),
        PathServer("tracing_plain", "read p50, its untraced twin, light, ms", {}, ports()),
    ]  # fmt: skip


def choose_calls(server: PathServer, tools: list[dict[str, Any]], read: str) -> None:
    """The call each configured gateway is measured on (``read``: the customer read's tool name)."""
    names = [tool["name"] for tool in tools]
    if server.key == "search":
        found = [name for name in names if name.endswith("search_tools")]
        if not found:
            raise SystemExit(f"the search-mode gateway lists no search tool: {names}")
        server.tool, server.arguments = found[0], dict(SEARCH_ARGUMENTS)
    else:
        server.tool, server.arguments = read, {"customer_id": "cus_123"}


def is_cut(answer: dict[str, Any]) -> bool:
    """Whether a ``tools/call`` answer says the response budget cut it."""
    text = json.dumps(answer.get("result", {}).get("_meta", {}))
    return "budget" in text or "cut" in text


async def measure_paths(
    servers: list[PathServer],
    sessions: dict[str, Any],
    reference: Callable[[int], Awaitable[None]],
    cpu: Callable[[PathServer], float],
    sequential: Callable[..., Awaitable[tuple[list[float], int]]],
    percentile: Callable[[list[float], float], float],
    calls: int,
    rounds: int,
    max_seconds: float,
    checked_call: Callable[..., Awaitable[None]],
) -> tuple[dict[str, dict[str, float]], float]:
    """Per configured gateway: ``{"p50", "cpu_ms", "over_read"}``; and the plain read's p50 of the same rounds."""
    plain: list[float] = []
    found: dict[str, list[float]] = {server.key: [] for server in servers}
    spent: dict[str, float] = dict.fromkeys(found, 0.0)
    for server in servers:
        session = sessions[server.key]
        first = await session.rpc("tools/call", {"name": server.tool, "arguments": server.arguments})
        if first.get("result") is None or first["result"].get("isError"):
            raise SystemExit(f"{server.key}: {server.tool} failed: {json.dumps(first)[:300]}")
        if server.key == "budget" and not is_cut(first):
            raise SystemExit(f"budget: the answer was not cut: {json.dumps(first)[:300]}")

    def caller(server: PathServer) -> Callable[[int], Awaitable[None]]:
        session = sessions[server.key]
        return lambda _: checked_call(session, server.tool, server.arguments)

    for server in servers:
        await sequential(caller(server), 0, 30, max_seconds)
    per_round = max(1, calls // rounds)
    for _ in range(rounds):
        latencies, _ = await sequential(reference, per_round, 0, max_seconds)
        plain += latencies
        for server in servers:
            before = cpu(server)
            latencies, _ = await sequential(caller(server), per_round, 0, max_seconds)
            spent[server.key] += cpu(server) - before
            found[server.key] += latencies
    read_p50 = percentile(plain, 0.5)
    figures = {}
    for server in servers:
        p50 = percentile(found[server.key], 0.5)
        figures[server.key] = {
            "p50": p50,
            "cpu_ms": spent[server.key] * 1000 / len(found[server.key]),
            "over_read": p50 / read_p50,
        }
    await asyncio.sleep(0)
    return figures, read_p50


def cpu_ns(pid: int) -> int:
    """Every thread's CPU time of process ``pid`` so far, in nanoseconds (``/proc/PID/task/*/schedstat``; the
    export thread's included, and no 10 ms ticks as in ``/proc/PID/stat``)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


async def _quiet(pids: list[int], step_s: float = 0.25, idle_ns: int = 5_000_000, bound_s: float = 15.0) -> None:
    """Wait (at most ``bound_s``) until no process of ``pids`` spends ``idle_ns`` of CPU in ``step_s``: a gateway
    loads the MCP SDK in a background thread after it starts listening (~0.5 s of CPU here), which would
    otherwise land in the first rounds of whichever gateway started last."""
    waited = 0.0
    while waited < bound_s:
        before = [cpu_ns(pid) for pid in pids]
        await asyncio.sleep(step_s)
        waited += step_s
        if all(cpu_ns(pid) - spent < idle_ns for pid, spent in zip(pids, before, strict=True)):
            return


async def measure_pair(
    servers: tuple[PathServer, PathServer],
    sessions: dict[str, Any],
    sequential: Callable[..., Awaitable[tuple[list[float], int]]],
    percentile: Callable[[list[float], float], float],
    calls: int,
    rounds: int,
    max_seconds: float,
    checked_call: Callable[..., Awaitable[None]],
    settle_s: float = SETTLE_S,
) -> dict[str, float]:
    """The tracing row, paired: ``servers`` (traced, twin) in ``rounds`` alternating rounds of ``calls // rounds``
    sequential calls each, after 30 warm-up calls each. Returns ``tracing_p50``, ``tracing_plain_p50``,
    ``tracing_over_read`` (the p50s' ratio), ``tracing_cpu_ms``, ``tracing_plain_cpu_ms`` (server CPU per call,
    every thread, over the whole row and ``settle_s`` after it) and ``tracing_cpu_over_plain`` (in %)."""
    traced, plain = servers
    latencies: dict[str, list[float]] = {traced.key: [], plain.key: []}

    def caller(server: PathServer) -> Callable[[int], Awaitable[None]]:
        session = sessions[server.key]
        return lambda _: checked_call(session, server.tool, server.arguments)

    pids = {}
    for server in servers:
        if server.process is None:
            raise SystemExit(f"{server.key}: not started")
        pids[server.key] = server.process.pid
        await sequential(caller(server), 0, 30, max_seconds)
    await _quiet(list(pids.values()))  # the MCP SDK's background load, the warm-up's export: before the window
    per_round = max(1, calls // rounds)
    before = {key: cpu_ns(pid) for key, pid in pids.items()}
    for number in range(rounds):
        for server in servers if number % 2 == 0 else servers[::-1]:
            found, _ = await sequential(caller(server), per_round, 0, max_seconds)
            latencies[server.key] += found
    await asyncio.sleep(settle_s)
    spent = {key: (cpu_ns(pid) - before[key]) / 1e6 / len(latencies[key]) for key, pid in pids.items()}
    traced_p50, plain_p50 = percentile(latencies[traced.key], 0.5), percentile(latencies[plain.key], 0.5)
    return {
        "tracing_p50": traced_p50,
        "tracing_plain_p50": plain_p50,
        "tracing_over_read": traced_p50 / plain_p50,
        "tracing_cpu_ms": spent[traced.key],
        "tracing_plain_cpu_ms": spent[plain.key],
        "tracing_cpu_over_plain": (spent[traced.key] / spent[plain.key] - 1) * 100,
    }


def main(argv: list[str] | None = None) -> int:
    """The paired tracing row alone: the payments mock, a traced gateway and its twin, one table."""
    parser = argparse.ArgumentParser(description="compare.py's tracing row alone (paired with an untraced twin)")
    parser.add_argument("--calls", type=int, default=1000, help="calls per gateway (default 1000)")
    parser.add_argument("--rounds", type=int, default=12, help="alternating rounds (default 12)")
    args = parser.parse_args(argv)
    if not (1 <= args.calls <= 100_000 and 1 <= args.rounds <= 100):
        parser.error("--calls 1..100000, --rounds 1..100")
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from compare import TOKEN, LightSession, _checked_call, _free_port, _mock, _percentile, _sequential, _start_path
    from gateway import _compile, _token_variable

    async def run(servers: list[PathServer], commands: list[list[str]]) -> dict[str, float]:
        sessions: dict[str, Any] = {}
        for server, command in zip(servers, commands, strict=True):
            tools = await _start_path(server, command)
            reads = [tool["name"] for tool in tools if "getcustomer" in tool["name"].lower().replace("_", "")]
            if not reads:
                raise SystemExit(f"{server.key}: no customer read tool is listed")
            choose_calls(server, tools, reads[0])
            sessions[server.key] = session = LightSession(server.port)
            await session.open()
        try:
            return await measure_pair(
                (servers[0], servers[1]),
                sessions,
                _sequential,
                _percentile,
                args.calls,
                args.rounds,
                60.0,
                _checked_call,
            )
        finally:
            for session in sessions.values():
                await session.close()

    sink = OtlpSink()
    servers = tracing_pair(_free_port, sink.url)
    with tempfile.TemporaryDirectory(prefix="anvil-compare-pair-") as scratch, _mock() as mock_url:
        folder = Path(scratch)
        bundle = _compile(folder / "workspace")["payments"]
        base = {key: value for key, value in os.environ.items() if not key.startswith(("ANVIL_", "OTEL_"))}
        commands = []
        for server in servers:
            server.env = {
                **base,
                "ANVIL_ENV": "prod",
                "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
                "ANVIL_BASE_URL": mock_url,
                _token_variable(bundle): TOKEN,
                "ANVIL_LEDGER": f"sqlite:///{folder / f'ledger-{server.key}.db'}",
                **server.env,
            }
            commands.append([sys.executable, "-m", "anvil", "serve", str(bundle), "--http", f"127.0.0.1:{server.port}"])
        try:
            figures = asyncio.run(run(servers, commands))
        finally:
            for server in servers:
                if server.process is not None:
                    server.process.terminate()
                    server.process.wait(timeout=20)
            sink.close()
    print(pair_lines(figures))
    print(f"({args.calls} calls per gateway in {args.rounds} alternating rounds; {sink.requests} OTLP exports; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")  # fmt: skip
    return 0


def pair_lines(figures: dict[str, float]) -> str:
    """The paired tracing row as text (the standalone run's output)."""
    return (
        f"traced read: p50 {figures['tracing_p50']:.2f} ms, server CPU {figures['tracing_cpu_ms']:.3f} ms/call; "
        f"untraced twin: p50 {figures['tracing_plain_p50']:.2f} ms, server CPU "
        f"{figures['tracing_plain_cpu_ms']:.3f} ms/call; CPU {figures['tracing_cpu_over_plain']:+.1f} %, "
        f"p50 {figures['tracing_over_read']:.2f}x"
    )


if __name__ == "__main__":
    sys.exit(main())
