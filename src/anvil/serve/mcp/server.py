"""The MCP server: the official SDK's low-level ``Server`` over a tool provider, and the stdio transport.

A :class:`~anvil.serve.mcp.provider.ToolProvider` (re-exported here) is anything that lists tools and
answers calls with a :class:`~anvil.serve.mcp.results.CallResult`:
a :class:`~anvil.serve.gateway.Gateway` (one bundle), or a fleet that composes several. The server
adds nothing but protocol: the listing is built once, a call is handed to the provider as it came
(name, arguments, ``_meta``), and an unknown tool is the JSON-RPC ``invalid params`` error. The
provider's resources (its bundles' skill files) are listed and read the same way; a URI the provider
does not serve to this caller is ``Resource not found`` (-32002). A whole answer kept after a budget
cut (``anvil://answer/<id>``) is read through the provider too (:meth:`ToolProvider.read_answer`),
only by the caller that made the call; it is never listed, and another caller's, an expired or an
unknown one is ``Resource not found`` alike. A store that cannot be read now is an internal error
(-32603) whose data names ``ledger/unavailable``, so a client retries instead of giving up.

The low-level server does not validate arguments against input schemas (the provider does, and
answers with envelopes). ``get_tool_input_schema`` is given so the SDK's 2026-era header checks read
the schema from the table instead of running ``tools/list`` for every call.

One server can serve several providers: ``select`` picks the provider for each request from the
transport's request object (the Starlette ``Request`` over Streamable HTTP, None over stdio), which
is how the fleet listener serves each caller its own composition (``anvil.serve.listener``). Each
provider's listing is built once, on its first ``tools/list``, and kept while the provider lives.

A laddered provider (:class:`~anvil.serve.mcp.provider.LaneProvider`, original-core §5.15) lists lane
cards at rest. Where the protocol keeps a session (a 2025-era handshake over stdio, in-process memory
streams or stateful Streamable HTTP, keyed by its ``Mcp-Session-Id``), the cards a session opened are
remembered (once open, a lane stays open for the session, as in the original), that session's later
``tools/list`` lists their members too, and opening a card sends ``notifications/tools/list_changed``
(the server then declares ``tools.listChanged``). Stateless HTTP and the 2026-07-28 protocol keep no
session: there the card's own answer carries its members (and the server declares no list changes).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from anvil._types import JSONObject
from anvil.errors import LedgerError
from anvil.ledger.answers import ANSWER_URI_PREFIX
from anvil.serve.mcp.config import ServerSpec
from anvil.serve.mcp.provider import LaneProvider, ToolProvider, UnknownTool
from anvil.serve.mcp.resources import RESOURCE_NOT_FOUND, answer_contents

__all__ = [
    "MAX_SESSIONS",
    "ToolProvider",
    "build_server",
    "listing_result",
    "run_stdio",
    "served_by",
    "sessionless",
]

#: Streamable HTTP sessions whose opened lane cards are remembered (least recently used forgotten first).
MAX_SESSIONS: Final = 4096
#: Listings kept per provider for the sets of opened cards its sessions hold.
_MAX_OPENED_LISTINGS: Final = 64
_SESSION_HEADER: Final = "mcp-session-id"

_UNREADABLE = "The kept answer cannot be read now; try again shortly."

#: What each server built here serves: its default provider, selector and instructions (for the HTTP hot path).
_SERVED: weakref.WeakKeyDictionary[Server[Any], ServerSpec] = weakref.WeakKeyDictionary()


def listing_result(provider: ToolProvider) -> types.ListToolsResult:
    """The ``tools/list`` result for ``provider``: its wire-shaped tools as the SDK's models."""
    return _listing(provider.tools)


def _listing(tools: Sequence[JSONObject]) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in tools])


class _Opened:
    """The lane cards each session opened, per provider: the server's lifespan state.

    A connection without a transport request (stdio, in-process streams) runs its own lifespan, so its
    cards are this object's own; Streamable HTTP shares one lifespan, so cards are kept per
    ``Mcp-Session-Id`` (bounded, least recently used forgotten first).
    """

    def __init__(self) -> None:
        self.connection: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self.sessions: OrderedDict[str, weakref.WeakKeyDictionary[Any, set[str]]] = OrderedDict()

    def cards(self, ctx: Any, provider: Any, *, create: bool) -> set[str] | None:
        """The cards ``provider``'s session of ``ctx`` opened; None when the session keeps none."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None  # no session at this era: the card's own answer is the way
        request = ctx.request
        if request is None:
            table = self.connection
        else:
            headers = getattr(request, "headers", None)
            session = headers.get(_SESSION_HEADER) if headers is not None else None
            if not session:
                return None  # stateless HTTP: no session to remember anything in
            found = self.sessions.get(session)
            if found is None:
                if not create:
                    return None
                found = self.sessions[session] = weakref.WeakKeyDictionary()
                while len(self.sessions) > MAX_SESSIONS:
                    self.sessions.popitem(last=False)
            else:
                self.sessions.move_to_end(session)
            table = found
        opened = table.get(provider)
        if opened is None and create:
            opened = table[provider] = set()
        return opened


@asynccontextmanager
async def _lifespan(server: Server[Any]) -> AsyncIterator[_Opened]:
    yield _Opened()


class _Server(Server[Any]):
    """The SDK's low-level server, declaring ``tools.listChanged`` while lane cards can change a session's list."""

    lists_change: bool = False

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        if notification_options is None and self.lists_change:
            notification_options = NotificationOptions(tools_changed=True)
        return super().create_initialization_options(notification_options, experimental_capabilities, extensions)


def sessionless(server: Server[Any]) -> None:
    """Mark ``server`` as served without sessions (stateless HTTP): it then declares no list changes."""
    if isinstance(server, _Server):
        server.lists_change = False


def _laddered(provider: ToolProvider) -> LaneProvider | None:
    return provider if isinstance(provider, LaneProvider) and provider.lists_change else None


def served_by(server: Server[Any]) -> ServerSpec | None:
    """What ``server`` was built from by :func:`build_server`, or None for another server."""
    return _SERVED.get(server)


def build_server(
    provider: ToolProvider,
    *,
    instructions: str | None = None,
    select: Callable[[Any], ToolProvider | None] | None = None,
) -> Server[Any]:
    """An MCP low-level server serving ``provider``'s tools (name and version from the provider).

    Args:
        provider: The tools to serve (with ``select``: the server's name, version and input schemas).
        instructions: Optional server instructions sent at initialization.
        select: Picks the provider answering one request from its transport request object (None
            over stdio); a None answer refuses the request (invalid request). Without it every
            request is ``provider``'s.
    """
    listing = listing_result(provider)
    listings: weakref.WeakKeyDictionary[Any, types.ListToolsResult] = weakref.WeakKeyDictionary()
    opened_listings: weakref.WeakKeyDictionary[Any, OrderedDict[frozenset[str], types.ListToolsResult]] = (
        weakref.WeakKeyDictionary()
    )

    def opened_cards(ctx: Any, served: ToolProvider, *, create: bool) -> set[str] | None:
        state = ctx.lifespan_context
        return state.cards(ctx, served, create=create) if isinstance(state, _Opened) else None

    def with_opened(served: LaneProvider, opened: frozenset[str]) -> types.ListToolsResult:
        kept = opened_listings.get(served)
        if kept is None:
            kept = opened_listings[served] = OrderedDict()
        found = kept.get(opened)
        if found is None:
            found = kept[opened] = _listing(served.tools_with(opened))
            while len(kept) > _MAX_OPENED_LISTINGS:
                kept.popitem(last=False)
        return found

    def chosen(ctx: Any) -> ToolProvider:
        if select is None:
            return provider
        found = select(ctx.request)
        if found is None:
            raise MCPError(code=types.INVALID_REQUEST, message="The request names no caller.")
        return found

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        served = chosen(ctx)
        laddered = _laddered(served)
        if laddered is not None:
            opened = opened_cards(ctx, served, create=False)
            if opened:
                return with_opened(laddered, frozenset(opened))
        if served is provider:
            return listing
        found = listings.get(served)
        if found is None:
            found = listings[served] = listing_result(served)
        return found

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        served = chosen(ctx)
        try:
            result = await served.call(params.name, params.arguments, params.meta)
        except UnknownTool as unknown:  # a proxy naming a tool nobody can dial: as a direct call to it
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {unknown.name}") from None
        if result is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        laddered = _laddered(served)
        if laddered is not None and result.kind == "success" and laddered.is_card(params.name):
            opened = opened_cards(ctx, served, create=True)
            if opened is not None and params.name not in opened:
                opened.add(params.name)  # once open, a lane stays open for the session
                await ctx.session.send_tool_list_changed()
        return types.CallToolResult.model_validate(result.to_wire())

    async def on_list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        served = chosen(ctx).resources
        return types.ListResourcesResult(resources=[types.Resource.model_validate(item.entry()) for item in served])

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        served, uri = chosen(ctx), str(params.uri)
        if uri.startswith(ANSWER_URI_PREFIX):
            try:
                kept = await served.read_answer(uri)
            except LedgerError as exc:
                data = {"uri": uri, "code": exc.code}
                raise MCPError(code=types.INTERNAL_ERROR, message=_UNREADABLE, data=data) from None
            if kept is not None:
                return types.ReadResourceResult.model_validate(answer_contents(uri, kept))
        else:
            found = served.resource(uri)
            if found is not None:
                return types.ReadResourceResult.model_validate(found.contents())
        # unknown, not visible to this caller, another caller's or expired: one answer
        raise MCPError(code=RESOURCE_NOT_FOUND, message="Resource not found", data={"uri": uri})

    server = _Server(
        provider.server_name,
        version=provider.version,
        instructions=instructions,
        lifespan=_lifespan,
        get_tool_input_schema=provider.input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_read_resource=on_read_resource,
    )
    server.lists_change = _laddered(provider) is not None
    _SERVED[server] = ServerSpec(provider, select, instructions)
    return server


async def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over stdin/stdout until the client closes stdin (one implicit session).

    Nothing but protocol is written to stdout; diagnostics go to stderr.
    """
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
