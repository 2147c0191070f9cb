"""Credentials from named environment variables (original-core §6.7).

The bundle names variables, never values. A profile (``<deployment profile>_<credentialProfile>`` or
just the deployment profile) becomes the prefix ``ANVIL_<PROFILE>`` with non-alphanumeric runs turned
into ``_``; api_key reads ``<P>_API_KEY``, basic ``<P>_USERNAME`` + ``<P>_PASSWORD``, and bearer types
``<P>_TOKEN``. A ``composite`` auth (several schemes at once) reads every factor's own variables, the ones
the factor would read alone under the deployment profile (:func:`deployment_profile`), and sends them all.
OAuth2 client credentials are exchanged for a token (:mod:`anvil.runtime.oauth`) from
``<P>_CLIENT_ID``, ``<P>_CLIENT_SECRET`` and the token endpoint (``<P>_TOKEN_ENDPOINT``, or the imported one
admitted by ``ANVIL_CREDENTIAL_HOSTS``), optionally ``<P>_AUDIENCE`` and ``<P>_SCOPES``; without a client
id and secret such an operation still takes a token minted out of band in ``<P>_TOKEN``. Values come from a
mapping the CLI fills from the process environment; nothing here reads the environment, and errors name
variables only.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from anvil.air.carrier import effective_auth_carrier
from anvil.air.hosts import is_host, normalize_host
from anvil.air.model import Auth, credential_parts

__all__ = [
    "CREDENTIAL_HOSTS_VARIABLE",
    "Credential",
    "MissingCredential",
    "carried",
    "client_credentials_env",
    "credential_env",
    "credential_hosts",
    "credential_profile",
    "deployment_profile",
    "env_prefix",
    "expected_env",
    "resolve_credential",
]

#: The hosts (exact names, comma list) the operator consents to receive credentials: an imported token
#: endpoint (a client's secret) and an operation's own server on another host (the service's credential).
CREDENTIAL_HOSTS_VARIABLE: Final = "ANVIL_CREDENTIAL_HOSTS"

_BEARER: Final = frozenset({"oauth2_client_credentials", "oauth2_on_behalf_of", "jwt_bearer", "workload_identity"})
_NON_ALNUM: Final = re.compile(r"[^A-Za-z0-9]+")


def credential_hosts(values: Mapping[str, str]) -> tuple[str, ...]:
    """``ANVIL_CREDENTIAL_HOSTS`` of ``values``: exact host names; an entry that is no host matches nothing
    (``anvil serve`` refuses one at start-up)."""
    entries = (normalize_host(entry) for entry in (values.get(CREDENTIAL_HOSTS_VARIABLE) or "").split(","))
    return tuple(host for host in entries if is_host(host))


@dataclass(frozen=True, slots=True, kw_only=True)
class Credential:
    """Resolved credential material: headers and query parameters to merge into the request.

    ``exchanged`` is the access token an OAuth2 exchange issued (None for static material): a 401 answer
    to it may be retried once with a new one. No field shows in ``repr``.
    """

    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    query: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    exchanged: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingCredential:
    """The variables that would have to be set (names only)."""

    expected_env: tuple[str, ...]


def credential_profile(auth_profile: str, auth: Auth) -> str:
    """The credential profile: ``<auth_profile>_<credentialProfile>``, or ``auth_profile`` alone.

    A composite's is its own (``..._<composite profile>``: what keys its ledger scope); its factors' variables
    are read under :func:`deployment_profile` of it.
    """
    return f"{auth_profile}_{auth.credential_profile}" if auth.credential_profile else auth_profile


def deployment_profile(auth: Auth, profile: str) -> str:
    """The deployment profile ``profile`` was made from by :func:`credential_profile` with ``auth``: the
    ``_<credentialProfile>`` suffix removed (``profile`` itself when ``auth`` has no profile).

    This is how a composite's factor reads the variables it would read alone: under
    ``credential_profile(deployment_profile(composite, profile), factor)``, e.g.
    ``ANVIL_DEFAULT_CLIENT_ID_<32 hex>_API_KEY`` for Plaid's ``clientId`` under the ``default`` profile.
    """
    suffix = f"_{auth.credential_profile}" if auth.credential_profile else ""
    return profile[: -len(suffix)] if suffix and profile.endswith(suffix) else profile


def _factors(auth: Auth, profile: str) -> tuple[tuple[Auth, str], ...]:
    """Each credential part of ``auth`` with the profile its variables are read under."""
    if auth.type != "composite":
        return ((auth, profile),)
    base = deployment_profile(auth, profile)
    return tuple((part, credential_profile(base, part)) for part in credential_parts(auth))


def env_prefix(profile: str) -> str:
    """``ANVIL_`` + the profile upper-cased with every non-alphanumeric run turned into ``_``."""
    return "ANVIL_" + _NON_ALNUM.sub("_", profile).upper()


def _own_env(auth: Auth, profile: str) -> tuple[str, ...]:
    prefix = env_prefix(profile)
    if auth.type == "api_key":
        return (f"{prefix}_API_KEY",)
    if auth.type == "basic":
        return (f"{prefix}_USERNAME", f"{prefix}_PASSWORD")
    if auth.type in _BEARER:
        return (f"{prefix}_TOKEN",)
    return ()


def expected_env(auth: Auth, profile: str) -> tuple[str, ...]:
    """The variable names ``auth`` reads under ``profile`` (empty when the runtime cannot execute it);
    a composite's are its factors', in factor order."""
    if auth.type == "composite":
        return tuple(name for part, own in _factors(auth, profile) for name in expected_env(part, own))
    return _own_env(auth, profile)


def client_credentials_env(profile: str) -> tuple[str, str, str, str, str]:
    """The client-credentials variables under ``profile``: client id, secret, token endpoint, audience, scopes."""
    prefix = env_prefix(profile)
    return (
        f"{prefix}_CLIENT_ID",
        f"{prefix}_CLIENT_SECRET",
        f"{prefix}_TOKEN_ENDPOINT",
        f"{prefix}_AUDIENCE",
        f"{prefix}_SCOPES",
    )


def credential_env(auth: Auth, profile: str) -> tuple[str, ...]:
    """Every per-profile variable ``auth`` may read: :func:`expected_env`, and for OAuth2 client credentials
    :func:`client_credentials_env` too (what a fleet namespaces per bundle); a composite's are its factors'."""
    if auth.type == "composite":
        return tuple(name for part, own in _factors(auth, profile) for name in credential_env(part, own))
    names = expected_env(auth, profile)
    if auth.type == "oauth2_client_credentials":
        return names + client_credentials_env(profile)
    return names


def carried(auth: Auth, value: str, *, exchanged: str | None = None) -> Credential | None:
    """``value`` placed in the effective carrier of ``auth`` (with its scheme), or None when it has none
    (a composite has none of its own: each factor is carried on its own)."""
    carrier = effective_auth_carrier(auth)
    if carrier is None:
        return None
    shown = f"{carrier.scheme} {value}" if carrier.scheme else value
    if carrier.in_ == "query":
        return Credential(query=((carrier.name, shown),), exchanged=exchanged)
    return Credential(headers=((carrier.name, shown),), exchanged=exchanged)


def _static(auth: Auth, profile: str, env: Mapping[str, str]) -> Credential | MissingCredential:
    names = expected_env(auth, profile)
    values = [env.get(name) or "" for name in names]
    if not names or not all(values):
        return MissingCredential(expected_env=names)
    if auth.type == "basic":
        value = base64.b64encode(f"{values[0]}:{values[1]}".encode()).decode("ascii")
    else:
        value = values[0]
    found = carried(auth, value)
    return MissingCredential(expected_env=names) if found is None else found


def resolve_credential(auth: Auth, profile: str, env: Mapping[str, str]) -> Credential | MissingCredential:
    """Resolve ``auth`` under ``profile`` from ``env`` (a mapping of variable names to values).

    Types the runtime cannot execute (mtls, custom_header, authorization_code) are always missing. A
    composite resolves every factor and merges their headers and query pairs; when any factor is missing
    the answer names the variables of every missing factor (a composite without factors names none).
    """
    if auth.type != "composite":
        return _static(auth, profile, env)
    found = [_static(part, own, env) for part, own in _factors(auth, profile)]
    resolved = [item for item in found if isinstance(item, Credential)]
    if not found or len(resolved) != len(found):
        missing = (name for item in found if isinstance(item, MissingCredential) for name in item.expected_env)
        return MissingCredential(expected_env=tuple(missing))
    headers = tuple(pair for item in resolved for pair in item.headers)
    query = tuple(pair for item in resolved for pair in item.query)
    return Credential(headers=headers, query=query)
