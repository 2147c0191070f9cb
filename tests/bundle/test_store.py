from __future__ import annotations

import json
from dataclasses import replace

from anvil.air.canonical import sha256_hex
from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation
from anvil.bundle.store import collection_group, store_contract

# Golden values of original-ledger §3.6 (payments, namespace "payments").
FIRESTORE_DIGEST = "669970374961c8e80e4eacbdfd6eabff45043ab3a2e92f2e4131806bea2a148f"
NONE_DIGEST = "8270d180abd3ed6748ec405bfce08395e11842f293216ae1b3acb020f660096d"


def _store_bytes(doc: Document, generation: Generation | None = None) -> bytes:
    return emit_bundle(doc, generation)["deploy/idempotency-store.json"]


def test_payments_store_contract_is_the_firestore_variant_with_the_golden_digest(payments_doc: Document) -> None:
    data = _store_bytes(payments_doc)
    assert sha256_hex(data) == FIRESTORE_DIGEST
    assert data.count(b"\n") == 94
    contract = json.loads(data)
    assert contract["requirement"]["operationIds"] == ["payments.refunds.create"]
    assert contract["firestore"]["collectionGroup"] == "anvil_idempotency_df384ae97c77ad30"
    assert contract["firestore"]["runtimeUri"]["resolvedTemplate"] == "firestore://{project_id}/{database_id}/payments"


def test_no_approved_required_key_mutation_gives_the_none_variant(payments_doc: Document) -> None:
    refund = payments_doc.operations[2]
    keyed_but_pending = replace(refund, state="review_required")
    doc = replace(payments_doc, operations=(*payments_doc.operations[:2], keyed_but_pending))
    assert sha256_hex(_store_bytes(doc)) == NONE_DIGEST
    fingerprint = replace(refund, idempotency=replace(refund.idempotency, mode="key_supported"))
    contract = store_contract(replace(payments_doc, operations=(fingerprint,)), Generation())
    assert contract["backend"] == "none" and contract["firestore"] is None and contract["required"] is False


def test_a_persisted_deployment_namespace_keys_the_collection_group(payments_doc: Document) -> None:
    contract = store_contract(payments_doc, Generation(deployment_namespace="wso2-prod-payments-v1"))
    assert contract["serviceId"] == "payments"
    assert contract["firestore"]["namespace"] == "wso2-prod-payments-v1"
    assert contract["firestore"]["collectionGroup"] == "anvil_idempotency_92ebf664dcd91fcf"
    assert collection_group("orders") == "anvil_idempotency_1c168adb00d208e4"
