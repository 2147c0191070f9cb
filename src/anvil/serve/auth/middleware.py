"""Inbound authentication on the listener: which requests need a bearer, and whose composition they get.

:class:`AuthMiddleware` (pure ASGI) guards ``/mcp``, ``/call/*`` and ``/openapi`` (the operations catalog,
which the original serves behind the same auth as ``/mcp``), and ``/metrics`` when the listener is built
with ``metrics_auth`` (``--metrics-auth``, on by default outside ``ANVIL_ENV=dev``, as the original's);
``/healthz`` and ``/readyz`` stay open for probes (and ``/metrics`` without it: it carries tool names and
counts, never arguments, principals or keys). For a guarded request it asks the configured
:class:`~anvil.serve.auth.tokens.Authenticator` for the caller, then stores the caller's composition
(:meth:`anvil.serve.fleet.Fleet.compose`, cached per caller) in the ASGI scope under
:data:`PROVIDER_KEY` (the principal under :data:`PRINCIPAL_KEY`), where the MCP server and the REST
route pick it up (:func:`provider_of`). Every request is authorized on its own; nothing is bound to
an MCP session.

Refusals (original-gateway §1.5): no bearer is 401 ``invalid_request``; an unknown, malformed,
expired, mis-addressed or badly signed token, or one whose grant does not parse, is 401
``invalid_token``; a connect token (``by_purpose: connect``) is 403 ``turn_token_required``. Each
carries ``WWW-Authenticate`` (:func:`~anvil.serve.auth.tokens.www_authenticate`) and the body
``{"error": {"code", "message"}}``.

Modes (:func:`build_authenticator`; the CLI reads them from ``--auth`` / ``ANVIL_INBOUND_AUTH_MODE``):

* ``none`` - every request is the anonymous principal (the listener refuses a non-loopback bind);
* ``static`` - bearer tokens whose sha256 is in the principals file (``ANVIL_PRINCIPALS_FILE``);
* ``jwt`` - signed tokens (EdDSA, RS256 or ES256) checked against ``ANVIL_INBOUND_ISSUER``,
  ``ANVIL_INBOUND_AUDIENCE`` (the listener's own ``/mcp`` URL: ``https:``, or ``http:`` on a loopback
  host) and the keys at ``ANVIL_INBOUND_JWKS_URI`` (``file:`` or ``https:``), with
  ``ANVIL_INBOUND_LEEWAY_SECONDS`` (0-300, default 60); ``branchyard`` is ``jwt`` with EdDSA only and
  ``oidc`` with RS256/ES256 only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from anvil._dataclass import dataclass
from anvil.errors import ConfigError
from anvil.serve.auth.principals import ANONYMOUS, Principal, load_principals
from anvil.serve.auth.tokens import (
    Authenticator,
    AuthFailure,
    JwtVerifier,
    NoAuth,
    StaticTokenAuthenticator,
    www_authenticate,
)
from anvil.serve.mcp.http import listener_error
from anvil.serve.mcp.provider import ToolProvider

if TYPE_CHECKING:
    import httpx

__all__ = [
    "AUTH_MODES",
    "PRINCIPAL_KEY",
    "PROVIDER_KEY",
    "AuthMiddleware",
    "AuthMode",
    "InboundSettings",
    "build_authenticator",
    "is_guarded",
    "provider_of",
]

AuthMode = Literal["none", "static", "jwt", "branchyard", "oidc"]
AUTH_MODES: Final[tuple[str, ...]] = ("none", "static", "jwt", "branchyard", "oidc")
#: ASGI scope key holding the caller's composition.
PROVIDER_KEY: Final = "anvil.provider"
#: ASGI scope key holding the caller's principal.
PRINCIPAL_KEY: Final = "anvil.principal"
_ALGORITHMS: Final[dict[str, tuple[str, ...]]] = {
    "jwt": ("EdDSA", "RS256", "ES256"),
    "branchyard": ("EdDSA",),
    "oidc": ("RS256", "ES256"),
}
_LOOPBACK: Final = frozenset({"localhost", "127.0.0.1", "::1"})
#: The exact paths that need a caller (and every path beneath ``/mcp/`` and ``/call/``).
_GUARDED: Final = frozenset({"/mcp", "/call", "/openapi"})


@dataclass(frozen=True, slots=True, kw_only=True)
class InboundSettings:
    """How callers authenticate (see the module docstring for each mode)."""

    mode: AuthMode = "none"
    principals_file: Path | None = None
    issuer: str | None = None
    audience: str | None = None
    jwks_uri: str | None = None
    leeway_seconds: int = 60

    @property
    def resource(self) -> str | None:
        """The protected resource named in ``WWW-Authenticate`` (the audience in a token mode)."""
        return self.audience if self.mode in _ALGORITHMS else None


def _check_audience(audience: str) -> None:
    try:
        url = urlsplit(audience)
        host = url.hostname
    except ValueError:
        host, url = None, None
    if url is None or host is None or url.username is not None or url.password is not None or url.fragment:
        raise ConfigError(
            "config/invalid",
            "ANVIL_INBOUND_AUDIENCE must be the listener's own /mcp URL, without user information or fragment.",
        )
    scheme = url.scheme.lower()
    if scheme != "https" and not (scheme == "http" and host in _LOOPBACK):
        raise ConfigError(
            "config/invalid",
            "ANVIL_INBOUND_AUDIENCE must be an https: URL (http: only on localhost, 127.0.0.1 or [::1]).",
        )


def build_authenticator(settings: InboundSettings, *, client: httpx.AsyncClient | None = None) -> Authenticator:
    """The authenticator for ``settings``.

    Args:
        settings: The inbound settings.
        client: The HTTP client an ``https:`` JWKS is fetched with.

    Raises:
        ConfigError: ``config/invalid`` for a static mode without a readable principals file, or a
            token mode without issuer, audience or JWKS URI, or with an unusable one.
    """
    if settings.mode == "none":
        return NoAuth()
    if settings.mode == "static":
        if settings.principals_file is None:
            raise ConfigError(
                "config/invalid", "Inbound auth mode static needs a principals file.", hint="Set ANVIL_PRINCIPALS_FILE."
            )
        return StaticTokenAuthenticator(load_principals(settings.principals_file))
    missing = [
        name
        for name, value in (
            ("ANVIL_INBOUND_ISSUER", settings.issuer),
            ("ANVIL_INBOUND_AUDIENCE", settings.audience),
            ("ANVIL_INBOUND_JWKS_URI", settings.jwks_uri),
        )
        if not value
    ]
    if missing:
        raise ConfigError(
            "config/invalid", f"Inbound auth mode {settings.mode} needs {', '.join(missing)}.", hint="Set them all."
        )
    assert settings.issuer and settings.audience and settings.jwks_uri
    _check_audience(settings.audience)
    return JwtVerifier(
        settings.issuer,
        settings.audience,
        settings.jwks_uri,
        leeway_seconds=settings.leeway_seconds,
        algorithms=_ALGORITHMS[settings.mode],
        client=client,
    )


def is_guarded(path: str) -> bool:
    """True for the paths that need a caller: ``/mcp``, ``/call/*`` and ``/openapi``."""
    return path in _GUARDED or path.startswith(("/mcp/", "/call/"))


def provider_of(request: Request | Any) -> ToolProvider | None:
    """The caller's composition the middleware stored for ``request`` (None outside a guarded route)."""
    if request is None:
        return None
    found: ToolProvider | None = request.scope.get(PROVIDER_KEY)
    return found


def _authorization(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            text: str = value.decode("latin-1")
            return text
    return None


class AuthMiddleware:
    """Authenticates guarded requests and attaches the caller's composition (see the module docstring).

    Args:
        app: The wrapped ASGI app.
        authenticator: Who the caller is.
        compose: The composition for a principal (``Fleet.compose``; cached there).
        resource: The protected resource for ``WWW-Authenticate`` (the token audience), or None.
        metrics: Guard ``/metrics`` too (a scraper sends the same bearer as an ``/mcp`` caller).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticator: Authenticator,
        compose: Callable[[Principal], ToolProvider],
        resource: str | None = None,
        metrics: bool = False,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.authenticator = authenticator
        self.compose = compose
        self.resource = resource
        self._anonymous = compose(ANONYMOUS) if isinstance(authenticator, NoAuth) else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass unguarded requests through; refuse or admit a guarded one."""
        if scope["type"] != "http" or not (is_guarded(scope["path"]) or (self.metrics and scope["path"] == "/metrics")):
            await self.app(scope, receive, send)
            return
        if self._anonymous is not None:
            scope[PRINCIPAL_KEY] = ANONYMOUS
            scope[PROVIDER_KEY] = self._anonymous
            await self.app(scope, receive, send)
            return
        try:
            principal = await self.authenticator.authenticate(_authorization(scope))
        except AuthFailure as failure:
            challenge = {"www-authenticate": www_authenticate(failure, self.resource)}
            await listener_error(failure.status, failure.code, failure.description, challenge)(scope, receive, send)
            return
        if principal.purpose == "connect":
            message = "A connect token cannot call tools; send a turn token."
            refused = AuthFailure("turn_token_required", message, status=403)
            challenge = {"www-authenticate": www_authenticate(refused, self.resource)}
            await listener_error(403, "turn_token_required", message, challenge)(scope, receive, send)
            return
        scope[PRINCIPAL_KEY] = principal
        scope[PROVIDER_KEY] = self.compose(principal)
        await self.app(scope, receive, send)
