"""The hot path: ``tools/call`` and ``tools/list`` over stateless JSON Streamable HTTP, answered lean.

The official SDK answers a stateless JSON POST by building a transport, two memory streams, a
dispatcher task, a connection and a request context, validating the message and the params into
pydantic models, validating the result into a ``CallToolResult``, re-validating it against the
protocol version's surface model and serializing a ``JSONRPCResponse``. :class:`HotPath` sits in
front of the SDK's ASGI app and answers the two verbs every agent sends most with one parse of the
body, one dict lookup of the caller's provider, a call straight into its ``call`` (the fleet's
``Composition.call``) and one serialization. Everything it does not recognise exactly goes to the
SDK unchanged (the body it read is replayed): initialize, notifications, the 2026-07-28 protocol,
GET/DELETE, sessions, SSE, every malformed or unusual message, and every request the SDK would
refuse (content type, ``Accept``, ``Host``/``Origin``, body size). So every refusal and error code
is the SDK's own, and the hot path only ever answers what the SDK would answer with a success.

Byte-for-byte: what the SDK would send is worked out once, at start-up, by running the SDK's own
result pipeline on probe results for every handshake protocol version (:class:`_ResultShape`
records which keys survive and in which order); ``tools/list`` answers are the SDK's own
serialization of the provider's listing, built on first use per provider and version and kept as
bytes. The listing and the call result come from the same projections the SDK handlers use
(:func:`anvil.serve.server.listing_result`, :meth:`~anvil.serve.results.CallResult.to_wire`). A
result whose shape is not the one recorded (a new content kind, a value outside what the fast
encoder represents exactly) is serialized by the SDK's pipeline instead, so the answer is the same.

JSON: the body is parsed by ``pydantic_core.from_json``, the parser the SDK itself uses (so numbers,
duplicate keys and escapes read exactly as on the SDK path); answers are written by ``orjson``,
whose output matches pydantic's for every JSON value (integers beyond 64 bits fall back to
pydantic's encoder).
"""

from __future__ import annotations

import logging
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

import mcp.types as types
import orjson
import pydantic_core
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ErrorData,
    JSONRPCError,
    methods as sdk_methods,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from anvil.serve.results import CallResult
from anvil.serve.server import ToolProvider, listing_result

__all__ = ["HotPath", "ResultEncoder"]

logger = logging.getLogger(__name__)

_JSON: Final = "application/json"
_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_KEYS: Final = frozenset({"name", "arguments", "_meta"})
_LIST_KEYS: Final = frozenset({"cursor", "_meta"})
_TEXT_KEYS: Final = frozenset({"type", "text"})
_VERSIONS: Final = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)
_HEADERS_WANTED: Final = frozenset({b"content-type", b"content-length", b"accept", b"host", b"origin"})
#: The probe results the SDK pipeline is run on at start-up: every key ``CallResult.to_wire`` emits, and
#: the least it emits (which shows the keys the SDK adds with their defaults, such as ``isError: false``).
_FULL_PROBE: Final[dict[str, Any]] = {
    "content": [{"type": "text", "text": "probe"}],
    "structuredContent": {"probe": 1},
    "isError": True,
    "_meta": {"effect": {"probe": 1}},
}
_LEAST_PROBE: Final[dict[str, Any]] = {"content": [{"type": "text", "text": "probe"}]}


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


class _ResultShape:
    """Which ``CallToolResult`` keys the SDK sends for one protocol version, in its order, with the
    defaults it fills in (probed once through the SDK's own pipeline)."""

    __slots__ = ("defaults", "item_defaults", "item_order", "order", "version")

    def __init__(self, version: str) -> None:
        self.version = version
        full = _sdk_result("tools/call", version, types.CallToolResult.model_validate(_FULL_PROBE))
        least = _sdk_result("tools/call", version, types.CallToolResult.model_validate(_LEAST_PROBE))
        self.order: tuple[str, ...] = (*full, *(key for key in least if key not in full))
        self.defaults: dict[str, Any] = {key: value for key, value in least.items() if key != "content"}
        full_item, least_item = full["content"][0], least["content"][0]
        self.item_order: tuple[str, ...] = (*full_item, *(key for key in least_item if key not in full_item))
        self.item_defaults: dict[str, Any] = {key: value for key, value in least_item.items() if key not in _TEXT_KEYS}

    def shape(self, wire: Mapping[str, Any]) -> dict[str, Any] | None:
        """``wire`` as the SDK would send it, or None when ``wire`` is not of the probed shape."""
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


class ResultEncoder:
    """The JSON-RPC answer bytes for a ``tools/call`` result, as the SDK would send them, per version."""

    __slots__ = ("_shapes",)

    def __init__(self) -> None:
        self._shapes = {version: _ResultShape(version) for version in HANDSHAKE_PROTOCOL_VERSIONS}

    def encode(self, wire: Mapping[str, Any], version: str, request_id: int | str) -> bytes:
        """``{"jsonrpc", "id", "result"}`` for the ``CallToolResult`` wire dict ``wire``.

        Raises:
            MCPError: the result does not fit the version's surface (the SDK answers INTERNAL_ERROR).
            ValidationError: the result does not validate (the SDK answers INVALID_PARAMS).
        """
        shaped = self._shapes[version].shape(wire)
        if shaped is None:  # not the probed shape: the SDK's own pipeline, same bytes
            shaped = _sdk_result("tools/call", version, types.CallToolResult.model_validate(wire))
        return _response(shaped, request_id)


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer beyond 64 bits: pydantic's encoder writes it exactly
        return pydantic_core.to_json(value, inf_nan_mode="null")  # as the SDK writes NaN and infinities


def _response(result: Any, request_id: int | str) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def _error(error: ErrorData, request_id: int | str | None) -> bytes:
    return (
        JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        .model_dump_json(by_alias=True, exclude_unset=True)
        .encode()
    )


#: The SDK transport's answer when it cannot serialize a response (``_create_error_response``).
_TRANSPORT_FAILURE: Final = _error(ErrorData(code=INTERNAL_ERROR, message="Error handling POST request"), None)


def _meta(value: Any) -> tuple[bool, dict[str, Any] | None]:
    """``(usable, meta)``: ``_meta`` as the SDK hands it to the handler; not usable when the SDK must judge it.

    The SDK validates ``_meta`` as its ``RequestParamsMeta`` (an open map whose progress token, if any,
    is a string or an integer and reaches the handler as ``progress_token``).
    """
    if value is None:
        return True, None
    if not isinstance(value, dict) or "progress_token" in value:
        return False, None
    if "progressToken" not in value:
        return True, value
    token = value["progressToken"]
    if not isinstance(token, str | int) or isinstance(token, bool):
        return False, None
    return True, {"progress_token": token, **{key: item for key, item in value.items() if key != "progressToken"}}


def _accepts_json(accept: str) -> bool:
    """The SDK's ``check_accept_headers`` JSON half (RFC 7231 wildcards)."""
    kinds = [part.strip().split(";")[0].strip().lower() for part in accept.split(",")]
    return "*/*" in kinds or any(kind in (_JSON, "application/*") for kind in kinds)


def _content_type_ok(content_type: str | None) -> bool:
    """Both of the SDK's content-type checks (the security middleware's and the transport's)."""
    if content_type is None or not content_type.lower().startswith(_JSON):
        return False
    return any(part.strip() == _JSON for part in content_type.split(";")[0].split(","))


class _Origins:
    """The SDK's DNS-rebinding rule (``TransportSecurityMiddleware``), compiled once."""

    __slots__ = ("enabled", "host_prefixes", "hosts", "origin_prefixes", "origins")

    def __init__(self, settings: TransportSecuritySettings | None) -> None:
        self.enabled = settings is not None and settings.enable_dns_rebinding_protection
        allowed_hosts = settings.allowed_hosts if settings is not None else []
        allowed_origins = settings.allowed_origins if settings is not None else []
        self.hosts = frozenset(allowed_hosts)
        self.host_prefixes = tuple(entry[:-2] + ":" for entry in allowed_hosts if entry.endswith(":*"))
        self.origins = frozenset(allowed_origins)
        self.origin_prefixes = tuple(entry[:-2] + ":" for entry in allowed_origins if entry.endswith(":*"))

    def admit(self, host: str | None, origin: str | None) -> bool:
        if not self.enabled:
            return True
        if not host or not (host in self.hosts or host.startswith(self.host_prefixes)):
            return False
        return not origin or origin in self.origins or origin.startswith(self.origin_prefixes)


class HotPath:
    """ASGI app for ``/mcp``: the hot verbs answered here, everything else by ``sdk`` (module docstring).

    Args:
        sdk: The SDK's Streamable HTTP ASGI app (stateless, JSON responses).
        provider: The default provider (when ``select`` is None).
        select: Picks the provider of one request from its Starlette request (as ``build_server``'s);
            a None answer is left to the SDK (which refuses it).
        security: The SDK manager's transport security settings.
        max_request_bytes: The SDK manager's body limit (a larger body is left to it: 413).
    """

    def __init__(
        self,
        sdk: ASGIApp,
        *,
        provider: ToolProvider,
        select: Callable[[Any], ToolProvider | None] | None,
        security: TransportSecuritySettings | None,
        max_request_bytes: int,
    ) -> None:
        self.sdk = sdk
        self._provider = provider
        self._select = select
        self._origins = _Origins(security)
        self._max = max_request_bytes
        self._encoder = ResultEncoder()
        self._listings: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()
        #: How many requests the hot path answered itself (a count, not a record).
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a hot request, or hand the request (its body replayed) to the SDK."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.sdk(scope, receive, send)
            return
        version: str | None = None
        seen: dict[bytes, str] = {}
        for name, value in scope["headers"]:
            if name == b"mcp-protocol-version":
                if version is None:
                    version = value.decode("latin-1")
            elif name in _HEADERS_WANTED and name not in seen:
                seen[name] = value.decode("latin-1")
        if version is None:
            version = DEFAULT_NEGOTIATED_VERSION
        elif version not in _VERSIONS:
            await self.sdk(scope, receive, send)  # the 2026-07-28 protocol and unknown versions
            return
        declared = seen.get(b"content-length")
        if (
            (declared is not None and (not declared.isdigit() or int(declared) > self._max))
            or not _content_type_ok(seen.get(b"content-type"))
            or not self._origins.admit(seen.get(b"host"), seen.get(b"origin"))
            or not _accepts_json(seen.get(b"accept", ""))
        ):
            await self.sdk(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self._delegate(scope, receive, send, chunks, message)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            chunks.append(chunk)
            if size > self._max:
                await self._delegate(scope, receive, send, chunks, None, more=message.get("more_body", False))
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        answered = await self._answer(scope, body, version)
        if answered is None:
            await self._delegate(scope, receive, send, [body], None)
            return
        self.answered += 1
        await send(
            {
                "type": "http.response.start",
                "status": answered[0],
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(answered[1])).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": answered[1]})

    async def _delegate(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        chunks: list[bytes],
        trailing: Message | None,
        *,
        more: bool = False,
    ) -> None:
        """Run the SDK on this request, replaying what was read of it first."""
        pending: deque[Message] = deque()
        if chunks:
            pending.append({"type": "http.request", "body": b"".join(chunks), "more_body": more})
        if trailing is not None:
            pending.append(trailing)

        async def replay() -> Message:
            if pending:
                return pending.popleft()
            return await receive()

        await self.sdk(scope, replay, send)

    def _provider_of(self, scope: Scope) -> ToolProvider | None:
        if self._select is None:
            return self._provider
        return self._select(Request(scope))

    async def _answer(self, scope: Scope, body: bytes, version: str) -> tuple[int, bytes] | None:
        """The HTTP status and body for a hot request, or None to leave the request to the SDK."""
        try:
            message = pydantic_core.from_json(body)
        except ValueError:
            return None
        if not isinstance(message, dict) or not message.keys() <= _REQUEST_KEYS or message.get("jsonrpc") != "2.0":
            return None
        request_id = message.get("id")
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return None
        method = message.get("method")
        params = message.get("params")
        if method == "tools/call":
            if not (isinstance(params, dict) and params.keys() <= _CALL_KEYS and isinstance(params.get("name"), str)):
                return None
            arguments = params.get("arguments")
            usable, meta = _meta(params.get("_meta"))
            if not usable or not (arguments is None or isinstance(arguments, dict)):
                return None
            provider = self._provider_of(scope)
            if provider is None:
                return None
            return await self._call(provider, params["name"], arguments, meta, version, request_id)
        if method == "tools/list":
            if params is not None and not (
                isinstance(params, dict)
                and params.keys() <= _LIST_KEYS
                and isinstance(params.get("cursor", ""), str)
                and _meta(params.get("_meta"))[0]
            ):
                return None
            provider = self._provider_of(scope)
            if provider is None:
                return None
            return 200, self._listing(provider, version, request_id)
        return None

    def _listing(self, provider: ToolProvider, version: str, request_id: int | str) -> bytes:
        cached = self._listings.get(provider)
        if cached is None:
            cached = self._listings[provider] = {}
        result = cached.get(version)
        if result is None:
            result = cached[version] = _dumps(_sdk_result("tools/list", version, listing_result(provider)))
        return b'{"jsonrpc":"2.0","id":' + _dumps(request_id) + b',"result":' + result + b"}"

    async def _call(
        self,
        provider: ToolProvider,
        name: str,
        arguments: dict[str, Any] | None,
        meta: dict[str, Any] | None,
        version: str,
        request_id: int | str,
    ) -> tuple[int, bytes]:
        try:
            result: CallResult | None = await provider.call(name, arguments, meta)
            if result is None:
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
            wire = result.to_wire()
            try:
                return 200, self._encoder.encode(wire, version, request_id)
            except pydantic_core.PydanticSerializationError:  # e.g. a lone surrogate in the upstream's text
                # The SDK fails at the same point, writing its answer: HTTP 500, INTERNAL_ERROR, no id.
                logger.exception("Error handling POST request")
                return 500, _TRANSPORT_FAILURE
        except Exception as exc:  # the SDK dispatcher's one exception-to-wire rule
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("handler for %r raised", "tools/call")
                error = ErrorData(code=0, message=str(exc))
            return 200, _error(error, request_id)
