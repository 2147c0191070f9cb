"""``anvil deploy ledger`` output: the --json report, --tfvars and the text, against the original's goldens."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.container import runtime_artifact_hash
from anvil.bundle.hash import bundle_files, bundle_hash
from anvil.cli import main

GOLDEN = Path(__file__).resolve().parent / "golden"
HEX64 = re.compile(r"[a-f0-9]{64}")
SHARED = ["--project", "acme-prod-1", "--database", "bank-shared-ledger", "--database-mode", "shared"]
DEDICATED = ["--project", "acme-prod-1", "--database", "payments-ledger", "--database-mode", "dedicated"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["deploy", "ledger", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _shape(value: Any) -> Any:
    """Key names and nesting, in order; lists by their first element."""
    if isinstance(value, dict):
        return [(key, _shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def _golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    return data


def test_the_json_report_has_the_originals_keys_and_every_value_not_bound_to_bundle_bytes(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path
) -> None:
    status, out, err = _run(capsys, str(payments_bundle), *SHARED, "--ttl-seconds", "3600", "--json")
    assert (status, err) == (0, "")
    report = json.loads(out)
    golden = _golden("anvil-deploy-ledger.payments.json")
    evidence = report.pop("evidence")  # ours, after the original's keys: the proof lanes' verdict (original-core §8)
    assert evidence["bundleHash"] == report["bundleHash"]
    assert evidence["storeContract"]["state"] == "fresh"
    assert evidence["writesEnabled"] == []  # no lane has run on this fresh compile
    assert _shape(report) == _shape(golden)
    for key in ("writes", "liveReadiness", "guarantees", "staticWiring", "cloudCallsMade", "serviceId"):
        assert report[key] == golden[key], key
    bound = ("bundleHash", "deploymentArtifactHash", "runtimeUri")
    assert {k: v for k, v in report["store"].items() if k not in bound} == {
        k: v for k, v in golden["store"].items() if k not in bound
    }
    assert report["contract"] == {
        **golden["contract"],
        "path": str(payments_bundle.resolve() / golden["contract"]["path"].split("/", 1)[1]),
    }
    assert report["contract"]["digest"] == "669970374961c8e80e4eacbdfd6eabff45043ab3a2e92f2e4131806bea2a148f"
    assert report["store"]["runtimeUri"] == "firestore://acme-prod-1/bank-shared-ledger/payments"
    values = report["deploymentInput"]["values"]
    assert values["bundleHash"] == report["bundleHash"] == bundle_hash(payments_bundle)
    assert values["runtimeArtifactHash"] == report["store"]["deploymentArtifactHash"]
    assert values["runtimeArtifactHash"] == runtime_artifact_hash(bundle_files(payments_bundle))
    assert values["storeContractDigest"] == report["contract"]["digest"]
    assert {k: v for k, v in values.items() if k not in ("bundleHash", "runtimeArtifactHash")} == {
        k: v for k, v in golden["deploymentInput"]["values"].items() if k not in ("bundleHash", "runtimeArtifactHash")
    }
    assert HEX64.fullmatch(report["deploymentInput"]["digest"])
    assert report["deploymentInput"]["detail"] == golden["deploymentInput"]["detail"]


def test_tfvars_are_the_reports_terraform_inputs_with_the_originals_keys_in_order(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path
) -> None:
    _, out, _ = _run(capsys, str(payments_bundle), *SHARED, "--ttl-seconds", "3600", "--json")
    report = json.loads(out)
    status, tfvars_text, err = _run(capsys, str(payments_bundle), *SHARED, "--ttl-seconds", "3600", "--tfvars")
    assert (status, err) == (0, "")
    tfvars = json.loads(tfvars_text)
    assert tfvars == report["terraformInputs"]
    assert list(tfvars) == list(_golden("anvil-deploy-ledger.payments.tfvars.json"))
    assert "project_id" not in tfvars
    assert tfvars["anvil_bundle_hash"] == report["bundleHash"]
    assert tfvars["anvil_ledger_input_digest"] == report["deploymentInput"]["digest"]
    assert (tfvars["ledger_location"], tfvars["ledger_result_ttl_seconds"]) == (None, 3600)
    assert '"ledger_database_mode": "shared"' in tfvars_text


def test_dedicated_mode_binds_the_location_and_prints_the_location_check(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path
) -> None:
    _, out, _ = _run(capsys, str(payments_bundle), *DEDICATED, "--location", "nam5", "--tfvars")
    tfvars = json.loads(out)
    assert (tfvars["ledger_database_mode"], tfvars["ledger_location"]) == ("dedicated", "nam5")
    _, shared_out, _ = _run(capsys, str(payments_bundle), *SHARED, "--tfvars")
    assert json.loads(shared_out)["anvil_ledger_input_digest"] != tfvars["anvil_ledger_input_digest"]
    status, text, err = _run(capsys, str(payments_bundle), *DEDICATED, "--location", "nam5")
    assert (status, err) == (0, "")
    for line in (
        "  provisioning mode: dedicated",
        "  location: nam5 — immutable after first creation",
        "  decommission: dedicated database + both field policies use ABANDON; runtime IAM/config detaches while "
        "evidence and policy remain",
        "  reintroduction: import the preserved database and both field policies into reviewed Terraform state "
        "before apply",
        "  Before first apply, verify the immutable location is offered: gcloud firestore locations list --project "
        "'acme-prod-1'",
        "  capacity: 1 per-capability database quota slots; default single-field indexes disabled",
    ):
        assert line in text.splitlines()


def test_the_shared_text_carries_the_seeds_sections_and_the_proof_boundary(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path
) -> None:
    status, text, err = _run(capsys, str(payments_bundle), *SHARED)
    assert (status, err) == (0, "")
    lines = text.splitlines()
    for line in (
        "Idempotency write plan — payments",
        "Managed store — REQUIRED",
        "  backend: Google Cloud Firestore Native (no Firebase client SDK)",
        "  database: bank-shared-ledger",
        "  provisioning mode: shared",
        "  collection group: anvil_idempotency_df384ae97c77ad30",
        "  location: owned by the existing shared database; omit --location (it is accepted only for dedicated mode)",
        "  ANVIL_LEDGER: firestore://acme-prod-1/bank-shared-ledger/payments",
        "  decommission: both field policies use ABANDON; runtime IAM/config detaches and the shared database "
        "remains platform-owned",
        "  reintroduction: import only both preserved field policies; never import the shared database into "
        "capability state",
        "Static wiring — FRESH",
        "Live readiness — UNVERIFIED",
        '    curl --fail --silent --show-error "$ANVIL_SERVICE_URL/readyz"',
        "No cloud call was made.",
    ):
        assert line in lines, line
    for fragment in (
        "payments.refunds.create",
        "payments.capture.create",
        "This is not exactly-once execution",
        "AlloyDB or Spanner require an explicitly registered backend",
        "replay result ceiling: 819200 serialized bytes",
        "cross-caller raw-key reuse conflicts before upstream",
        "Cloud Build must submit with --project",
        "matching digest binds the plan, but is not an apply receipt",
        "0 per-capability",
        "Google Cloud console access does not enforce",
        "stays in_progress for deliberate reconciliation",
    ):
        assert fragment in text, fragment
    assert "immutable after first creation" not in text


def test_without_coordinates_the_uri_and_digest_stay_unresolved(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path
) -> None:
    _, text, _ = _run(capsys, str(payments_bundle))
    assert "(pass --project and --database to resolve)" in text
    assert "reviewed input digest: unresolved" in text
    _, out, _ = _run(capsys, str(payments_bundle), "--json")
    report = json.loads(out)
    assert report["deploymentInput"] == {
        "state": "unresolved",
        "digest": None,
        "detail": report["deploymentInput"]["detail"],
    }
    assert report["store"]["runtimeUri"] is None and report["store"]["project"] is None
    assert report["terraformInputs"] == {
        "ledger_database_mode": "shared",
        "ledger_location": None,
        "ledger_result_ttl_seconds": 604800,
    }
    assert report["guarantees"]["completedReplayRetentionSeconds"] == 604800
    assert (report["guarantees"]["exactlyOnce"], report["cloudCallsMade"]) == (False, False)


def test_tfvars_for_a_bundle_that_needs_no_store_prints_empty_json_and_says_why_on_stderr(
    capsys: pytest.CaptureFixture[str], none_bundle: Path, payments_bundle: Path
) -> None:
    status, out, err = _run(capsys, str(none_bundle), *SHARED, "--tfvars")
    assert (status, json.loads(out)) == (0, {})
    assert err.startswith("note: no approved write of this bundle has idempotency mode `required`")
    assert "needs no managed ledger store" in err
    status, out, err = _run(capsys, str(payments_bundle), *SHARED, "--tfvars")
    assert (status, err) == (0, "") and json.loads(out)["ledger_database_id"] == "bank-shared-ledger"


def test_the_none_variant_reports_no_managed_store(capsys: pytest.CaptureFixture[str], none_bundle: Path) -> None:
    status, text, err = _run(capsys, str(none_bundle))
    assert (status, err) == (0, "")
    assert "Managed store — NOT REQUIRED" in text and "payments.capture.create" in text
    assert "payments.refunds.create" not in text and "No cloud call was made." in text
    _, out, _ = _run(capsys, str(none_bundle), *SHARED, "--tfvars")
    assert out == "{}\n"
    _, out, _ = _run(capsys, str(none_bundle), "--json")
    report = json.loads(out)
    assert list(report) == [
        "schemaVersion",
        "serviceId",
        "contract",
        "writes",
        "staticWiring",
        "liveReadiness",
        "cloudCallsMade",
        "evidence",
    ]
    assert "digest" not in report["contract"] and report["contract"]["backend"] == "none"
    assert [row["managedStoreRequired"] for row in report["writes"]] == [False]
    assert report["liveReadiness"] == {
        "state": "not-required",
        "detail": "No approved mutation requires the managed idempotency store.",
    }


def test_a_path_to_air_json_is_its_bundle(capsys: pytest.CaptureFixture[str], payments_bundle: Path) -> None:
    status, text, _ = _run(capsys, str(payments_bundle / "air.json"))
    assert status == 0 and text.startswith("Idempotency write plan — payments\n")


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        ("no_air", "deploy/no_air"),
        ("contract_deleted", "deploy/contract_missing"),
        ("contract_json", "deploy/contract_corrupt"),
        ("contract_schema", "deploy/contract_corrupt"),
        ("main_tf_byte", "deploy/contract_stale"),
        ("runtime_byte", "deploy/contract_stale"),
        ("contract_byte", "deploy/contract_stale"),
        ("air_invalid", "deploy/air_invalid"),
        ("air_edit", "deploy/contract_stale"),
        ("symlink", "deploy/bundle_symlink"),
    ],
)
def test_a_damaged_bundle_exits_1_with_its_own_code_and_nothing_on_stdout(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path, tmp_path: Path, damage: str, code: str
) -> None:
    contract = payments_bundle / "deploy/idempotency-store.json"
    if damage == "no_air":
        (payments_bundle / "air.json").unlink()
    elif damage == "contract_deleted":
        contract.unlink()
    elif damage == "contract_json":
        contract.write_bytes(b"{not json")
    elif damage == "contract_schema":
        contract.write_bytes(b'{"hello": "world"}')
    elif damage == "main_tf_byte":
        main_tf = payments_bundle / "deploy/terraform/main.tf"
        main_tf.write_bytes(main_tf.read_bytes().replace(b'"600s"', b'"601s"'))
    elif damage == "runtime_byte":
        manifest = payments_bundle / "runtime/operations.manifest.json"
        manifest.write_bytes(manifest.read_bytes().replace(b'"required"', b'"requirex"', 1))
    elif damage == "contract_byte":
        contract.write_bytes(contract.read_bytes().replace(b"604800", b"604801"))
    elif damage == "air_edit":
        air = payments_bundle / "air.json"
        air.write_bytes(air.read_bytes().replace(b'"displayName": "Payments API"', b'"displayName": "Payments APJ"', 1))
    elif damage == "air_invalid":
        (payments_bundle / "air.json").write_bytes(b'{"schemaVersion": "nope"}')
    else:
        shutil.copy(payments_bundle / "tools.json", tmp_path / "tools.json")
        (payments_bundle / "tools.json").unlink()
        os.symlink(tmp_path / "tools.json", payments_bundle / "tools.json")
    status, out, err = _run(capsys, str(payments_bundle), *SHARED, "--json")
    assert (status, out) == (1, "")
    assert err.startswith(f"error[{code}]")
    if damage == "main_tf_byte":
        assert "deploy/terraform/main.tf: bytes differ from deterministic projection" in err
    if damage == "air_edit":
        assert "skill/SKILL.md: bytes differ from deterministic projection" in err
    if damage == "runtime_byte":
        assert "runtime/operations.manifest.json: bytes differ from deterministic projection" in err


def test_deploy_ledger_never_writes_the_bundle(capsys: pytest.CaptureFixture[str], payments_bundle: Path) -> None:
    before = {p: p.read_bytes() for p in payments_bundle.rglob("*") if p.is_file()}
    for extra in ([], ["--json"], ["--tfvars"]):
        _run(capsys, str(payments_bundle), *SHARED, *extra)
    assert {p: p.read_bytes() for p in payments_bundle.rglob("*") if p.is_file()} == before


def test_the_originals_own_payments_example_compiles_to_its_store_contract_byte_for_byte(tmp_path: Path) -> None:
    from anvil.air.canonical import sha256_hex
    from anvil.cli.compile import compile_bundle

    source = GOLDEN / "original-payments"
    outcome = compile_bundle(
        source / "openapi.yaml", out=tmp_path / "b", manifest=source / "anvil.yaml", service_id="payments", root=source
    )
    assert outcome.bundle_hash is not None
    contract = (tmp_path / "b/deploy/idempotency-store.json").read_bytes()
    assert sha256_hex(contract) == "669970374961c8e80e4eacbdfd6eabff45043ab3a2e92f2e4131806bea2a148f"
    assert contract.count(b"\n") == 94
