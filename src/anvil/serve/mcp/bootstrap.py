"""The MCP wire answers of the HTTP hot path, written without the official SDK.

``anvil serve --http`` answers its first requests before the SDK is imported (the import is ~0.75 s:
see :mod:`anvil.serve.mcp.deferred`). What the hot path sends must still be, byte for byte, what the SDK
would send, so this module holds what the SDK's answers are made of, copied from the SDK (mcp 2.3):

* the constants: the handshake protocol versions, the version a request without
  ``MCP-Protocol-Version`` is read at, the negotiation default, the JSON-RPC error codes;
* :data:`BOOTSTRAP`, the tables of each handshake version: which ``CallToolResult`` keys the SDK
  sends in which order with which defaults (:class:`ResultShape`), how it orders and sieves a
  ``tools/list`` entry (:class:`ToolShape`) and what its ``initialize`` result holds
  (:class:`InitializeShape`);
* the encoders applying them (:meth:`ResultShape.shape`, :func:`listing_result`,
  :func:`initialize_result`, :func:`error_answer`).

Each encoder answers only the shapes it represents exactly (plain JSON values, the keys our
projections emit) and returns None for anything else, which the caller leaves to the SDK. The tables
are checked against the installed SDK when it has loaded (:mod:`anvil.serve.mcp.sdkwire`): on any
difference the hot path warns once and switches to the SDK's own answers, and the tests assert they
are equal for every handshake version.

JSON is written by ``orjson``, whose output matches pydantic's for every JSON value (integers beyond
64 bits fall back to pydantic-core's encoder, which the SDK uses).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Final

import orjson

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.serve.mcp.bodies import is_validation_error

__all__ = [
    "BOOTSTRAP",
    "DEFAULT_NEGOTIATED_VERSION",
    "HANDSHAKE_VERSIONS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_HANDSHAKE_VERSION",
    "NOTIFICATION_ANSWER",
    "TRANSPORT_FAILURE",
    "InitializeShape",
    "ResultShape",
    "ToolShape",
    "WireTables",
    "dumps",
    "error_answer",
    "exception_answer",
    "initialize_result",
    "is_plain",
    "listing_result",
    "negotiate",
    "response",
]

#: ``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS``: the revisions reachable by ``initialize``.
HANDSHAKE_VERSIONS: Final[tuple[str, ...]] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: ``mcp_types.version.LATEST_HANDSHAKE_VERSION``: what ``initialize`` answers to an unknown request.
LATEST_HANDSHAKE_VERSION: Final = "2025-11-25"
#: ``mcp_types.DEFAULT_NEGOTIATED_VERSION``: a request without ``MCP-Protocol-Version`` is read at it.
DEFAULT_NEGOTIATED_VERSION: Final = "2025-03-26"
#: JSON-RPC error codes (``mcp_types``).
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

#: The HTTP answer of the SDK's transport to a notification: 202, ``application/json``, no body.
NOTIFICATION_ANSWER: Final = (202, b"")

_TEXT_KEYS: Final = frozenset({"type", "text"})
_SCHEMA_TYPE: Final = "object"


@dataclass(frozen=True, slots=True)
class ResultShape:
    """Which ``CallToolResult`` keys the SDK sends for one protocol version, in its order, with the
    defaults it fills in, for results whose content is text items only."""

    order: tuple[str, ...]
    defaults: Mapping[str, Any]
    item_order: tuple[str, ...]
    item_defaults: Mapping[str, Any]

    def shape(self, wire: Mapping[str, Any]) -> dict[str, Any] | None:
        """``wire`` as the SDK would send it, or None when ``wire`` is not of this shape."""
        for key, value in wire.items():
            if key == "content":
                if not isinstance(value, list):
                    return None
                for item in value:
                    if not (
                        isinstance(item, dict)
                        and item.keys() <= _TEXT_KEYS
                        and item.get("type") == "text"
                        and isinstance(item.get("text"), str)
                    ):
                        return None
            elif key == "isError":
                if not isinstance(value, bool):
                    return None
            elif key in ("structuredContent", "_meta"):
                if not isinstance(value, dict):
                    return None
            else:
                return None
        if "content" not in wire:
            return None
        out: dict[str, Any] = {}
        defaults = self.defaults
        for key in self.order:
            if key == "content":
                item_defaults = self.item_defaults
                out[key] = [
                    {
                        name: item[name] if name in item else item_defaults[name]
                        for name in self.item_order
                        if name in item or name in item_defaults
                    }
                    for item in wire[key]
                ]
            elif key in wire:
                out[key] = wire[key]
            elif key in defaults:
                out[key] = defaults[key]
        return out


@dataclass(frozen=True, slots=True)
class ToolShape:
    """How the SDK writes one ``tools/list`` entry: its keys in order, the annotation keys in order,
    and the fields of the input and output schema models (written first, in this order, then the
    schema's other keys as given; a None value is dropped at this level)."""

    order: tuple[str, ...]
    annotation_order: tuple[str, ...]
    schema_fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class InitializeShape:
    """What the SDK's ``initialize`` result holds: its keys in order, the server capabilities of a
    low-level server serving tools and resources, and the ``serverInfo`` keys in order."""

    order: tuple[str, ...]
    capabilities: JSONObject
    server_info_order: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WireTables:
    """The tables of every handshake version."""

    call: Mapping[str, ResultShape]
    tools: Mapping[str, ToolShape]
    initialize: Mapping[str, InitializeShape]
    versions: tuple[str, ...] = HANDSHAKE_VERSIONS
    latest: str = LATEST_HANDSHAKE_VERSION
    default: str = DEFAULT_NEGOTIATED_VERSION
    source: str = field(default="bootstrap", compare=False)


# mcp 2.3 answers every handshake version with the 2025-11-25 surface models (fields sorted, ``_meta``
# first, None dropped); the tables are per version so a later SDK may differ per version.
_CALL: Final = ResultShape(
    order=("_meta", "content", "isError", "structuredContent"),
    defaults={"isError": False},
    item_order=("text", "type"),
    item_defaults={},
)
_TOOL: Final = ToolShape(
    order=("_meta", "annotations", "description", "inputSchema", "name", "outputSchema", "title"),
    annotation_order=("destructiveHint", "idempotentHint", "openWorldHint", "readOnlyHint", "title"),
    schema_fields=("$schema", "properties", "required", "type"),
)
_INITIALIZE: Final = InitializeShape(
    order=("capabilities", "instructions", "protocolVersion", "serverInfo"),
    capabilities={"resources": {"listChanged": False, "subscribe": False}, "tools": {"listChanged": False}},
    server_info_order=("name", "version"),
)
BOOTSTRAP: Final = WireTables(
    call=dict.fromkeys(HANDSHAKE_VERSIONS, _CALL),
    tools=dict.fromkeys(HANDSHAKE_VERSIONS, _TOOL),
    initialize=dict.fromkeys(HANDSHAKE_VERSIONS, _INITIALIZE),
)


def dumps(value: Any) -> bytes:
    """Compact JSON as pydantic writes it (an integer beyond 64 bits, NaN and infinities included)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer beyond 64 bits: pydantic's encoder writes it exactly
        import pydantic_core  # imported on the first such value (see anvil.serve.mcp.bodies)

        return pydantic_core.to_json(value, inf_nan_mode="null")  # as the SDK writes NaN and infinities


def response(result: Any, request_id: int | str) -> bytes:
    """A JSON-RPC success answer."""
    return dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


_NO_DATA: Final = object()


def error_answer(code: int, message: str, request_id: int | str | None, data: Any = _NO_DATA) -> bytes:
    """A JSON-RPC error answer as the SDK writes its ``JSONRPCError`` (``data`` only when given)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not _NO_DATA:
        error["data"] = data
    return dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


def exception_answer(exc: BaseException, request_id: int | str) -> bytes:
    """The SDK dispatcher's answer to a handler that raised ``exc`` (not an ``MCPError``, which only
    the SDK raises): a pydantic ``ValidationError`` is INVALID_PARAMS with empty data, anything else
    code 0 with the exception's text."""
    if is_validation_error(exc):
        return error_answer(INVALID_PARAMS, "Invalid request parameters", request_id, "")
    return error_answer(0, str(exc), request_id)


#: The SDK transport's answer when it cannot serialize a response (HTTP 500, no id).
TRANSPORT_FAILURE: Final = error_answer(INTERNAL_ERROR, "Error handling POST request", None)


def negotiate(tables: WireTables, requested: str) -> str:
    """The protocol version ``initialize`` answers: the requested one when it is a handshake version,
    else the SDK's latest handshake version."""
    return requested if requested in tables.versions else tables.latest


def initialize_result(
    tables: WireTables, version: str, requested: str, *, name: str, server_version: str, instructions: str | None
) -> dict[str, Any]:
    """The ``initialize`` result the SDK sends on a connection read at ``version``.

    Args:
        tables: The tables.
        version: The version the request is read at (its header, else the default).
        requested: The client's ``protocolVersion``.
        name: The server name.
        server_version: The server version.
        instructions: The server instructions, if any.
    """
    shape = tables.initialize[version]
    info = {"name": name, "version": server_version}
    values: dict[str, Any] = {
        "capabilities": shape.capabilities,
        "instructions": instructions,
        "protocolVersion": negotiate(tables, requested),
        "serverInfo": {key: info[key] for key in shape.server_info_order},
    }
    return {key: values[key] for key in shape.order if values.get(key) is not None}


def is_plain(value: Any, depth: int = 0) -> bool:
    """True for a JSON value pydantic and orjson write alike (finite numbers, string keys)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > 200:
        return False
    if isinstance(value, dict):
        return all(isinstance(key, str) and is_plain(item, depth + 1) for key, item in value.items())
    if isinstance(value, list | tuple):
        return all(is_plain(item, depth + 1) for item in value)
    return False


def _schema(shape: ToolShape, value: Any) -> dict[str, Any] | None:
    """An input or output schema as the SDK's schema model writes it, or None when it may not validate."""
    if not isinstance(value, dict) or value.get("type") != _SCHEMA_TYPE or not is_plain(value):
        return None
    marker = value.get("$schema")
    properties = value.get("properties")
    required = value.get("required")
    if marker is not None and not isinstance(marker, str):
        return None
    if properties is not None and not (
        isinstance(properties, dict) and all(isinstance(item, dict | bool) for item in properties.values())
    ):
        return None
    if required is not None and not (
        isinstance(required, list | tuple) and all(isinstance(item, str) for item in required)
    ):
        return None
    out = {key: value[key] for key in shape.schema_fields if value.get(key) is not None}
    for key, item in value.items():
        if key not in out and item is not None and key not in shape.schema_fields:
            out[key] = item
    return out


def _annotations(shape: ToolShape, value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or not value.keys() <= set(shape.annotation_order):
        return None
    for key, item in value.items():
        if item is not None and not isinstance(item, str if key == "title" else bool):
            return None
    return {key: value[key] for key in shape.annotation_order if value.get(key) is not None}


def _tool(shape: ToolShape, tool: Any) -> dict[str, Any] | None:
    if not isinstance(tool, dict) or not tool.keys() <= set(shape.order) or not isinstance(tool.get("name"), str):
        return None
    out: dict[str, Any] = {}
    for key in shape.order:
        value = tool.get(key)
        if value is None:
            if key == "inputSchema":
                return None
            continue
        if key in ("inputSchema", "outputSchema"):
            value = _schema(shape, value)
        elif key == "annotations":
            value = _annotations(shape, value)
        elif key == "_meta":
            value = value if isinstance(value, dict) and is_plain(value) else None
        elif not isinstance(value, str):
            value = None
        if value is None:
            return None
        out[key] = value
    return out


def listing_result(tables: WireTables, version: str, tools: Sequence[Any]) -> dict[str, Any] | None:
    """The ``tools/list`` result the SDK sends for ``tools`` at ``version``, or None when some entry is
    not of the shape this encoder represents exactly (the SDK then answers)."""
    shape = tables.tools[version]
    out = []
    for tool in tools:
        wire = _tool(shape, tool)
        if wire is None:
            return None
        out.append(wire)
    return {"tools": out}
