"""Source security -> AIR auth (original-core §3.3 auth bullets, §1.11 credential profiles)."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.compiler.auth import credential_profile_name, resolve_auth, resolve_scheme, server_base_url
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
    "client": {"type": "apiKey", "in": "header", "name": "X-Client-Id"},
    "secret": {"type": "apiKey", "in": "header", "name": "X-Client-Secret"},
    "tenant": {"type": "apiKey", "in": "query", "name": "tenant_key"},
    "key_lower": {"type": "apiKey", "in": "header", "name": "x-key"},
    "query_key": {"type": "apiKey", "in": "query", "name": "X-Key"},
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
        ([{"key": [], "cc": []}], "auth/composite_unmodeled", True),
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


def test_a_requirement_of_three_api_key_headers_is_a_composite_with_three_factors_in_order() -> None:
    schemes = {name: {"type": "apiKey", "in": "header", "name": f"X-{name}"} for name in ("b", "a", "c")}
    resolution = resolve_auth([{"b": ["s1"], "a": [], "c": ["s2", "s1"]}], schemes)
    auth = resolution.auth
    assert not resolution.issues and not resolution.blocked
    assert (auth.type, auth.principal, auth.secret_source) == ("composite", "service", "env")
    assert auth.scopes == ("s1", "s2")
    assert auth.credential_profile == credential_profile_name("b+a+c")
    assert auth.factors == tuple(resolve_scheme(name, schemes, scopes).auth for name, scopes in [
        ("b", ("s1",)), ("a", ()), ("c", ("s2", "s1"))
    ])  # fmt: skip
    assert [f.provider.api_key.name for f in auth.factors if f.provider and f.provider.api_key] == ["X-b", "X-a", "X-c"]


def test_two_headers_and_a_query_key_or_a_key_and_basic_auth_are_composites() -> None:
    assert resolve_auth([{"client": [], "secret": [], "tenant": []}], SCHEMES).auth.type == "composite"
    mixed = resolve_auth([{"key": [], "basic": []}], SCHEMES).auth
    assert [factor.type for factor in mixed.factors or ()] == ["api_key", "basic"]
    same_name = resolve_auth([{"key": [], "query_key": []}], SCHEMES)  # a header and a query parameter
    assert same_name.auth.type == "composite" and not same_name.issues


@pytest.mark.parametrize(
    ("requirement", "reason"),
    [
        ({"key": [], "cc": []}, "factor 'cc' is oauth2 client credentials (a token exchange), which a composite"),
        ({"key": [], "code": []}, "factor 'code': OAuth2 scheme 'code' uses the end-user authorizationCode flow"),
        ({"key": [], "mtls": []}, "factor 'mtls' is mutual TLS, which a composite cannot carry"),
        ({"key": [], "missing": []}, "factor 'missing': security scheme 'missing' is not declared"),
        ({"key": [], "cookie_key": []}, "factor 'cookie_key': apiKey scheme 'cookie_key' has no header or query"),
        ({"key": [], "key_lower": []}, "factors 'key' and 'key_lower' both travel in header x-key"),
        ({"basic": [], "bearer": []}, "factors 'basic' and 'bearer' both travel in header Authorization"),
    ],
)
def test_each_unmodelable_composite_stays_blocked_and_says_which_factor_and_why(
    requirement: dict[str, Any], reason: str
) -> None:
    resolution = resolve_auth([requirement], SCHEMES)
    assert resolution.blocked
    assert [issue.code for issue in resolution.issues] == ["auth/composite_unmodeled"]
    assert reason in resolution.issues[0].message
    names = list(requirement)
    assert resolution.auth.type == "custom_header" and resolution.auth.factors is None
    assert resolution.auth.credential_profile == credential_profile_name("+".join(names))


def test_a_composite_alternative_that_resolved_cleanly_is_selected_like_any_other() -> None:
    resolution = resolve_auth([{"client": [], "secret": []}, {"basic": []}], SCHEMES)
    assert resolution.auth.type == "composite"
    assert [issue.code for issue in resolution.issues] == ["auth/alternative_selected"]
    assert not resolution.blocked
    unmodeled = resolve_auth([{"key": [], "cc": []}, {"basic": []}], SCHEMES)
    assert [issue.code for issue in unmodeled.issues] == ["auth/alternatives_unmodeled"]


def test_the_first_of_several_auth_alternatives_is_reported_once_per_scheme_with_the_count() -> None:
    from anvil.compiler import compile_source
    from anvil.load.result import LoadResult

    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Files", "version": "1"},
        "security": [{"key": []}, {"basic": []}],
        "components": {"securitySchemes": SCHEMES},
        "paths": {
            **{
                f"/files{n}": {"get": {"operationId": f"list{n}", "responses": {"200": {"description": "ok"}}}}
                for n in range(7)
            },
            "/other": {"get": {"security": [{"basic": []}, {"key": []}], "responses": {"200": {"description": "ok"}}}},
        },
    }
    result = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="files")
    selected = [d for d in result.diagnostics if d.code == "auth/alternative_selected"]
    assert [d.message for d in selected] == [
        "7 operations offer several auth alternatives; the first credentialed one, scheme 'key' (api_key), was "
        "selected for each (files.files0.list, files.files1.list, files.files2.list, files.files3.list, "
        "files.files4.list and 2 more).",
        "GET /other: 2 auth alternatives; the first credentialed one, scheme 'basic' (basic), was selected",
    ]
    assert selected[0].operation is None and selected[1].operation == "files.other.list"
    assert all(op.review_notes for op in result.document.operations)  # each keeps its own note
