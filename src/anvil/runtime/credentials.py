"""Credentials from named environment variables (original-core §6.7).

The bundle names variables, never values. A profile (``<deployment profile>_<credentialProfile>`` or
just the deployment profile) becomes the prefix ``ANVIL_<PROFILE>`` with non-alphanumeric runs turned
into ``_``; api_key reads ``<P>_API_KEY``, basic ``<P>_USERNAME`` + ``<P>_PASSWORD``, and bearer types
``<P>_TOKEN``. A ``composite`` auth (several schemes at once) reads every factor's own variables, the ones
the factor would read alone under the deployment profile (:func:`deployment_profile`), and sends them all.
OAuth2 client credentials are exchanged for a token (:mod:`anvil.runtime.oauth`) from
``<P>_CLIENT_ID``, ``<P>_CLIENT_SECRET`` and the token endpoint (``<P>_TOKEN_ENDPOINT``, or the imported one
admitted by ``ANVIL_CREDENTIAL_HOSTS``), optionally ``<P>_AUDIENCE`` and ``<P>_SCOPES``; without a client
id and secret such an operation still takes a token minted out of band in ``<P>_TOKEN``. The names come from
:mod:`anvil.air.credential_names`, as ``deploy/credentials.required.yaml``'s do. Values come from a
mapping the CLI fills from the process environment; nothing here reads the environment, and errors name
variables only.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import field
from typing import Final

from anvil._dataclass import dataclass
from anvil.air.carrier import effective_auth_carrier
from anvil.air.credential_names import (
    AUTH_PROFILE_VARIABLE,
    client_credentials_env,
    credential_env,
    credential_profile,
    deployment_profile,
    env_prefix,
    expected_env,
    factor_profiles,
)
from anvil.air.hosts import is_host, normalize_host
from anvil.air.model import Auth

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
    "not_configured",
    "resolve_credential",
]

#: The hosts (exact names, comma list) the operator consents to receive credentials: an imported token
#: endpoint (a client's secret) and an operation's own server on another host (the service's credential).
CREDENTIAL_HOSTS_VARIABLE: Final = "ANVIL_CREDENTIAL_HOSTS"


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
    found = [_static(part, own, env) for part, own in factor_profiles(auth, profile)]
    resolved = [item for item in found if isinstance(item, Credential)]
    if not found or len(resolved) != len(found):
        missing = (name for item in found if isinstance(item, MissingCredential) for name in item.expected_env)
        return MissingCredential(expected_env=tuple(missing))
    headers = tuple(pair for item in resolved for pair in item.headers)
    query = tuple(pair for item in resolved for pair in item.query)
    return Credential(headers=headers, query=query)


def not_configured(op_id: str, expected: tuple[str, ...], profile: str) -> str:
    """The ``auth_required`` message of an operation whose credential is not set: the variables to set
    and the auth profile they were read under (the deploy file lists the deployed profile's names)."""
    names = ", ".join(expected) if expected else "no variable (the runtime cannot send this auth type)"
    return (
        f"Credentials for {op_id} are not configured: set {names}. These are the names under auth profile "
        f"{profile!r}, which {AUTH_PROFILE_VARIABLE} chooses; deploy/credentials.required.yaml lists the "
        "deployed profile's names."
    )
