"""Inbound connection limits: idle and slow-header connections cannot starve a legitimate call.

Real ``anvil serve --http`` processes on loopback (their open-file limit set before they start), raw
sockets that connect and say nothing or send a request head a few bytes at a time, and a legitimate
``tools/call`` that must still be answered; then the pieces (the connection table, the cap) alone.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.writer import install_bundle
from anvil.serve.mcp.http import listen, serve_http
from anvil.serve.mcp.limits import FD_RESERVE, ConnectionLimits, ConnectionTable, connection_cap
from tests.serve.support import OWNER_REPO, TOKEN, MockServer, token_variable

#: The probe of the outside review: this many idle or slow-header sockets at once.
PROBE_SOCKETS = 1100
PARTIAL_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
LIST_PULLS = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "github_list_pull", "arguments": OWNER_REPO},
}


@dataclass
class Served:
    url: str
    port: int
    process: subprocess.Popen[str]

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")


@pytest.fixture(scope="module")
def bundle(github: Document, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("limits") / "github"
    install_bundle(out, emit_bundle(github))
    return out


@pytest.fixture(scope="module", autouse=True)
def enough_descriptors() -> None:
    """This process holds the probe's sockets, so it needs more than 1024 descriptors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * PROBE_SOCKETS if hard == resource.RLIM_INFINITY else min(hard, 4 * PROBE_SOCKETS)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


@contextmanager
def served(
    bundle: Path, mock: MockServer, github: Document, *flags: str, open_files: tuple[int, int] | None = None
) -> Iterator[Served]:
    """``anvil serve BUNDLE --http 127.0.0.1:0 FLAGS`` with ``open_files`` as its (soft, hard) limit."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env |= {"ANVIL_ENV": "dev", "ANVIL_BASE_URL": mock.url, token_variable(github): TOKEN}

    def limit() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, open_files)

    command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", "127.0.0.1:0", *flags]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, preexec_fn=limit
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        assert ready, "anvil serve did not announce its URL"
        url = json.loads(process.stdout.readline())["url"]
        yield Served(url=url, port=int(url.rsplit(":", 1)[1].split("/")[0]), process=process)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=10)


def stderr_of(served: Served) -> str:
    served.process.send_signal(signal.SIGTERM)
    _, errors = served.process.communicate(timeout=30)
    return errors


def open_probe(port: int, count: int) -> list[socket.socket]:
    """``count`` sockets: every other one says nothing, the rest send half a request head."""
    sockets = []
    for index in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if index % 2:
            sock.sendall(PARTIAL_HEAD)
        sockets.append(sock)
    return sockets


def closed_by_server(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server has closed (read end of stream or a reset)."""
    closed = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            if sock.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed


def legitimate_call(url: str) -> httpx.Response:
    with httpx.Client(timeout=15) as client:
        return client.post(url, json=LIST_PULLS, headers=JSON_HEADERS)


def answered(response: httpx.Response) -> bool:
    return response.status_code == 200 and response.json()["result"].get("isError", False) is False


def open_files_of(pid: int) -> int:
    line = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if "open files" in line)
    return int(line.split()[3])


def test_eleven_hundred_idle_and_slow_header_sockets_leave_a_legitimate_call_answered(
    bundle: Path, mock: MockServer, github: Document
) -> None:
    # 1024 descriptors that cannot be raised: without a cap the listener runs out of them (EMFILE) and
    # resets what it accepts, the legitimate call included.
    with served(bundle, mock, github, open_files=(1024, 1024)) as server:
        probe = open_probe(server.port, PROBE_SOCKETS)
        try:
            response = legitimate_call(server.url)
            with httpx.Client(timeout=15) as client:
                health = client.get(server.base + "/healthz")
            closed = closed_by_server(probe)
        finally:
            for sock in probe:
                sock.close()
        errors = stderr_of(server)
    assert answered(response) and mock.requests[-1]["method"] == "GET"
    assert health.status_code == 200
    cap = 1024 - FD_RESERVE
    assert closed >= PROBE_SOCKETS - cap  # the oldest idle and slow ones made room
    assert "inbound connections are open (the limit); closing those idle longest" in errors


def test_serving_raises_the_soft_open_file_limit_to_the_hard_limit_so_the_probe_fits(
    bundle: Path, mock: MockServer, github: Document
) -> None:
    with served(bundle, mock, github, open_files=(1024, 4096)) as server:
        probe = open_probe(server.port, PROBE_SOCKETS)
        try:
            response = legitimate_call(server.url)
            closed = closed_by_server(probe)
            raised = open_files_of(server.process.pid)
        finally:
            for sock in probe:
                sock.close()
    assert answered(response)
    assert raised == 4096
    assert closed == 0  # room for all of them: nothing had to be closed


@pytest.fixture(scope="module")
def quick(bundle: Path, mock_server: MockServer, github: Document) -> Iterator[Served]:
    """One listener with a one-second header timeout and keep-alive, for the tests below."""
    with served(bundle, mock_server, github, "--header-timeout", "1", "--keep-alive", "1") as server:
        yield server


def wait_closed(sock: socket.socket, *, within: float) -> tuple[bool, bytes]:
    """Read until the server closes ``sock`` (True) or ``within`` seconds pass (False); what it sent."""
    sock.settimeout(0.2)
    received = b""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return True, received
        if not chunk:
            return True, received
        received += chunk
    return False, received


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(quick: Served) -> None:
    with socket.create_connection(("127.0.0.1", quick.port)) as idle:
        closed, sent = wait_closed(idle, within=8)
    assert closed and sent == b""


def test_a_request_head_that_does_not_arrive_in_time_is_answered_408_and_closed(quick: Served) -> None:
    with socket.create_connection(("127.0.0.1", quick.port)) as slow:
        slow.sendall(PARTIAL_HEAD)
        closed, sent = wait_closed(slow, within=8)
    assert closed and sent.startswith(b"HTTP/1.1 408 ")


def test_a_head_sent_a_byte_at_a_time_is_closed_even_though_bytes_keep_coming(quick: Served) -> None:
    head = PARTIAL_HEAD + b"x-slow: " + b"a" * 200
    with socket.create_connection(("127.0.0.1", quick.port)) as trickle:
        started = time.monotonic()
        closed = False
        for byte in head:  # 0.05 s a byte: over ten seconds for the whole head
            try:
                trickle.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.05)
        if not closed:
            closed, _ = wait_closed(trickle, within=1)
        elapsed = time.monotonic() - started
    assert closed and elapsed < 8


def test_a_request_head_larger_than_the_limit_is_answered_431_and_closed(quick: Served) -> None:
    with socket.create_connection(("127.0.0.1", quick.port)) as large:
        large.sendall(PARTIAL_HEAD + b"x-large: " + b"a" * 70_000 + b"\r\n")
        closed, sent = wait_closed(large, within=8)
    assert closed and sent.startswith(b"HTTP/1.1 431 ")


def test_an_idle_kept_alive_connection_is_closed_after_the_keep_alive_time(quick: Served) -> None:
    with socket.create_connection(("127.0.0.1", quick.port)) as kept:
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        closed, sent = wait_closed(kept, within=4)  # uvicorn alone waits 5 s
    assert closed and sent.startswith(b"HTTP/1.1 200 ")


def test_a_kept_alive_connection_serves_requests_whose_heads_arrive_in_time(quick: Served) -> None:
    with httpx.Client(timeout=15) as client:
        first = client.post(quick.url, json=LIST_PULLS, headers=JSON_HEADERS)
        time.sleep(0.5)  # within the keep-alive time: the same connection carries the next request
        second = client.post(quick.url, json=LIST_PULLS, headers=JSON_HEADERS)
    assert answered(first) and answered(second)


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"body": (await request.body()).decode()})


@contextmanager
def _raw(port: int, head: bytes = b"") -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if head:
            sock.sendall(head)
        yield sock
    finally:
        sock.close()


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    return await anyio.to_thread.run_sync(function, *args)


def _answer_of(sock: socket.socket) -> bytes:
    """One whole answer (head and ``content-length`` body) read from ``sock``."""
    sock.settimeout(10)
    received = b""
    while b"\r\n\r\n" not in received or len(received.partition(b"\r\n\r\n")[2]) < _length(received):
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received


def _length(answer: bytes) -> int:
    head = answer.partition(b"\r\n\r\n")[0].lower()
    return next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"content-length:")), 0)


def _post(port: int) -> int:
    with httpx.Client(timeout=10) as client:
        return client.post(f"http://127.0.0.1:{port}/echo", content=b"hi").status_code


@pytest.mark.anyio
async def test_at_the_connection_limit_the_longest_idle_connection_makes_room_and_a_busy_one_never_does() -> None:
    app = Starlette(routes=[Route("/echo", _echo, methods=["POST"])])
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    busy_head = b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 10\r\n\r\nhello"
    limits = ConnectionLimits(max_connections=2, header_timeout_seconds=30)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_http(app, sock=sock, limits=limits))
            await anyio.sleep(0.5)
            with _raw(port, busy_head) as busy, _raw(port) as idle:
                await anyio.sleep(0.3)  # both admitted: the busy one is reading its body
                assert await _in_thread(_post, port) == 200  # the idle one made room
                idle_closed, _ = await _in_thread(lambda: wait_closed(idle, within=5))
                busy.sendall(b"world")
                answer = await _in_thread(_answer_of, busy)
            group.cancel_scope.cancel()
    sock.close()
    assert idle_closed
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"body":"helloworld"}')


def test_the_connection_table_closes_the_longest_waiting_connection_and_refuses_when_all_are_busy() -> None:
    closed: list[str] = []
    table = ConnectionTable(2, clock=lambda: 0.0)
    assert table.admit("a", closed.append) and table.admit("b", closed.append)
    table.busy("a")
    assert table.admit("c", closed.append)  # "b" waited longest; "a" is serving a request
    assert closed == ["b"] and len(table) == 2
    table.waiting("a")  # "a" finished its request: now the newest waiting
    assert table.admit("d", closed.append)
    assert closed == ["b", "c"]
    table.busy("a")
    table.busy("d")
    assert table.admit("e", closed.append) is False  # every connection is serving a request
    assert (table.evicted, table.refused, len(table)) == (2, 1, 2)
    table.gone("a")
    assert table.admit("e", closed.append) and closed == ["b", "c"]


def test_the_connection_cap_leaves_a_reserve_of_descriptors() -> None:
    limits = ConnectionLimits(max_connections=4096)
    assert connection_cap(limits, 1024) == 1024 - FD_RESERVE
    assert connection_cap(limits, 20_000) == 4096
    assert connection_cap(limits, 300) == 150  # a tiny limit: half for connections
    assert connection_cap(ConnectionLimits(max_connections=10), 1024) == 10
