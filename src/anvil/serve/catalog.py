"""``GET /openapi``: the runtime operations catalog, as the caller may see it (original-core §5.11).

The original's runtime answers ``/openapi`` (behind the same inbound auth as ``/mcp``) with its
bundle's runtime manifest (``runtime/operations.manifest.json``: service, version, base URL and each
approved operation's wire posture, :func:`anvil.bundle.runtime.runtime_manifest`). Here:

* one bundle, a caller without a grant: exactly the bundle's ``runtime/operations.manifest.json``
  bytes (built from the served AIR, so it is the file the bundle hash covers);
* a fleet (two or more bundles), or any caller with a grant (whose tools are always prefixed):
  ``{"bundles": [{"id", "connector", "service", "version", "baseUrl", "operations"}, ...]}`` in
  the fleet's bundle order, each ``toolName`` the prefixed name the caller dials. A caller with a
  grant gets only the bundles an entry of its grant names (as its resources), and in each only the
  operations its ``tools/list`` shows.

The answer holds names and postures only (no credential value, no base URL the operator configured:
the manifest's ``baseUrl`` is the spec's), is deterministic (the bundle's JSON encoding, AIR order),
and is built from tables fixed at start-up: one caller's request is a filter and an encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from anvil._dataclass import dataclass
from anvil.air.model import Document, Operation
from anvil.bundle.encoding import json_file
from anvil.bundle.runtime import runtime_manifest
from anvil.serve.mcp.http import listener_error

__all__ = ["CATALOG_PATH", "CatalogBundle", "CatalogSource", "catalog_bytes", "catalog_route"]

CATALOG_PATH: Final = "/openapi"
_ANY_METHOD: Final = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_HEADERS: Final = {"cache-control": "no-store"}


@dataclass(frozen=True, slots=True)
class CatalogBundle:
    """One bundle's part of a catalog: its fleet id and connector, its AIR, and the operations shown
    with the tool names the caller dials, in listing order."""

    id: str
    connector: str
    document: Document
    served: tuple[tuple[Operation, str], ...]


class CatalogSource(Protocol):
    """What the route asks for the caller's catalog (a fleet composition)."""

    def catalog(self) -> bytes:
        """The caller's catalog, encoded."""


def catalog_bytes(bundles: Sequence[CatalogBundle], *, prefixed: bool) -> bytes:
    """The catalog of ``bundles``: the lone bundle's runtime manifest unprefixed, else the fleet form."""
    if not prefixed and len(bundles) == 1:
        only = bundles[0]
        return json_file(runtime_manifest(only.document, only.served))
    return json_file(
        {
            "bundles": [
                {"id": bundle.id, "connector": bundle.connector, **runtime_manifest(bundle.document, bundle.served)}
                for bundle in bundles
            ]
        }
    )


def catalog_route(select: Callable[[Request], CatalogSource | None]) -> Route:
    """The ``GET /openapi`` route.

    Args:
        select: The caller's composition for a request (set by the auth middleware, which refuses an
            unauthenticated request before the route); None is a listener misconfiguration (500).
    """

    async def endpoint(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return listener_error(405, "method_not_allowed", "Use GET.", {"allow": "GET, HEAD"})
        source = select(request)
        if source is None:
            return listener_error(500, "internal_error", "The request reached the route without a caller.")
        return Response(source.catalog(), media_type="application/json", headers=_HEADERS)

    return Route(CATALOG_PATH, endpoint, methods=_ANY_METHOD)  # the route answers 405 itself, in JSON
