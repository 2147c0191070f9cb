"""``deploy/credentials.required.yaml``: which outbound credential variables the deployed runtime needs.

Names only, never values (original-core §6.7): for each distinct auth requirement of the approved
operations, the ``ANVIL_<PROFILE>_*`` variables the runtime reads under the deployment profile
(``ANVIL_AUTH_PROFILE``, which the generated Terraform sets to ``anvil_env``), derived by
:mod:`anvil.air.credential_names` as the runtime derives them; the file says which variable chooses the
profile and that a local serve without it reads the ``default`` profile. Supply them through
``var.env`` or, better, ``credential_secret_refs`` (Secret Manager): each secret variable carries a
recommended secret id prefixed by the deployment namespace, so two deployments of one service never
share a secret. A composite auth (one requirement naming several schemes at once) lists each factor as
an entry of its own, with the variables that scheme reads alone: an operation is in every factor's entry,
and each of them must be set.

OAuth2 client credentials are exchanged for tokens by the runtime (:mod:`anvil.runtime.oauth` reads the
same names), so such an entry lists what the exchange reads: ``variables`` are the client
(``<P>_CLIENT_ID``, ``<P>_CLIENT_SECRET``); ``tokenEndpoint`` says where the secret goes: the endpoint
the spec declared (or null) and ``oneOf`` the ways to admit one (``<P>_TOKEN_ENDPOINT``, or
``ANVIL_CREDENTIAL_HOSTS`` naming the declared endpoint's host); ``optional`` are ``<P>_AUDIENCE`` and
``<P>_SCOPES``; ``staticToken`` is ``<P>_TOKEN``, a token minted out of band that the runtime sends only
while neither the client id nor the secret is set.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from anvil.air.credential_names import (
    AUTH_PROFILE_VARIABLE,
    LOCAL_AUTH_PROFILE,
    client_credentials_env,
    credential_profile,
    env_prefix,
    expected_env,
)
from anvil.air.model import Auth, Document, credential_parts
from anvil.bundle.coordinates import coordinates
from anvil.bundle.encoding import text_file
from anvil.bundle.generation import Generation

__all__ = ["CREDENTIALS_PATH", "CREDENTIAL_HOSTS", "credential_variables", "emit_credentials"]

CREDENTIALS_PATH = "deploy/credentials.required.yaml"
#: The exact hosts whose spec-declared token endpoints may receive a client secret (the runtime's name).
CREDENTIAL_HOSTS = "ANVIL_CREDENTIAL_HOSTS"
_CLIENT_CREDENTIALS = "oauth2_client_credentials"


def _listed(auth: Auth) -> bool:
    """The runtime reads a credential for ``auth`` (mtls, custom_header and authorization_code it cannot)."""
    return auth.type == _CLIENT_CREDENTIALS or bool(expected_env(auth, LOCAL_AUTH_PROFILE))


def credential_variables(auth: Auth, deployment_profile: str) -> tuple[str, ...]:
    """The secret variable names ``auth`` needs under ``deployment_profile`` (empty for no credential),
    as the runtime reads them (:mod:`anvil.air.credential_names`); for OAuth2 client credentials the
    client id and secret the runtime exchanges for tokens; for a composite every factor's, in order."""
    names: list[str] = []
    for part in credential_parts(auth):
        profile = credential_profile(deployment_profile, part)
        if part.type == _CLIENT_CREDENTIALS:
            names.extend(client_credentials_env(profile)[:2])
        else:
            names.extend(expected_env(part, profile))
    return tuple(names)


def _token_endpoint(auth: Auth) -> str | None:
    return auth.provider.token_endpoint if auth.provider is not None else None


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def _secret(name: str, namespace: str, lead: str = "      - ") -> list[str]:
    """A secret variable: its name and recommended secret id (namespace-prefixed), ``lead`` before the name."""
    secret = namespace + "-" + name.lower().replace("_", "-")
    return [f"{lead}name: {json.dumps(name)}", f"{' ' * len(lead)}recommendedSecretId: {json.dumps(secret)}"]


def _client_lines(auth: Auth, deployment_profile: str, namespace: str) -> list[str]:
    """What an OAuth2 client-credentials entry adds after its client variables (see the module docstring)."""
    profile = credential_profile(deployment_profile, auth)
    _client, _secret_name, endpoint, audience, scopes = client_credentials_env(profile)
    declared = _token_endpoint(auth)
    host = _host(declared) if declared else None
    lines = ["    tokenEndpoint:", f"      declared: {json.dumps(declared)}", "      oneOf:"]
    lines.append(f"        - name: {json.dumps(endpoint)}")
    if host:
        lines.append(f"        - name: {json.dumps(CREDENTIAL_HOSTS)}")
        lines.append(f"          naming: {json.dumps(host)}")
    lines.append("    optional:")
    lines.extend(f"      - name: {json.dumps(name)}" for name in (audience, scopes))
    lines.append("    staticToken:")
    [token] = expected_env(auth, profile)
    lines.extend(_secret(token, namespace, lead="      "))
    return lines


def emit_credentials(doc: Document, generation: Generation) -> dict[str, bytes]:
    """``{"deploy/credentials.required.yaml": bytes}``."""
    coords = coordinates(doc, generation)
    groups: dict[tuple[str, str, str], list[str]] = {}
    auths: dict[tuple[str, str, str], Auth] = {}
    for op in doc.operations:
        if op.state != "approved":
            continue
        for part in credential_parts(op.auth):  # a composite's factors each have an entry of their own
            if not _listed(part):
                continue
            # one entry per auth type, credential profile and (client credentials) declared token endpoint
            key = (part.type, part.credential_profile or "", _token_endpoint(part) or "")
            groups.setdefault(key, []).append(op.id)
            auths.setdefault(key, part)
    profile = coords.environment
    lines = [
        "# Generated by Anvil; compiler-owned. Outbound credential variables (names only) the runtime reads",
        f"# under {AUTH_PROFILE_VARIABLE}={profile}, which the generated Terraform sets (anvil_env): the deployed",
        "# runtime reads exactly these names. Provide them with credential_secret_refs (Secret Manager) or",
        "# var.env; never put a value in the bundle. A local `anvil serve` or `anvil run` reads these names",
        f"# only with {AUTH_PROFILE_VARIABLE}={profile} exported: unset, its profile is",
        f"# {json.dumps(LOCAL_AUTH_PROFILE)} ({env_prefix(LOCAL_AUTH_PROFILE)}_* instead of {env_prefix(profile)}_*).",
        "schemaVersion: 1",
        f"serviceId: {json.dumps(coords.service_id)}",
        f"authProfile: {json.dumps(profile)}",
        f"profileEnvVar: {json.dumps(AUTH_PROFILE_VARIABLE)}",
        f"localProfileDefault: {json.dumps(LOCAL_AUTH_PROFILE)}",
    ]
    if not groups:
        lines.append("credentials: []")
    else:
        lines.append("credentials:")
        for group in sorted(groups):
            auth = auths[group]
            lines.append(f"  - type: {json.dumps(auth.type)}")
            lines.append(f"    credentialProfile: {json.dumps(auth.credential_profile)}")
            lines.append("    variables:")
            for name in credential_variables(auth, profile):
                lines.extend(_secret(name, coords.namespace))
            if auth.type == _CLIENT_CREDENTIALS:
                lines.extend(_client_lines(auth, profile, coords.namespace))
            lines.append("    operations:")
            lines.extend(f"      - {json.dumps(op_id)}" for op_id in groups[group])
    return {CREDENTIALS_PATH: text_file("\n".join(lines))}
