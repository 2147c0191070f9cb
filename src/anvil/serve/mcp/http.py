"""Streamable HTTP: a Starlette app serving an MCP server at ``/mcp``, plus ``/healthz``.

:func:`create_app` is a factory so later routes (``/readyz``, ``/metrics``, ``POST /call/<tool>``)
and middleware (inbound auth) are added by passing them in, not by editing this module
(``anvil.serve.listener`` assembles the fleet listener this way). Any other path answers 404
``{"error": {"code": "not_found", "message": "No such route."}}``. The MCP endpoint runs the SDK's
``StreamableHTTPSessionManager``; by default in its stateless JSON-response mode (no session table,
one JSON answer per POST), which costs the least per call and suits every client that does not need
server-initiated messages. On a loopback bind, DNS-rebinding protection admits only loopback
``Host``/``Origin`` values.

This module does not import the MCP SDK: given a :class:`~anvil.serve.mcp.config.ServerSpec`, the app
answers the hot path's requests (:mod:`anvil.serve.mcp.hotpath`) at once and loads the SDK in the
background when its lifespan starts (:mod:`anvil.serve.mcp.deferred`).
"""

from __future__ import annotations

import ipaddress
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from anvil._types import JSONValue
from anvil.serve.mcp.config import Security, ServerSpec
from anvil.serve.mcp.deferred import DeferredSdk
from anvil.serve.mcp.limits import (
    DEFAULT_LIMITS,
    ConnectionLimits,
    ConnectionTable,
    connection_cap,
    guarded_protocol,
    raise_open_file_limit,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = [
    "MAX_REQUEST_BYTES",
    "MCP_PATH",
    "create_app",
    "is_loopback",
    "listen",
    "listener_error",
    "mcp_sdk",
    "serve_http",
    "server_stack",
]

MCP_PATH: Final = "/mcp"
#: Largest MCP request body accepted (original-core §5.11: 1 MiB).
MAX_REQUEST_BYTES: Final = 1024 * 1024
_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
_NO_STORE: Final = {"cache-control": "no-store"}


def listener_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """A listener refusal: ``{"error": {"code", "message"}}`` with ``cache-control: no-store``."""
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=_NO_STORE | (headers or {})
    )


def is_loopback(host: str) -> bool:
    """True when ``host`` names only this machine (``localhost`` or a loopback address)."""
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _loopback_security() -> Security:
    return Security(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def create_app(
    server: ServerSpec | Server[Any],
    *,
    service: str,
    routes: Sequence[BaseRoute] = (),
    host: str = "127.0.0.1",
    stateless: bool = True,
    json_response: bool = True,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    health: Mapping[str, JSONValue] | None = None,
    middleware: Sequence[Middleware] = (),
    hot_path: bool = True,
) -> Starlette:
    """The HTTP app: ``/mcp`` (Streamable HTTP), ``GET /healthz``, and any extra ``routes``.

    Args:
        server: What ``/mcp`` serves: a :class:`~anvil.serve.mcp.config.ServerSpec` (the SDK is then
            imported in the background once the app starts, see :mod:`anvil.serve.mcp.deferred`), or an
            SDK server (see :func:`anvil.serve.mcp.server.build_server`).
        service: The service name ``/healthz`` reports.
        routes: Further routes, matched after ``/mcp`` and ``/healthz``.
        health: The ``/healthz`` body (default ``{"status": "ok", "service": service}``).
        middleware: ASGI middleware around every route (outermost first).
        host: The host the app is bound to; a loopback host turns DNS-rebinding protection on.
        stateless: Serve without sessions (each POST stands alone).
        json_response: Answer each POST with one JSON body instead of an SSE stream.
        max_request_bytes: Largest request body accepted on ``/mcp`` (413 above it).
        hot_path: Answer ``initialize``, ``notifications/initialized``, ``tools/list`` and
            ``tools/call`` with :class:`~anvil.serve.mcp.hotpath.HotPath` (stateless JSON mode and a
            :class:`~anvil.serve.mcp.config.ServerSpec` or a server from
            :func:`~anvil.serve.mcp.server.build_server` only); False leaves every request to the SDK.
    """
    security = _loopback_security() if is_loopback(host) else None
    sdk = DeferredSdk(
        server, stateless=stateless, json_response=json_response, security=security, max_request_bytes=max_request_bytes
    )
    endpoint: ASGIApp = sdk
    served = _served(server) if hot_path and stateless and json_response else None
    if served is not None:
        from anvil.serve.mcp.hotpath import HotPath

        endpoint = HotPath(
            sdk,
            provider=served.provider,
            select=served.select,
            security=security,
            max_request_bytes=max_request_bytes,
            instructions=served.instructions,
        )
    body = dict(health) if health is not None else {"status": "ok", "service": service}

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse(body, headers=_NO_STORE)

    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": "not_found", "message": "No such route."}}, status_code=404, headers=_NO_STORE
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with sdk.running():
            yield

    app = Starlette(
        routes=[
            Route(MCP_PATH, endpoint=endpoint),
            Route("/healthz", healthz, methods=["GET"]),
            *routes,
        ],
        middleware=list(middleware),
        exception_handlers={404: not_found},
        lifespan=lifespan,
    )
    app.state.mcp_sdk = sdk
    return app


def mcp_sdk(app: Starlette) -> DeferredSdk:
    """The :class:`~anvil.serve.mcp.deferred.DeferredSdk` behind ``/mcp`` of an app from :func:`create_app`
    (its state tells readiness; its load hooks run when the SDK loads)."""
    found = app.state.mcp_sdk
    assert isinstance(found, DeferredSdk)
    return found


def _served(server: ServerSpec | Server[Any]) -> ServerSpec | None:
    if isinstance(server, ServerSpec):
        return server
    from anvil.serve.mcp.server import served_by  # an SDK server: the SDK is loaded already

    return served_by(server)


def listen(host: str, port: int, *, backlog: int = 128) -> socket.socket:
    """A bound, listening TCP socket for :func:`serve_http` (port 0 picks a free one).

    The socket is created with an explicit ``IPPROTO_TCP``: asyncio turns Nagle off (``TCP_NODELAY``)
    only for sockets that say so, and with Nagle on every small response waits ~40 ms for an ACK.
    ``SO_REUSEPORT`` is never set: another process could then bind the same port and take a share of
    its connections (``--workers`` hands one socket to every worker instead).

    Args:
        host: The bind host.
        port: The bind port (0: any free one).
        backlog: The listen backlog.

    Raises:
        OSError: the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def _load_uvicorn() -> None:
    """Load uvicorn's server and config without its package ``__init__``, until something asks the
    package for more.

    uvicorn's ``__init__`` imports its command line (click) and its reloading supervisors
    (multiprocessing): about 10 ms and half a megabyte of bytecode that a server started from Python
    never runs, on the way to the first ``tools/list``. The package is registered with ``Config``,
    ``Server`` and ``__version__`` (what uvicorn's own modules import from it); its first lookup of
    anything else runs the real ``__init__`` (the CLI then loads, as with a plain import).
    """
    import sys

    if "uvicorn" in sys.modules:
        return
    import importlib.util

    spec = importlib.util.find_spec("uvicorn")
    loader = spec.loader if spec is not None else None
    if spec is None or loader is None:  # not a plain package: imported as it is
        import uvicorn  # noqa: F401

        return
    package = importlib.util.module_from_spec(spec)

    def complete(name: str) -> Any:
        package.__dict__.pop("__getattr__", None)
        loader.exec_module(package)  # the package's own __init__, once
        return getattr(package, name)

    package.__getattr__ = complete  # type: ignore[method-assign]
    sys.modules["uvicorn"] = package
    try:
        from uvicorn._version import __version__
        from uvicorn.config import Config

        setattr(package, "__version__", __version__)  # noqa: B010
        setattr(package, "Config", Config)  # noqa: B010  # before uvicorn's modules import it from the package
        from uvicorn.server import Server

        setattr(package, "Server", Server)  # noqa: B010
    except BaseException:
        sys.modules.pop("uvicorn", None)
        raise


def server_stack() -> str:
    """Which event loop runs this code and which HTTP parser uvicorn picks (``uvloop, httptools``).

    uvicorn's ``http="auto"`` takes httptools when it is installed, else h11.
    """
    import asyncio
    import importlib.util

    try:
        loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
    except RuntimeError:
        loop = "none"
    parser = "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    return f"{'uvloop' if loop == 'uvloop' else 'asyncio'}, {parser}"


async def serve_http(
    app: Starlette,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    sock: socket.socket | None = None,
    log_level: str = "warning",
    handle_signals: bool = False,
    limits: ConnectionLimits = DEFAULT_LIMITS,
    json_logs: bool = False,
    on_serving: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` with uvicorn until cancelled, or until SIGINT/SIGTERM when ``handle_signals``.

    A signal shuts the server down gracefully (in-flight requests finish, the lifespan closes) and
    this returns normally, so a process that serves this way exits 0 on SIGTERM. Inbound connections
    are held to ``limits`` (:mod:`anvil.serve.mcp.limits`: request-head time and size, idle keep-alive,
    connections at once); the process's soft open-file limit is raised to its hard limit first, since
    a listener needs descriptors.

    Args:
        app: The app from :func:`create_app`.
        host: The bind host (ignored when ``sock`` is given).
        port: The bind port (ignored when ``sock`` is given).
        sock: An already bound, listening socket from :func:`listen` (lets a caller learn the port first).
        log_level: uvicorn's log level (its logs go to stderr).
        handle_signals: Stop on SIGINT/SIGTERM (main thread only).
        limits: The inbound connection limits.
        json_logs: Leave uvicorn's loggers to the root logger's handler (the JSON lines of
            ``ANVIL_LOG_FORMAT=json``) instead of its own text format.
        on_serving: Called once uvicorn is loaded and configured, just before it serves (``anvil serve``
            runs the paused cyclic collector again there).
    """
    import anyio

    _load_uvicorn()
    from uvicorn.config import LOGGING_CONFIG, Config
    from uvicorn.protocols.http.auto import AutoHTTPProtocol
    from uvicorn.server import Server

    class _Server(Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            # Signals are ours to handle (below), not re-raised at exit as uvicorn would.
            yield

    # No access log: every call already has its audit line and metrics, and a log line per request
    # would be formatted on the hot path.
    table = ConnectionTable(connection_cap(limits, raise_open_file_limit()))
    config = Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        log_config=None if json_logs else LOGGING_CONFIG,
        lifespan="on",
        ws="none",
        access_log=False,
        http=guarded_protocol(AutoHTTPProtocol, limits, table),
        timeout_keep_alive=limits.keep_alive_seconds,  # type: ignore[arg-type]  # a float works (call_later)
        h11_max_incomplete_event_size=limits.max_head_bytes,
    )
    server = _Server(config)
    if on_serving is not None:
        on_serving()

    async def stop_on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for _ in received:
                server.should_exit = True
                return

    async with anyio.create_task_group() as group:
        if handle_signals:
            group.start_soon(stop_on_signal)
        await server.serve(sockets=[sock] if sock is not None else None)
        group.cancel_scope.cancel()
