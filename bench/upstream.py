"""Upstream clients: CPU and latency per request of httpx, aiohttp and the lean pooled client, one run.

    .venv/bin/python bench/upstream.py [--calls N] [--rounds R]

Every client goes through the executor's seam (:func:`anvil.runtime.upstream.send_once`) to the
payments mock on loopback (``bench/gateway.py --mock payments``), on uvloop as ``anvil serve`` runs:
``GET /customers/cus_123`` with the headers a gateway call sends, and a keyed ``POST`` refund. The
clients are httpx (``anvil run`` and tests), an aiohttp session pooled as ``anvil serve`` used it
before (kept here as the yardstick; skipped when aiohttp is not installed), and
:class:`~anvil.runtime.connections.PooledUpstream` (what ``anvil serve`` uses). Rounds alternate
between the clients so a busy machine slows all alike; the table shows the median round. CPU is this
process's (the client side of a gateway call), from ``time.process_time``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx

from anvil.runtime.connections import PooledUpstream
from anvil.runtime.request import WireRequest
from anvil.runtime.upstream import Answer, read_answer, send_once

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import _mock  # the payments mock, started the way the comparison starts it


class AiohttpUpstream:
    """One pooled aiohttp session behind the executor's seam, as ``anvil serve`` had it (the yardstick)."""

    def __init__(self) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self._session: Any = None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def exchange(
        self,
        method: str,
        url: str,
        headers: Sequence[tuple[str, str]],
        content: bytes | None,
        *,
        timeout_ms: int,
        max_bytes: int,
        write: bool = False,  # aiohttp pools writes as it pools reads: the yardstick stays as it was
    ) -> Answer:
        from yarl import URL

        aiohttp = self._aiohttp
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=64, keepalive_timeout=30, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=None),
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=("Content-Type",),
            )
        with anyio.fail_after(timeout_ms / 1000):
            async with self._session.request(
                method, URL(url, encoded=True), headers=list(headers), data=content, allow_redirects=False
            ) as response:
                return await read_answer(
                    response.status, response.headers.get, response.content.iter_any(), max_bytes=max_bytes
                )


def _requests(url: str) -> dict[str, WireRequest]:
    auth = ("authorization", "Bearer bench-token")
    return {
        "GET": WireRequest(
            method="GET",
            url=f"{url}/customers/cus_123",
            path="/customers/cus_123",
            query=(),
            headers=(("accept", "application/json"), auth),
        ),
        "POST": WireRequest(
            method="POST",
            url=f"{url}/payments/pay_123/refunds",
            path="/payments/pay_123/refunds",
            query=(),
            headers=(("accept", "application/json"), auth, ("content-type", "application/json")),
            has_body=True,
            content=b'{"amount": 1, "currency": "EUR"}',
        ),
    }


async def _rounds(url: str, calls: int, rounds: int) -> dict[tuple[str, str], list[tuple[float, float]]]:
    wires = _requests(url)
    pooled = PooledUpstream()
    clients: dict[str, Any] = {"httpx": httpx.AsyncClient()}
    try:
        clients["aiohttp (the former client)"] = AiohttpUpstream()
    except ImportError:
        print("aiohttp is not installed: its row is left out", file=sys.stderr)
    clients["PooledUpstream (anvil serve)"] = pooled
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    serial = itertools.count()
    try:
        for _ in range(rounds):
            for (name, upstream), (verb, wire) in itertools.product(clients.items(), wires.items()):
                if verb == "POST":  # the mock's payment has 5000 cents to refund: back to its seed state
                    await clients["httpx"].post(f"{url}/__reset")
                write = verb == "POST"  # as the executor sends it: on a connection of its own (PooledUpstream)
                for _ in range(50):
                    await send_once(upstream, wire, timeout_ms=10_000, max_bytes=1 << 20, write=write)
                cpu, wall = time.process_time(), time.perf_counter()
                for _ in range(calls):
                    if verb == "POST":  # a fresh key each time: the mock answers a repeated one from memory
                        keyed = (*wire.headers, ("idempotency-key", f"bench-{next(serial)}"))
                        sent = replace(wire, headers=keyed)
                    else:
                        sent = wire
                    answer = await send_once(upstream, sent, timeout_ms=10_000, max_bytes=1 << 20, write=write)
                    if not answer.ok:
                        raise SystemExit(f"{name}: the mock answered {answer.status} {answer.condition}")
                results.setdefault((name, verb), []).append(
                    ((time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls)
                )
    finally:
        for upstream in clients.values():
            await upstream.aclose()
    return results


def main(argv: list[str] | None = None) -> int:
    """Measure the clients and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000, help="requests per round and verb, 1..4000 (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per client (default 3)")
    args = parser.parse_args(argv)
    if not (1 <= args.calls <= 4_000 and 1 <= args.rounds <= 10):
        parser.error("--calls 1..4000 (the mock refunds at most 5000 cents), --rounds 1..10")
    import uvloop

    with _mock() as url:
        results = uvloop.run(_rounds(url, args.calls, args.rounds))
    print("| client | request | client CPU per request, ms | wall per request, ms | CPU vs httpx |")
    print("|---|---|---|---|---|")
    for (name, verb), values in results.items():
        base = statistics.median(cpu for cpu, _ in results[("httpx", verb)])
        cpu = statistics.median(value[0] for value in values)
        wall = statistics.median(value[1] for value in values)
        print(f"| {name} | {verb} | {cpu:.3f} | {wall:.3f} | {cpu / base:.2f}x |")
    print(
        f"\n{args.rounds} alternating rounds of {args.calls} requests per verb after 50 warm-up; medians of the rounds."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
