"""What an MCP front end serves: the :class:`ToolProvider` protocol, free of the MCP SDK.

The REST route, the auth middleware, the HTTP listener and its hot path name providers through this
module, so ``anvil serve --http`` can start answering before the official SDK is imported
(:mod:`anvil.serve.mcp.deferred`); :mod:`anvil.serve.mcp.server` builds the SDK's server over the same protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from anvil._types import JSONObject, JSONValue

if TYPE_CHECKING:
    from anvil.ledger.answers import KeptAnswer
    from anvil.serve.mcp.resources import Resource
    from anvil.serve.mcp.results import CallResult

__all__ = ["LaneProvider", "ToolProvider", "UnknownTool"]


class UnknownTool(LookupError):
    """A call (a proxied one) names a tool this caller cannot dial: answered as a direct call to it is,
    the JSON-RPC ``invalid params`` error ``Unknown tool: <name>``."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class ToolProvider(Protocol):
    """What the MCP server serves: a fixed tool listing, a call entry point and the resources it may read."""

    @property
    def server_name(self) -> str:
        """The MCP server name."""

    @property
    def version(self) -> str:
        """The MCP server version."""

    @property
    def tools(self) -> Sequence[JSONObject]:
        """The ``tools/list`` entries, wire-shaped, in listing order."""

    @property
    def resources(self) -> Sequence[Resource]:
        """The resources this caller may list and read, in listing order."""

    def resource(self, uri: str) -> Resource | None:
        """The resource at ``uri`` when this caller may read it, else None (unknown and hidden alike)."""

    async def read_answer(self, uri: str) -> KeptAnswer | None:
        """The whole answer kept at ``anvil://answer/<id>`` for this caller after a budget cut, else None
        (unknown, expired and another caller's alike); raises ``LedgerError`` (``ledger/unavailable``)
        when the store cannot be read now."""

    def input_schema(self, name: str) -> JSONObject | None:
        """The published input schema of tool ``name``, or None when it is not served."""

    async def call(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None = None,
        *,
        identity: Mapping[str, JSONValue] | None = None,
    ) -> CallResult | None:
        """Answer one ``tools/call``; None when no tool ``name`` is served."""


@runtime_checkable
class LaneProvider(Protocol):
    """A provider whose listing may grow in a session as lane cards are opened (a laddered fleet)."""

    @property
    def lists_change(self) -> bool:
        """True when some card may be opened (the listing is laddered)."""

    def is_card(self, name: str) -> bool:
        """True when ``name`` is a lane card this provider serves."""

    def tools_with(self, opened: Iterable[str]) -> Sequence[JSONObject]:
        """The ``tools/list`` entries once the ``opened`` cards were opened in this session."""
