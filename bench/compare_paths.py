"""The newer paths of ``bench/compare.py``: a search call, a budget-cut answer and a read with tracing on.

FastMCP has none of them, so they are rows of the anvil column only, each beside the plain read of the same
rounds. Three more ``anvil serve`` processes (one worker, the SQLite ledger, as the main column), each
configured for one path:

* ``search``: ``ANVIL_DISCLOSURE=search``; the call is ``anvil_search_tools`` ``{"query": "refund a payment"}``;
* ``budget``: ``ANVIL_RESULT_TOKEN_BUDGET=`` :data:`BUDGET_TOKENS`; the call is the customer read, whose answer
  the budget cuts (checked on the first answer: its ``_meta`` says what was cut);
* ``tracing``: ``ANVIL_OTEL_EXPORTER=otlp`` to a loopback OTLP/HTTP sink in a thread of this process (it reads
  each export and answers 200), ``OTEL_BSP_SCHEDULE_DELAY=1000``; the call is the customer read.

Each row: sequential light-client calls in the same rounds as the plain anvil read (``reference``), p50 and
the server's CPU per call, and the p50 over the plain read's p50.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

#: The response budget of the budget-cut row, in tokens: well under the customer answer's size.
BUDGET_TOKENS: Final = 12
SEARCH_ARGUMENTS: Final = {"query": "refund a payment"}


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
        PathServer("tracing", "read p50, tracing on (otlp to a loopback sink), light, ms",
                   {"ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": sink_url,
                    "OTEL_BSP_SCHEDULE_DELAY": "1000"}, ports()),
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
