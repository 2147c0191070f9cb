"""anvil certify: static assurance over a bundle's bytes, bound to the bundle hash (original-core §8.1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from anvil.air.codec import document_json
from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.compiler.validate import validate_operations
from anvil.proof.certify.lane import CERTIFICATION_FILE, CHECK_IDS, certify
from tests.proof.conftest import edit_json, operation


def _status(record: dict[str, Any]) -> dict[str, str]:
    return {check["id"]: check["status"] for check in record["checks"]}


def test_the_check_ids_are_the_public_registry() -> None:
    core = "contract.certification-core.static."
    assert CHECK_IDS == (
        "contract.air-valid",
        "contract.surfaces-agree",
        "contract.generated-bytes-agree",
        core + "no_unapproved_on_surface",
        core + "surface_matches_contract",
        core + "no_blocked_approved",
        core + "idempotency_carriers_supported",
        core + "tool_surface_within_disclosure_budget",
        core + "surface_at_rest_within_disclosure_budget",
        core + "ladder_preserves_approved_surface",
        core + "ladder_entry_names_unique",
        core + "ladder_reduces_surface",
        core + "ladder_mode_justified",
        core + "approved_operations_reachable",
        core + "discovery_names_distinct_from_tools",
        core + "proxies_refuse_as_direct_calls",
        "safety.confirmation-required",
        "safety.retry-basis-proven",
        "safety.no-retry-without-idempotency",
        "safety.secret-handling-coherent",
        "safety.auth-runtime-supported",
        "safety.auth-authority-coherent",
        "safety.effect-contracts-valid",
        "safety.effect-class-coherent",
        "safety.effect-follow-ups-callable",
        "safety.effect-surfaces-agree",
        "semantic.descriptions-present",
        "semantic.sibling-descriptions-distinct",
        "semantic.intent-routable",
        "semantic.no-blocked-disposition",
        "runtime.mocks-consistent",
        "runtime.deploy-present",
    )


@pytest.mark.parametrize("example", ["payments", "github", "vault"])
def test_certify_passes_both_examples_and_writes_a_record_bound_to_the_bundle_hash(
    example: str,
    request: pytest.FixtureRequest,
    copy_bundle: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle = copy_bundle(request.getfixturevalue(example))
    before = bundle_hash(bundle)
    assert main(["certify", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("PASSED — ")
    record = json.loads((bundle / CERTIFICATION_FILE).read_text(encoding="utf-8"))
    assert record["status"] == "passed"
    assert record["assuranceLevel"] == "static"
    assert record["assurance"]["engineStatus"] == "static_passed"
    assert record["bundleHash"] == before == bundle_hash(bundle)  # the record is outside the hash it binds to
    assert [check["id"] for check in record["checks"]] == list(CHECK_IDS)
    assert set(_status(record).values()) == {"passed"}
    assert {check["gate"] for check in record["checks"]} == {"contract", "safety", "semantic", "runtime"}


def test_the_record_is_deterministic_apart_from_its_timestamp(github: Path) -> None:
    first, second = certify(github), certify(github)
    assert first.pop("certifiedAt").endswith("Z")
    second.pop("certifiedAt")
    assert first == second


def test_the_json_flag_prints_the_record_it_wrote(
    payments: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(payments)
    assert main(["certify", str(bundle), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((bundle / CERTIFICATION_FILE).read_text(encoding="utf-8"))
    assert printed["serviceId"] == "payments"
    assert len(printed["assurance"]["attestation"]["surfaceSignatureDigest"]) == 64


def test_a_tool_removed_from_tools_json_fails_surface_agreement_and_generated_bytes(
    github: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(github)
    edit_json(bundle / "tools.json", lambda data: data["tools"].pop(0))
    assert main(["certify", str(bundle)]) == 1
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("FAILED — ")
    status = _status(json.loads((bundle / CERTIFICATION_FILE).read_text(encoding="utf-8")))
    assert status["contract.surfaces-agree"] == "failed"
    assert status["contract.generated-bytes-agree"] == "failed"
    assert status["contract.air-valid"] == "passed"


def test_a_tampered_byte_names_the_file_that_differs(github: Path, copy_bundle: Callable[[Path], Path]) -> None:
    bundle = copy_bundle(github)
    path = bundle / "skill" / "SKILL.md"
    path.write_bytes(path.read_bytes() + b" ")
    (bundle / "schemas" / "planted.schema.json").write_text("{}\n", encoding="utf-8")
    check = next(c for c in certify(bundle)["checks"] if c["id"] == "contract.generated-bytes-agree")
    assert check["status"] == "failed"
    assert "skill/SKILL.md" in check["detail"]
    assert "schemas/planted.schema.json" in check["detail"]


def test_an_unconfirmed_financial_write_fails_the_confirmation_safety_check(
    payments: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(payments)
    edit_json(
        bundle / "air.json",
        lambda air: operation(air, "payments.refunds.create")["confirmation"].update(required=False),
    )
    record = certify(bundle)
    assert record["status"] == "failed"
    assert _status(record)["safety.confirmation-required"] == "failed"
    failed = next(c for c in record["checks"] if c["id"] == "safety.confirmation-required")
    assert "payments.refunds.create" in failed["detail"]


def test_an_inverse_that_targets_a_read_fails_the_effect_contract_check(
    github: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(github)

    def point_inverse_at_a_read(air: dict[str, Any]) -> None:
        operation(air, "github.comments.create")["effect"]["inverse"]["operation"] = "github.comments.list"

    edit_json(bundle / "air.json", point_inverse_at_a_read)
    status = _status(certify(bundle))
    assert status["safety.effect-contracts-valid"] == "failed"


def test_a_reversible_class_without_an_inverse_fails_class_coherence(
    github: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(github)
    edit_json(bundle / "air.json", lambda air: operation(air, "github.comments.create")["effect"].pop("inverse"))
    status = _status(certify(bundle))
    assert status["safety.effect-class-coherent"] == "failed"


def test_an_undo_that_names_an_unapproved_operation_fails_follow_ups_callable(
    github: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(github)
    edit_json(bundle / "air.json", lambda air: operation(air, "github.comments.delete").update(state="review_required"))
    status = _status(certify(bundle))
    assert status["safety.effect-follow-ups-callable"] == "failed"
    assert status["contract.surfaces-agree"] == "failed"  # tools.json still lists the now-unapproved delete


def test_a_missing_store_contract_fails_deploy_present(payments: Path, copy_bundle: Callable[[Path], Path]) -> None:
    bundle = copy_bundle(payments)
    (bundle / "deploy" / "idempotency-store.json").unlink()
    check = next(c for c in certify(bundle)["checks"] if c["id"] == "runtime.deploy-present")
    assert (check["status"], check["detail"]) == ("failed", "deploy/idempotency-store.json is missing")


def test_a_directory_that_is_not_a_bundle_is_a_coded_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", str(tmp_path / "nothing")]) == 3
    assert "error[bundle/invalid]" in capsys.readouterr().err


def test_an_approved_operation_the_mock_cannot_route_fails_mocks_consistent(
    github: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(github)
    edit_json(bundle / "air.json", lambda air: operation(air, "github.pulls.list")["sourceRef"].pop("path"))
    check = next(c for c in certify(bundle)["checks"] if c["id"] == "runtime.mocks-consistent")
    assert (check["status"], check["detail"]) == ("failed", "mock gap: github.pulls.list (no mock route)")


def test_a_blocked_operations_finding_does_not_fail_air_valid_but_an_approved_ones_does(
    payments: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(payments)

    def carry_the_key_in_the_credential_header(air: dict[str, Any]) -> None:
        refund = operation(air, "payments.refunds.create")
        refund["idempotency"] = {
            "mode": "required",
            "mechanism": "header",
            "key": "Authorization",
            "keyDerivation": "client_supplied",
        }

    edit_json(bundle / "air.json", carry_the_key_in_the_credential_header)
    assert _status(certify(bundle))["contract.air-valid"] == "failed"
    # As the compiler leaves it: blocked by validation, with its note and retries off.
    doc = read_bundle(bundle)
    ops, _ = validate_operations(doc.operations)
    (bundle / "air.json").write_text(json.dumps(document_json(replace(doc, operations=ops)), indent=2) + "\n")
    assert read_bundle(bundle).operation("payments.refunds.create").state == "blocked"  # type: ignore[union-attr]
    assert _status(certify(bundle))["contract.air-valid"] == "passed"


def test_an_item_route_keyed_by_a_query_beside_the_plain_one_is_not_reported_as_shadowed(tmp_path: Path) -> None:
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
    item = {"parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Beta", "version": "1"},
        "servers": [{"url": "https://beta.example.com"}],
        "paths": {
            "/responses/{id}": {**item, "get": {"operationId": "getResponse", "responses": ok}},
            "/responses/{id}?beta=true": {**item, "get": {"operationId": "getBetaResponse", "responses": ok}},
        },
    }
    source, manifest, bundle = tmp_path / "beta.json", tmp_path / "anvil.yaml", tmp_path / "beta"
    source.write_text(json.dumps(spec), encoding="utf-8")
    assert main(["init", str(source), "--service", "beta", "--out", str(manifest), "--approve", "all"]) == 0
    assert main(["compile", str(source), "--manifest", str(manifest), "--out", str(bundle)]) == 0
    check = next(c for c in certify(bundle)["checks"] if c["id"] == "runtime.mocks-consistent")
    assert check["status"] == "passed", check["detail"]


def test_a_composite_whose_factor_the_runtime_cannot_send_fails_auth_runtime_supported(
    vault: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(vault)
    edit_json(
        bundle / "air.json", lambda air: operation(air, "vault.items.get")["auth"]["factors"][1].update(type="mtls")
    )
    record = certify(bundle)
    runtime = next(c for c in record["checks"] if c["id"] == "safety.auth-runtime-supported")
    assert (
        runtime["status"] == "failed"
        and "vault.items.get (composite (client_id + secret + tenant_key))" in (runtime["detail"])
    )
    coherent = next(c for c in record["checks"] if c["id"] == "safety.auth-authority-coherent")
    assert coherent["status"] == "failed" and "composite factor 2 (mtls)" in coherent["detail"]


def test_a_composite_without_factors_fails_both_auth_checks(vault: Path, copy_bundle: Callable[[Path], Path]) -> None:
    bundle = copy_bundle(vault)
    edit_json(bundle / "air.json", lambda air: operation(air, "vault.items.get")["auth"].pop("factors"))
    status = _status(certify(bundle))
    assert (status["safety.auth-runtime-supported"], status["safety.auth-authority-coherent"]) == ("failed", "failed")
