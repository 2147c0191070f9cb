"""The official SDK behind the HTTP listener, loaded in a background thread after the socket listens.

Importing the ``mcp`` SDK costs ~0.75 s (``import mcp.<anything>`` runs ``mcp/__init__.py``, which
imports the client, the server and pydantic models for every protocol version). The hot path
(:mod:`anvil.serve.mcp.hotpath`) answers ``initialize``, ``notifications/initialized``, ``tools/list`` and
``tools/call`` without it, so the first request need not wait for it: :class:`DeferredSdk` is the
``/mcp`` endpoint of everything else. Its :meth:`~DeferredSdk.running` context (the app's lifespan)
imports the SDK in a worker thread, builds the low-level server
(:func:`anvil.serve.mcp.server.build_server`) and :class:`~anvil.serve.mcp.sdkwire.SdkWire` there, runs the
load hooks (the hot path compares its tables with the SDK's answers), then, on the event loop, builds
the ``StreamableHTTPSessionManager`` and enters its ``run()``. The load starts ``start_delay`` seconds
after the lifespan starts (:data:`DEFAULT_START_DELAY`), or at once when a request needs the SDK: the
import holds the interpreter lock for most of its ~0.75 s, and a cold start's first ``initialize`` and
``tools/list`` (which the hot path answers) would otherwise share the interpreter with it.

A request that needs the SDK before it is ready waits for it, at most ``wait_seconds``; when the SDK
could not be loaded (or not in time) the answer is HTTP 503 ``{"error": {"code": "mcp_unavailable"}}``
(``retry-after: 1``), never a traceback. A failed load is tried again after each of ``retry_delays``
(0.5 s doubling to 30 s, about four minutes in all: a transient fault such as running out of file
descriptors at start-up must not leave the listener without the SDK for good); meanwhile such
requests are refused at once and :attr:`DeferredSdk.available` is False, which ``/readyz`` reports. The
first failure is logged on stderr (error), each retry's failure as a warning, and giving up as an
error; a load that succeeds after failing says so. Nothing is printed on stdout.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final

import anyio
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from anvil.serve.mcp.config import Security, ServerSpec

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from anvil.serve.mcp.sdkwire import SdkWire

__all__ = ["DEFAULT_RETRY_DELAYS", "DEFAULT_START_DELAY", "DEFAULT_WAIT_SECONDS", "DeferredSdk", "LoadHook"]

logger = logging.getLogger(__name__)

#: How long a request that needs the SDK waits for it to load.
DEFAULT_WAIT_SECONDS: Final = 30.0
#: Seconds after the lifespan starts before the SDK loads unless a request needs it sooner.
DEFAULT_START_DELAY: Final = 0.5
#: Seconds before each new attempt after a failed load (then the loader gives up).
DEFAULT_RETRY_DELAYS: Final = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0)

#: Run in the loader's thread with the SDK's answers; the callable it returns runs on the event loop.
LoadHook = Callable[["SdkWire"], Callable[[], None] | None]


class DeferredSdk:
    """ASGI app: the SDK's stateless Streamable HTTP app, once loaded (module docstring).

    Args:
        server: What to serve: a :class:`ServerSpec` (the server is built after the import) or an
            SDK server already built.
        stateless: Serve without sessions.
        json_response: Answer each POST with one JSON body instead of an SSE stream.
        security: DNS-rebinding protection, if any.
        max_request_bytes: The SDK manager's body limit.
        wait_seconds: How long a request waits for the SDK to load.
        retry_delays: Seconds before each new attempt after a failed load; empty: one attempt.
        start_delay: Seconds before the load starts unless a request needs the SDK sooner.
    """

    def __init__(
        self,
        server: ServerSpec | Server[Any],
        *,
        stateless: bool,
        json_response: bool,
        security: Security | None,
        max_request_bytes: int,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
        start_delay: float = DEFAULT_START_DELAY,
    ) -> None:
        self._source = server
        self._stateless = stateless
        self._json_response = json_response
        self._security = security
        self._max = max_request_bytes
        self._wait = wait_seconds
        self._retry_delays = tuple(retry_delays)
        self._hooks: list[LoadHook] = []
        self._start_delay = start_delay
        self._wanted: anyio.Event | None = None  # set when a request needs the SDK: the load starts now
        self._ready: anyio.Event | None = None
        self._app: ASGIApp | None = None
        #: True while the last load failed (every request that needs the SDK is then refused with 503).
        self.failed = False
        #: Load attempts made so far.
        self.attempts = 0

    @property
    def available(self) -> bool:
        """False while requests the SDK answers cannot be served because its load failed (retrying or
        given up); True while it loads for the first time, since they wait for it then."""
        return not self.failed

    def on_load(self, hook: LoadHook) -> None:
        """Run ``hook`` when the SDK has loaded (before the first request is handed to it)."""
        self._hooks.append(hook)

    def _event(self) -> anyio.Event:
        if self._ready is None:  # created on the loop (an anyio event needs one)
            self._ready = anyio.Event()
        return self._ready

    def _want(self) -> anyio.Event:
        if self._wanted is None:
            self._wanted = anyio.Event()
        return self._wanted

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Load the SDK in the background and serve it until the context exits (the app's lifespan; once
        per instance, as the SDK's session manager runs once)."""
        self._event()  # on the loop, before a request waits for it
        stop = anyio.Event()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._load, stop)
                try:
                    yield
                finally:
                    stop.set()
                    if self._app is None:  # shutting down mid-load or between retries: do not wait
                        group.cancel_scope.cancel()
        finally:
            self._app = None  # the manager's run is over: nothing to hand requests to

    async def _load(self, stop: anyio.Event) -> None:
        ready = self._event()
        delays = self._retry_delays
        with anyio.move_on_after(self._start_delay):
            await self._want().wait()  # until the delay passes or a request needs the SDK
        while True:
            self.attempts += 1
            try:
                manager = await self._attempt()
                break
            except Exception as exc:  # the listener keeps serving what the hot path answers
                self.failed = True
                ready.set()  # waiting requests are refused now, not at the end of their wait
                delay = delays[self.attempts - 1] if self.attempts <= len(delays) else None
                self._log_failure(type(exc).__name__, delay)
            if delay is None:
                return
            with anyio.move_on_after(delay):
                await stop.wait()
            if stop.is_set():
                return
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

        async with manager.run():
            self._app = StreamableHTTPASGIApp(manager)
            if self.failed:
                logger.warning("anvil: the MCP SDK loaded on attempt %d; /mcp is served in full", self.attempts)
            self.failed = False
            ready.set()
            await stop.wait()

    def _log_failure(self, reason: str, retry_in: float | None) -> None:
        if retry_in is None:
            logger.error(
                "anvil: the MCP SDK could not be loaded (%s) after %d attempts; /mcp requests it answers get "
                "503 and /readyz answers 503 until the process restarts",
                reason,
                self.attempts,
            )
        elif self.attempts == 1:
            logger.error(
                "anvil: the MCP SDK could not be loaded (%s); /mcp requests it answers get 503 meanwhile; "
                "retrying in %gs",
                reason,
                retry_in,
            )
        else:
            logger.warning("anvil: the MCP SDK could not be loaded (%s); retrying in %gs", reason, retry_in)

    async def _attempt(self) -> StreamableHTTPSessionManager:
        wire, applies = await anyio.to_thread.run_sync(self._import, abandon_on_cancel=True)
        for apply in applies:
            apply()
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        security = self._security
        return StreamableHTTPSessionManager(
            app=wire.server,
            json_response=self._json_response,
            stateless=self._stateless,
            security_settings=None
            if security is None
            else TransportSecuritySettings(
                enable_dns_rebinding_protection=security.enable_dns_rebinding_protection,
                allowed_hosts=list(security.allowed_hosts),
                allowed_origins=list(security.allowed_origins),
            ),
            max_request_body_size=self._max,
        )

    def _import(self) -> tuple[SdkWire, list[Callable[[], None]]]:
        """In the worker thread: import the SDK, build the server and its answers, run the hooks."""
        from anvil.serve.mcp.sdkwire import SdkWire
        from anvil.serve.mcp.server import build_server, sessionless

        source = self._source
        if isinstance(source, ServerSpec):
            server = build_server(source.provider, select=source.select, instructions=source.instructions)
        else:
            server = source
        if self._stateless:
            sessionless(server)  # no session to change a list in: declare no tools.listChanged
        wire = SdkWire(server)
        applies = [hook(wire) for hook in self._hooks]
        return wire, [apply for apply in applies if apply is not None]

    async def loaded(self) -> bool:
        """Wait (at most ``wait_seconds``) for the SDK; whether it is ready."""
        if self._app is not None:
            return True
        if self.failed:
            return False
        self._want().set()
        with anyio.move_on_after(self._wait):
            await self._event().wait()
        return self._app is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand the request to the SDK, once it is ready; 503 ``mcp_unavailable`` when it cannot be."""
        app = self._app
        if app is None:
            if not await self.loaded():
                refusal = JSONResponse(
                    {"error": {"code": "mcp_unavailable", "message": "The MCP server is not available; retry."}},
                    status_code=503,
                    headers={"cache-control": "no-store", "retry-after": "1"},
                )
                await refusal(scope, receive, send)
                return
            app = self._app
            assert app is not None
        await app(scope, receive, send)
