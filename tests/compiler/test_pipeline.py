"""compile_source and build (original-core §3.5, scenarios §9.3): payments, ids, determinism, the corpus."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from anvil.air.codec import contract_hash, document_json, to_json
from anvil.compiler import build, compile_source
from anvil.load.result import LoadResult
from tests.cli.fixtures.upstreams import VAULT_MANIFEST, VAULT_SPEC
from tests.conftest import EXAMPLES

PAYMENTS = EXAMPLES / "payments" / "openapi.yaml"
PAYMENTS_MANIFEST = EXAMPLES / "payments" / "anvil.yaml"


def loaded(document: dict[str, Any]) -> LoadResult:
    return LoadResult(document=document, version="3.0.3")


def test_payments_without_a_manifest_sends_both_mutations_to_review() -> None:
    result = build(PAYMENTS, service_id="payments")
    doc = result.document
    assert doc.service.id == "payments"
    by_id = {op.id: op for op in doc.operations}
    assert len(by_id) >= 4
    refund = by_id["payments.refunds.create"]
    assert refund.cli.command == "payments refunds create"
    assert refund.mcp.tool_name == "payments_create_refund"
    assert refund.input.schema is not None and refund.input.schema["type"] == "object"
    assert refund.state == "review_required"
    assert refund.confirmation.required
    assert refund.retries.mode == "none"
    assert by_id["payments.capture.create"].state == "review_required"
    assert by_id["payments.customers.get"].state == "generated"
    assert by_id["payments.payments.get"].state == "generated"
    assert not [op for op in doc.operations if op.state == "approved"]
    unproven = [d.operation for d in result.diagnostics if d.code == "unproven_idempotency"]
    assert sorted(unproven) == ["payments.capture.create", "payments.refunds.create"]
    assert doc.service.auth.credential_profile == "oauth2_d8ad572d2fb1b3f6c47061c8a5b64a62"
    assert [d["code"] for d in doc.diagnostics] == [d.code for d in result.diagnostics]


def test_payments_with_its_manifest_approves_every_operation() -> None:
    result = build(PAYMENTS, manifest=PAYMENTS_MANIFEST)
    doc = result.document
    assert doc.service.id == "payments"
    assert doc.service.version.endswith("-prod")
    assert doc.service.owner == "payments-platform"
    assert {op.state for op in doc.operations} == {"approved"}
    refund = doc.operation("payments.refunds.create")
    assert refund is not None
    assert refund.input.schema is not None
    assert "idempotency_key" in refund.input.schema["required"]
    assert not [d for d in result.diagnostics if d.severity == "error"]


def test_the_parsed_manifest_is_handed_to_the_caller_only_when_there_is_one() -> None:
    seen: list[tuple[str, ...]] = []
    build(PAYMENTS, manifest=PAYMENTS_MANIFEST, on_manifest=lambda m: seen.append(tuple(e.key for e in m.operations)))
    build(PAYMENTS, service_id="payments", on_manifest=lambda m: seen.append(()))
    assert len(seen) == 1 and "createRefund" in seen[0]


def test_the_service_id_defaults_to_the_snake_cased_title() -> None:
    doc = {"openapi": "3.0.3", "info": {"title": "Payments API", "version": "7"}, "paths": {"/x": {"get": {}}}}
    result = compile_source(loaded(doc), None, service_id=None)
    assert result.document.service.id == "payments_api"
    assert result.document.service.version == "7"
    assert result.document.service.display_name == "Payments API"
    assert result.document.operations[0].id == "payments_api.x.list"


def test_an_invalid_service_id_is_reported_and_compilation_goes_on() -> None:
    doc = {"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {"/x": {"get": {}}}}
    for bad in ("../escape", "UPPER", "trailing-", "has space", "a" * 65):
        result = compile_source(loaded(doc), None, service_id=bad)
        assert [d.code for d in result.diagnostics] == ["cli/invalid_service_id"]
        assert result.document.operations


def test_a_spec_that_does_not_load_compiles_to_an_empty_document(tmp_path: Path) -> None:
    result = build(tmp_path / "missing.yaml", service_id="svc")
    assert result.document.operations == ()
    assert result.document.service.id == "svc"
    assert [d.code for d in result.diagnostics] == ["source/not_found"]


def test_two_compiles_give_the_same_bytes_and_contract_hash() -> None:
    first = build(PAYMENTS, manifest=PAYMENTS_MANIFEST).document
    second = build(PAYMENTS, manifest=PAYMENTS_MANIFEST).document
    assert json.dumps(document_json(first)) == json.dumps(document_json(second))
    assert contract_hash(first) == contract_hash(second)


def test_reordering_paths_never_changes_names() -> None:
    paths = {
        "/users": {"get": {}},
        "/v2/users": {"get": {}},
        "/orgs/{org}/users": {"get": {}, "post": {}},
        "/users/{id}": {"get": {}, "delete": {}},
    }
    base = {"openapi": "3.0.3", "info": {"title": "S", "version": "1"}}

    def names(order: list[str]) -> dict[tuple[str | None, str | None], str]:
        doc = {**base, "paths": {key: paths[key] for key in order}}
        ops = compile_source(loaded(doc), None, service_id="svc").document.operations
        return {(op.source_ref.path, op.source_ref.method): op.mcp.tool_name for op in ops}

    expected = names(list(paths))
    assert names(list(reversed(paths))) == expected
    assert len(set(expected.values())) == len(expected)


def test_capabilities_group_operations_by_first_tag() -> None:
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "S", "version": "1"},
        "paths": {"/a": {"get": {"tags": ["Billing Accounts"]}}, "/b": {"get": {}}},
    }
    result = compile_source(loaded(doc), None, service_id="svc").document
    assert [c.id for c in result.capabilities] == ["svc.b", "svc.billing_accounts"]
    billing = result.capabilities[1]
    assert (billing.display_name, billing.source) == ("Billing Accounts", "tag")
    assert billing.operation_ids == ("svc.a.list",)
    assert result.operations[0].capability_id == "svc.billing_accounts"


@pytest.mark.corpus
def test_every_corpus_spec_compiles_with_unique_names_and_valid_input_schemas(corpus: Path) -> None:
    for line in (corpus / "INDEX.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        name = line.split("\t")[0]
        result = build(corpus / name)
        ops = result.document.operations
        for surface in ("id", "tool", "command"):
            values = Counter(
                op.id if surface == "id" else op.mcp.tool_name if surface == "tool" else op.cli.command for op in ops
            )
            assert [v for v, n in values.items() if n > 1] == [], (name, surface)
        assert "internal_error" not in {d.code for d in result.diagnostics}, name
        for op in ops[:15]:
            assert op.input.schema is not None
            jsonschema.Draft202012Validator.check_schema(op.input.schema)


# --- operations that are not compiled into tools ---------------------------------------------------------

_WITH_OPTIONS = {
    "openapi": "3.0.3",
    "info": {"title": "Files", "version": "1"},
    "paths": {
        "/files/content": {
            "post": {"operationId": "postFilesContent", "responses": {"200": {"description": "ok"}}},
            "options": {"operationId": "optionsFilesContent", "responses": {"200": {"description": "ok"}}},
            "trace": {"responses": {"200": {"description": "ok"}}},
        }
    },
}


def test_every_operation_not_compiled_has_a_diagnostic_naming_its_method_and_why() -> None:
    result = compile_source(loaded(_WITH_OPTIONS), None, service_id="files")
    dropped = [d for d in result.diagnostics if d.code == "operation_not_compiled"]
    assert [d.pointer for d in dropped] == ["/paths/~1files~1content/options", "/paths/~1files~1content/trace"]
    assert "OPTIONS /files/content (optionsFilesContent)" in dropped[0].message
    assert dropped[0].severity == "warning"
    assert [op.source_ref.method for op in result.document.operations] == ["post"]


def test_a_manifest_entry_naming_an_operation_not_compiled_is_a_warning_not_an_abort(tmp_path: Path) -> None:
    spec = tmp_path / "files.json"
    spec.write_text(json.dumps(_WITH_OPTIONS), encoding="utf-8")
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(
        "service:\n  name: files\noperations:\n  optionsFilesContent:\n    state: approved\n"
        "  postFilesContent:\n    state: approved\n",
        encoding="utf-8",
    )
    result = build(spec, manifest=manifest)
    codes = [d.code for d in result.diagnostics]
    assert "manifest/unknown_operation" not in codes
    (warning,) = [d for d in result.diagnostics if d.code == "manifest/operation_not_compiled"]
    assert warning.severity == "warning" and "OPTIONS /files/content" in warning.message
    assert [op.state for op in result.document.operations] == ["approved"]


_FORM_PAYMENTS = """
swagger: "2.0"
info: {title: Telephony, version: "2010-04-01"}
host: api.telephony.example
schemes: [https]
paths:
  /Accounts/{AccountSid}/Calls/{CallSid}/Payments.json:
    post:
      operationId: CreatePayments
      consumes: [application/x-www-form-urlencoded]
      parameters:
        - {name: AccountSid, in: path, required: true, type: string}
        - {name: CallSid, in: path, required: true, type: string}
        - {name: IdempotencyKey, in: formData, required: true, type: string}
        - {name: StatusCallback, in: formData, required: true, type: string}
      responses: {"201": {description: Created}}
"""
_FORM_MANIFEST = """
service: {name: telephony}
operations:
  CreatePayments:
    idempotency: {strategy: required_request_key, key_location: body, field: IdempotencyKey}
    state: approved
"""


def test_a_swagger_form_data_key_carrier_is_served_instead_of_blocked(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(_FORM_PAYMENTS, encoding="utf-8")
    (tmp_path / "anvil.yaml").write_text(_FORM_MANIFEST, encoding="utf-8")
    result = build(tmp_path / "spec.yaml", manifest=tmp_path / "anvil.yaml")
    op = result.document.operations[0]
    assert op.input.body is not None and op.input.body.content_type == "application/x-www-form-urlencoded"
    assert (op.idempotency.mode, op.idempotency.mechanism, op.idempotency.key) == ("required", "body", "IdempotencyKey")
    assert op.state == "approved"
    assert not [d for d in result.diagnostics if d.code.startswith("unsupported_idempotency_carrier")]
    assert "idempotency_key" in (op.input.schema or {}).get("properties", {})  # the key is the safety input


_COMPOSITES: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Two", "version": "1"},
    "components": {
        "securitySchemes": {
            "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
            "machine": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://t.example/token"}}},
        }
    },
    "paths": {"/a": {"get": {"operationId": "a", "security": [{"key": [], "machine": []}], "responses": {}}}},
}


def test_an_approved_composite_that_cannot_be_modelled_stays_blocked_after_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "anvil.yaml").write_text("operations:\n  a:\n    state: approved\n", encoding="utf-8")
    (tmp_path / "spec.json").write_text(json.dumps(_COMPOSITES), encoding="utf-8")
    result = build(tmp_path / "spec.json", manifest=tmp_path / "anvil.yaml", service_id="two")
    op = result.document.operations[0]
    assert (op.state, op.auth.type) == ("blocked", "custom_header")
    found = [d for d in result.diagnostics if d.code == "auth/composite_unmodeled"]
    assert len(found) == 1 and "factor 'machine' is oauth2 client credentials" in found[0].message


def test_a_composite_bundle_recompiles_to_the_same_bytes_with_its_factors() -> None:
    result = build(VAULT_SPEC, manifest=VAULT_MANIFEST)
    first, second = result.document, build(VAULT_SPEC, manifest=VAULT_MANIFEST).document
    assert json.dumps(document_json(first)) == json.dumps(document_json(second))
    assert contract_hash(first) == contract_hash(second)
    served = {op.source_ref.operation_id: op for op in first.operations}
    assert {op_id: (op.state, op.auth.type) for op_id, op in served.items()} == {
        "createItem": ("approved", "composite"),
        "getItem": ("approved", "composite"),
        "deleteItem": ("approved", "composite"),
        "health": ("approved", "none"),
    }
    assert not [d for d in result.diagnostics if d.code.startswith("auth/")]


def _spec_with(schema: dict[str, Any], components: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Deep", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {"/things": {"get": {"operationId": "listThings", "responses": answer}}},
        "components": {"schemas": components or {}},
    }


def test_a_schema_nested_300_deep_is_a_coded_diagnostic_not_an_internal_error(tmp_path: Path) -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(300):
        schema = {"type": "object", "required": ["a"], "properties": {"a": schema}}
    (tmp_path / "deep.json").write_text(json.dumps(_spec_with(schema)), encoding="utf-8")
    result = build(tmp_path / "deep.json", service_id="deep")
    assert [d.code for d in result.diagnostics] == ["source/too_deep"]
    assert result.document.operations == ()


def test_a_chain_of_references_too_long_to_walk_is_a_coded_diagnostic(tmp_path: Path) -> None:
    # every file is shallow; followed, the 400 references nest past what the compiler's stages walk
    chain = {
        f"S{i}": {"type": "object", "properties": {"a": {"$ref": f"#/components/schemas/S{i + 1}"}}} for i in range(400)
    }
    chain["S400"] = {"type": "string"}
    (tmp_path / "chain.json").write_text(
        json.dumps(_spec_with({"$ref": "#/components/schemas/S0"}, chain)), encoding="utf-8"
    )
    result = build(tmp_path / "chain.json", service_id="chain")
    assert "internal_error" not in [d.code for d in result.diagnostics]
    assert [d.code for d in result.diagnostics if d.severity == "error"] == ["source/too_deep"]
    assert result.document.operations == ()


def test_a_pattern_the_gateway_checks_only_loosely_is_a_warning_naming_its_operation(tmp_path: Path) -> None:
    params = [
        {"name": name, "in": "query", "schema": {"type": "string", "pattern": pattern}}
        for name, pattern in (("a", "^(?![0-9]+$)[a-z0-9]+$"), ("b", "^a(?=b)"), ("c", "x" * 5000))
    ]
    spec = _spec_with({"type": "object"})
    spec["paths"]["/things"]["get"]["parameters"] = params
    spec["components"]["schemas"]["Shared"] = {"type": "string", "pattern": r"([ab])(,\1)*"}
    (tmp_path / "look.json").write_text(json.dumps(spec), encoding="utf-8")
    diagnostics = build(tmp_path / "look.json", service_id="look").diagnostics
    found = [d for d in diagnostics if d.code == "schema/pattern_loosened"]
    assert [(d.operation, d.severity, d.message.split(": pattern ")[1][:12]) for d in found] == [
        ("look.things.list", "warning", "'^a(?=b)' us"),
        ("look.things.list", "warning", "'xxxxxxxxxxx"),
        (None, "warning", "'([ab])(,\\\\1"),
    ]
    assert "it is not checked" in found[1].message and "a looser pattern is checked" in found[0].message


def test_a_compile_hands_on_its_operations_json_as_its_round_trip_wrote_it() -> None:
    result = build(PAYMENTS, manifest=PAYMENTS_MANIFEST, service_id="payments")
    assert result.operations_json is not None
    assert result.operations_json == to_json(result.document.operations)
    assert document_json(result.document, operations=result.operations_json) == document_json(result.document)
