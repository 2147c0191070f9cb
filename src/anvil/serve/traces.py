"""One server span per tool call, and the caller's trace context it continues.

:func:`traced` wraps one call of a fleet composition (:meth:`anvil.serve.fleet.Composition.call`, the path
every transport takes: the HTTP hot path, the SDK, the REST route, stdio) in a span of kind server, binds
it for the call (:func:`anvil.runtime.tracing.bind_span`: the gateway's and the executor's spans are its
children, and its trace id is the call's ``trace_id`` everywhere), and ends it with the call's outcome.

Its shape follows the semantic conventions of what the caller spoke:

* MCP ``tools/call``: ``tools/call <tool>``, with ``mcp.method.name``, ``gen_ai.tool.name``,
  ``gen_ai.operation.name: execute_tool`` and, for a result that is an error, ``error.type`` (the
  envelope's code);
* REST ``POST /call/<tool>``: ``POST /call/{tool}``, with ``http.request.method``, ``http.route``,
  ``url.scheme``, ``http.response.status_code`` and ``error.type`` for a 5xx (HTTP server spans leave
  4xx unmarked).

Every call span also says ``anvil.outcome`` (``ok``, ``dry_run`` or the envelope code), the bundle's
connector, and what the executor adds (operation, effect class, hashed principal, ledger reference,
idempotency outcome). Never an argument, a key, a credential or an answer.

The parent is the caller's W3C ``traceparent``: ``_meta.traceparent`` on an MCP request first, else the
HTTP header of the request that carried it (:class:`TraceContextMiddleware` reads it, only when tracing is
on), else none (a new trace).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from anvil._dataclass import dataclass
from anvil.air.effects import effect_class_of
from anvil.air.model import Operation
from anvil.runtime.context import RuntimeContext
from anvil.runtime.tracing import CALL_SPAN, Attribute, Tracer, current_span, parse_traceparent
from anvil.serve.mcp.results import CallResult

__all__ = ["INBOUND", "TRACEPARENT_META", "Inbound", "TraceContextMiddleware", "call_tracer", "traced"]

#: The ``_meta`` key an MCP request carries its caller's trace context in.
TRACEPARENT_META: Final = "traceparent"
_REST_ROUTE: Final = "/call/{tool}"


@dataclass(frozen=True, slots=True)
class Inbound:
    """The HTTP request a call came in on: its ``traceparent`` header, and whether it is the REST route."""

    traceparent: str | None
    rest: bool
    scheme: str = "http"


#: The request being answered, while :class:`TraceContextMiddleware` runs (None elsewhere, and over stdio).
INBOUND: ContextVar[Inbound | None] = ContextVar("anvil_inbound_request", default=None)
#: The inbound values of requests without a ``traceparent`` (most), made once: (REST, scheme) -> value.
_PLAIN: Final[dict[tuple[bool, str], Inbound]] = {
    (rest, scheme): Inbound(None, rest, scheme) for rest in (False, True) for scheme in ("http", "https")
}
#: A call span's name, its fixed attributes (shared by every call of the shape: the tracer keeps them encoded)
#: and its first own ones (the executor may restate them), per (tool, operation, effect class, connector, how
#: it came in).
_SHAPES: dict[tuple[str, str, str, str, str | None], tuple[str, Mapping[str, Attribute], dict[str, Attribute]]] = {}
_MAX_SHAPES: Final = 4096


class TraceContextMiddleware:
    """Pure ASGI: binds :data:`INBOUND` for ``/mcp`` and ``/call/*`` requests (installed only when traced)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Bind the request's trace context around the app."""
        path = scope.get("path", "") if scope["type"] == "http" else ""
        rest = path.startswith("/call/")
        if not rest and path != "/mcp" and not path.startswith("/mcp/"):
            await self.app(scope, receive, send)
            return
        traceparent = None
        for name, value in scope.get("headers") or ():
            if name == b"traceparent":
                traceparent = value.decode("latin-1")
                break
        scheme = scope.get("scheme", "http")
        plain = _PLAIN.get((rest, scheme)) if traceparent is None else None
        token = INBOUND.set(plain if plain is not None else Inbound(traceparent, rest, scheme))
        try:
            await self.app(scope, receive, send)
        finally:
            INBOUND.reset(token)


def call_tracer(context: RuntimeContext) -> Tracer | None:
    """The tracer a call's server span comes from: the context's, unless a call span is bound already (the
    call then runs under it: :func:`traced` runs the call again inside its span)."""
    tracer = context.tracer
    return tracer if tracer is not None and current_span() is None else None


def _outcome(result: CallResult | None) -> str:
    if result is None:
        return "unknown_tool"
    if result.kind == "success":
        return "ok"
    if result.kind == "dry_run":
        return "dry_run"
    return result.envelope.code if result.envelope is not None else "unknown_upstream_error"


async def traced(
    tracer: Tracer,
    tool: str,
    op: Operation,
    connector: str,
    meta: Mapping[str, Any] | None,
    call: Callable[[], Awaitable[CallResult | None]],
) -> CallResult | None:
    """Run ``call`` (one call of wire tool ``tool``, performing ``op``) under its server span."""
    inbound = INBOUND.get()
    parent = None
    if meta is not None and (type(meta) is dict or isinstance(meta, Mapping)):
        found = meta.get(TRACEPARENT_META)
        if found is not None:
            parent = parse_traceparent(found)
    if parent is None and inbound is not None and inbound.traceparent is not None:
        parent = parse_traceparent(inbound.traceparent)
    rest = inbound is not None and inbound.rest
    name, fixed, own = _shape(tool, op, connector, inbound)
    span = tracer.start_call(name, "server", dict(own), parent, fixed=fixed)
    token = CALL_SPAN.set(span)  # what bind_span does, without its object
    try:
        result = await call()
    except BaseException as exc:
        span.end(type(exc).__qualname__)
        raise
    finally:
        CALL_SPAN.reset(token)
    outcome = _outcome(result)
    span.set("anvil.outcome", outcome)
    error = None
    if rest:
        status = result.envelope.http_status if result is not None and result.envelope is not None else 200
        span.set("http.response.status_code", status)
        if status >= 500:
            error = str(status)
    elif result is None or result.is_error:
        error = outcome
    span.end(error)
    return result


def _shape(
    tool: str, op: Operation, connector: str, inbound: Inbound | None
) -> tuple[str, Mapping[str, Attribute], dict[str, Attribute]]:
    """The call span's name, the attributes fixed by what is called and how, and its first own ones (the
    operation and effect class, which the executor sets again from what it performed: a staged call performs
    its draft). Kept: built once per shape."""
    effect = effect_class_of(op)
    how = None if inbound is None else ("rest:" if inbound.rest else "mcp:") + inbound.scheme
    key = (tool, op.id, effect, connector, how)
    found = _SHAPES.get(key)
    if found is not None:
        return found
    attributes: dict[str, Attribute] = {
        "gen_ai.tool.name": tool,
        "gen_ai.operation.name": "execute_tool",
        "anvil.connector": connector,
    }
    if inbound is not None and inbound.rest:
        name = f"POST {_REST_ROUTE}"
        attributes.update({"http.request.method": "POST", "http.route": _REST_ROUTE, "url.scheme": inbound.scheme})
    else:
        name = f"tools/call {tool}"
        attributes["mcp.method.name"] = "tools/call"
        if inbound is not None:
            attributes.update({"network.transport": "tcp", "network.protocol.name": "http"})
    if len(_SHAPES) >= _MAX_SHAPES:
        _SHAPES.clear()
    found = _SHAPES[key] = (
        name,
        MappingProxyType(attributes),
        {"anvil.operation": op.id, "anvil.effect_class": effect},
    )
    return found
