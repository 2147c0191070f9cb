"""The official SDK's own answers, computed by its pipeline: the oracle of the bootstrap tables.

Imported only once the SDK is wanted (by the background load of :mod:`anvil.serve.mcp.deferred`, by
stdio, by tests). :class:`SdkWire` works out what the SDK sends for a ``tools/call`` result (its
:class:`~anvil.serve.mcp.bootstrap.ResultShape` per handshake version, probed by running the SDK's result
pipeline on probe results), a ``tools/list`` (the SDK's serialization of a provider's listing), an
``initialize`` (the SDK's runner building and serializing its result) and an error, and
:meth:`SdkWire.differences` compares all of it with the bootstrap tables.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final, cast

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.runner import ServerRunner
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    ErrorData,
    JSONRPCError,
    methods as sdk_methods,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from anvil.serve.mcp import bootstrap
from anvil.serve.mcp.bootstrap import ResultShape, WireTables
from anvil.serve.mcp.provider import ToolProvider
from anvil.serve.mcp.server import listing_result

__all__ = ["SdkWire", "sdk_constants"]

logger = logging.getLogger(__name__)

#: The probe results the SDK pipeline is run on: every key ``CallResult.to_wire`` emits, and the least
#: it emits (which shows the keys the SDK adds with their defaults, such as ``isError: false``).
_FULL_PROBE: Final[dict[str, Any]] = {
    "content": [{"type": "text", "text": "probe"}],
    "structuredContent": {"probe": 1},
    "isError": True,
    "_meta": {"effect": {"probe": 1}},
}
_LEAST_PROBE: Final[dict[str, Any]] = {"content": [{"type": "text", "text": "probe"}]}
#: Requested versions the ``initialize`` answers are compared for: every known one and an unknown one.
_REQUESTED: Final = (*HANDSHAKE_PROTOCOL_VERSIONS, "2026-07-28", "1999-01-01")
_INIT_PARAMS: Final = {"capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}


def sdk_constants() -> dict[str, Any]:
    """The SDK's values of the constants :mod:`anvil.serve.mcp.bootstrap` copies."""
    return {
        "HANDSHAKE_VERSIONS": tuple(HANDSHAKE_PROTOCOL_VERSIONS),
        "LATEST_HANDSHAKE_VERSION": LATEST_HANDSHAKE_VERSION,
        "DEFAULT_NEGOTIATED_VERSION": DEFAULT_NEGOTIATED_VERSION,
        "INVALID_REQUEST": INVALID_REQUEST,
        "INVALID_PARAMS": INVALID_PARAMS,
        "INTERNAL_ERROR": INTERNAL_ERROR,
    }


def _sdk_result(method: str, version: str, result: Any) -> dict[str, Any]:
    """What the SDK's runner makes of a handler result for the wire (``ServerRunner._serialize``, legacy era).

    Raises:
        MCPError: the result does not fit the version's surface (INTERNAL_ERROR, as the SDK answers).
        ValidationError: the result does not validate as its model (the SDK answers INVALID_PARAMS).
    """
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        return sdk_methods.serialize_server_result(method, version, dumped)
    except ValidationError:
        logger.exception("handler for %r returned an invalid result", method)
        raise MCPError(code=INTERNAL_ERROR, message="Handler returned an invalid result") from None


def _probe_shape(version: str) -> ResultShape:
    full = _sdk_result("tools/call", version, types.CallToolResult.model_validate(_FULL_PROBE))
    least = _sdk_result("tools/call", version, types.CallToolResult.model_validate(_LEAST_PROBE))
    full_item, least_item = full["content"][0], least["content"][0]
    return ResultShape(
        order=(*full, *(key for key in least if key not in full)),
        defaults={key: value for key, value in least.items() if key != "content"},
        item_order=(*full_item, *(key for key in least_item if key not in full_item)),
        item_defaults={key: value for key, value in least_item.items() if key not in ("type", "text")},
    )


def _error(error: ErrorData, request_id: int | str | None) -> bytes:
    return (
        JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        .model_dump_json(by_alias=True, exclude_unset=True)
        .encode()
    )


class SdkWire:
    """The SDK's answers for one server (built by :func:`anvil.serve.mcp.server.build_server`)."""

    def __init__(self, server: Server[Any]) -> None:
        self.server = server
        self.shapes = {version: _probe_shape(version) for version in HANDSHAKE_PROTOCOL_VERSIONS}
        # The SDK's own per-connection kernel; building and serializing an initialize result touches
        # neither the connection nor a lifespan.
        self._runner = ServerRunner(server, cast("Any", None), None)

    def tables(self) -> WireTables:
        """The SDK's versions and call-result shapes as tables (listing and ``initialize`` are left to
        the SDK itself once the hot path has switched to it)."""
        return WireTables(
            call=self.shapes,
            tools={},
            initialize={},
            versions=tuple(HANDSHAKE_PROTOCOL_VERSIONS),
            latest=LATEST_HANDSHAKE_VERSION,
            default=DEFAULT_NEGOTIATED_VERSION,
            source="sdk",
        )

    def call_result(self, wire: Mapping[str, Any], version: str) -> dict[str, Any]:
        """The ``tools/call`` result as the SDK sends it.

        Raises:
            MCPError: the result does not fit the version's surface (the SDK answers INTERNAL_ERROR).
            ValidationError: the result does not validate (the SDK answers INVALID_PARAMS).
        """
        shaped = self.shapes[version].shape(wire)
        if shaped is not None:
            return shaped
        return _sdk_result("tools/call", version, types.CallToolResult.model_validate(wire))

    @staticmethod
    def listing_result(provider: ToolProvider, version: str) -> dict[str, Any]:
        """The ``tools/list`` result for ``provider`` as the SDK sends it.

        Raises:
            MCPError: a listed tool does not fit the version's surface (INTERNAL_ERROR).
        """
        return _sdk_result("tools/list", version, listing_result(provider))

    def initialize_result(self, version: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The ``initialize`` result the SDK's runner sends on a connection read at ``version``."""
        return self._runner._serialize("initialize", version, self._runner._handle_initialize(params))

    @staticmethod
    def error_answer(exc: BaseException, request_id: int | str, *, log: bool = True) -> bytes:
        """The SDK dispatcher's answer to a handler that raised ``exc`` (logged as it logs it)."""
        error = handler_exception_to_error_data(exc)
        if error is None:
            if log:
                logger.exception("handler for %r raised", "tools/call")
            error = ErrorData(code=0, message=str(exc))
        return _error(error, request_id)

    def differences(self, tables: WireTables, provider: ToolProvider, instructions: str | None) -> list[str]:
        """Where ``tables`` answer otherwise than the SDK (empty when they agree everywhere).

        Compared: the constants, each version's ``tools/call`` result shape, ``provider``'s listing
        at each version, the ``initialize`` result for each (read-at, requested) version pair, an
        unknown-tool error.
        """
        found: list[str] = []
        ours = {name: getattr(bootstrap, name) for name in sdk_constants()}
        if ours != sdk_constants():
            found.append("constants")
        for version in HANDSHAKE_PROTOCOL_VERSIONS:
            if version not in tables.call or tables.call[version] != self.shapes[version]:
                found.append(f"tools/call {version}")
            if version not in tables.tools:
                found.append(f"tools/list {version}")
            else:
                listed = bootstrap.listing_result(tables, version, provider.tools)
                if listed is not None and bootstrap.dumps(listed) != bootstrap.dumps(
                    self.listing_result(provider, version)
                ):
                    found.append(f"tools/list {version}")
            if version not in tables.initialize:
                found.append(f"initialize {version}")
                continue
            for requested in _REQUESTED:
                sdk = self.initialize_result(version, {**_INIT_PARAMS, "protocolVersion": requested})
                mine = bootstrap.initialize_result(
                    tables,
                    version,
                    requested,
                    name=self.server.name,
                    server_version=self.server.version or "",
                    instructions=instructions,
                )
                if bootstrap.dumps(mine) != bootstrap.dumps(sdk):
                    found.append(f"initialize {version} {requested}")
        unknown = MCPError(code=INVALID_PARAMS, message="Unknown tool: probe")
        if bootstrap.error_answer(INVALID_PARAMS, "Unknown tool: probe", 1) != self.error_answer(unknown, 1):
            found.append("error")
        raised = RuntimeError("probe ✓")
        if bootstrap.exception_answer(raised, "r") != self.error_answer(raised, "r", log=False):
            found.append("exception")
        return found
