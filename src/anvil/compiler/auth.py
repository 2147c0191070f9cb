"""Source security -> AIR auth (original-core §3.3 auth bullets, §1.11 credential profiles).

Every requirement the compiler cannot turn into one executable principal is an ``auth/*`` warning: the
operation is blocked (or, for a clean choice among alternatives, sent to review) and the message is
added to its review notes.

One requirement naming several schemes at once (AND, e.g. Plaid's ``{clientId: [], secret: [],
plaidVersion: []}``) is a ``composite`` auth when every scheme resolves cleanly, on its own, to static
material (``api_key`` in a header or the query, ``basic``, a static bearer token) and each factor has a
wire slot of its own; otherwise it stays ``auth/composite_unmodeled`` (blocked), saying which factor is
the problem.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.canonical import sha256_hex
from anvil.air.carrier import COMPOSITE_FACTOR_TYPES, factor_carrier_clash
from anvil.air.model import NO_AUTH, ApiKeyCarrier, Auth, AuthProvider
from anvil.air.naming import snake
from anvil.diagnostics import Diagnostic

__all__ = [
    "SELECTED_PREFIX",
    "AuthIssue",
    "AuthResolution",
    "credential_profile_name",
    "group_selected",
    "offered_schemes",
    "resolve_auth",
    "resolve_scheme",
    "server_base_url",
]

_PROFILE_PREFIX_MAX: Final = 31
#: Where an ``auth/alternative_selected`` message names the alternative chosen (what its warnings group by).
SELECTED_PREFIX: Final = "the first credentialed one, "
#: How a composite's refusal names a factor type it cannot carry.
_UNCARRIED: Final = {
    "oauth2_client_credentials": "oauth2 client credentials (a token exchange)",
    "oauth2_authorization_code": "an end-user OAuth2 flow",
    "mtls": "mutual TLS",
}


@dataclass(frozen=True, slots=True)
class AuthIssue:
    """One auth finding: a registered ``auth/*`` code, a sentence, and whether it blocks."""

    code: str
    message: str
    blocks: bool


@dataclass(frozen=True, slots=True)
class AuthResolution:
    """The auth an operation gets and what was wrong on the way."""

    auth: Auth
    issues: tuple[AuthIssue, ...] = ()

    @property
    def blocked(self) -> bool:
        """True when any issue blocks the operation."""
        return any(issue.blocks for issue in self.issues)


def credential_profile_name(scheme_name: str) -> str:
    """``<prefix>_<sha256(schemeName)[:32]>``; prefix = snake(name) (``scheme_`` if it does not start with
    a letter), cut to 31 characters, trailing ``_`` trimmed. ``oauth2`` -> ``oauth2_d8ad572d...``."""
    prefix = snake(scheme_name)
    if not prefix[:1].isalpha():
        prefix = "scheme_" + prefix if prefix else "scheme"
    prefix = prefix[:_PROFILE_PREFIX_MAX].rstrip("_")
    return f"{prefix}_{sha256_hex(scheme_name)[:32]}"


def _scopes(value: JSONValue) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(item for item in value if isinstance(item, str)))


def _issue(code: str, message: str, *, blocks: bool = True) -> AuthIssue:
    return AuthIssue(code, message, blocks)


def _placeholder(scheme_name: str, scopes: tuple[str, ...]) -> Auth:
    """The auth recorded for a requirement the runtime cannot execute (the op is blocked anyway)."""
    return Auth(type="custom_header", scopes=scopes, credential_profile=credential_profile_name(scheme_name))


def _absolute(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def server_base_url(servers: JSONValue) -> str | None:
    """The first server URL with its variables at their defaults, when that makes it absolute; else None."""
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return None
    server = servers[0]
    url = server.get("url")
    if not isinstance(url, str):
        return None
    variables = server.get("variables") if isinstance(server.get("variables"), dict) else {}

    def default(match: re.Match[str]) -> str:
        spec = variables.get(match.group(1)) if isinstance(variables, dict) else None
        value = spec.get("default") if isinstance(spec, dict) else None
        return value if isinstance(value, str) else match.group(0)

    resolved = re.sub(r"\{([^{}]*)\}", default, url)
    return resolved if _absolute(resolved) and "{" not in resolved else None


def _token_endpoint(name: str, token_url: JSONValue, base_url: str | None) -> tuple[str | None, AuthIssue | None]:
    """An absolute token endpoint: as given, or a relative one resolved against the server (OpenAPI 3).

    A relative URL with no absolute server to resolve it against is diagnosed, not kept: the runtime
    would send client credentials to whatever host it happened to resolve it against.
    """
    if not isinstance(token_url, str) or not token_url.strip():
        return None, None
    if _absolute(token_url):
        return token_url, None
    if base_url is not None:
        joined = urljoin(base_url, token_url)
        if _absolute(joined):
            return joined, None
    issue = _issue(
        "auth/token_url_unresolved",
        f"OAuth2 scheme {name!r} has a relative tokenUrl and no absolute server URL to resolve it against",
        blocks=False,
    )
    return None, issue


def _scheme_auth(name: str, scheme: JSONValue, scopes: tuple[str, ...], base_url: str | None = None) -> AuthResolution:
    """Resolve one named scheme of one requirement."""
    profile = credential_profile_name(name)
    if not isinstance(scheme, dict):
        return AuthResolution(
            _placeholder(name, scopes),
            (_issue("auth/scheme_missing", f"security scheme {name!r} is not declared"),),
        )
    kind = scheme.get("type")
    if kind == "http":
        http = str(scheme.get("scheme") or "").lower()
        if http == "basic":
            return AuthResolution(Auth(type="basic", scopes=scopes, credential_profile=profile))
        if http == "bearer":
            return AuthResolution(Auth(type="jwt_bearer", scopes=scopes, credential_profile=profile))
        return AuthResolution(
            _placeholder(name, scopes),
            (
                _issue(
                    "auth/http_scheme_unsupported", f"HTTP auth scheme {http or '(none)'!r} of {name!r} is unsupported"
                ),
            ),
        )
    if kind == "apiKey":
        where, key = scheme.get("in"), scheme.get("name")
        if where in ("header", "query") and isinstance(key, str) and key.strip():
            provider = AuthProvider(api_key=ApiKeyCarrier(in_=str(where), name=key))
            return AuthResolution(Auth(type="api_key", scopes=scopes, credential_profile=profile, provider=provider))
        return AuthResolution(
            _placeholder(name, scopes),
            (_issue("auth/api_key_carrier_missing", f"apiKey scheme {name!r} has no header or query carrier"),),
        )
    if kind == "oauth2":
        return _oauth2(name, scheme, scopes, profile, base_url)
    if kind == "openIdConnect":
        auth = Auth(type="oauth2_authorization_code", scopes=scopes, credential_profile=profile, principal="end_user")
        issue = _issue("auth/end_user_flow_unexecutable", f"OpenID Connect scheme {name!r} needs an end-user flow")
        return AuthResolution(auth, (issue,))
    if kind == "mutualTLS":
        return AuthResolution(Auth(type="mtls", scopes=scopes, credential_profile=profile))
    return AuthResolution(
        _placeholder(name, scopes),
        (_issue("auth/scheme_unsupported", f"security scheme {name!r} has unsupported type {kind!r}"),),
    )


def _oauth2(
    name: str, scheme: JSONObject, scopes: tuple[str, ...], profile: str, base_url: str | None
) -> AuthResolution:
    flows = scheme.get("flows")
    flow_names = [key for key in flows if isinstance(flows[key], dict)] if isinstance(flows, dict) else []
    if len(flow_names) != 1:
        issue = _issue("auth/oauth_flow_ambiguous", f"OAuth2 scheme {name!r} declares {len(flow_names)} flows, not one")
        return AuthResolution(_placeholder(name, scopes), (issue,))
    flow_name = flow_names[0]
    flow: dict[str, Any] = flows[flow_name]  # type: ignore[index]
    if flow_name in ("clientCredentials", "application"):
        endpoint, problem = _token_endpoint(name, flow.get("tokenUrl"), base_url)
        provider = AuthProvider(token_endpoint=endpoint, grant="client_credentials")
        auth = Auth(type="oauth2_client_credentials", scopes=scopes, credential_profile=profile, provider=provider)
        return AuthResolution(auth, (problem,) if problem else ())
    if flow_name in ("authorizationCode", "accessCode", "implicit"):
        auth = Auth(type="oauth2_authorization_code", scopes=scopes, credential_profile=profile, principal="end_user")
        issue = _issue("auth/end_user_flow_unexecutable", f"OAuth2 scheme {name!r} uses the end-user {flow_name} flow")
        return AuthResolution(auth, (issue,))
    issue = _issue("auth/oauth_flow_unsupported", f"OAuth2 scheme {name!r} uses the unsupported {flow_name} flow")
    return AuthResolution(_placeholder(name, scopes), (issue,))


def resolve_auth(requirements: JSONValue, schemes: JSONValue, base_url: str | None = None) -> AuthResolution:
    """Resolve an operation's effective security requirements (op ``security`` else the document's).

    Every entry of the list is one alternative (OR); an empty entry ``{}`` is the anonymous
    alternative, so ``[{basicAuth: []}, {}]`` is two alternatives, not one requirement.

    Args:
        requirements: the ``security`` list (absent/None/empty means no auth).
        schemes: ``components.securitySchemes``.
        base_url: the absolute server URL a relative OAuth2 ``tokenUrl`` resolves against.

    Returns:
        The auth and its issues (messages without the ``<METHOD> <path>:`` prefix the caller adds).
    """
    if not isinstance(requirements, list):
        return AuthResolution(NO_AUTH)
    table = schemes if isinstance(schemes, dict) else {}
    alternatives = [req for req in requirements if isinstance(req, dict)]
    credentialed = [req for req in alternatives if req]
    if not credentialed:
        return AuthResolution(NO_AUTH)
    if len(alternatives) == 1:
        return _requirement(credentialed[0], table, base_url)
    resolved = [_requirement(req, table, base_url) for req in credentialed]
    clean = all(not item.issues for item in resolved)
    if clean and len({item.auth.principal for item in resolved}) == 1:
        chosen = next(iter(credentialed[0])) if len(credentialed[0]) == 1 else None
        which = f"scheme {str(chosen)!r} ({resolved[0].auth.type})" if chosen is not None else resolved[0].auth.type
        issue = _issue(
            "auth/alternative_selected",
            f"{len(alternatives)} auth alternatives; {SELECTED_PREFIX}{which}, was selected",
            blocks=False,
        )
        return AuthResolution(resolved[0].auth, (issue,))
    first = next(iter(credentialed[0]))
    issue = _issue(
        "auth/alternatives_unmodeled",
        f"{len(alternatives)} auth alternatives do not resolve to one executable principal",
    )
    return AuthResolution(_placeholder(str(first), resolved[0].auth.scopes), (issue,))


def group_selected(found: Sequence[Diagnostic], limit: int = 5) -> list[Diagnostic]:
    """``found`` with its ``auth/alternative_selected`` warnings said once per selected scheme: one
    warning naming how many operations it was selected for and the first few of them (each operation's
    own review note keeps the detail). The first warning of a scheme keeps its place; the rest go."""
    groups: dict[str, list[Diagnostic]] = {}
    for item in found:
        if item.code == "auth/alternative_selected" and SELECTED_PREFIX in item.message:
            groups.setdefault(item.message.split(SELECTED_PREFIX, 1)[1], []).append(item)
    out: list[Diagnostic] = []
    for item in found:
        if item.code != "auth/alternative_selected" or SELECTED_PREFIX not in item.message:
            out.append(item)
            continue
        group = groups.get(item.message.split(SELECTED_PREFIX, 1)[1])
        if not group or group[0] is not item:
            continue
        if len(group) == 1:
            out.append(item)
            continue
        ids = [str(each.operation) for each in group if each.operation]
        shown = ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
        which = item.message.split(SELECTED_PREFIX, 1)[1].removesuffix(", was selected")
        out.append(
            replace(
                item,
                message=f"{len(group)} operations offer several auth alternatives; {SELECTED_PREFIX}{which}, "
                f"was selected for each ({shown}).",
                operation=None,
            )
        )
    return out


def offered_schemes(requirements: JSONValue) -> dict[str, tuple[str, ...]]:
    """The schemes ``requirements`` offers on their own (one-scheme alternatives), with their scopes.

    A scheme that appears only inside a requirement naming several schemes at once is not offered:
    choosing it would drop the other factors.
    """
    if not isinstance(requirements, list):
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for requirement in requirements:
        if isinstance(requirement, dict) and len(requirement) == 1:
            name = next(iter(requirement))
            out.setdefault(str(name), _scopes(requirement[name]))
    return out


def resolve_scheme(
    name: str, schemes: JSONValue, scopes: tuple[str, ...] = (), base_url: str | None = None
) -> AuthResolution:
    """Resolve one named scheme of ``components.securitySchemes`` as if it were the only requirement."""
    table = schemes if isinstance(schemes, dict) else {}
    return _scheme_auth(name, table.get(name), scopes, base_url)


def _factor_problem(name: str, resolved: AuthResolution) -> str | None:
    """Why scheme ``name`` cannot be one factor of a composite, or None."""
    if resolved.issues:
        return f"factor {name!r}: {resolved.issues[0].message}"
    kind = resolved.auth.type
    if kind not in COMPOSITE_FACTOR_TYPES:
        why = _UNCARRIED.get(kind, f"{kind} auth")
        return f"factor {name!r} is {why}, which a composite cannot carry"
    return None


def _composite(requirement: JSONObject, schemes: JSONObject, base_url: str | None) -> AuthResolution:
    """One requirement naming several schemes at once (AND): a ``composite`` auth whose factors are each
    scheme resolved as if alone, when every factor is static material with a wire slot of its own; else
    the blocked placeholder with ``auth/composite_unmodeled`` saying which factor is the problem."""
    names = [str(name) for name in requirement]
    scopes = tuple(dict.fromkeys(s for name in names for s in _scopes(requirement[name])))
    factors = [_scheme_auth(name, schemes.get(name), _scopes(requirement[name]), base_url) for name in names]
    problem = next((p for p in map(_factor_problem, names, factors) if p is not None), None)
    if problem is None:
        clash = factor_carrier_clash(tuple(item.auth for item in factors))
        if clash is not None:
            first, second, carrier = clash
            problem = f"factors {names[first]!r} and {names[second]!r} both travel in {carrier.in_} {carrier.name}"
    if problem is not None:
        issue = _issue(
            "auth/composite_unmodeled",
            f"one requirement needs {len(names)} schemes at once ({', '.join(names)}); {problem}",
        )
        return AuthResolution(_placeholder("+".join(names), scopes), (issue,))
    auth = Auth(
        type="composite",
        scopes=scopes,
        credential_profile=credential_profile_name("+".join(names)),
        factors=tuple(item.auth for item in factors),
    )
    return AuthResolution(auth)


def _requirement(requirement: JSONObject, schemes: JSONObject, base_url: str | None) -> AuthResolution:
    names = list(requirement)
    if len(names) > 1:
        return _composite(requirement, schemes, base_url)
    name = names[0]
    return _scheme_auth(name, schemes.get(name), _scopes(requirement[name]), base_url)
