"""The names of outbound credential variables: one derivation for the deploy file and the runtime.

A profile (``<auth profile>_<credentialProfile>``, or the auth profile alone) becomes the prefix
``ANVIL_<PROFILE>`` with non-alphanumeric runs turned into ``_`` (original-core §6.7). The auth profile
is ``ANVIL_AUTH_PROFILE``: the generated Terraform sets it to the bundle's environment (``prod`` unless
``service.environment`` says otherwise), and a local ``anvil serve`` or ``anvil run`` takes
:data:`LOCAL_AUTH_PROFILE` when it is unset (:func:`auth_profile`), as the original does. So
``deploy/credentials.required.yaml`` (:mod:`anvil.bundle.credentials`) and the runtime
(:mod:`anvil.runtime.credentials`) read every name from the functions here, and a refusal names the
profile it read them under.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from anvil.air.model import Auth, credential_parts

__all__ = [
    "AUTH_PROFILE_VARIABLE",
    "LOCAL_AUTH_PROFILE",
    "auth_profile",
    "client_credentials_env",
    "credential_env",
    "credential_profile",
    "deployment_profile",
    "env_prefix",
    "expected_env",
    "factor_profiles",
]

#: The variable that chooses the auth profile every credential name is read under.
AUTH_PROFILE_VARIABLE: Final = "ANVIL_AUTH_PROFILE"
#: The auth profile when :data:`AUTH_PROFILE_VARIABLE` is unset (a deployed runtime has it set).
LOCAL_AUTH_PROFILE: Final = "default"

_BEARER: Final = frozenset({"oauth2_client_credentials", "oauth2_on_behalf_of", "jwt_bearer", "workload_identity"})
_NON_ALNUM: Final = re.compile(r"[^A-Za-z0-9]+")


def auth_profile(environ: Mapping[str, str], chosen: str | None = None) -> str:
    """The auth profile: ``chosen`` (a flag), else ``ANVIL_AUTH_PROFILE`` of ``environ``, else ``default``."""
    return chosen or environ.get(AUTH_PROFILE_VARIABLE) or LOCAL_AUTH_PROFILE


def env_prefix(profile: str) -> str:
    """``ANVIL_`` + the profile upper-cased with every non-alphanumeric run turned into ``_``."""
    return "ANVIL_" + _NON_ALNUM.sub("_", profile).upper()


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


def factor_profiles(auth: Auth, profile: str) -> tuple[tuple[Auth, str], ...]:
    """Each credential part of ``auth`` with the profile its variables are read under (``auth`` itself
    under ``profile`` unless it is a composite)."""
    if auth.type != "composite":
        return ((auth, profile),)
    base = deployment_profile(auth, profile)
    return tuple((part, credential_profile(base, part)) for part in credential_parts(auth))


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
        return tuple(name for part, own in factor_profiles(auth, profile) for name in expected_env(part, own))
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
        return tuple(name for part, own in factor_profiles(auth, profile) for name in credential_env(part, own))
    names = expected_env(auth, profile)
    if auth.type == "oauth2_client_credentials":
        return names + client_credentials_env(profile)
    return names
