"""The hot path: the hot verbs over stateless JSON Streamable HTTP, answered lean and without the SDK.

The official SDK answers a stateless JSON POST by building a transport, two memory streams, a
dispatcher task, a connection and a request context, validating the message and the params into
pydantic models, validating the result into a ``CallToolResult``, re-validating it against the
protocol version's surface model and serializing a ``JSONRPCResponse``. :class:`HotPath` sits in
front of the SDK's ASGI app and answers ``tools/call`` and ``tools/list`` (the verbs every agent sends
most), a plain ``initialize`` and the ``notifications/initialized`` notification with one parse of
the body, one dict lookup of the caller's provider, a call straight into its ``call`` (the fleet's
``Composition.call``) and one serialization. Everything it does not recognise exactly goes to the
SDK unchanged (the body it read is replayed): the 2026-07-28 protocol, unknown versions, an
``initialize`` with unusual params or capabilities, other notifications, GET/DELETE, sessions, SSE,
every malformed or unusual message, and every request the SDK would refuse (content type,
``Accept``, ``Host``/``Origin``, body size). So every refusal and error code is the SDK's own.

No SDK at start-up: this module imports neither ``mcp`` nor ``mcp_types``, so ``anvil serve --http``
answers its first requests while the SDK is still loading in the background
(:mod:`anvil.serve.mcp.deferred`); a request the SDK must answer waits for it.

Byte-for-byte: the answers are written from the bootstrap tables copied from the SDK
(:mod:`anvil.serve.mcp.bootstrap`). When the SDK has loaded, its own answers are worked out
(:class:`~anvil.serve.mcp.sdkwire.SdkWire`: the call-result shape per version, this provider's listing
per version, the ``initialize`` result per version pair, an error) and compared with the tables; on
any difference the hot path logs one warning and switches to the SDK's answers (and leaves
``initialize`` and notifications to the SDK). A result or listing outside what the tables represent
exactly (a new content kind, a value outside plain JSON) is answered by the SDK's pipeline.

JSON: the body is read as ``pydantic_core.from_json``, the parser the SDK itself uses, reads it (so numbers,
duplicate keys and escapes read exactly as on the SDK path; :mod:`anvil.serve.mcp.bodies` reads the first
requests without importing pydantic-core); answers are written by ``orjson``,
whose output matches pydantic's for every JSON value (integers beyond 64 bits fall back to
pydantic's encoder).
"""

from __future__ import annotations

import logging
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from anvil.serve.mcp import bootstrap
from anvil.serve.mcp.bodies import is_serialization_error, is_validation_error, read_body
from anvil.serve.mcp.bootstrap import (
    BOOTSTRAP,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    NOTIFICATION_ANSWER,
    TRANSPORT_FAILURE,
    ResultShape,
    WireTables,
    error_answer,
    response,
)
from anvil.serve.mcp.config import Security
from anvil.serve.mcp.deferred import DeferredSdk
from anvil.serve.mcp.provider import ToolProvider, UnknownTool

if TYPE_CHECKING:
    from anvil.serve.mcp.results import CallResult
    from anvil.serve.mcp.sdkwire import SdkWire

__all__ = ["HotPath", "ResultEncoder"]

logger = logging.getLogger(__name__)

_JSON: Final = "application/json"
_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS: Final = frozenset({"jsonrpc", "method", "params"})
_CALL_KEYS: Final = frozenset({"name", "arguments", "_meta"})
_LIST_KEYS: Final = frozenset({"cursor", "_meta"})
_INIT_KEYS: Final = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_CLIENT_INFO_KEYS: Final = frozenset({"name", "version", "title", "description", "websiteUrl"})
#: The sub-capabilities an initialize may declare and stay on the hot path (each an empty object).
_EMPTY_CAPABILITIES: Final = {"sampling": frozenset({"context", "tools"}), "elicitation": frozenset({"form", "url"})}
_HEADERS_WANTED: Final = frozenset({b"content-type", b"content-length", b"accept", b"host", b"origin"})


class ResultEncoder:
    """The JSON-RPC answer bytes for a ``tools/call`` result, as the SDK would send them, per version."""

    __slots__ = ("_shapes",)

    def __init__(self, shapes: Mapping[str, ResultShape] | None = None) -> None:
        self._shapes = dict(shapes if shapes is not None else BOOTSTRAP.call)

    def encode(self, wire: Mapping[str, Any], version: str, request_id: int | str) -> bytes | None:
        """``{"jsonrpc", "id", "result"}`` for the ``CallToolResult`` wire dict ``wire``, or None when
        ``wire`` is not of the shape the tables represent (the SDK's pipeline must serialize it)."""
        shaped = self._shapes[version].shape(wire)
        return None if shaped is None else response(shaped, request_id)


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

    def __init__(self, settings: Security | None) -> None:
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
        sdk: The SDK's Streamable HTTP endpoint (stateless, JSON responses), loaded in the background.
        provider: The default provider (when ``select`` is None); its name and version are the server's.
        select: Picks the provider of one request from its Starlette request (as ``build_server``'s);
            a None answer is left to the SDK (which refuses it).
        security: The SDK manager's transport security settings.
        max_request_bytes: The SDK manager's body limit (a larger body is left to it: 413).
        instructions: The server instructions ``initialize`` sends, if any.
        tables: The tables the answers are written from until the SDK has loaded (default: the
            bootstrap tables copied from the SDK).
    """

    def __init__(
        self,
        sdk: DeferredSdk,
        *,
        provider: ToolProvider,
        select: Callable[[Any], ToolProvider | None] | None,
        security: Security | None,
        max_request_bytes: int,
        instructions: str | None = None,
        tables: WireTables = BOOTSTRAP,
    ) -> None:
        self.sdk = sdk
        self._provider = provider
        self._select = select
        self._origins = _Origins(security)
        self._max = max_request_bytes
        self._instructions = instructions
        self._tables = tables
        self._encoder = ResultEncoder(tables.call)
        self._listings: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()
        #: The SDK's own answers, once it has loaded.
        self._wire: SdkWire | None = None
        #: True once the SDK answered otherwise than the tables: its answers are used from then on.
        self.switched = False
        #: How many requests the hot path answered itself (a count, not a record).
        self.answered = 0
        sdk.on_load(self._check)

    def _check(self, wire: SdkWire) -> Callable[[], None]:
        """Compare the tables with the SDK's answers (in the loader's thread); the switch, on the loop."""
        try:
            differences = wire.differences(self._tables, self._provider, self._instructions)
        except Exception as exc:  # a comparison that cannot run is a difference: trust the SDK
            differences = [f"comparison failed ({type(exc).__name__})"]

        def apply() -> None:
            self._wire = wire
            if differences:
                logger.warning(
                    "anvil: the MCP SDK answers otherwise than the hot path's bootstrap tables (%s); "
                    "the hot path now sends the SDK's answers",
                    ", ".join(differences[:6]),
                )
                self.switched = True
                self._tables = wire.tables()
                self._encoder = ResultEncoder(wire.shapes)
                self._listings = weakref.WeakKeyDictionary()

        return apply

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
            version = self._tables.default
        elif version not in self._tables.versions:
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
            message = read_body(body)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        method = message.get("method")
        params = message.get("params")
        if "id" not in message:
            if (
                method == "notifications/initialized"
                and message.keys() <= _NOTIFICATION_KEYS
                and (params is None or params == {})
                and not self.switched
            ):
                return NOTIFICATION_ANSWER
            return None
        if not message.keys() <= _REQUEST_KEYS:
            return None
        request_id = message.get("id")
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return None
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
            listed = self._listing(provider, version)
            if listed is None:
                return None
            return 200, b'{"jsonrpc":"2.0","id":' + bootstrap.dumps(request_id) + b',"result":' + listed + b"}"
        if method == "initialize" and not self.switched and isinstance(params, dict) and _plain_initialize(params):
            result = bootstrap.initialize_result(
                self._tables,
                version,
                params["protocolVersion"],
                name=self._provider.server_name,
                server_version=self._provider.version,
                instructions=self._instructions,
            )
            return 200, response(result, request_id)
        return None

    def _listing(self, provider: ToolProvider, version: str) -> bytes | None:
        """The ``tools/list`` result bytes, kept per provider and version; None: the SDK must answer."""
        cached = self._listings.get(provider)
        if cached is None:
            cached = self._listings[provider] = {}
        result = cached.get(version)
        if result is None:
            listed = None if self.switched else bootstrap.listing_result(self._tables, version, provider.tools)
            if listed is None:
                if self._wire is None:
                    return None  # not yet loaded: the SDK answers once it is
                listed = self._wire.listing_result(provider, version)
            result = cached[version] = bootstrap.dumps(listed)
        return result

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
                return 200, error_answer(INVALID_PARAMS, f"Unknown tool: {name}", request_id)
            wire = result.to_wire()
            try:
                encoded = self._encoder.encode(wire, version, request_id)
                if encoded is None:  # outside the tables: the SDK's own pipeline
                    encoded = response(await self._sdk_call_result(wire, version), request_id)
                return 200, encoded
            except Exception as exc:
                if not is_serialization_error(exc):  # e.g. a lone surrogate in the upstream's text
                    raise
                # The SDK fails at the same point, writing its answer: HTTP 500, INTERNAL_ERROR, no id.
                logger.exception("Error handling POST request")
                return 500, TRANSPORT_FAILURE
        except UnknownTool as unknown:  # a proxy naming a tool nobody can dial: as a direct call to it
            return 200, error_answer(INVALID_PARAMS, f"Unknown tool: {unknown.name}", request_id)
        except _Unavailable:
            return 200, error_answer(INTERNAL_ERROR, "Handler returned an invalid result", request_id)
        except Exception as exc:  # the SDK dispatcher's one exception-to-wire rule
            if self._wire is not None:
                return 200, self._wire.error_answer(exc, request_id)
            if not is_validation_error(exc):
                logger.exception("handler for %r raised", "tools/call")
            return 200, bootstrap.exception_answer(exc, request_id)

    async def _sdk_call_result(self, wire: Mapping[str, Any], version: str) -> dict[str, Any]:
        if self._wire is None and not await self.sdk.loaded():
            logger.error("anvil: a tools/call result needs the MCP SDK, which is not available")
            raise _Unavailable
        assert self._wire is not None
        return self._wire.call_result(wire, version)


class _Unavailable(Exception):
    """The SDK could not be loaded to serialize a result (answered as the SDK answers an invalid one)."""


def _plain_initialize(params: Any) -> bool:
    """An ``initialize`` whose params the SDK surely accepts, declaring only capabilities that are
    plain (anything else is the SDK's to judge)."""
    if not isinstance(params, dict) or params.keys() != _INIT_KEYS or not isinstance(params["protocolVersion"], str):
        return False
    info = params["clientInfo"]
    if not (
        isinstance(info, dict)
        and info.keys() <= _CLIENT_INFO_KEYS
        and "name" in info
        and "version" in info
        and all(isinstance(value, str) for value in info.values())
    ):
        return False
    capabilities = params["capabilities"]
    if not isinstance(capabilities, dict):
        return False
    for key, value in capabilities.items():
        if not isinstance(value, dict):
            return False
        if key == "roots":
            if not (value.keys() <= {"listChanged"} and all(isinstance(flag, bool) for flag in value.values())):
                return False
        elif key in _EMPTY_CAPABILITIES:
            if not (value.keys() <= _EMPTY_CAPABILITIES[key] and all(item == {} for item in value.values())):
                return False
        elif key == "experimental":
            if not all(isinstance(item, dict) and bootstrap.is_plain(item) for item in value.values()):
                return False
        else:
            return False
    return True
