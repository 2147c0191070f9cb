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
from dataclasses import dataclass
from typing import Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from anvil.air.effects import effect_class_of
from anvil.air.model import Operation
from anvil.runtime.context import RuntimeContext
from anvil.runtime.tracing import Attribute, Tracer, bind_span, current_span, parse_traceparent
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
        token = INBOUND.set(Inbound(traceparent, rest, scope.get("scheme", "http")))
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
    parent = parse_traceparent(meta.get(TRACEPARENT_META)) if isinstance(meta, Mapping) else None
    if parent is None and inbound is not None:
        parent = parse_traceparent(inbound.traceparent)
    rest = inbound is not None and inbound.rest
    attributes: dict[str, Attribute] = {
        "gen_ai.tool.name": tool,
        "gen_ai.operation.name": "execute_tool",
        "anvil.operation": op.id,
        "anvil.effect_class": effect_class_of(op),
        "anvil.connector": connector,
    }
    if rest:
        assert inbound is not None
        name = f"POST {_REST_ROUTE}"
        attributes.update({"http.request.method": "POST", "http.route": _REST_ROUTE, "url.scheme": inbound.scheme})
    else:
        name = f"tools/call {tool}"
        attributes["mcp.method.name"] = "tools/call"
        if inbound is not None:
            attributes.update({"network.transport": "tcp", "network.protocol.name": "http"})
    span = tracer.start_call(name, "server", attributes, parent)
    with bind_span(span):
        try:
            result = await call()
        except BaseException as exc:
            span.end(type(exc).__qualname__)
            raise
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
