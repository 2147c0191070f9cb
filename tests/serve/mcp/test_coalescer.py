"""An answer's head and body leave in one write; interim and streamed heads are never held back.

uvicorn's own HTTP protocols (httptools and h11), under the gateway's connection guard, fed a request
on a transport that records what is written to the socket.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from anvil.serve.mcp.coalescer import HeadCoalescer
from anvil.serve.mcp.limits import ConnectionLimits, ConnectionTable, guarded_protocol

pytestmark = pytest.mark.anyio

BASES = [HttpToolsProtocol, H11Protocol]


class Recording(asyncio.Transport):
    """A socket's write side that keeps each write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _answer(request: Request) -> JSONResponse:
    await request.body()
    return JSONResponse({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}})


async def _stream(request: Request) -> StreamingResponse:
    release = request.app.state.release

    async def chunks() -> Any:
        await release.wait()
        yield b"data: late\n\n"

    return StreamingResponse(chunks(), media_type="text/event-stream")


async def _connected(base: type[Any]) -> tuple[Any, Recording, Starlette]:
    app = Starlette(routes=[Route("/mcp", _answer, methods=["POST"]), Route("/events", _stream)])
    app.state.release = asyncio.Event()
    config = Config(app=app, lifespan="off", log_level="warning")
    limits = ConnectionLimits()
    protocol_class = guarded_protocol(base, limits, ConnectionTable(8))
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = Recording()
    protocol.connection_made(transport)
    return protocol, transport, app


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.parametrize("base", BASES, ids=lambda base: base.__name__)
async def test_an_answer_leaves_in_one_write_with_its_head(base: type[Any]) -> None:
    protocol, transport, _ = await _connected(base)
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    protocol.data_received(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )
    await _settle()
    assert len(transport.writes) == 1, transport.writes
    (answer,) = transport.writes
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}')


@pytest.mark.parametrize("base", BASES, ids=lambda base: base.__name__)
async def test_a_100_continue_is_written_at_once_never_held_for_a_body(base: type[Any]) -> None:
    protocol, transport, _ = await _connected(base)
    protocol.data_received(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"expect: 100-continue\r\ncontent-length: 2\r\n\r\n"
    )
    await _settle()
    assert transport.writes[:1] == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    protocol.data_received(b"{}")
    await _settle()
    assert transport.writes[-1].startswith(b"HTTP/1.1 200 OK\r\n")


@pytest.mark.parametrize("base", BASES, ids=lambda base: base.__name__)
async def test_a_streamed_answer_gets_its_head_before_its_first_chunk_is_ready(base: type[Any]) -> None:
    protocol, transport, app = await _connected(base)
    protocol.data_received(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await _settle()
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and transport.writes[0].endswith(b"\r\n\r\n")
    app.state.release.set()
    await _settle()
    assert b"data: late" in b"".join(transport.writes[1:])


async def test_a_close_sends_the_held_head_first_and_an_abort_drops_it() -> None:
    loop = asyncio.get_running_loop()
    closing, aborting = Recording(), Recording()
    first = HeadCoalescer(closing, loop)
    first.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert first.get_write_buffer_size() == len(b"HTTP/1.1 204 No Content\r\n\r\n")
    first.close()
    assert closing.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"] and closing.closed
    second = HeadCoalescer(aborting, loop)
    second.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    second.abort()
    await _settle()
    assert aborting.writes == [] and aborting.closed
