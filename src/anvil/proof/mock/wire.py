"""The mock's side of the wire: reading a request body within its bound, logging it, answering.

Request bodies are read up to :data:`MAX_BODY_BYTES`; what the request log keeps of a body, an answer,
the headers and the query is bounded too, and credentials are masked (``***``): the usual credential
headers and every header or query parameter the operation's auth travels in (each factor of a composite).
"""

from __future__ import annotations

import json
import logging
from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import effective_auth_carriers
from anvil.proof.mock.routes import Route

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_QUERY",
    "QuietReset",
    "ResetResponse",
    "Unparsed",
    "finish",
    "logged",
    "logged_headers",
    "logged_query",
    "parse_body",
    "read_body",
    "respond",
]

#: Largest request body the mock reads (413 above it).
MAX_BODY_BYTES: Final = 1024 * 1024
#: The most query pairs one logged request keeps (``query_truncated`` says when more came).
MAX_QUERY: Final = 1024
_LOGGED_BYTES: Final = 16 * 1024
_MAX_HEADERS: Final = 64
_QUIET: Final = "ASGI callable returned without completing response."
_SECRET_HEADERS: Final = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})


class Unparsed:
    """A request body that is not JSON (or not the form its content type says)."""


def parse_body(raw: bytes) -> JSONValue:
    """The JSON a request body holds (None when empty; :class:`Unparsed` when it is not JSON)."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return Unparsed()


def logged_query(request: Request, route: Route | None) -> list[list[str]]:
    """The request's query pairs as the log keeps them: at most :data:`MAX_QUERY`, credentials masked."""
    secret = _credential_names(route, "query")
    pairs = request.query_params.multi_items()[:MAX_QUERY]
    return [[name, "***" if name in secret else value] for name, value in pairs]


def logged(raw: bytes, parsed: JSONValue) -> tuple[JSONValue, bool]:
    """What the log keeps of a body, and whether it was too large to keep."""
    if len(raw) > _LOGGED_BYTES:
        return None, True
    if isinstance(parsed, Unparsed):
        return raw.decode("utf-8", errors="replace"), False
    return parsed, False


async def read_body(request: Request) -> bytes | None:
    """The request body, or None when it is larger than :data:`MAX_BODY_BYTES`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def respond(status: int, body: JSONValue) -> Response:
    """An answer: JSON, or no content."""
    if body is None or status == 204:
        return Response(status_code=status)
    return JSONResponse(body, status_code=status)


def finish(entry: JSONObject, status: int, body: JSONValue) -> Response:
    """Log the answer on ``entry`` (bounded) and answer it."""
    entry["status"] = status
    encoded = json.dumps(body).encode() if body is not None else b""
    entry["response"] = body if len(encoded) <= _LOGGED_BYTES else None
    return respond(status, body)


def _credential_names(route: Route | None, where: str) -> set[str]:
    """The header (lower-cased) or query names the route's credentials travel in: every factor's."""
    carriers = effective_auth_carriers(route.op.auth) if route is not None else ()
    return {carrier.name.lower() if where == "header" else carrier.name for carrier in carriers if carrier.in_ == where}


def logged_headers(request: Request, route: Route | None) -> dict[str, str]:
    """The request's headers as the log keeps them: bounded, credentials masked."""
    secret = set(_SECRET_HEADERS) | _credential_names(route, "header")
    out: dict[str, str] = {}
    for name, value in list(request.headers.items())[:_MAX_HEADERS]:
        out[name] = "***" if name in secret else value[:1024]
    return out


class ResetResponse(Response):
    """Starts an answer and stops half way: the server closes the connection (a lost answer)."""

    def __init__(self) -> None:
        super().__init__(status_code=200)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", b"4096")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{", "more_body": True})


class QuietReset(logging.Filter):
    """Keeps the server's complaint about a :class:`ResetResponse` (a lost answer on purpose) out of its log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _QUIET not in record.getMessage()
