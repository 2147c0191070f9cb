"""The pooled upstream client: one attempt on a real loopback socket, classified as the httpx branch is.

A raw HTTP/1.1 server on 127.0.0.1 (anyio TCP listener) answers from a script, so every failure the
classification names can be produced exactly: a refused connection, a hold past the deadline, a close
in the middle of a body, a redirect, declared and streamed oversized bodies, keep-alive reuse.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream

from anvil.runtime.connections import PooledUpstream

pytestmark = pytest.mark.anyio


@dataclass
class Seen:
    head: bytes
    body: bytes
    peer_port: int


@dataclass
class RawServer:
    port: int = 0
    script: list[bytes | str] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)

    async def handle(self, stream: SocketStream) -> None:
        peer = stream.extra(SocketAttribute.remote_port)
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
                assert isinstance(action, bytes)
                await stream.send(action)
                if b"connection: close" in action.lower() or action.endswith(b"<cut>"):
                    return


def ok(body: bytes, *extra: str) -> bytes:
    headers = [f"content-length: {len(body)}", "content-type: application/json", *extra]
    return ("HTTP/1.1 200 OK\r\n" + "\r\n".join(headers) + "\r\n\r\n").encode() + body


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
