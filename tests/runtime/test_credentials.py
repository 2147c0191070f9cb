"""Credentials from named variables: a composite's factors each read what their scheme reads alone."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from anvil.air.model import Auth
from anvil.compiler.auth import resolve_auth
from anvil.runtime.credentials import (
    Credential,
    MissingCredential,
    credential_env,
    credential_profile,
    deployment_profile,
    expected_env,
    resolve_credential,
)

#: Plaid's three schemes (``components.securitySchemes`` of the corpus spec) and its one requirement.
PLAID_SCHEMES = {
    "clientId": {"type": "apiKey", "in": "header", "name": "PLAID-CLIENT-ID"},
    "secret": {"type": "apiKey", "in": "header", "name": "PLAID-SECRET"},
    "plaidVersion": {"type": "apiKey", "in": "header", "name": "Plaid-Version"},
}
PLAID = resolve_auth([{"clientId": [], "secret": [], "plaidVersion": []}], PLAID_SCHEMES).auth
VAULT = resolve_auth(
    [{"client": [], "login": [], "tenant": []}],
    {
        "client": {"type": "apiKey", "in": "header", "name": "X-Client-Id"},
        "login": {"type": "http", "scheme": "basic"},
        "tenant": {"type": "apiKey", "in": "query", "name": "tenant_key"},
    },
).auth
SERVING = Path(__file__).resolve().parents[2] / "docs" / "serving.md"


def _alone(name: str) -> tuple[str, ...]:
    single = resolve_auth([{name: []}], PLAID_SCHEMES).auth
    return expected_env(single, credential_profile("default", single))


def test_each_plaid_factor_reads_the_variable_its_scheme_reads_alone_under_the_deployment_profile() -> None:
    names = expected_env(PLAID, credential_profile("default", PLAID))
    assert names == (*_alone("clientId"), *_alone("secret"), *_alone("plaidVersion"))
    assert re.fullmatch(r"ANVIL_DEFAULT_CLIENT_ID_[0-9A-F]{32}_API_KEY", names[0])
    assert re.fullmatch(r"ANVIL_DEFAULT_PLAID_VERSION_[0-9A-F]{32}_API_KEY", names[2])
    assert credential_env(PLAID, credential_profile("default", PLAID)) == names
    page = SERVING.read_text(encoding="utf-8")
    assert all(f"export {name}=" in page for name in names)  # the serving page's Plaid example is exact


def test_the_deployment_profile_is_recovered_from_a_composites_own_profile_and_only_from_it() -> None:
    profile = credential_profile("prod_github", PLAID)
    assert profile != "prod_github" and profile.endswith(str(PLAID.credential_profile))
    assert deployment_profile(PLAID, profile) == "prod_github"
    assert deployment_profile(PLAID, "prod") == "prod"
    assert deployment_profile(Auth(type="composite"), "prod") == "prod"
    fleet = expected_env(PLAID, credential_profile("default_github", PLAID))
    assert all(name.startswith("ANVIL_DEFAULT_GITHUB_") for name in fleet)


def test_a_resolved_composite_merges_every_factors_headers_and_query_pairs() -> None:
    profile = credential_profile("default", VAULT)
    client, user, password, tenant = expected_env(VAULT, profile)
    env = {client: "cid-1", user: "u", password: "p", tenant: "tk-1"}
    found = resolve_credential(VAULT, profile, env)
    assert isinstance(found, Credential) and found.exchanged is None
    basic = "Basic " + base64.b64encode(b"u:p").decode()
    assert found.headers == (("X-Client-Id", "cid-1"), ("Authorization", basic))
    assert found.query == (("tenant_key", "tk-1"),)
    assert "cid-1" not in repr(found) and "tk-1" not in repr(found)


def test_a_composite_with_any_factor_unset_names_every_missing_variable_and_no_value() -> None:
    profile = credential_profile("default", VAULT)
    client, user, password, tenant = expected_env(VAULT, profile)
    missing = resolve_credential(VAULT, profile, {client: "cid-secret", user: "u-secret"})
    assert missing == MissingCredential(expected_env=(user, password, tenant))
    assert "secret" not in repr(missing)
    nothing = resolve_credential(VAULT, profile, {})
    assert isinstance(nothing, MissingCredential) and nothing.expected_env == (client, user, password, tenant)


def test_a_composite_whose_factor_the_runtime_cannot_execute_is_never_resolved() -> None:
    odd = Auth(type="composite", credential_profile="odd", factors=(Auth(type="api_key"), Auth(type="mtls")))
    env = dict.fromkeys(expected_env(odd, credential_profile("default", odd)), "value")
    assert env  # the api key's variable is set
    assert isinstance(resolve_credential(odd, credential_profile("default", odd), env), MissingCredential)
    empty = Auth(type="composite", credential_profile="empty")
    assert resolve_credential(empty, credential_profile("default", empty), {}) == MissingCredential(expected_env=())
