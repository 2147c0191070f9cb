"""The pooled upstream client: one attempt on a real loopback socket, classified as the httpx branch is.

A raw HTTP/1.1 server on 127.0.0.1 (anyio TCP listener) answers from a script, so every failure the
classification names can be produced exactly: a refused connection, a hold past the deadline, a close
in the middle of a body, a redirect, declared and streamed oversized bodies, keep-alive reuse.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ipaddress
import socket
import ssl
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketAttribute, SocketStream
from runtime_support import read_op, unkeyed_write

from anvil.runtime.connections import MAX_HEADER_BYTES, PooledUpstream
from anvil.runtime.context import RuntimeContext
from anvil.runtime.executor import execute
from anvil.runtime.request import WireRequest
from anvil.runtime.upstream import Answer, send_once

pytestmark = pytest.mark.anyio


Action = Callable[[SocketStream], Awaitable[bool | None]]  # True: the server closes after it


@dataclass
class Seen:
    head: bytes
    body: bytes
    peer_port: int


@dataclass
class RawServer:
    port: int = 0
    script: list[bytes | str | Action] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)  # peer ports, in the order connections were accepted
    #: Bytes sent at once on the connection accepted n-th (0-based), before any request arrives.
    unasked: dict[int, bytes] = field(default_factory=dict)

    async def handle(self, stream: SocketStream) -> None:
        peer = stream.extra(SocketAttribute.remote_port)
        self.accepted.append(peer)
        stray = self.unasked.get(len(self.accepted) - 1)
        if stray is not None:
            await stream.send(stray)
        buffer = b""
        async with stream:
            while True:
                while b"\r\n\r\n" not in buffer:
                    try:
                        buffer += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(buffer) < length:
                    buffer += await stream.receive()
                body, buffer = buffer[:length], buffer[length:]
                self.seen.append(Seen(head, body, peer))
                action = self.script.pop(0) if self.script else ok(b'{"ok": true}')
                if action == "hold":
                    await anyio.sleep(5)
                    return
                if callable(action):
                    try:
                        if await action(stream):
                            return  # the action ends the connection
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return  # the client hung up first
                    continue
                assert isinstance(action, bytes)
                await stream.send(action)
                if b"connection: close" in action.lower() or action.endswith(b"<cut>"):
                    return


def ok(body: bytes, *extra: str) -> bytes:
    headers = [f"content-length: {len(body)}", "content-type: application/json", *extra]
    return ("HTTP/1.1 200 OK\r\n" + "\r\n".join(headers) + "\r\n\r\n").encode() + body


@pytest.fixture(params=["asyncio", pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Every test runs on plain asyncio and on uvloop (the loop ``anvil serve`` runs on)."""
    return request.param


@pytest.fixture
async def raw() -> AsyncIterator[RawServer]:
    server = RawServer()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = listener.extra(SocketAttribute.local_port)
    async with anyio.create_task_group() as group:
        group.start_soon(listener.serve, server.handle)
        yield server
        group.cancel_scope.cancel()
    await listener.aclose()


@pytest.fixture
async def pooled() -> AsyncIterator[PooledUpstream]:
    client = PooledUpstream()
    yield client
    await client.aclose()


async def test_an_answer_is_read_whole_and_the_request_goes_out_exactly_as_built(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    raw.script = [ok(b'{"id": 1}', "x-request-id: req_7", "retry-after: 3")]
    url = f"http://127.0.0.1:{raw.port}/a%2Fb/c?q=x%20y&r=%C3%BC"
    headers = [("Idempotency-Key", "k-1"), ("content-type", "application/json")]
    answer = await pooled.exchange("POST", url, headers, b'{"n":1}', timeout_ms=5000, max_bytes=1024)
    assert (answer.status, answer.body, answer.request_id, answer.retry_after) == (200, b'{"id": 1}', "req_7", "3")
    assert answer.ok and not answer.uncertain
    seen = raw.seen[0]
    assert seen.head.split(b"\r\n")[0] == b"POST /a%2Fb/c?q=x%20y&r=%C3%BC HTTP/1.1"
    assert b"Idempotency-Key: k-1" in seen.head and seen.body == b'{"n":1}'
    assert b"cookie" not in seen.head.lower()


async def test_a_body_without_a_content_type_is_sent_without_one(raw: RawServer, pooled: PooledUpstream) -> None:
    await pooled.exchange("PUT", f"http://127.0.0.1:{raw.port}/x", [], b"raw", timeout_ms=5000, max_bytes=1024)
    assert b"content-type" not in raw.seen[0].head.lower()


async def test_connections_are_kept_alive_and_reused(raw: RawServer, pooled: PooledUpstream) -> None:
    for _ in range(3):
        answer = await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/r", [], None, timeout_ms=5000, max_bytes=64)
        assert answer.ok
    assert len({seen.peer_port for seen in raw.seen}) == 1


async def test_a_redirect_is_not_followed_and_counts_as_a_failure_after_the_response(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    raw.script = [b"HTTP/1.1 302 Found\r\nlocation: /elsewhere\r\ncontent-length: 0\r\n\r\n"]
    answer = await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/r", [], None, timeout_ms=5000, max_bytes=64)
    assert (answer.status, answer.after_response, answer.ok) == (302, True, False)
    assert len(raw.seen) == 1


async def test_declared_and_streamed_bodies_over_the_limit_are_refused(raw: RawServer, pooled: PooledUpstream) -> None:
    chunk = b"20\r\n" + b"x" * 32 + b"\r\n"
    chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunk + chunk + b"0\r\n\r\n"
    raw.script = [ok(b"z" * 100), chunked]
    url = f"http://127.0.0.1:{raw.port}/big"
    declared = await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=50)
    streamed = await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=50)
    for answer in (declared, streamed):
        assert (answer.oversized, answer.after_response, answer.body) == (True, True, b"")


async def test_a_refused_connection_provably_sent_nothing(pooled: PooledUpstream) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound but never listening: connections are refused
        answer = await pooled.exchange("POST", f"http://127.0.0.1:{port}/w", [], b"{}", timeout_ms=5000, max_bytes=64)
    assert answer.condition == "connection_reset"
    assert not answer.uncertain


@pytest.mark.parametrize("anyio_backend", [pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")])
async def test_a_connection_reset_before_the_request_was_written_provably_sent_nothing(
    pooled: PooledUpstream,
) -> None:
    pytest.importorskip("uvloop")  # the loop anvil serve runs on: it reports a reset at accept before the write
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(64)
        listening.setblocking(False)
        url = f"http://127.0.0.1:{listening.getsockname()[1]}/w"
        loop = asyncio.get_running_loop()

        async def reset_at_accept() -> None:
            while True:
                accepted, _ = await loop.sock_accept(listening)
                accepted.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                accepted.close()  # a reset, as a load balancer with no backend sends

        resetting = asyncio.create_task(reset_at_accept())
        try:
            answers = [await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64) for _ in range(20)]
        finally:
            resetting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await resetting
    assert {answer.condition for answer in answers} == {"connection_reset"}
    assert sum(not answer.uncertain for answer in answers) >= 10  # the rest saw the reset after their write


async def test_a_deadline_passed_after_sending_may_have_reached_the_upstream(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    raw.script = ["hold"]
    answer = await pooled.exchange("POST", f"http://127.0.0.1:{raw.port}/w", [], b"{}", timeout_ms=300, max_bytes=64)
    assert (answer.condition, answer.maybe_received) == ("timeout", True)
    assert answer.uncertain and len(raw.seen) == 1


async def test_a_connection_cut_in_the_middle_of_the_body_is_uncertain(raw: RawServer, pooled: PooledUpstream) -> None:
    raw.script = [b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n<cut>"]
    answer = await pooled.exchange("POST", f"http://127.0.0.1:{raw.port}/w", [], b"{}", timeout_ms=5000, max_bytes=1024)
    assert answer.condition == "connection_reset"
    assert (answer.after_response, answer.uncertain, answer.ok) == (True, True, False)


# --- what the lean client reads and refuses (its own HTTP/1.1 framing) ------------------------------


async def test_an_informational_answer_is_skipped_and_the_real_answer_read(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    raw.script = [b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n" + ok(b'{"n": 2}')]
    answer = await pooled.exchange("POST", f"http://127.0.0.1:{raw.port}/w", [], b"{}", timeout_ms=5000, max_bytes=64)
    assert (answer.status, answer.body, answer.ok) == (200, b'{"n": 2}', True)


async def test_the_host_and_framing_headers_are_the_clients_own(raw: RawServer, pooled: PooledUpstream) -> None:
    headers = [("Host", "evil.example"), ("Content-Length", "999"), ("Transfer-Encoding", "chunked"), ("X-A", "1")]
    await pooled.exchange("PATCH", f"http://127.0.0.1:{raw.port}/p", headers, b"ab", timeout_ms=5000, max_bytes=64)
    await pooled.exchange("POST", f"http://127.0.0.1:{raw.port}/p", [], None, timeout_ms=5000, max_bytes=64)
    lines = raw.seen[0].head.lower().split(b"\r\n")
    assert f"host: 127.0.0.1:{raw.port}".encode() in lines and b"evil.example" not in raw.seen[0].head
    assert b"content-length: 2" in lines and b"transfer-encoding" not in raw.seen[0].head.lower()
    assert b"x-a: 1" in lines and raw.seen[0].body == b"ab"
    assert b"accept-encoding: gzip, deflate" in lines and any(line.startswith(b"user-agent: anvil/") for line in lines)
    assert b"content-length: 0" in raw.seen[1].head.lower().split(b"\r\n")  # a bodiless POST says so


@pytest.mark.parametrize(
    "header",
    [
        *[("X-A", "a\r\nX-Injected: 1"), ("X-A", "a\nb"), ("X-A", "a\x00"), ("X-A: b", "c"), ("X A", "c")],
        *[("X-A", "ü€"), ("X-A", "a\x0bb"), ("X-A", "a\x0cb"), ("X-A", "a\x7fb"), ("X-A", "a\x85b"), ("X-A", "a\x9f")],
    ],
)
async def test_a_header_that_could_split_the_request_is_refused_before_anything_is_sent(
    raw: RawServer, pooled: PooledUpstream, header: tuple[str, str]
) -> None:
    with pytest.raises(ValueError):
        await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/x", [header], None, timeout_ms=5000, max_bytes=64)
    await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/after", [], None, timeout_ms=5000, max_bytes=64)
    assert [seen.head.split(b"\r\n")[0] for seen in raw.seen] == [b"GET /after HTTP/1.1"]


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "http://user@127.0.0.1/x", "http:///x", "/relative"])
async def test_a_url_that_is_not_plain_http_or_https_is_refused(pooled: PooledUpstream, url: str) -> None:
    with pytest.raises(ValueError):
        await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)


@pytest.mark.parametrize("kind", ["pooled", "httpx"])
async def test_a_head_answer_ends_with_its_headers_whatever_length_it_declares(
    raw: RawServer, pooled: PooledUpstream, kind: str
) -> None:
    raw.script = [b"HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n"]  # no body follows: a HEAD has none
    wire = WireRequest(method="HEAD", url=f"http://127.0.0.1:{raw.port}/h", path="/h", query=(), headers=())
    async with httpx.AsyncClient() as plain:
        answer = await send_once(pooled if kind == "pooled" else plain, wire, timeout_ms=2000, max_bytes=64)
    assert (answer.status, answer.body, answer.ok, answer.oversized) == (200, b"", True, False)


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("gzip", gzip.compress(b'{"id": "zipped"}', mtime=0)),
        ("deflate", zlib.compress(b'{"id": "zipped"}')),
        ("deflate", zlib.compress(b'{"id": "zipped"}')[2:-4]),  # raw deflate, as some servers send it
    ],
)
async def test_compressed_answers_are_decoded(
    raw: RawServer, pooled: PooledUpstream, encoding: str, packed: bytes
) -> None:
    raw.script = [ok(packed, f"content-encoding: {encoding}")]
    answer = await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/z", [], None, timeout_ms=5000, max_bytes=64)
    assert (answer.status, answer.body) == (200, b'{"id": "zipped"}')


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("gzip", gzip.compress(b'{"id": "zipped", "n": 1}', mtime=0)[:-8]),
        ("deflate", zlib.compress(b'{"id": "zipped"}')[:-6]),
    ],
    ids=["gzip", "deflate"],
)
async def test_a_compressed_body_that_stops_short_is_a_failure_not_a_shorter_answer(
    raw: RawServer, pooled: PooledUpstream, encoding: str, packed: bytes
) -> None:
    raw.script = [ok(packed, f"content-encoding: {encoding}")]  # whole by its length, cut inside the stream
    answer = await pooled.exchange("POST", f"http://127.0.0.1:{raw.port}/z", [], b"{}", timeout_ms=5000, max_bytes=64)
    assert (answer.condition, answer.after_response, answer.ok) == ("connection_reset", True, False)


async def test_a_small_compressed_body_that_inflates_past_the_limit_is_refused(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    bomb = gzip.compress(b"0" * 5_000_000, mtime=0)
    raw.script = [ok(bomb, "content-encoding: gzip")]
    answer = await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/z", [], None, timeout_ms=5000, max_bytes=1024)
    assert len(bomb) < 10_000 and (answer.oversized, answer.after_response, answer.body) == (True, True, b"")


@pytest.mark.parametrize("kind", ["pooled", "httpx"])
@pytest.mark.parametrize(
    ("encoding", "packed"),
    [("gzip", gzip.compress(b'{"id": 1}', mtime=0)), ("deflate", zlib.compress(b'{"id": 1}'))],
    ids=["gzip", "deflate"],
)
async def test_bytes_after_the_end_of_a_compressed_body_make_the_answer_broken(
    raw: RawServer, pooled: PooledUpstream, kind: str, encoding: str, packed: bytes
) -> None:
    raw.script = [ok(packed + b"trailing bytes", f"content-encoding: {encoding}")]
    wire = WireRequest(method="POST", url=f"http://127.0.0.1:{raw.port}/z", path="/z", query=(), headers=())
    async with httpx.AsyncClient() as plain:
        answer = await send_once(pooled if kind == "pooled" else plain, wire, timeout_ms=5000, max_bytes=1024)
    assert (answer.condition, answer.after_response, answer.maybe_received) == ("connection_reset", True, True)


#: A gzip header and an empty deflate block, then more empty (stored, non-final) blocks: bytes on the
#: wire that decode to nothing, as many as the upstream likes.
_GZIP_OPENING = bytes.fromhex("1f8b0800000000000003000000ffff")
_EMPTY_BLOCK = b"\x00\x00\x00\xff\xff"


@pytest.mark.parametrize(
    ("opening", "tail"),
    [
        pytest.param(gzip.compress(b"{}", mtime=0), b"\x00" * 4096, id="bytes-after-the-stream"),
        pytest.param(_GZIP_OPENING, _EMPTY_BLOCK * 800, id="blocks-decoding-to-nothing"),
    ],
)
async def test_an_endless_compressed_answer_is_cut_off_within_the_limit_not_at_the_deadline(
    raw: RawServer, pooled: PooledUpstream, opening: bytes, tail: bytes
) -> None:
    async def endless(stream: SocketStream) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\nconnection: close\r\n\r\n" + opening)
        for _ in range(4096):
            await stream.send(tail)  # 16 MiB and counting, never finished
        await anyio.sleep(10)
        return True

    raw.script = [endless]
    began = anyio.current_time()
    answer = await pooled.exchange(
        "POST", f"http://127.0.0.1:{raw.port}/e", [], b"{}", timeout_ms=8000, max_bytes=65536
    )
    assert answer.after_response and not answer.ok
    assert answer.condition == "connection_reset" or answer.oversized  # broken, or past the limit as it came
    assert anyio.current_time() - began < 6  # refused as the bytes came; the deadline would be 8 s


async def test_an_answer_without_a_length_ends_where_the_upstream_closes(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    raw.script = [b'HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{"until": "close"}']
    answer = await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/c", [], None, timeout_ms=5000, max_bytes=64)
    assert (answer.status, answer.body, answer.ok) == (200, b'{"until": "close"}', True)
    again = await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/c", [], None, timeout_ms=5000, max_bytes=64)
    assert again.ok and raw.seen[0].peer_port != raw.seen[1].peer_port  # never reused after a close


def _reset(stream: SocketStream) -> None:
    """Make the stream's close a TCP reset (RST), not an orderly end (FIN)."""
    stream.extra(SocketAttribute.raw_socket).setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def test_an_answer_without_a_length_cut_by_a_reset_is_uncertain_not_complete(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    async def answer_then_reset(stream: SocketStream) -> bool:
        await stream.send(b'HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{"until": ')
        await anyio.sleep(0.1)
        _reset(stream)
        return True

    raw.script = [answer_then_reset]
    answer = await pooled.exchange("POST", f"http://127.0.0.1:{raw.port}/c", [], b"{}", timeout_ms=5000, max_bytes=64)
    assert (answer.condition, answer.after_response, answer.ok) == ("connection_reset", True, False)


@pytest.mark.parametrize(
    "answer_bytes",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"p" * (MAX_HEADER_BYTES + 10) + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["garbage", "two-lengths", "huge-headers", "bad-chunk"],
)
async def test_a_malformed_answer_is_a_failure_the_write_may_have_caused(
    raw: RawServer, pooled: PooledUpstream, answer_bytes: bytes
) -> None:
    raw.script = [answer_bytes + b"<cut>"]
    answer = await pooled.exchange("POST", f"http://127.0.0.1:{raw.port}/m", [], b"{}", timeout_ms=5000, max_bytes=64)
    assert (answer.condition, answer.maybe_received, answer.ok) == ("connection_reset", True, False)


@pytest.mark.parametrize(
    ("opening", "after_response"),
    [
        pytest.param(b"HTTP/1.1 200 OK\r\nx-pad: ", False, id="header"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nx-trailer: ", True, id="trailer"
        ),
    ],
)
async def test_headers_or_trailers_that_never_end_are_cut_off_at_the_bound_not_at_the_deadline(
    raw: RawServer, pooled: PooledUpstream, opening: bytes, after_response: bool
) -> None:
    async def endless(stream: SocketStream) -> bool:
        await stream.send(opening)
        for _ in range(64):
            await stream.send(b"p" * 4096)  # one header (or trailer) value, 256 KiB and counting, never finished
        await anyio.sleep(10)
        return True

    raw.script = [endless]
    began = anyio.current_time()
    answer = await pooled.exchange("GET", f"http://127.0.0.1:{raw.port}/e", [], None, timeout_ms=8000, max_bytes=64)
    assert (answer.condition, answer.after_response, answer.maybe_received) == (
        "connection_reset",
        after_response,
        True,
    )
    assert anyio.current_time() - began < 6  # refused at the bound; the deadline would be 8 s


async def test_bytes_nobody_asked_for_retire_the_connection(raw: RawServer, pooled: PooledUpstream) -> None:
    async def answer_then_talk(stream: SocketStream) -> None:
        await stream.send(ok(b"{}"))
        await anyio.sleep(0.05)
        await stream.send(b'HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{"x": 99}')  # unsolicited

    raw.script = [answer_then_talk, ok(b'{"second": true}')]
    url = f"http://127.0.0.1:{raw.port}/u"
    assert (await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)).ok
    await anyio.sleep(0.2)
    second = await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)
    assert second.body == b'{"second": true}' and raw.seen[0].peer_port != raw.seen[1].peer_port


async def test_a_second_answer_in_the_same_bytes_is_not_taken_for_the_next_request(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    raw.script = [ok(b'{"first": 1}') + ok(b'{"smuggled": 1}'), ok(b'{"next": 1}')]
    url = f"http://127.0.0.1:{raw.port}/s"
    first = await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)
    second = await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)
    assert (first.body, second.body) == (b'{"first": 1}', b'{"next": 1}')


async def test_a_connection_whose_request_is_still_being_written_is_not_reused(pooled: PooledUpstream) -> None:
    peers: list[int] = []

    async def answer_early(stream: SocketStream) -> None:
        peers.append(stream.extra(SocketAttribute.remote_port))
        buffer = b""
        async with stream:
            while b"\r\n\r\n" not in buffer:
                buffer += await stream.receive()
            await stream.send(ok(b'{"early": true}'))  # before the body is read, as an early 413 would be
            await anyio.sleep(0.3)
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                while True:
                    await stream.receive()  # the body, then whatever follows it: never answered

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    url = f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}/early"
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, answer_early)
        body = b"x" * 32_000_000  # far more than the loopback socket buffers hold
        early = await pooled.exchange("POST", url, [], body, timeout_ms=5000, max_bytes=64)
        later = await pooled.exchange("GET", url, [], None, timeout_ms=3000, max_bytes=64)
        group.cancel_scope.cancel()
    assert early.body == b'{"early": true}' and later.ok
    assert len(set(peers)) == 2  # the second request went out on a fresh connection


async def test_an_idle_connection_the_upstream_closed_is_not_reused(raw: RawServer, pooled: PooledUpstream) -> None:
    async def answer_then_close(stream: SocketStream) -> bool:
        await stream.send(ok(b"{}"))  # a keep-alive answer, then the server closes the idle connection
        return True

    raw.script = [answer_then_close]
    url = f"http://127.0.0.1:{raw.port}/i"
    assert (await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)).ok
    await anyio.sleep(0.1)
    later = await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64)
    assert later.ok and not later.uncertain and len(raw.seen) == 2


async def test_an_idle_connection_past_its_keep_alive_is_not_reused(raw: RawServer) -> None:
    client = PooledUpstream(keepalive_seconds=0.0)
    try:
        for _ in range(2):
            assert (
                await client.exchange("GET", f"http://127.0.0.1:{raw.port}/k", [], None, timeout_ms=5000, max_bytes=64)
            ).ok
    finally:
        await client.aclose()
    assert raw.seen[0].peer_port != raw.seen[1].peer_port


async def test_a_connection_in_use_when_the_pool_closes_is_closed_after_its_call_not_pooled(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    async def slow_answer(stream: SocketStream) -> None:
        await anyio.sleep(0.3)
        await stream.send(ok(b'{"slow": true}'))

    raw.script = [slow_answer]
    url = f"http://127.0.0.1:{raw.port}/a"
    results: list[Answer] = []

    async def call() -> None:
        results.append(await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.sleep(0.1)
        await pooled.aclose()  # while the call is out
    assert results[0].body == b'{"slow": true}'
    assert (await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)).ok
    assert raw.seen[0].peer_port != raw.seen[1].peer_port


async def test_a_call_past_the_per_host_limit_waits_and_its_deadline_sends_nothing(raw: RawServer) -> None:
    client = PooledUpstream(limit_per_host=1)
    raw.script = ["hold"]
    url = f"http://127.0.0.1:{raw.port}/l"
    results: list[Answer] = []

    async def call(timeout_ms: int) -> None:
        results.append(await client.exchange("POST", url, [], b"{}", timeout_ms=timeout_ms, max_bytes=64))

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(call, 1500)
            await anyio.sleep(0.2)
            group.start_soon(call, 300)
    finally:
        await client.aclose()
    waited, held = results
    assert (waited.condition, waited.maybe_received, waited.uncertain) == ("timeout", False, False)
    assert (held.condition, held.maybe_received) == ("timeout", True) and len(raw.seen) == 1


# --- HTTPS ---------------------------------------------------------------------------------------------


def _certificate(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "anvil test upstream")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[int, Path, list[bytes]]]:
    cert, key = _certificate(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    heads: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(ok(b'{"tls": true}'))
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield port, cert, heads


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_https_checks_the_certificate_and_a_refused_handshake_sent_nothing(
    tls_server: tuple[int, Path, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, cert, heads = tls_server
    untrusting = PooledUpstream()
    refused = await untrusting.exchange("POST", f"https://127.0.0.1:{port}/t", [], b"{}", timeout_ms=5000, max_bytes=64)
    await untrusting.aclose()
    assert (refused.condition, refused.uncertain) == ("connection_reset", False) and heads == []
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the trust store the default context loads
    trusting = PooledUpstream()
    try:
        answer = await trusting.exchange("GET", f"https://127.0.0.1:{port}/t", [], None, timeout_ms=5000, max_bytes=64)
    finally:
        await trusting.aclose()
    assert (answer.status, answer.body) == (200, b'{"tls": true}')
    assert heads[0].startswith(b"GET /t HTTP/1.1\r\nhost: 127.0.0.1:") and not heads[0].startswith(b"POST")


async def test_a_request_over_64_kib_never_shares_its_connection_with_the_next(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    url = f"http://127.0.0.1:{raw.port}/big"
    assert (await pooled.exchange("POST", url, [], b"x" * (65 * 1024), timeout_ms=5000, max_bytes=64)).ok
    assert (await pooled.exchange("POST", url, [], b"x" * 1024, timeout_ms=5000, max_bytes=64)).ok
    assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64)).ok
    first, second, third = (seen.peer_port for seen in raw.seen)
    assert first != second and second == third  # TLS may still hold part of a large body: never followed


# --- writes never share a connection ----------------------------------------------------------------------


async def test_a_write_never_takes_a_late_answer_on_a_pooled_connection_for_its_own(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    first: list[int] = []

    async def answer(stream: SocketStream) -> None:
        port = stream.extra(SocketAttribute.remote_port)
        if not first:
            first.append(port)
            await stream.send(ok(b'{"read": 1}'))
            return
        if port == first[0] and raw.seen[-1].head.startswith(b"POST"):
            await stream.send(ok(b'{"late": "an earlier answer, arriving now"}'))
        await stream.send(ok(b'{"refund": "re_1"}' if raw.seen[-1].head.startswith(b"POST") else b'{"read": 2}'))

    raw.script = [answer, answer, answer]
    url = f"http://127.0.0.1:{raw.port}/w"
    assert (await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)).ok
    write = await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)
    read = await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)
    assert write.body == b'{"refund": "re_1"}' and read.body == b'{"read": 2}'
    assert b"\r\nconnection: close" in raw.seen[1].head  # and the write's connection carries nothing else
    assert raw.seen[1].peer_port != first[0] and raw.seen[2].peer_port == first[0]  # reads still reuse


async def test_a_write_goes_out_on_the_spare_the_write_before_opened_not_on_a_connect_of_its_own(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    url = f"http://127.0.0.1:{raw.port}/w"
    assert (await pooled.exchange("GET", url, [], None, timeout_ms=5000, max_bytes=64)).ok
    assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)).ok
    await asyncio.sleep(0.1)  # the spare connects meanwhile
    opened_before = list(raw.accepted)
    assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)).ok
    read, first_write, second_write = (seen.peer_port for seen in raw.seen)
    assert len({read, first_write, second_write}) == 3  # each write on a connection of its own, never a used one
    assert second_write in opened_before  # already open when the write began: it waited for no connect
    assert b"\r\nconnection: close" in raw.seen[2].head


async def test_a_write_opens_the_next_spare_only_once_its_answer_is_in_never_while_the_upstream_handles_it(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    open_while_handled: list[int] = []

    async def slow_answer(stream: SocketStream) -> None:
        await anyio.sleep(0.1)  # long enough for a spare opened as the write went out to be accepted
        open_while_handled.append(len(raw.accepted))
        await stream.send(ok(b'{"refund": "re_1"}'))

    raw.script = [slow_answer, slow_answer]
    url = f"http://127.0.0.1:{raw.port}/w"
    assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)).ok
    await asyncio.sleep(0.1)  # the spare connects now
    assert len(raw.accepted) == 2
    assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)).ok
    assert open_while_handled == [1, 2]  # the write's own connection (and the spare it went out on) only
    assert raw.seen[1].peer_port == raw.accepted[1]  # the second write took the spare the first one opened


async def test_a_write_answered_after_the_pool_was_closed_opens_no_spare(raw: RawServer) -> None:
    pooled = PooledUpstream()

    async def slow_answer(stream: SocketStream) -> None:
        await anyio.sleep(0.2)
        await stream.send(ok(b'{"refund": "re_1"}'))

    raw.script = [slow_answer]
    url = f"http://127.0.0.1:{raw.port}/w"
    results: list[Answer] = []

    async def write() -> None:
        results.append(await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True))

    async with anyio.create_task_group() as group:
        group.start_soon(write)
        await anyio.sleep(0.05)
        await pooled.aclose()  # shutting down while the write is out
    await asyncio.sleep(0.1)
    assert results[0].ok and len(raw.accepted) == 1  # no connection left open behind the closed pool


async def test_a_spare_that_received_bytes_nobody_asked_for_never_carries_a_write(raw: RawServer) -> None:
    pooled = PooledUpstream()
    raw.unasked = {1: ok(b'{"stray": "an answer to nothing"}')}  # on the spare, as it is accepted
    url = f"http://127.0.0.1:{raw.port}/w"
    try:
        assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)).ok
        await asyncio.sleep(0.1)
        write = await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)
    finally:
        await pooled.aclose()
    assert write.body == b'{"ok": true}'
    assert raw.seen[1].peer_port not in raw.accepted[:2]  # the spare was closed; the write connected anew


async def test_a_spare_older_than_its_time_is_closed_and_the_write_connects_anew(raw: RawServer) -> None:
    pooled = PooledUpstream(spare_seconds=0.05)
    url = f"http://127.0.0.1:{raw.port}/w"
    try:
        assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)).ok
        await asyncio.sleep(0.2)  # the spare opened, then expired unused
        spare = raw.accepted[1]
        assert (await pooled.exchange("POST", url, [], b"{}", timeout_ms=5000, max_bytes=64, write=True)).ok
    finally:
        await pooled.aclose()
    assert len(raw.accepted) >= 3 and raw.seen[1].peer_port not in (raw.seen[0].peer_port, spare)


async def test_the_executor_sends_every_write_on_a_connection_of_its_own(
    raw: RawServer, pooled: PooledUpstream
) -> None:
    context = RuntimeContext(
        service_id="payments", base_url=f"http://127.0.0.1:{raw.port}", client=pooled, env="dev", retries=False
    )
    arguments = {"payment_id": "pay_1", "amount": 5}
    for op in (read_op(), read_op(), unkeyed_write(), unkeyed_write(), read_op()):
        assert (await execute(op, arguments if not op.is_read else {"payment_id": "pay_1"}, context)).ok
    ports = [seen.peer_port for seen in raw.seen]
    assert ports[0] == ports[1] == ports[4] and len({ports[0], ports[2], ports[3]}) == 3
