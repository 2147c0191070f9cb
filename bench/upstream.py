"""Upstream clients: CPU and latency per request of httpx and the pooled aiohttp client, one run.

    .venv/bin/python bench/upstream.py [--calls N] [--rounds R]

Both clients go through the executor's seam (:func:`anvil.runtime.upstream.send_once`) to the payments
mock on loopback (``bench/gateway.py --mock payments``), ``GET /customers/cus_123`` with the headers a
gateway call sends, on uvloop as ``anvil serve`` runs. Rounds alternate between the clients so a busy
machine slows both alike; the table shows the median round. CPU is this process's (the client side
of a gateway call), from ``time.process_time``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

from anvil.runtime.connections import PooledUpstream
from anvil.runtime.request import WireRequest
from anvil.runtime.upstream import send_once

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import _mock  # the payments mock, started the way the comparison starts it


async def _rounds(url: str, calls: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    wire = WireRequest(
        method="GET",
        url=f"{url}/customers/cus_123",
        path="/customers/cus_123",
        query=(),
        headers=(("accept", "application/json"), ("authorization", "Bearer bench-token")),
    )
    results: dict[str, list[tuple[float, float]]] = {"httpx": [], "aiohttp (PooledUpstream)": []}
    pooled = PooledUpstream()
    async with httpx.AsyncClient() as client:
        clients = {"httpx": client, "aiohttp (PooledUpstream)": pooled}
        try:
            for _ in range(rounds):
                for name, upstream in clients.items():
                    for _ in range(50):
                        await send_once(upstream, wire, timeout_ms=10_000, max_bytes=1 << 20)
                    cpu, wall = time.process_time(), time.perf_counter()
                    for _ in range(calls):
                        answer = await send_once(upstream, wire, timeout_ms=10_000, max_bytes=1 << 20)
                        if not answer.ok:
                            raise SystemExit(f"{name}: the mock answered {answer.status} {answer.condition}")
                    results[name].append(
                        ((time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls)
                    )
        finally:
            await pooled.aclose()
    return results


def main(argv: list[str] | None = None) -> int:
    """Measure both clients and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000, help="requests per round (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per client (default 3)")
    args = parser.parse_args(argv)
    if not (1 <= args.calls <= 20_000 and 1 <= args.rounds <= 10):
        parser.error("--calls 1..20000, --rounds 1..10")
    import uvloop

    with _mock() as url:
        results = uvloop.run(_rounds(url, args.calls, args.rounds))
    base = statistics.median(cpu for cpu, _ in results["httpx"])
    print("| client | client CPU per request, ms | wall per request, ms | CPU vs httpx |")
    print("|---|---|---|---|")
    for name, values in results.items():
        cpu = statistics.median(value[0] for value in values)
        wall = statistics.median(value[1] for value in values)
        print(f"| {name} | {cpu:.3f} | {wall:.3f} | {cpu / base:.2f}x |")
    print(f"\n{args.rounds} alternating rounds of {args.calls} requests after 50 warm-up; medians of the rounds.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
