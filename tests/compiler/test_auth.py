"""Source security -> AIR auth (original-core §3.3 auth bullets, §1.11 credential profiles)."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.compiler.auth import credential_profile_name, resolve_auth, server_base_url
from anvil.compiler.normalize import normalize_document

SCHEMES: dict[str, Any] = {
    "basic": {"type": "http", "scheme": "basic"},
    "bearer": {"type": "http", "scheme": "Bearer"},
    "digest": {"type": "http", "scheme": "digest"},
    "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
    "cookie_key": {"type": "apiKey", "in": "cookie", "name": "sid"},
    "cc": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://t.example/token", "scopes": {}}}},
    "code": {
        "type": "oauth2",
        "flows": {"authorizationCode": {"authorizationUrl": "a", "tokenUrl": "t", "scopes": {}}},
    },
    "password": {"type": "oauth2", "flows": {"password": {"tokenUrl": "t", "scopes": {}}}},
    "two_flows": {
        "type": "oauth2",
        "flows": {"clientCredentials": {"tokenUrl": "t"}, "implicit": {"authorizationUrl": "a"}},
    },
    "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://id.example/.well-known"},
    "mtls": {"type": "mutualTLS"},
    "weird": {"type": "carrierPigeon"},
}


def test_credential_profiles_hash_the_scheme_name() -> None:
    assert credential_profile_name("oauth2") == "oauth2_d8ad572d2fb1b3f6c47061c8a5b64a62"
    assert credential_profile_name("2fa").startswith("scheme_2fa_")
    long = credential_profile_name("A" * 80)
    assert len(long.split("_")[0]) <= 31


def test_no_security_is_anonymous() -> None:
    for requirements in (None, [], [{}]):
        resolution = resolve_auth(requirements, SCHEMES)
        assert resolution.auth.type == "none"
        assert resolution.auth.principal == "anonymous"
        assert resolution.auth.secret_source == "none"
        assert not resolution.issues


@pytest.mark.parametrize(
    ("scheme", "auth_type"),
    [
        ("basic", "basic"),
        ("bearer", "jwt_bearer"),
        ("key", "api_key"),
        ("cc", "oauth2_client_credentials"),
        ("mtls", "mtls"),
    ],
)
def test_clean_schemes_resolve_without_issues(scheme: str, auth_type: str) -> None:
    resolution = resolve_auth([{scheme: ["a.read", "a.read", "b"]}], SCHEMES)
    assert resolution.auth.type == auth_type
    assert resolution.auth.principal == "service"
    assert resolution.auth.scopes == ("a.read", "b")
    assert resolution.auth.credential_profile == credential_profile_name(scheme)
    assert not resolution.issues


def test_client_credentials_records_the_token_endpoint_and_api_keys_their_carrier() -> None:
    cc = resolve_auth([{"cc": []}], SCHEMES).auth
    assert cc.provider is not None
    assert (cc.provider.grant, cc.provider.token_endpoint) == ("client_credentials", "https://t.example/token")
    key = resolve_auth([{"key": []}], SCHEMES).auth
    assert key.provider is not None and key.provider.api_key is not None
    assert (key.provider.api_key.in_, key.provider.api_key.name) == ("header", "X-Key")


@pytest.mark.parametrize(
    ("requirements", "code", "blocks"),
    [
        ([{"digest": []}], "auth/http_scheme_unsupported", True),
        ([{"cookie_key": []}], "auth/api_key_carrier_missing", True),
        ([{"code": []}], "auth/end_user_flow_unexecutable", True),
        ([{"oidc": []}], "auth/end_user_flow_unexecutable", True),
        ([{"password": []}], "auth/oauth_flow_unsupported", True),
        ([{"two_flows": []}], "auth/oauth_flow_ambiguous", True),
        ([{"missing": []}], "auth/scheme_missing", True),
        ([{"weird": []}], "auth/scheme_unsupported", True),
        ([{"basic": [], "key": []}], "auth/composite_unmodeled", True),
        ([{"basic": []}, {"code": []}], "auth/alternatives_unmodeled", True),
        ([{"basic": []}, {"key": []}], "auth/alternative_selected", False),
    ],
)
def test_each_unmodeled_requirement_is_a_coded_issue(requirements: Any, code: str, blocks: bool) -> None:
    resolution = resolve_auth(requirements, SCHEMES)
    assert [issue.code for issue in resolution.issues] == [code]
    assert resolution.blocked is blocks


def test_an_anonymous_alternative_makes_a_single_scheme_an_or_that_needs_review() -> None:
    resolution = resolve_auth([{"basic": []}, {}], SCHEMES)
    assert resolution.auth.type == "basic"
    assert [issue.code for issue in resolution.issues] == ["auth/alternative_selected"]
    assert not resolution.blocked
    assert resolve_auth([{}, {}], SCHEMES).auth.type == "none"


def test_a_relative_token_url_resolves_against_the_server_url() -> None:
    schemes = {"cc": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/v1/oauth2/token"}}}}
    base = server_base_url([{"url": "https://api-m.{env}.paypal.com/v2", "variables": {"env": {"default": "sandbox"}}}])
    assert base == "https://api-m.sandbox.paypal.com/v2"
    resolved = resolve_auth([{"cc": []}], schemes, base)
    assert resolved.auth.provider is not None
    assert resolved.auth.provider.token_endpoint == "https://api-m.sandbox.paypal.com/v1/oauth2/token"
    assert not resolved.issues


def test_a_relative_token_url_without_an_absolute_server_is_diagnosed_not_kept() -> None:
    schemes = {"cc": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/oauth/token"}}}}
    assert server_base_url([{"url": "/api"}]) is None
    resolved = resolve_auth([{"cc": []}], schemes, None)
    assert [issue.code for issue in resolved.issues] == ["auth/token_url_unresolved"]
    assert resolved.auth.provider is not None and resolved.auth.provider.token_endpoint is None


def test_alternatives_select_the_first_clean_one() -> None:
    resolution = resolve_auth([{"key": []}, {"basic": []}], SCHEMES)
    assert resolution.auth.type == "api_key"


def test_normalize_blocks_or_reviews_per_auth_issue_and_notes_it() -> None:
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Svc", "version": "1"},
        "security": [{"code": []}],
        "components": {"securitySchemes": SCHEMES},
        "paths": {
            "/a": {"get": {}},
            "/b": {"get": {"security": [{"basic": []}, {"key": []}]}},
            "/c": {"get": {"security": []}},
        },
    }
    result = normalize_document(doc, "svc")
    a, b, c = result.operations
    assert (a.state, a.auth.type, a.auth.principal) == ("blocked", "oauth2_authorization_code", "end_user")
    assert a.review_notes and a.review_notes[0].startswith("GET /a: ")
    assert b.state == "review_required"
    assert (c.state, c.auth.type) == ("generated", "none")
    assert [d.code for _, d in result.diagnostics] == ["auth/end_user_flow_unexecutable", "auth/alternative_selected"]
    assert all(d.severity == "warning" for _, d in result.diagnostics)
