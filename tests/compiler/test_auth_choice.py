"""The manifest's auth scheme choice: one of the schemes the spec offers, or a reviewed override."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.air.model import Operation
from anvil.compiler import build, compile_source
from anvil.compiler.auth import credential_profile_name
from anvil.compiler.manifest.draft import draft_manifest
from anvil.compiler.manifest.parse import parse_manifest
from anvil.compiler.pipeline import CompileResult
from anvil.diagnostics import Diagnostic
from anvil.load.result import LoadResult

_OK = {"200": {"description": "ok"}}
SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Tracker", "version": "1"},
    "servers": [{"url": "https://tracker.example"}],
    "components": {
        "securitySchemes": {
            "basicAuth": {"type": "http", "scheme": "basic"},
            "OAuth2": {
                "type": "oauth2",
                "flows": {
                    "authorizationCode": {
                        "authorizationUrl": "https://auth.example/authorize",
                        "tokenUrl": "https://auth.example/token",
                        "scopes": {"read": "", "write": ""},
                    }
                },
            },
            "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
            "machine": {
                "type": "oauth2",
                "flows": {"clientCredentials": {"tokenUrl": "https://auth.example/token", "scopes": {}}},
            },
        }
    },
    "paths": {
        "/issues": {
            "get": {
                "operationId": "listIssues",
                "security": [{"basicAuth": []}, {"OAuth2": ["read"]}, {}],
                "responses": _OK,
            },
            "post": {
                "operationId": "createIssue",
                "security": [{"basicAuth": []}, {"OAuth2": ["write"]}],
                "responses": _OK,
            },
        },
        "/projects": {
            "get": {"operationId": "listProjects", "security": [{"basicAuth": []}, {"key": []}], "responses": _OK}
        },
        "/health": {"get": {"operationId": "health", "security": [], "responses": _OK}},
        "/me": {"get": {"operationId": "me", "security": [{"OAuth2": ["read"]}], "responses": _OK}},
        "/audit": {"get": {"operationId": "audit", "security": [{"key": [], "basicAuth": []}], "responses": _OK}},
    },
}
_APPROVE_ALL = "".join(
    f"  {name}:\n    state: approved\n"
    for name in ("listIssues", "createIssue", "listProjects", "health", "me", "audit")
)


def _compile(manifest_text: str) -> CompileResult:
    manifest, problems = parse_manifest(manifest_text, "anvil.yaml")
    assert manifest is not None and not problems, problems
    return compile_source(LoadResult(document=SPEC, version="3.0.3"), manifest, service_id="tracker")


def _op(result: CompileResult, operation_id: str) -> Operation:
    return next(op for op in result.document.operations if op.source_ref.operation_id == operation_id)


def _only(result: CompileResult, code: str) -> Diagnostic:
    (found,) = [d for d in result.diagnostics if d.code == code]
    return found


def _codes(result: CompileResult) -> list[str]:
    return [d.code for d in result.diagnostics]


def test_without_a_choice_alternatives_and_end_user_flows_stay_blocked_when_approved() -> None:
    result = _compile("operations:\n" + _APPROVE_ALL)
    blocked = sorted(op.source_ref.operation_id or "" for op in result.document.operations if op.state == "blocked")
    assert blocked == ["createIssue", "listIssues", "me"]
    audit = _op(result, "audit")  # a key and basic auth at once: a composite, served with both
    assert (audit.auth.type, audit.state) == ("composite", "approved")


def test_a_service_wide_scheme_serves_every_operation_that_offers_it_and_says_which_it_unblocked() -> None:
    result = _compile("auth:\n  scheme: basicAuth\noperations:\n" + _APPROVE_ALL)
    for name in ("listIssues", "createIssue", "listProjects"):
        op = _op(result, name)
        assert (op.auth.type, op.state) == ("basic", "approved"), name
        assert op.auth.credential_profile == credential_profile_name("basicAuth")
        assert not [note for note in op.review_notes if "auth" in note.lower()], op.review_notes
    assert _op(result, "health").auth.type == "none"
    assert _op(result, "me").state == "blocked"  # it offers only OAuth2 and keeps it
    info = _only(result, "auth/scheme_chosen")
    assert info.severity == "info" and (info.file, info.line, info.column) == ("anvil.yaml", 2, 3)
    unblocked = [_op(result, name).id for name in ("listIssues", "createIssue")]  # in discovery order
    assert f"it unblocked 2 ({', '.join(unblocked)})" in info.message
    assert "3 operations are served through it as basic" in info.message
    assert "3 do not offer it and keep their declared auth" in info.message
    # The source findings a choice settled are not reported again.
    assert "auth/alternatives_unmodeled" not in _codes(result)
    assert _codes(result).count("auth/alternative_selected") == 0


def test_an_operation_entry_chooses_among_its_own_alternatives_over_the_service_choice() -> None:
    result = _compile("auth:\n  scheme: basicAuth\noperations:\n  listProjects:\n    auth:\n      scheme: key\n")
    projects = _op(result, "listProjects")
    assert projects.auth.type == "api_key"
    assert projects.auth.provider is not None and projects.auth.provider.api_key is not None
    assert projects.auth.provider.api_key.name == "X-Key"
    assert projects.state == "generated"  # chosen, not approved: the reviewer still approves it
    assert _op(result, "listIssues").auth.type == "basic"
    entry = [d for d in result.diagnostics if d.code == "auth/scheme_chosen" and d.operation == projects.id]
    assert len(entry) == 1 and "is served through it as api_key" in entry[0].message


def test_a_scheme_the_operation_does_not_offer_is_an_error_naming_the_ones_it_does() -> None:
    result = _compile("operations:\n  me:\n    state: approved\n    auth:\n      scheme: basicAuth\n")
    error = _only(result, "manifest/auth_scheme_not_offered")
    assert error.severity == "error" and error.line == 5
    assert "it offers OAuth2" in error.message and "override: true" in (error.hint or "")
    me = _op(result, "me")
    assert (me.auth.type, me.state) == ("oauth2_authorization_code", "blocked")


def test_a_scheme_the_spec_does_not_declare_is_an_error_with_the_closest_declared_name() -> None:
    result = _compile("auth:\n  scheme: basicauth\noperations:\n" + _APPROVE_ALL)
    error = _only(result, "manifest/auth_scheme_unknown")
    assert error.severity == "error" and error.hint == "Did you mean 'basicAuth'?"
    assert "OAuth2, basicAuth, key, machine" in error.message
    assert _op(result, "listIssues").state == "blocked"


def test_an_authorization_code_scheme_is_served_as_a_bearer_token_only_as_a_reviewed_override() -> None:
    unmarked = _compile(
        "operations:\n  me:\n    state: approved\n    auth:\n      scheme: OAuth2\n      type: bearer\n"
    )
    assert _only(unmarked, "manifest/auth_override_unmarked").severity == "error"
    # Nothing of the refused block applies: not the scheme, not its type through the overlay.
    assert (_op(unmarked, "me").auth.type, _op(unmarked, "me").state) == ("oauth2_authorization_code", "blocked")
    reviewed = _compile(
        "operations:\n  me:\n    state: approved\n    auth:\n      scheme: OAuth2\n      type: bearer\n"
        "      override: true\n      reason: The operator mints user tokens out of band.\n"
    )
    me = _op(reviewed, "me")
    assert (me.auth.type, me.auth.principal, me.state) == ("jwt_bearer", "service", "approved")
    assert me.auth.scopes == ("read",) and me.auth.credential_profile == credential_profile_name("OAuth2")
    assert any("The operator mints user tokens out of band." in note for note in me.review_notes)
    warning = _only(reviewed, "auth/override")
    assert warning.severity == "warning" and warning.operation == me.id
    assert "reason: The operator mints user tokens out of band." in warning.message
    assert "it was blocked by its declared auth and no longer is" in _only(reviewed, "auth/scheme_chosen").message


def test_a_bearer_override_is_reported_as_bearer_and_not_only_by_its_air_name() -> None:
    reviewed = _compile(
        "operations:\n  me:\n    state: approved\n    auth:\n      scheme: OAuth2\n      type: bearer\n"
        "      override: true\n      reason: tokens out of band\n"
    )
    chosen, override = _only(reviewed, "auth/scheme_chosen"), _only(reviewed, "auth/override")
    assert "is served through it as bearer (AIR type jwt_bearer)" in chosen.message
    assert "served as bearer (AIR type jwt_bearer) for" in override.message
    assert any("served as bearer (AIR type jwt_bearer):" in note for note in _op(reviewed, "me").review_notes)


def test_an_override_is_review_required_until_a_reviewer_approves_it() -> None:
    result = _compile(
        "operations:\n  me:\n    auth:\n      scheme: OAuth2\n      type: bearer\n      override: true\n"
        "      reason: tokens out of band\n"
    )
    assert _op(result, "me").state == "review_required"


def test_choosing_an_end_user_scheme_without_an_override_keeps_it_blocked_and_says_how_to_serve_it() -> None:
    result = _compile("auth:\n  scheme: OAuth2\noperations:\n" + _APPROVE_ALL)
    for name in ("listIssues", "createIssue", "me"):
        op = _op(result, name)
        assert (op.auth.type, op.state) == ("oauth2_authorization_code", "blocked"), name
    info = _only(result, "auth/scheme_chosen")
    assert "it unblocked none" in info.message and "3 remain blocked" in info.message
    assert "type: bearer" in (info.hint or "")


def test_a_scheme_offered_only_together_with_another_is_never_chosen_even_by_override() -> None:
    result = _compile(
        "operations:\n  audit:\n    state: approved\n    auth:\n      scheme: key\n      override: true\n"
        "      reason: one key is enough\n"
    )
    error = _only(result, "manifest/auth_scheme_not_offered")
    assert "cannot remove a factor" in error.message and "key+basicAuth (together)" in error.message
    audit = _op(result, "audit").auth
    assert audit.type == "composite" and [factor.type for factor in audit.factors or ()] == ["api_key", "basic"]
    assert "auth/override" not in _codes(result)


def test_a_reviewed_override_may_serve_a_declared_scheme_the_operation_does_not_offer() -> None:
    result = _compile(
        "operations:\n  me:\n    state: approved\n    auth:\n      scheme: basicAuth\n      override: true\n"
        "      reason: the upstream also accepts basic auth here\n"
    )
    me = _op(result, "me")
    assert (me.auth.type, me.state) == ("basic", "approved")
    assert _only(result, "auth/override").severity == "warning"


def test_a_service_wide_scheme_no_operation_offers_is_an_error() -> None:
    result = _compile("auth:\n  scheme: machine\noperations:\n" + _APPROVE_ALL)
    error = _only(result, "manifest/auth_scheme_not_offered")
    assert error.severity == "error" and "offered by no operation" in error.message
    assert "auth/scheme_chosen" not in _codes(result)


def test_a_service_wide_override_retypes_the_operations_offering_the_scheme_and_no_other() -> None:
    result = _compile(
        "auth:\n  scheme: OAuth2\n  type: bearer\n  override: true\n  reason: tokens out of band\n"
        "operations:\n" + _APPROVE_ALL
    )
    for name in ("listIssues", "createIssue", "me"):
        assert (_op(result, name).auth.type, _op(result, name).state) == ("jwt_bearer", "approved"), name
    assert _op(result, "health").auth.type == "none"  # with a scheme, type is no default for anonymous ones
    assert _op(result, "listProjects").auth.type == "basic"  # it does not offer OAuth2
    assert _op(result, "audit").auth.type == "composite"  # it offers OAuth2 in no alternative
    info = _only(result, "auth/scheme_chosen")
    assert "it unblocked 3" in info.message and "3 do not offer it and keep their declared auth" in info.message
    assert _op(result, "listProjects").id not in _only(result, "auth/override").message


def test_two_entries_choosing_different_schemes_for_one_operation_block_it() -> None:
    projects = _compile("").document.operations[2]
    assert projects.source_ref.operation_id == "listProjects"
    result = _compile(
        f"operations:\n  listProjects:\n    auth:\n      scheme: key\n  {projects.id}:\n    state: approved\n"
        "    auth:\n      scheme: basicAuth\n"
    )
    conflict = _only(result, "overlay/conflict")
    assert "auth.scheme" in conflict.message
    assert _op(result, "listProjects").state == "blocked"


@pytest.mark.corpus
def test_corpus_jira_with_basic_auth_chosen_and_every_operation_approved_has_none_blocked_by_auth(
    corpus: Path, tmp_path: Path
) -> None:
    spec = corpus / "jira-platform.json"
    drafted = build(spec, manifest=None, service_id="jira")
    assert drafted.document is not None
    approved = draft_manifest(drafted.document, approve="all")
    manifest = tmp_path / "anvil.yaml"

    def blocked_by_auth(text: str) -> int:
        manifest.write_text(text, encoding="utf-8")
        result = build(spec, manifest=manifest, service_id="jira")
        assert result.document is not None
        return sum(
            1
            for op in result.document.operations
            if op.state == "blocked" and any("auth" in note.lower() for note in op.review_notes)
        )

    assert blocked_by_auth(approved) > 400  # the spec offers basicAuth, OAuth2 and often anonymous access
    assert blocked_by_auth("auth:\n  scheme: basicAuth\n" + approved) == 0


def test_a_service_type_that_cannot_override_a_declared_scheme_points_to_the_scheme_choice() -> None:
    result = _compile("auth:\n  type: basic\noperations:\n" + _APPROVE_ALL)
    ignored = [d for d in result.diagnostics if d.code == "auth/service_default_not_applied"]
    assert ignored and all("auth.scheme" in (d.hint or "") for d in ignored)
    assert _op(result, "me").state == "blocked"
