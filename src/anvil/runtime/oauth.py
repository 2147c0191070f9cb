"""OAuth2 client credentials (RFC 6749 section 4.4): a client id and secret exchanged for a bearer token.

An operation whose auth is ``oauth2_client_credentials`` reads, under its credential profile ``<P>``
(:func:`anvil.runtime.credentials.env_prefix`), ``<P>_CLIENT_ID`` and ``<P>_CLIENT_SECRET``, and takes its
token endpoint from ``<P>_TOKEN_ENDPOINT`` or, failing that, the endpoint the spec declared (AIR
``auth.provider.token_endpoint``), optionally ``<P>_AUDIENCE`` (else the AIR audience) and ``<P>_SCOPES``
(space or comma list; else the scopes of the operation's requirement). Without a client id and secret a
token minted out of band in ``<P>_TOKEN`` still serves.

Where the secret may go (checked before anything is sent, and by ``anvil serve`` at start-up):

* the declared endpoint only when its host is exactly one of ``ANVIL_CREDENTIAL_HOSTS`` (comma list);
  otherwise the operation is not configured (``auth_required`` naming the variables, as the original);
* ``<P>_TOKEN_ENDPOINT`` when its host is one of ``ANVIL_CREDENTIAL_HOSTS`` or allowed by the bundle's
  upstream allowlist (``ANVIL_ALLOWED_HOSTS`` rules: the host or a subdomain; anything only in dev);
* ``https`` only, except in ``ANVIL_ENV=dev`` (a loopback mock), never with user info in the URL.
  A refused endpoint is ``auth_required`` with ``details.code`` ``oauth/token_endpoint_refused``.

The exchange is one ``POST`` (``grant_type=client_credentials``, ``scope``, ``audience``, ``resource``;
the client authenticated with ``client_secret_basic`` by default or ``client_secret_post`` when the AIR
says so) through the runtime's own upstream client: no redirect followed, the whole exchange under one
deadline (:data:`TOKEN_TIMEOUT_MS`, never longer than the upstream timeout) and an answer of at most
:data:`TOKEN_MAX_BYTES`. Failures are ``auth_required`` with a detail code (:class:`TokenFailure`) and
nothing is sent upstream. Tokens are cached per endpoint, client, scope set, audience and resource until
their ``expires_in`` less a skew (:func:`refresh_after`); concurrent calls that need the same token share
one request (single flight), and a 401 from the upstream replaces the token it refused once, however many
calls saw it. No secret or token is ever put in a message, a detail, a log line or a ``repr``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import quote_plus, urlencode, urlsplit

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.hosts import host_matches
from anvil.air.model import Auth
from anvil.runtime.credentials import (
    CREDENTIAL_HOSTS_VARIABLE,
    Credential,
    MissingCredential,
    carried,
    client_credentials_env,
    credential_hosts,
    env_prefix,
    resolve_credential,
)
from anvil.runtime.token_cache import CachedToken, TokenCache, TokenFailure

if TYPE_CHECKING:
    import httpx

    from anvil.runtime.request import WireRequest
    from anvil.runtime.upstream import UpstreamClient

__all__ = [
    "DEFAULT_LIFETIME_S",
    "EXPIRY_SKEW_S",
    "TOKEN_MAX_BYTES",
    "TOKEN_TIMEOUT_MS",
    "ClientCredentials",
    "OutboundSettings",
    "TokenCache",
    "TokenFailure",
    "client_credentials",
    "exchange_token",
    "outbound_credential",
    "refresh_after",
    "token_endpoint_problem",
]

#: The largest token answer read (a token answer is a few hundred bytes).
TOKEN_MAX_BYTES: Final = 64 * 1024
#: The deadline of one exchange, connect to last byte (never longer than the upstream timeout).
TOKEN_TIMEOUT_MS: Final = 10_000
#: A token is replaced this long before it expires (at most half its lifetime).
EXPIRY_SKEW_S: Final = 30.0
#: How long a token whose answer gives no ``expires_in`` is used (a 401 replaces it sooner).
DEFAULT_LIFETIME_S: Final = 300.0
#: The longest a token is kept, whatever ``expires_in`` says.
MAX_LIFETIME_S: Final = 86_400.0
_CLIENT_AUTH: Final = frozenset({"client_secret_basic", "client_secret_post"})
#: RFC 6749 section 5.2 error codes: shown in the details (they carry no secret); anything else is not.
_TOKEN_ERRORS: Final = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
    }
)
#: A token fit for a header: visible ASCII, no space (RFC 6750 b64token is narrower still).
_TOKEN_TEXT: Final = re.compile(r"[\x21-\x7e]{1,8192}\Z")
_LIST: Final = re.compile(r"[\s,]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientCredentials:
    """One configured client-credentials grant (the secret never shows in ``repr``)."""

    client_id: str
    client_secret: str = field(repr=False)
    token_endpoint: str
    scopes: tuple[str, ...] = ()
    audience: str | None = None
    resource: str | None = None
    client_auth: str = "client_secret_basic"

    def cache_key(self) -> tuple[str, ...]:
        """What one cached token stands for (the secret only as a digest, so a rotated one misses)."""
        digest = hashlib.sha256(self.client_secret.encode()).hexdigest()
        audience, resource = self.audience or "", self.resource or ""
        return (
            self.token_endpoint,
            self.client_id,
            digest,
            self.client_auth,
            " ".join(self.scopes),
            audience,
            resource,
        )


def _host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _listed(host: str, entries: tuple[str, ...], env: str) -> bool:
    """The upstream allowlist rule: equal to an entry or a subdomain of one; an empty list only in dev."""
    if not entries:
        return env == "dev"
    return any(host_matches(host, entry) for entry in entries)


def token_endpoint_problem(
    url: str, *, operator: bool, env: str, allowed_hosts: tuple[str, ...], credential_hosts: tuple[str, ...]
) -> str | None:
    """Why a client secret may not be sent to ``url`` (None when it may): see the module docstring.

    ``operator`` says the URL came from ``<P>_TOKEN_ENDPOINT`` (the upstream allowlist admits it too).
    """
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        _ = parts.port  # reading the port checks its range
    except ValueError:
        return "it is not a URL"
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not host or parts.username is not None or parts.fragment:
        return "it is not an http(s)://HOST[:PORT]/PATH URL without user info"
    if scheme == "http" and env != "dev":
        return "it is not https (plain http is allowed only with ANVIL_ENV=dev)"
    if host in credential_hosts:
        return None
    if operator and _listed(host, allowed_hosts, env):
        return None
    where = f"{CREDENTIAL_HOSTS_VARIABLE} or the bundle's allowed hosts" if operator else CREDENTIAL_HOSTS_VARIABLE
    return f"its host {host} is not in {where}"


def _required(profile: str) -> MissingCredential:
    client_id, secret, endpoint, _, _ = client_credentials_env(profile)
    return MissingCredential(expected_env=(client_id, secret, f"one of: {CREDENTIAL_HOSTS_VARIABLE} OR {endpoint}"))


def client_credentials(
    auth: Auth, profile: str, values: Mapping[str, str], *, env: str, allowed_hosts: tuple[str, ...]
) -> ClientCredentials | MissingCredential | None:
    """The grant ``auth`` is configured for under ``profile`` in ``values``.

    Returns None when neither a client id nor a secret is set (a static ``<P>_TOKEN`` may serve), a
    :class:`MissingCredential` naming what the grant needs when it is incomplete, else the grant.

    Raises:
        TokenFailure: ``oauth/token_endpoint_refused`` when the endpoint may not receive the secret, or
            ``oauth/client_auth_unsupported`` for a client authentication other than a client secret.
    """
    id_name, secret_name, endpoint_name, audience_name, scopes_name = client_credentials_env(profile)
    client_id, secret = values.get(id_name) or "", values.get(secret_name) or ""
    if not client_id and not secret:
        return None
    operator_url = values.get(endpoint_name) or ""
    declared = auth.provider.token_endpoint if auth.provider is not None else None
    consented = credential_hosts(values)
    url = operator_url or declared or ""
    if not client_id or not secret or not url:
        return _required(profile)
    operator = bool(operator_url)
    problem = token_endpoint_problem(
        url, operator=operator, env=env, allowed_hosts=allowed_hosts, credential_hosts=consented
    )
    if problem is not None and not operator and _host_of(url) not in consented:
        return _required(profile)  # the declared endpoint was never admitted: a missing setting, not a refusal
    if problem is not None:
        variable = endpoint_name if operator else CREDENTIAL_HOSTS_VARIABLE
        source = endpoint_name if operator else f"the spec (admitted by {CREDENTIAL_HOSTS_VARIABLE})"
        message = f"The token endpoint from {source} is refused: {problem}."
        raise TokenFailure("oauth/token_endpoint_refused", message, variable=variable)
    client_auth = (auth.provider.client_auth if auth.provider is not None else None) or "client_secret_basic"
    if client_auth not in _CLIENT_AUTH:
        raise TokenFailure(
            "oauth/client_auth_unsupported",
            f"Client authentication {client_auth} is not supported; use client_secret_basic or client_secret_post.",
        )
    scopes = values.get(scopes_name)
    return ClientCredentials(
        client_id=client_id,
        client_secret=secret,
        token_endpoint=url,
        scopes=tuple(sorted(set(_LIST.split(scopes.strip())) - {""})) if scopes else tuple(sorted(set(auth.scopes))),
        audience=values.get(audience_name) or auth.audience,
        resource=auth.provider.resource if auth.provider is not None else None,
        client_auth=client_auth,
    )


def refresh_after(lifetime_s: float) -> float:
    """Seconds after issue at which a token of ``lifetime_s`` is replaced: its lifetime less the skew
    (:data:`EXPIRY_SKEW_S`, at most half the lifetime, so a short-lived token is still used)."""
    return lifetime_s - min(EXPIRY_SKEW_S, lifetime_s / 2)


def _request(grant: ClientCredentials) -> WireRequest:
    form = [("grant_type", "client_credentials")]
    if grant.scopes:
        form.append(("scope", " ".join(grant.scopes)))
    if grant.audience:
        form.append(("audience", grant.audience))
    if grant.resource:
        form.append(("resource", grant.resource))
    headers = [("Accept", "application/json"), ("Content-Type", "application/x-www-form-urlencoded")]
    if grant.client_auth == "client_secret_post":
        form += [("client_id", grant.client_id), ("client_secret", grant.client_secret)]
    else:  # RFC 6749 section 2.3.1: each part form-encoded, then HTTP Basic
        pair = f"{quote_plus(grant.client_id)}:{quote_plus(grant.client_secret)}"
        headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode("ascii")))
    content = urlencode(form).encode("ascii")
    parts = urlsplit(grant.token_endpoint)
    from anvil.runtime.request import WireRequest  # the exchange loads the request path, not a start-up check

    return WireRequest(
        method="POST",
        url=grant.token_endpoint,
        path=parts.path or "/",
        query=(),
        headers=tuple(headers),
        has_body=True,
        content=content,
    )


def _lifetime(value: JSONValue) -> float:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return DEFAULT_LIFETIME_S  # NaN would never compare as expired
    return min(max(float(value), 0.0), MAX_LIFETIME_S)


async def exchange_token(
    grant: ClientCredentials, client: httpx.AsyncClient | UpstreamClient, timeout_ms: int, clock: Callable[[], float]
) -> CachedToken:
    """One token request under one deadline; every failure is a :class:`TokenFailure`."""
    bound = min(timeout_ms, TOKEN_TIMEOUT_MS)
    from anvil.runtime.upstream import send_once

    answer = await send_once(client, _request(grant), timeout_ms=bound, max_bytes=TOKEN_MAX_BYTES)
    if answer.status is None:
        if answer.condition == "timeout":
            message = f"The token endpoint did not answer within {bound} ms."
        else:
            message = "The token endpoint could not be reached."
        raise TokenFailure("oauth/token_endpoint_unavailable", message, timeout_ms=bound)
    if answer.oversized:
        raise TokenFailure(
            "oauth/token_answer_invalid",
            f"The token endpoint's answer is larger than {TOKEN_MAX_BYTES} bytes.",
            max_bytes=TOKEN_MAX_BYTES,
        )
    status = answer.status
    if 300 <= status <= 399 or answer.after_response:
        raise TokenFailure(
            "oauth/token_answer_invalid", "The token endpoint redirected (never followed).", status=status
        )
    if not 200 <= status <= 299:
        return _refused(status, answer.body)
    try:
        data = json.loads(answer.body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise TokenFailure("oauth/token_answer_invalid", "The token answer is not a JSON object.", status=status)
    token, kind = data.get("access_token"), data.get("token_type", "Bearer")
    if not isinstance(token, str) or not _TOKEN_TEXT.match(token):
        raise TokenFailure("oauth/token_answer_invalid", "The token answer has no usable access_token.", status=status)
    if not isinstance(kind, str) or kind.lower() != "bearer":
        raise TokenFailure("oauth/token_answer_invalid", "The token answer's token_type is not Bearer.", status=status)
    return CachedToken(token, clock() + refresh_after(_lifetime(data.get("expires_in"))))


def _refused(status: int, body: bytes) -> CachedToken:
    details: dict[str, JSONValue] = {"status": status}
    try:
        error = json.loads(body).get("error") if body else None
    except (ValueError, AttributeError):
        error = None
    if error in _TOKEN_ERRORS:
        details["token_error"] = error
    if status in (400, 401, 403):
        raise TokenFailure("oauth/token_refused", f"The token endpoint refused the client ({status}).", **details)
    raise TokenFailure("oauth/token_endpoint_unavailable", f"The token endpoint answered {status}.", **details)


class OutboundSettings(Protocol):
    """What resolving an outbound credential needs of the runtime context (read-only)."""

    @property
    def env(self) -> str: ...
    @property
    def allowed_hosts(self) -> tuple[str, ...]: ...
    @property
    def credentials(self) -> Mapping[str, str]: ...
    @property
    def client(self) -> httpx.AsyncClient | UpstreamClient: ...
    @property
    def timeout_ms(self) -> int: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def tokens(self) -> TokenCache: ...


async def outbound_credential(
    auth: Auth, profile: str, settings: OutboundSettings, *, stale: Credential | None = None
) -> Credential | MissingCredential:
    """The credential ``auth`` sends under ``profile``: exchanged for OAuth2 client credentials when a
    client is configured (``stale``: the exchanged credential the upstream just refused), else static.

    Raises:
        TokenFailure: the client is configured but no token could be had.
    """
    if auth.type != "oauth2_client_credentials":
        return resolve_credential(auth, profile, settings.credentials)
    values = settings.credentials
    grant = client_credentials(auth, profile, values, env=settings.env, allowed_hosts=settings.allowed_hosts)
    if isinstance(grant, MissingCredential):
        return grant
    if grant is None:
        static = resolve_credential(auth, profile, values)
        return static if isinstance(static, Credential) else _required(profile)
    token = await settings.tokens.token(
        grant,
        client=settings.client,
        timeout_ms=settings.timeout_ms,
        clock=settings.clock,
        exchange=exchange_token,
        stale=stale.exchanged if stale is not None else None,
    )
    found = carried(auth, token, exchanged=token)
    if found is None:  # an oauth2 type always has the Bearer carrier; kept for a hand-made AIR
        return MissingCredential(expected_env=(f"{env_prefix(profile)}_TOKEN",))
    return found
