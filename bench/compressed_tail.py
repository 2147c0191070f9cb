"""What an upstream answer that never ends costs the served client: time, memory and event-loop stall.

    .venv/bin/python bench/compressed_tail.py [--seconds S]

A loopback upstream in another process answers every request with ``content-encoding: gzip``, a
complete gzip body, then bytes that never end (up to ``--seconds`` or 4 GiB, whichever comes first):
zeros after the compressed stream's end, empty deflate blocks that decode to nothing, or a plain
gzip bomb. :class:`~anvil.runtime.connections.PooledUpstream` reads each under the default response
limit with a 30 s deadline, as ``anvil serve`` does. Printed per case: the answer, how long it took,
how many bytes the upstream got out before the client hung up, the client's peak RSS growth
(``ru_maxrss``) and the longest the event loop went without running a 1 ms ticker (what a
``/healthz`` on the same loop waits).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import multiprocessing
import resource
import socket
import sys
import time
import zlib
from multiprocessing.connection import Connection

from anvil.runtime.connections import PooledUpstream
from anvil.runtime.context import MAX_RESPONSE_BYTES

_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\nconnection: close\r\n\r\n"
_EMPTY_BLOCK = b"\x00\x00\x00\xff\xff"  # a stored, non-final deflate block of no bytes
CASES = {
    "zeros after the gzip stream": (gzip.compress(b'{"id": "re_1"}'), b"\x00" * 65536),
    "empty deflate blocks": (bytes.fromhex("1f8b0800000000000003000000ffff"), _EMPTY_BLOCK * 13107),
    "gzip bomb (reference)": (b"", b""),
}


def _bomb() -> tuple[bytes, bytes]:
    stream = zlib.compressobj(wbits=31)
    opening = stream.compress(b"0" * (1 << 20)) + stream.flush(zlib.Z_SYNC_FLUSH)
    return opening, stream.compress(b"0" * (1 << 20)) + stream.flush(zlib.Z_SYNC_FLUSH)


def _serve(listening: socket.socket, seconds: float, report: Connection) -> None:
    """The upstream: one answer per connection, its tail sent until the client leaves or time is up."""
    cases = dict(CASES)
    cases["gzip bomb (reference)"] = _bomb()
    for name in cases:
        conn, _ = listening.accept()
        opening, tail = cases[name]
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(65536)
        sent, until = 0, time.monotonic() + seconds
        try:
            conn.sendall(_HEAD + opening)
            while time.monotonic() < until and sent < 4 << 30:
                conn.sendall(tail)
                sent += len(tail)
        except OSError:
            pass  # the client hung up: the point
        conn.close()
        report.send(sent)


async def _ticker(worst: list[float]) -> None:
    last = time.perf_counter()
    while True:
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        worst[0] = max(worst[0], now - last)
        last = now


async def _measure(port: int, report: Connection) -> None:
    client = PooledUpstream()
    print("| tail | answer | seconds | bytes the upstream sent | peak RSS growth, MiB | worst loop stall, ms |")
    print("|---|---|---|---|---|---|")
    for name in CASES:
        worst = [0.0]
        ticker = asyncio.create_task(_ticker(worst))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        began = time.perf_counter()
        answer = await client.exchange(
            "POST", f"http://127.0.0.1:{port}/tail", [], b"{}", timeout_ms=30_000, max_bytes=MAX_RESPONSE_BYTES
        )
        took = time.perf_counter() - began
        ticker.cancel()
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        shown = "oversized" if answer.oversized else (answer.condition or f"{answer.status} ({len(answer.body)} B)")
        sent = await asyncio.to_thread(report.recv)  # the loop goes on: the client closes its side
        print(f"| {name} | {shown} | {took:.3f} | {sent / (1 << 20):.1f} MiB | {grown:.1f} | {worst[0] * 1000:.1f} |")
    await client.aclose()
    print(f"\nresponse limit {MAX_RESPONSE_BYTES} bytes, deadline 30 s, loopback")


def main(argv: list[str] | None = None) -> int:
    """Run every case once and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the upstream keeps sending (default 20)")
    args = parser.parse_args(argv)
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    ours, theirs = multiprocessing.Pipe()
    upstream = multiprocessing.Process(target=_serve, args=(listening, args.seconds, theirs), daemon=True)
    upstream.start()
    try:
        asyncio.run(_measure(port, ours))
    finally:
        upstream.join(timeout=args.seconds + 5)
        listening.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
