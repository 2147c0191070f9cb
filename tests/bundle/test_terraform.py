"""The generated Terraform, parsed with python-hcl2 and checked with `terraform fmt`, in both variants."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import hcl2
import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation
from anvil.bundle.terraform import COMPILER_OWNED_ENV, FIXED_RUNTIME_ENV
from tests.conftest import missing

MAIN, VARIABLES = "deploy/terraform/main.tf", "deploy/terraform/variables.tf"
_OPTIONS = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=False, with_comments=False)
LEDGER_VARIABLES = {
    "anvil_bundle_hash",
    "anvil_expected_project_id",
    "anvil_ledger_input_digest",
    "ledger_database_mode",
    "ledger_database_id",
    "ledger_location",
}


def _none_doc(doc: Document) -> Document:
    return replace(
        doc,
        operations=tuple(
            replace(op, state="blocked") if op.id == "payments.refunds.create" else op for op in doc.operations
        ),
    )


def _parse(text: bytes) -> dict[str, Any]:
    parsed: dict[str, Any] = hcl2.loads(text.decode("utf-8"), serialization_options=_OPTIONS)
    return parsed


def _resources(tf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"type.name": body}`` over every resource block."""
    out: dict[str, dict[str, Any]] = {}
    for block in tf.get("resource", []):
        for rtype, named in block.items():
            for name, body in named.items():
                out[f"{rtype}.{name}"] = body
    return out


def _variables(tf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: body for block in tf["variable"] for name, body in block.items()}


def _outputs(tf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: body for block in tf.get("output", []) for name, body in block.items()}


def _container(service: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = service["template"][0]["containers"][0]
    return container


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {entry["name"]: entry["value"] for entry in container["env"]}


def test_the_ledger_variant_wires_the_firestore_resources(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    tf = _parse(files[MAIN])
    resources = _resources(tf)
    assert tf["terraform"][0]["required_providers"][0]["google"] == {
        "source": "hashicorp/google",
        "version": ">= 7.33.0, < 8.0.0",
    }
    assert tf["terraform"][0]["backend"][0] == {"gcs": {}}

    database = resources["google_firestore_database.ledger"]
    assert database["count"] == '${var.ledger_database_mode == "dedicated" ? 1 : 0}'
    assert (database["name"], database["location_id"]) == ("${var.ledger_database_id}", "${var.ledger_location}")
    assert (database["type"], database["delete_protection_state"], database["deletion_policy"]) == (
        "FIRESTORE_NATIVE",
        "DELETE_PROTECTION_ENABLED",
        "ABANDON",
    )
    lifecycle = database["lifecycle"][0]
    assert lifecycle["prevent_destroy"] is True
    assert [p["condition"] for p in lifecycle["precondition"]] == [
        "${var.ledger_location != null}",
        '${var.ledger_database_id != "(default)"}',
    ]

    wildcard = resources["google_firestore_field.ledger_no_single_field_indexes"]
    expiry = resources["google_firestore_field.ledger_result_expiry"]
    for field in (wildcard, expiry):
        assert field["collection"] == "anvil_idempotency_df384ae97c77ad30"
        assert field["database"] == "${local.ledger_database_id}"
        assert field["deletion_policy"] == "ABANDON"
        assert field["index_config"] == [{}]
    assert (wildcard["field"], expiry["field"]) == ("*", "expires_at")
    assert "ttl_config" not in wildcard and expiry["ttl_config"] == [{}]
    assert expiry["depends_on"] == ["${google_firestore_field.ledger_no_single_field_indexes}"]

    iam = resources["google_project_iam_member.runtime_ledger"]
    assert iam["role"] == "roles/datastore.user"
    assert iam["condition"][0] == {
        "title": "anvil-payments-ledger-only",
        "expression": "resource.name == 'projects/${var.project_id}/databases/${local.ledger_database_id}'",
    }
    roles = sorted(body["role"] for key, body in resources.items() if key.startswith("google_project_iam_member."))
    assert roles == [
        "roles/cloudtrace.agent",
        "roles/datastore.user",
        "roles/logging.logWriter",
        "roles/monitoring.metricWriter",
    ]
    assert not any("artifact_registry" in key for key in resources)


def test_cloud_run_gates_startup_on_readyz_with_no_liveness_probe_and_depends_on_the_ledger(
    payments_doc: Document,
) -> None:
    service = _resources(_parse(emit_bundle(payments_doc)[MAIN]))["google_cloud_run_v2_service.tools"]
    assert service["name"] == "payments-tools"
    template = service["template"][0]
    assert template["timeout"] == "600s"
    container = _container(service)
    probe = container["startup_probe"][0]
    assert (probe["initial_delay_seconds"], probe["timeout_seconds"], probe["period_seconds"]) == (0, 12, 15)
    assert probe["failure_threshold"] == 16
    assert probe["http_get"][0] == {"path": "/readyz", "port": 8080}
    assert "liveness_probe" not in container
    assert service["depends_on"] == [
        "${google_project_iam_member.runtime_ledger}",
        "${google_firestore_field.ledger_result_expiry}",
    ]
    env = _env(container)
    assert list(env) == [
        "ANVIL_SERVICE_ID", "ANVIL_ENV", "ANVIL_ALLOWED_HOSTS", "ANVIL_AUTH_PROFILE", "ANVIL_OTEL_EXPORTER",
        "ANVIL_LOG_FORMAT", "ANVIL_METRICS_AUTH",
        "ANVIL_LEDGER", "ANVIL_LEDGER_RESULT_TTL_SECONDS", "ANVIL_UPSTREAM_TIMEOUT_MS", "ANVIL_CREDENTIALS",
        "ANVIL_SECRET_PROJECT",
    ]  # fmt: skip
    assert set(env) == set(COMPILER_OWNED_ENV)
    assert env["ANVIL_SERVICE_ID"] == "payments"
    # traced to Cloud Trace as the runtime identity, JSON logs for Cloud Logging, /metrics behind the bearer
    observed = (env["ANVIL_OTEL_EXPORTER"], env["ANVIL_LOG_FORMAT"], env["ANVIL_METRICS_AUTH"])
    assert observed == ("cloud_trace", "json", "on")
    assert env["ANVIL_ALLOWED_HOSTS"] == "payments.internal.example.com"
    assert env["ANVIL_LEDGER"] == "firestore://${var.project_id}/${local.ledger_database_id}/payments"
    assert env["ANVIL_LEDGER_RESULT_TTL_SECONDS"] == "${tostring(var.ledger_result_ttl_seconds)}"
    dynamic = [block["env"] for block in container["dynamic"]]
    assert [block["for_each"] for block in dynamic] == ["${var.env}", "${var.credential_secret_refs}"]
    secret = dynamic[1]["content"][0]["value_source"][0]["secret_key_ref"][0]
    assert secret["secret"] == "projects/${coalesce(var.secret_project, var.project_id)}/secrets/${env.value}"


def test_the_plan_refuses_shadowing_a_wrong_project_and_a_digest_mismatch(payments_doc: Document) -> None:
    main_tf = emit_bundle(payments_doc)[MAIN]
    service = _resources(_parse(main_tf))["google_cloud_run_v2_service.tools"]
    messages = [p["error_message"] for p in service["lifecycle"][0]["precondition"]]
    assert messages[:3] == [
        "var.env may not redefine compiler-owned ANVIL runtime settings.",
        "credential_secret_refs may not redefine compiler-owned ANVIL runtime settings.",
        "One runtime environment variable may not be supplied by both var.env and credential_secret_refs.",
    ]
    conditions = [p["condition"] for p in service["lifecycle"][0]["precondition"]]
    assert conditions[3] == "${var.anvil_expected_project_id == var.project_id}"
    assert conditions[4] == "${var.anvil_ledger_input_digest == local.ledger_deployment_input_digest}"
    assert "firestore://${var.project_id}/(default)" not in main_tf.decode()
    locals_ = _parse(main_tf)["locals"][0]
    assert locals_["anvil_compiler_owned_runtime_env_names"] == f"${{toset({json.dumps(list(COMPILER_OWNED_ENV))})}}"
    fixed = json.dumps(list(FIXED_RUNTIME_ENV))
    assert {
        "ANVIL_DERIVED_KEY_WINDOW_SECONDS",
        "ANVIL_LEDGER_BINDING_TTL_SECONDS",
        "ANVIL_LEDGER_LOCK_TIMEOUT_MS",
    } <= set(FIXED_RUNTIME_ENV)
    assert locals_["anvil_fixed_runtime_env_names"].replace(", ", ",") == f"${{toset({fixed})}}".replace(", ", ",")
    assert locals_["anvil_fixed_runtime_env_prefixes"] == ["ANVIL_ALLOWED_HOSTS_"]
    assert conditions[:2] == [
        "${length(local.anvil_env_shadowing) == 0}",
        "${length(local.anvil_secret_refs_shadowing) == 0}",
    ]
    assert "sha256(jsonencode({bundle_hash = var.anvil_bundle_hash" in locals_["ledger_deployment_input_digest"]
    assert 'namespace = "payments"' in locals_["ledger_deployment_input_digest"]


def test_the_idempotency_store_output_mirrors_the_report(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    output = _outputs(_parse(files[MAIN]))["idempotency_store"]
    assert "not an apply receipt" in output["description"]
    value = output["value"]
    assert sorted(value) == sorted(
        [
            "backend", "bundle_hash", "collection_group", "database", "database_mode", "deployment_artifact_hash",
            "expected_project_id", "input_digest", "location", "namespace", "project_id", "result_ttl_seconds",
            "runtime_env", "runtime_uri", "store_contract_digest",
        ]
    )  # fmt: skip
    assert value["runtime_uri"] == "firestore://${var.project_id}/${local.ledger_database_id}/payments"
    from anvil.air.canonical import sha256_hex

    assert value["store_contract_digest"] == sha256_hex(files["deploy/idempotency-store.json"])


def test_the_ledger_variables_validate_their_inputs(payments_doc: Document) -> None:
    variables = _variables(_parse(emit_bundle(payments_doc)[VARIABLES]))
    assert LEDGER_VARIABLES <= set(variables)
    assert variables["ledger_database_mode"]["default"] == "shared"
    assert variables["ledger_location"]["default"] is None and variables["ledger_location"]["nullable"] is True
    assert "default" not in variables["ledger_database_id"] and "default" not in variables["project_id"]
    assert variables["ledger_result_ttl_seconds"]["default"] == 604800
    assert variables["upstream_timeout_ms"]["default"] == 20000
    assert "<= 30000" in variables["upstream_timeout_ms"]["validation"][0]["condition"]
    assert (variables["anvil_env"]["default"], variables["min_instances"]["default"]) == ("prod", 1)
    assert "(default)" in variables["ledger_database_id"]["validation"][0]["condition"]


def test_without_a_ledger_the_projection_omits_every_ledger_resource(payments_doc: Document) -> None:
    files = emit_bundle(_none_doc(payments_doc))
    main_tf, variables_tf = files[MAIN].decode(), files[VARIABLES].decode()
    tf = _parse(files[MAIN])
    resources = _resources(tf)
    assert not any("firestore" in key or key.endswith("runtime_ledger") for key in resources)
    service = resources["google_cloud_run_v2_service.tools"]
    container = _container(service)
    assert _env(container)["ANVIL_LEDGER"] == ""
    assert "startup_probe" not in container and "liveness_probe" not in container and "depends_on" not in service
    assert len(service["lifecycle"][0]["precondition"]) == 3
    assert "idempotency_store" not in _outputs(tf)
    assert not LEDGER_VARIABLES & set(_variables(_parse(files[VARIABLES])))
    assert "roles/datastore.user" not in main_tf
    for name in LEDGER_VARIABLES:
        assert name not in main_tf and name not in variables_tf
    assert "ledger_result_ttl_seconds" in variables_tf


def test_a_deployment_namespace_keys_names_and_state_but_not_the_service_id(payments_doc: Document) -> None:
    prod = emit_bundle(payments_doc, Generation(deployment_namespace="wso2-prod-payments-v1"))
    test = emit_bundle(payments_doc, Generation(deployment_namespace="wso2-test-payments-v1"))
    main_tf = prod[MAIN].decode()
    assert 'name     = "wso2-prod-payments-v1-tools"' in main_tf
    assert 'value = "payments"' in main_tf
    assert "anvil_idempotency_92ebf664dcd91fcf" in main_tf
    assert '/wso2-prod-payments-v1"' in main_tf
    cloudbuild = prod["deploy/cloudbuild.yaml"].decode()
    assert "wso2-prod-payments-v1-tools:" in cloudbuild and "anvil/wso2-prod-payments-v1-tools" in cloudbuild
    assert "anvil_idempotency_3864779cdf4e1f1f" in test[MAIN].decode()
    assert prod["deploy/cloudbuild.yaml"] != test["deploy/cloudbuild.yaml"]
    assert prod["air.json"] == test["air.json"]


def _terraform() -> str | None:
    binary = shutil.which("terraform")
    if binary is None:
        missing("no terraform binary on PATH (the machine image provides one)")
    return binary


@pytest.mark.parametrize("variant", ["ledger", "none", "namespaced"])
def test_the_generated_terraform_passes_terraform_fmt_check(
    payments_doc: Document, tmp_path: Path, variant: str
) -> None:
    binary = _terraform()
    assert binary is not None
    doc = _none_doc(payments_doc) if variant == "none" else payments_doc
    generation = Generation(
        deployment_namespace="a-very-long-deployment-namespace-for-payments" if variant == "namespaced" else None
    )
    files = emit_bundle(doc, generation)
    for rel in (MAIN, VARIABLES):
        (tmp_path / Path(rel).name).write_bytes(files[rel])
    done = subprocess.run(
        [binary, "fmt", "-check", "-diff", str(tmp_path)],
        capture_output=True,
        text=True,
        env={"TF_CLI_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin", "CHECKPOINT_DISABLE": "1"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_deployed_host_allowlist_admits_every_server_an_approved_operation_is_sent_to(
    payments_doc: Document,
) -> None:
    from anvil.air.model import Server

    ops = tuple(
        replace(op, servers=(Server(url="https://upload.payments.example/v1"),)) if op.id.endswith(".create") else op
        for op in payments_doc.operations
    )
    tf = _parse(emit_bundle(replace(payments_doc, operations=ops), Generation())[MAIN])
    env = _env(_container(_resources(tf)["google_cloud_run_v2_service.tools"]))
    assert env["ANVIL_ALLOWED_HOSTS"] == "payments.internal.example.com,upload.payments.example"
