"""Running the mock: bind loopback, print the URL as one JSON line, serve until SIGINT/SIGTERM."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from anvil.air.model import Document
from anvil.proof.mock.app import MockApi, create_mock_app

__all__ = ["MOCK_HOST", "serve_mock"]

#: The mock only ever listens on loopback.
MOCK_HOST = "127.0.0.1"


async def serve_mock(document: Document, *, port: int = 0, seed: int = 0, out: TextIO | None = None) -> None:
    """Serve ``document``'s API on ``127.0.0.1:port`` until signalled; print ``{"url": ...}`` once listening.

    The socket is bound and listening before the line is printed, so the URL is usable at once.

    Raises:
        OSError: the port cannot be bound.
    """
    from anvil.serve.mcp.http import listen, serve_http

    api = MockApi(document, seed=seed)
    app = create_mock_app(api)
    sock = listen(MOCK_HOST, port)
    try:
        stream = out or sys.stdout
        stream.write(json.dumps({"url": f"http://{MOCK_HOST}:{sock.getsockname()[1]}"}) + "\n")
        stream.flush()
        await serve_http(app, sock=sock, handle_signals=True)
    finally:
        sock.close()
