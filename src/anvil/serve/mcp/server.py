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
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from anvil.errors import LedgerError
from anvil.ledger.answers import ANSWER_URI_PREFIX
from anvil.serve.mcp.config import ServerSpec
from anvil.serve.mcp.provider import ToolProvider, UnknownTool
from anvil.serve.mcp.resources import RESOURCE_NOT_FOUND, answer_contents

__all__ = ["ToolProvider", "build_server", "listing_result", "run_stdio", "served_by"]


_UNREADABLE = "The kept answer cannot be read now; try again shortly."

#: What each server built here serves: its default provider, selector and instructions (for the HTTP hot path).
_SERVED: weakref.WeakKeyDictionary[Server[Any], ServerSpec] = weakref.WeakKeyDictionary()


def listing_result(provider: ToolProvider) -> types.ListToolsResult:
    """The ``tools/list`` result for ``provider``: its wire-shaped tools as the SDK's models."""
    return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in provider.tools])


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

    def chosen(ctx: Any) -> ToolProvider:
        if select is None:
            return provider
        found = select(ctx.request)
        if found is None:
            raise MCPError(code=types.INVALID_REQUEST, message="The request names no caller.")
        return found

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        served = chosen(ctx)
        if served is provider:
            return listing
        found = listings.get(served)
        if found is None:
            found = listings[served] = listing_result(served)
        return found

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = await chosen(ctx).call(params.name, params.arguments, params.meta)
        except UnknownTool as unknown:  # a proxy naming a tool nobody can dial: as a direct call to it
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {unknown.name}") from None
        if result is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
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

    server: Server[Any] = Server(
        provider.server_name,
        version=provider.version,
        instructions=instructions,
        get_tool_input_schema=provider.input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_read_resource=on_read_resource,
    )
    _SERVED[server] = ServerSpec(provider, select, instructions)
    return server


async def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over stdin/stdout until the client closes stdin (one implicit session).

    Nothing but protocol is written to stdout; diagnostics go to stderr.
    """
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
