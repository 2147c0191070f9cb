"""``deploy/credentials.required.yaml``: which outbound credential variables the deployed runtime needs.

Names only, never values (original-core §6.7): for each distinct auth requirement of the approved
operations, the ``ANVIL_<PROFILE>_*`` variables the runtime reads under the deployment profile
(``ANVIL_AUTH_PROFILE``, which the generated Terraform sets to ``anvil_env``). Supply them through
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
import re
from urllib.parse import urlsplit

from anvil.air.model import Auth, Document, credential_parts
from anvil.bundle.coordinates import coordinates
from anvil.bundle.encoding import text_file
from anvil.bundle.generation import Generation

__all__ = ["CREDENTIALS_PATH", "CREDENTIAL_HOSTS", "credential_variables", "emit_credentials"]

CREDENTIALS_PATH = "deploy/credentials.required.yaml"
#: The exact hosts whose spec-declared token endpoints may receive a client secret (the runtime's name).
CREDENTIAL_HOSTS = "ANVIL_CREDENTIAL_HOSTS"
_CLIENT_CREDENTIALS = "oauth2_client_credentials"
_BEARER = frozenset({_CLIENT_CREDENTIALS, "oauth2_on_behalf_of", "jwt_bearer", "workload_identity"})
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _suffixes(auth: Auth) -> tuple[str, ...]:
    if auth.type == "api_key":
        return ("API_KEY",)
    if auth.type == "basic":
        return ("USERNAME", "PASSWORD")
    if auth.type == _CLIENT_CREDENTIALS:
        return ("CLIENT_ID", "CLIENT_SECRET")
    if auth.type in _BEARER:
        return ("TOKEN",)
    return ()


def _prefix(auth: Auth, deployment_profile: str) -> str:
    profile = f"{deployment_profile}_{auth.credential_profile}" if auth.credential_profile else deployment_profile
    return "ANVIL_" + _NON_ALNUM.sub("_", profile).upper()


def credential_variables(auth: Auth, deployment_profile: str) -> tuple[str, ...]:
    """The secret variable names ``auth`` needs under ``deployment_profile`` (empty for no credential);
    for OAuth2 client credentials the client id and secret the runtime exchanges for tokens; for a
    composite every factor's, in order."""
    return tuple(
        f"{_prefix(part, deployment_profile)}_{suffix}" for part in credential_parts(auth) for suffix in _suffixes(part)
    )


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
    prefix = _prefix(auth, deployment_profile)
    declared = _token_endpoint(auth)
    host = _host(declared) if declared else None
    lines = ["    tokenEndpoint:", f"      declared: {json.dumps(declared)}", "      oneOf:"]
    lines.append(f"        - name: {json.dumps(f'{prefix}_TOKEN_ENDPOINT')}")
    if host:
        lines.append(f"        - name: {json.dumps(CREDENTIAL_HOSTS)}")
        lines.append(f"          naming: {json.dumps(host)}")
    lines.append("    optional:")
    lines.extend(f"      - name: {json.dumps(f'{prefix}_{suffix}')}" for suffix in ("AUDIENCE", "SCOPES"))
    lines.append("    staticToken:")
    lines.extend(_secret(f"{prefix}_TOKEN", namespace, lead="      "))
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
            if not _suffixes(part):
                continue
            # one entry per auth type, credential profile and (client credentials) declared token endpoint
            key = (part.type, part.credential_profile or "", _token_endpoint(part) or "")
            groups.setdefault(key, []).append(op.id)
            auths.setdefault(key, part)
    lines = [
        "# Generated by Anvil; compiler-owned. Outbound credential variables (names only) the runtime reads",
        f"# under ANVIL_AUTH_PROFILE={coords.environment}. Provide them with credential_secret_refs (Secret",
        "# Manager) or var.env; never put a value in the bundle.",
        "schemaVersion: 1",
        f"serviceId: {json.dumps(coords.service_id)}",
        f"authProfile: {json.dumps(coords.environment)}",
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
            for name in credential_variables(auth, coords.environment):
                lines.extend(_secret(name, coords.namespace))
            if auth.type == _CLIENT_CREDENTIALS:
                lines.extend(_client_lines(auth, coords.environment, coords.namespace))
            lines.append("    operations:")
            lines.extend(f"      - {json.dumps(op_id)}" for op_id in groups[group])
    return {CREDENTIALS_PATH: text_file("\n".join(lines))}
