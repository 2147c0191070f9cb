"""Credentials from named environment variables (original-core §6.7).

The bundle names variables, never values. A profile (``<deployment profile>_<credentialProfile>`` or
just the deployment profile) becomes the prefix ``ANVIL_<PROFILE>`` with non-alphanumeric runs turned
into ``_``; api_key reads ``<P>_API_KEY``, basic ``<P>_USERNAME`` + ``<P>_PASSWORD``, and bearer types
``<P>_TOKEN``. Values come from a mapping the CLI fills from the process environment; nothing here reads the
environment, and errors name variables only.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from anvil.air.carrier import effective_auth_carrier
from anvil.air.model import Auth

__all__ = [
    "Credential",
    "MissingCredential",
    "credential_profile",
    "env_prefix",
    "expected_env",
    "resolve_credential",
]

_BEARER: Final = frozenset({"oauth2_client_credentials", "oauth2_on_behalf_of", "jwt_bearer", "workload_identity"})
_NON_ALNUM: Final = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Credential:
    """Resolved credential material: headers and query parameters to merge into the request."""

    headers: tuple[tuple[str, str], ...] = ()
    query: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingCredential:
    """The variables that would have to be set (names only)."""

    expected_env: tuple[str, ...]


def credential_profile(auth_profile: str, auth: Auth) -> str:
    """The credential profile: ``<auth_profile>_<credentialProfile>``, or ``auth_profile`` alone."""
    return f"{auth_profile}_{auth.credential_profile}" if auth.credential_profile else auth_profile


def env_prefix(profile: str) -> str:
    """``ANVIL_`` + the profile upper-cased with every non-alphanumeric run turned into ``_``."""
    return "ANVIL_" + _NON_ALNUM.sub("_", profile).upper()


def expected_env(auth: Auth, profile: str) -> tuple[str, ...]:
    """The variable names ``auth`` reads under ``profile`` (empty when the runtime cannot execute it)."""
    prefix = env_prefix(profile)
    if auth.type == "api_key":
        return (f"{prefix}_API_KEY",)
    if auth.type == "basic":
        return (f"{prefix}_USERNAME", f"{prefix}_PASSWORD")
    if auth.type in _BEARER:
        return (f"{prefix}_TOKEN",)
    return ()


def resolve_credential(auth: Auth, profile: str, env: Mapping[str, str]) -> Credential | MissingCredential:
    """Resolve ``auth`` under ``profile`` from ``env`` (a mapping of variable names to values).

    Types the runtime cannot execute (mtls, custom_header, authorization_code) are always missing.
    """
    names = expected_env(auth, profile)
    values = [env.get(name) or "" for name in names]
    carrier = effective_auth_carrier(auth)
    if not names or not all(values) or carrier is None:
        return MissingCredential(expected_env=names)
    if auth.type == "basic":
        token = base64.b64encode(f"{values[0]}:{values[1]}".encode()).decode("ascii")
        value = f"Basic {token}"
    elif carrier.scheme:
        value = f"{carrier.scheme} {values[0]}"
    else:
        value = values[0]
    if carrier.in_ == "query":
        return Credential(query=((carrier.name, value),))
    return Credential(headers=((carrier.name, value),))
