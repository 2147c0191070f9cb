"""Manifest auth against a composite (several schemes at once): coherence, overrides that replace it whole."""

from __future__ import annotations

from pathlib import Path

from anvil.air.model import ApiKeyCarrier, Auth, AuthCarrier, AuthProvider, Operation
from anvil.compiler import build
from anvil.compiler.manifest.auth import AuthFields, apply_auth_fields, auth_coherence_issues
from anvil.compiler.pipeline import CompileResult
from tests.cli.fixtures.upstreams import VAULT_SPEC

_FACTORS = (
    Auth(type="api_key", provider=AuthProvider(api_key=ApiKeyCarrier(in_="header", name="X-Client-Id"))),
    Auth(type="api_key", provider=AuthProvider(api_key=ApiKeyCarrier(in_="query", name="tenant_key"))),
)


def _compile(tmp_path: Path, entries: str, head: str = "") -> CompileResult:
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(head + "operations:\n" + entries, encoding="utf-8")
    return build(VAULT_SPEC, manifest=manifest, service_id="vault")


def _op(result: CompileResult, operation_id: str) -> Operation:
    return next(op for op in result.document.operations if op.source_ref.operation_id == operation_id)


def test_a_composite_of_static_factors_in_their_own_slots_is_coherent() -> None:
    assert auth_coherence_issues(Auth(type="composite", credential_profile="p", factors=_FACTORS)) == []


def test_a_composite_without_factors_or_with_mechanics_of_its_own_is_incoherent() -> None:
    assert auth_coherence_issues(Auth(type="composite")) == [
        "composite auth takes its factors from the spec's security requirement"
    ]
    carried = Auth(type="composite", factors=_FACTORS, carrier=AuthCarrier(in_="header", name="X-All"))
    assert "composite auth cannot declare a carrier" in auth_coherence_issues(carried)
    provided = Auth(type="composite", factors=_FACTORS, provider=AuthProvider(token_endpoint="https://t.example"))
    assert any("cannot declare provider mechanics" in issue for issue in auth_coherence_issues(provided))
    assert "api_key auth cannot declare composite factors" in auth_coherence_issues(Auth(type="api_key", factors=()))


def test_each_factor_is_checked_as_if_alone_and_for_a_slot_of_its_own() -> None:
    exchanged = Auth(type="composite", factors=(_FACTORS[0], Auth(type="oauth2_client_credentials")))
    assert auth_coherence_issues(exchanged) == [
        "composite factor 2 (oauth2_client_credentials) is not static material a composite can carry"
    ]
    schemed = AuthCarrier(in_="header", name="X-Key", scheme="Token")
    odd = Auth(type="composite", factors=(_FACTORS[0], Auth(type="api_key", carrier=schemed)))
    assert auth_coherence_issues(odd) == ["composite factor 2 (api_key): an api_key carrier cannot declare a scheme"]
    twice = Auth(type="composite", factors=(Auth(type="basic"), Auth(type="jwt_bearer")))
    assert auth_coherence_issues(twice) == ["composite factors 1 and 2 both travel in header Authorization"]


def test_a_type_change_drops_a_composites_factors_and_a_change_to_composite_has_none() -> None:
    composite = Auth(type="composite", credential_profile="p", factors=_FACTORS)
    bearer = apply_auth_fields(composite, AuthFields(type="jwt_bearer"))
    assert (bearer.type, bearer.factors) == ("jwt_bearer", None)
    assert apply_auth_fields(composite, AuthFields(type="composite")) == composite
    made = apply_auth_fields(Auth(type="basic"), AuthFields(type="composite"))
    assert made.factors is None and auth_coherence_issues(made)


def test_a_manifest_cannot_declare_a_composite_or_give_one_a_carrier(tmp_path: Path) -> None:
    result = _compile(
        tmp_path,
        "  health:\n    auth: {type: composite}\n    state: approved\n"
        "  getItem:\n    auth: {carrier: {in: header, name: X-All}}\n    state: approved\n",
    )
    health, item = _op(result, "health"), _op(result, "getItem")
    assert health.state == "blocked"
    assert "Auth contract blocked: composite auth takes its factors from the spec's security requirement." in (
        health.review_notes
    )
    assert item.state == "blocked" and item.auth.factors == _op(result, "deleteItem").auth.factors
    assert "Auth contract blocked: composite auth cannot declare a carrier." in item.review_notes
    assert [d.code for d in result.diagnostics if d.code == "auth/incoherent"] == ["auth/incoherent"] * 2


def test_an_operation_entry_auth_type_still_replaces_a_composite_as_a_whole(tmp_path: Path) -> None:
    result = _compile(tmp_path, "  getItem:\n    auth: {type: bearer}\n    state: approved\n")
    item = _op(result, "getItem")
    assert (item.auth.type, item.auth.factors, item.state) == ("jwt_bearer", None, "approved")
    assert _op(result, "deleteItem").auth.type == "composite"


def test_a_scheme_asked_for_only_inside_a_composite_is_offered_by_no_operation(tmp_path: Path) -> None:
    result = _compile(tmp_path, "  getItem:\n    state: approved\n", head="auth:\n  scheme: clientId\n")
    error = next(d for d in result.diagnostics if d.code == "manifest/auth_scheme_not_offered")
    assert error.severity == "error" and "offered by no operation on its own" in error.message
    assert _op(result, "getItem").auth.type == "composite"
