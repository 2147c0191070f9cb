"""A loopback upstream that records every request exactly as it arrived on the socket.

The request line's target is kept byte for byte (no ASGI decoding, no dot-segment removal), so a test
can assert what an upstream really received. Answers come from a callable on the recorded request
(default: 200 with ``{"ok": true, "n": <count>}``); it may return ``None`` to close the connection
without an answer (a lost answer). Also :func:`serving`, the real fleet listener on a loopback socket.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn

__all__ = ["Answer", "RawRequest", "RawUpstream", "serving"]

_MAX_HEAD = 64 * 1024


@dataclass(frozen=True, slots=True)
class RawRequest:
    """One request as received: method, raw target, headers (lower-cased names) and body."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        """The target without its query."""
        return self.target.split("?", 1)[0]

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True, slots=True)
class Answer:
    """What the upstream sends back."""

    status: int = 200
    body: bytes = b'{"ok":true}'
    headers: tuple[tuple[str, str], ...] = ()


def _default(request: RawRequest, count: int) -> Answer | None:
    return Answer(body=json.dumps({"ok": True, "n": count}).encode())


@dataclass
class _State:
    requests: list[RawRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class RawUpstream:
    """A threaded HTTP/1.1 server on 127.0.0.1 (port 0) answering one request per connection."""

    def __init__(self, answer: Callable[[RawRequest, int], Answer | None] = _default) -> None:
        self.answer = answer
        self._state = _State()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer._handle(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> list[RawRequest]:
        """Every request received so far."""
        with self._state.lock:
            return list(self._state.requests)

    def __enter__(self) -> RawUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < _MAX_HEAD:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            rest += chunk
        request = RawRequest(method, target, headers, rest[:length])
        with self._state.lock:
            self._state.requests.append(request)
            count = len(self._state.requests)
        answer = self.answer(request, count)
        if answer is None:
            return  # the connection closes with no answer: the request may have committed
        extra = "".join(f"{name}: {value}\r\n" for name, value in answer.headers)
        reason = "OK" if answer.status < 400 else "Error"
        head_out = (
            f"HTTP/1.1 {answer.status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(answer.body)}\r\nconnection: close\r\n{extra}\r\n"
        )
        conn.sendall(head_out.encode("latin-1") + answer.body)


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve ``app`` (a :func:`~anvil.serve.listener.create_listener` app) with uvicorn on 127.0.0.1 in a
    thread of its own (its own event loop); yields the base URL. Clients the app uses (the runtime
    context's ``httpx.AsyncClient``) must be used only by the app."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="on", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the listener did not start")
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
