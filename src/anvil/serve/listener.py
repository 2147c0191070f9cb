"""The fleet listener: one Starlette app serving a :class:`~anvil.serve.fleet.Fleet` to many callers.

Routes:

| route | auth | answer |
|---|---|---|
| ``/mcp`` | bearer | MCP Streamable HTTP (stateless JSON by default); each request is the caller's composition |
| ``POST /call/<tool>`` | bearer | the REST route (:mod:`anvil.serve.rest`) |
| ``GET /openapi`` | bearer | the runtime operations catalog the caller may see (:mod:`anvil.serve.catalog`) |
| ``GET /metrics`` | bearer with ``metrics_auth``, else none | Prometheus text (:mod:`anvil.serve.metrics`) |
| ``GET /healthz`` | none | liveness and the artifact hash (:func:`anvil.serve.health.health_body`) |
| ``/readyz`` | none | the ledger's and the MCP SDK's readiness (:mod:`anvil.serve.health`) |
| ``GET /.well-known/oauth-protected-resource`` | none | ``{resource, authorization_servers}`` in a token mode |
| anything else | none | 404 ``{"error": {"code": "not_found", ...}}`` |

Library API::

    metrics = FleetMetrics()
    fleet = Fleet(bundles, observer=metrics)          # contexts audit through ObservedAuditSink(metrics, ...)
    app = create_listener(fleet, authenticator=StaticTokenAuthenticator(records), metrics=metrics)
    sock = listen("127.0.0.1", 0)
    await serve_http(app, sock=sock)                  # or httpx.ASGITransport(app) in tests

With the default authenticator (:class:`~anvil.serve.auth.tokens.NoAuth`) every caller is anonymous; the
CLI refuses to bind such a listener off loopback.
"""

from __future__ import annotations

from typing import Final

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from anvil.serve.auth.middleware import AuthMiddleware, provider_of
from anvil.serve.auth.tokens import Authenticator, NoAuth
from anvil.serve.catalog import catalog_route
from anvil.serve.fleet import Composition, Fleet
from anvil.serve.health import (
    BundleReadiness,
    ReadinessProbe,
    artifact_hash,
    durable_required,
    health_body,
    readyz_route,
)
from anvil.serve.mcp.config import ServerSpec
from anvil.serve.mcp.http import MAX_REQUEST_BYTES, create_app, mcp_sdk
from anvil.serve.metrics import FleetMetrics, metrics_route
from anvil.serve.rest import DEFAULT_BODY_LIMIT, call_route
from anvil.serve.traces import TraceContextMiddleware

__all__ = ["PROTECTED_RESOURCE_PATH", "create_listener", "default_readiness"]

PROTECTED_RESOURCE_PATH: Final = "/.well-known/oauth-protected-resource"
#: The ``/readyz`` code while the MCP SDK behind ``/mcp`` cannot serve (its load failed).
MCP_UNAVAILABLE: Final = "mcp_unavailable"


def default_readiness(fleet: Fleet, *, cache_seconds: float = 1.0) -> ReadinessProbe:
    """The readiness rule for ``fleet``: its shared ledger, required per :func:`durable_required`;
    a fleet of two or more bundles is also reported bundle by bundle."""
    ledger = next((bundle.context.ledger for bundle in fleet.bundles if bundle.context.ledger is not None), None)
    env = fleet.bundles[0].context.env
    required = durable_required((bundle.document for bundle in fleet.bundles), env)
    bundles = [
        BundleReadiness(bundle.id, bundle.document.service.id, durable_required([bundle.document], env))
        for bundle in fleet.bundles
    ]
    return ReadinessProbe(
        ledger, required=required, cache_seconds=cache_seconds, bundles=bundles if len(bundles) > 1 else ()
    )


def _composition_of(request: Request) -> Composition | None:
    """The caller's fleet composition the auth middleware stored (None outside a guarded route)."""
    provider = provider_of(request)
    return provider if isinstance(provider, Composition) else None


def _protected_resource(resource: str, issuer: str | None) -> Route:
    body = {"resource": resource, "authorization_servers": [issuer] if issuer else []}

    async def endpoint(request: Request) -> JSONResponse:
        return JSONResponse(body, headers={"cache-control": "no-store"})

    return Route(PROTECTED_RESOURCE_PATH, endpoint, methods=["GET"])


def create_listener(
    fleet: Fleet,
    *,
    authenticator: Authenticator | None = None,
    resource: str | None = None,
    issuer: str | None = None,
    host: str = "127.0.0.1",
    readiness: ReadinessProbe | None = None,
    metrics: FleetMetrics | None = None,
    rest_body_limit: int = DEFAULT_BODY_LIMIT,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    stateless: bool = True,
    json_response: bool = True,
    hot_path: bool = True,
    metrics_auth: bool = False,
    trace_inbound: bool = False,
) -> Starlette:
    """The listener app for ``fleet`` (routes in the module docstring).

    Args:
        fleet: The fleet to serve.
        authenticator: Who callers are (default: everyone is anonymous).
        resource: The token audience (``WWW-Authenticate`` and the protected-resource document), if any.
        issuer: The token issuer, named by the protected-resource document.
        host: The bind host (a loopback host turns on DNS-rebinding protection on ``/mcp``).
        readiness: The ``/readyz`` probe (default: :func:`default_readiness`).
        metrics: The ``/metrics`` series (default: the fleet's observer when it is one, else new ones,
            which then become the fleet's observer).
        rest_body_limit: The largest ``/call`` body in bytes.
        max_request_bytes: The largest ``/mcp`` body in bytes.
        stateless: Serve ``/mcp`` without sessions.
        json_response: Answer ``/mcp`` POSTs with JSON rather than SSE.
        hot_path: Answer ``tools/call`` and ``tools/list`` on the hot path (:mod:`anvil.serve.mcp.hotpath`);
            False leaves every ``/mcp`` request to the SDK.
        metrics_auth: ``/metrics`` needs the same bearer as ``/mcp``.
        trace_inbound: Read each ``/mcp`` and ``/call`` request's ``traceparent`` header for the call's span
            (:class:`~anvil.serve.traces.TraceContextMiddleware`; only when the bundles are traced).
    """
    if metrics is None:
        metrics = fleet.observer if isinstance(fleet.observer, FleetMetrics) else FleetMetrics()
    if fleet.observer is None:
        fleet.observer = metrics
    probe = readiness if readiness is not None else default_readiness(fleet)
    routes: list[BaseRoute] = [
        readyz_route(probe, fleet.service),
        metrics_route(metrics),
        call_route(provider_of, body_limit=rest_body_limit),
        catalog_route(_composition_of),
    ]
    if resource is not None:
        routes.append(_protected_resource(resource, issuer))
    auth = authenticator if authenticator is not None else NoAuth()
    middleware = [
        Middleware(AuthMiddleware, authenticator=auth, compose=fleet.compose, resource=resource, metrics=metrics_auth)
    ]
    if trace_inbound:
        middleware.insert(0, Middleware(TraceContextMiddleware))
    app = create_app(
        ServerSpec(fleet, select=provider_of),
        service=fleet.server_name,
        routes=routes,
        host=host,
        stateless=stateless,
        json_response=json_response,
        max_request_bytes=max_request_bytes,
        health=health_body(fleet.service, [artifact_hash(bundle.document) for bundle in fleet.bundles]),
        middleware=middleware,
        hot_path=hot_path,
    )
    sdk = mcp_sdk(app)
    probe.require(MCP_UNAVAILABLE, lambda: sdk.available)  # /mcp requests only the SDK answers
    sdk.on_load(_load_call_path)
    return app


def _load_call_path(_wire: object) -> None:
    """In the SDK loader's thread, once the socket listens: import what a first call needs and listing does
    not (the executor, RE2 patterns, response paths), so that call does not pay for the import."""
    import anvil.air.paths
    import anvil.air.patterns
    import anvil.runtime.executor  # noqa: F401
