"""``deploy/README.md``: the proof boundary, and import commands carrying the real collection group."""

from __future__ import annotations

from dataclasses import replace

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation

PATH = "deploy/README.md"


def test_the_ledger_runbook_states_the_obligations_and_the_real_coordinates(payments_doc: Document) -> None:
    text = emit_bundle(payments_doc, Generation(deployment_namespace="wso2-prod-payments-v1"))[PATH].decode()
    for fragment in (
        "field-masked, non-mutating data-plane lookup",
        "In-progress reservations never carry a TTL",
        'default `ledger_database_mode = "shared"`',
        "Capability Terraform must not create or import that",
        "Firestore IAM conditions do **not** isolate",
        "Google Cloud console access",
        "Actual data deletion is a",
        "import google_firestore_field.ledger_result_expiry",
        "gcloud builds submit --project YOUR_PROJECT",
        "It is plan evidence, not an apply receipt",
        "External input cannot shadow runtime safety controls",
        "anvil deploy ledger . --project YOUR_PROJECT --database YOUR_DATABASE --tfvars",
        "Proof gates stay separate",
        "Conformance never performs a live mutation",
        "_ANVIL_ENV=prod",
        "That value also selects the outbound credential",
        "collectionGroups/anvil_idempotency_92ebf664dcd91fcf/fields/*",
        "collectionGroups/anvil_idempotency_92ebf664dcd91fcf/fields/expires_at",
        "import 'google_firestore_database.ledger[0]'",
        "firestore.googleapis.com",
    ):
        assert fragment in text, fragment


def test_without_a_ledger_the_runbook_says_so_and_names_no_ledger_variable(payments_doc: Document) -> None:
    ops = tuple(
        replace(op, state="blocked") if op.id == "payments.refunds.create" else op for op in payments_doc.operations
    )
    text = emit_bundle(replace(payments_doc, operations=ops))[PATH].decode()
    assert "No managed ledger is required by this surface" in text
    assert "firestore, secretmanager" not in text and "ledger_database_id" not in text
    assert "Proof gates stay separate" in text


def test_the_credential_prefix_follows_the_runtime_convention(payments_doc: Document) -> None:
    doc = replace(payments_doc, service=replace(payments_doc.service, environment="staging-eu"))
    text = emit_bundle(doc)[PATH].decode()
    assert "`ANVIL_STAGING_EU_*`" in text and "_ANVIL_ENV=staging-eu" in text
