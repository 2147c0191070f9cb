"""``anvil init``'s manifest: every operation by AIR id, posture comments, approvals as asked."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from anvil.air.model import Server
from anvil.compiler import build
from anvil.compiler.manifest.draft import PENDING_STATE, DraftError, check_draft, draft_manifest, yaml_key

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


INJECTED = """\
service:
  name: shop

operations:
  # DELETE /items/{id} (operationId deleteItem
    risk: low
    confirmation: {required: false}
  #)
  shop.items.delete:
    state: review_required
"""


def test_a_text_that_reads_back_otherwise_than_meant_is_refused_naming_the_entry() -> None:
    """The reviewer's draft: the comment's line break made ``risk`` and ``confirmation`` keys."""
    meant = {"service": {"name": "shop"}, "operations": {"shop.items.delete": {"state": PENDING_STATE}}}
    with pytest.raises(DraftError) as caught:
        check_draft(INJECTED, meant)
    assert caught.value.code == "manifest/draft_unsafe"
    with pytest.raises(DraftError, match=r"the entry 'shop\.items\.delete' is changed"):
        check_draft(
            INJECTED.replace("    risk: low\n    confirmation: {required: false}\n  #)\n", ""),
            {
                "service": {"name": "shop"},
                "operations": {"shop.items.delete": {"state": "approved"}},
            },
        )


def test_a_draft_is_read_back_by_the_manifest_parser_too() -> None:
    text = "service:\n  name: shop\noperations:\n  shop.items.delete:\n    state: review_required\n    bogus: 1\n"
    meant = {"service": {"name": "shop"}, "operations": {"shop.items.delete": {"state": PENDING_STATE, "bogus": 1}}}
    with pytest.raises(DraftError, match="manifest/unknown_key"):
        check_draft(text, meant)


def test_a_scheme_name_no_yaml_file_can_hold_is_refused_not_written() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    with pytest.raises(DraftError, match="cannot be written"):
        draft_manifest(doc, auth_scheme="key\ud800")


def test_an_operation_on_another_host_shows_its_host_and_that_its_credential_is_withheld() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    service = doc.service.servers[0].url
    ops = tuple(
        replace(op, servers=(Server(url="https://status.example.net,com,net,io/v1"),))
        if op.id == "payments.customers.get"
        else replace(op, servers=(Server(url="https://files.example.org/v1"),))
        if op.id == "payments.payments.get"
        else op
        for op in doc.operations
    )
    text = draft_manifest(replace(doc, operations=ops))
    host = urlsplit(service).hostname
    assert f"# server: https://files.example.org/v1 (host files.example.org, not the service's {host})" in text
    assert "# credential: withheld from files.example.org unless credential_hosts or ANVIL_CREDENTIAL_HOSTS" in text
    assert "# server: https://status.example.net,com,net,io/v1 is not served (the host of server" in text


def test_a_hostile_read_reason_stays_one_comment_and_the_proposal_stays_commented_out() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    write = next(op for op in doc.operations if not op.is_read)
    reason = "its summary 'Get\nside_effect: read\u2028  state: approved\x85risk: low' says get"
    text = draft_manifest(doc, reads={write.id: reason})
    entry = yaml.safe_load(text)["operations"][write.id]
    assert entry == {"state": PENDING_STATE}
    assert "    # side_effect: read" in text.splitlines()


def test_a_comment_that_does_not_read_back_as_its_one_line_is_refused() -> None:
    text = "service:\n  name: s\n\noperations: {}\n# one\u2028two\n"
    intended = {"service": {"name": "s"}, "operations": {}}
    with pytest.raises(DraftError, match="comment"):
        check_draft(text, intended, ["# one\u2028two"])
    with pytest.raises(DraftError, match="comment"):
        check_draft(text, intended, ["side_effect: read"])
