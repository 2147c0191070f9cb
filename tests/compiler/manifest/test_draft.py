"""``anvil init``'s manifest: every operation by AIR id, posture comments, approvals as asked."""

from __future__ import annotations

from pathlib import Path

import yaml

from anvil.compiler import build
from anvil.compiler.manifest.draft import PENDING_STATE, draft_manifest, yaml_key

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_every_operation_is_keyed_by_its_air_id_and_pending_by_default() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    parsed = yaml.safe_load(draft_manifest(doc))
    assert parsed["service"]["name"] == "payments"
    assert sorted(parsed["operations"]) == sorted(op.id for op in doc.operations)
    assert {entry["state"] for entry in parsed["operations"].values()} == {PENDING_STATE}


def test_approve_reads_approves_exactly_the_reads() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    parsed = yaml.safe_load(draft_manifest(doc, approve="reads"))["operations"]
    approved = sorted(key for key, entry in parsed.items() if entry["state"] == "approved")
    assert approved == sorted(op.id for op in doc.operations if op.is_read)
    assert approved and len(approved) < len(parsed)


def test_the_posture_comments_name_method_path_effect_and_confirmation() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    text = draft_manifest(doc)
    assert "# POST /payments/{payment_id}/refunds (operationId createRefund)" in text
    assert "# confirmation: required" in text
    assert "# effect: read, risk" in text


def test_the_draft_is_deterministic() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    assert draft_manifest(doc, approve="all") == draft_manifest(doc, approve="all")


def test_a_key_yaml_would_read_as_something_else_is_quoted() -> None:
    assert yaml_key("payments.refunds.create") == "payments.refunds.create"
    assert yaml.safe_load(f"{yaml_key('yes')}: 1") == {"yes": 1}
    assert yaml.safe_load(f"{yaml_key('a: b')}: 1") == {"a: b": 1}
