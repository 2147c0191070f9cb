from __future__ import annotations

import json
from dataclasses import replace

from anvil.air.model import Claim, Document, Evidence
from anvil.bundle.catalog import catalog_json, evidence_confidence, short_description
from anvil.bundle.emit import emit_bundle


def test_catalog_carries_the_hook_facts_of_every_operation(payments_doc: Document) -> None:
    catalog = catalog_json(payments_doc)
    assert catalog["service"] == {"id": "payments", "version": "2026-07-09-prod", "displayName": "Payments API"}
    refund = next(op for op in catalog["operations"] if op["id"] == "payments.refunds.create")
    assert refund["idempotencyKeyRequired"] is True
    assert refund["idempotencyKeyInput"] == "idempotency_key"
    assert refund["confirmationInput"] == "confirm"
    assert refund["confirmationReason"] == "This operation creates an irreversible financial mutation."
    assert refund["retrySafe"] is True and refund["humanApproval"] is False
    assert refund["auth"] == {"type": "oauth2_client_credentials", "scopes": ["payments.write"]}
    assert refund["mcpTool"] == "payments_create_refund" and refund["cli"] == "payments refunds create"
    assert refund["path"] == "POST /payments/{payment_id}/refunds"
    assert refund["inputs"] == "payment_id*, body.amount*, body.currency*, body.reason"
    read = next(op for op in catalog["operations"] if op["id"] == "payments.customers.get")
    assert read["idempotencyKeyInput"] is None and read["confirmationRequired"] is False
    assert "confirmationReason" not in read
    assert [c["id"] for c in catalog["capabilities"]] == ["payments.customers", "payments.payments", "payments.refunds"]


def test_a_fingerprint_derived_key_is_not_required_of_the_caller(payments_doc: Document) -> None:
    refund = payments_doc.operations[2]
    derived = replace(refund, idempotency=replace(refund.idempotency, key_derivation="request_fingerprint"))
    entry = catalog_json(replace(payments_doc, operations=(derived,)))["operations"][0]
    assert entry["idempotencyKeyRequired"] is False and entry["idempotencyKeyInput"] == "idempotency_key"


def test_descriptions_are_stripped_of_html_and_cut_at_a_word() -> None:
    assert short_description("<p>Get a <b>customer</b>.</p>") == "Get a customer ."
    long = "word " * 60
    cut = short_description(long)
    assert cut is not None and cut.endswith("…") and len(cut) <= 160 and cut[:-1].endswith("word")
    assert short_description("   ") is None


def test_confidence_is_the_weakest_predicates_support() -> None:
    evidence = Evidence(
        claims=(
            Claim(subject="op", predicate="exists", source="spec", confidence=0.7),
            Claim(subject="op", predicate="effect.kind", value="mutation", source="inferred", confidence=0.5),
            Claim(subject="op", predicate="enriched", source="spec", confidence=0.95, review="accepted"),
            Claim(subject="op", predicate="name.quality", source="spec", confidence=0.1, review="rejected"),
        )
    )
    assert evidence_confidence(evidence) == 0.2
    assert evidence_confidence(Evidence()) == 0.0


def test_catalog_json_is_emitted_with_every_operation(payments_doc: Document) -> None:
    data = json.loads(emit_bundle(payments_doc)["catalog.json"])
    assert len(data["operations"]) == 4
