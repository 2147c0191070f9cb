"""``anvil approve``'s edit: the named entries become approved, every other byte stays."""

from __future__ import annotations

import pytest
import yaml

from anvil.compiler.manifest.approval import ApprovalError, approve_entries, safety_fields

MANIFEST = """\
# reviewed by ops
service:
  name: shop

operations:
  # GET /orders/{id}
  shop.orders.get:
    state: review_required   # nobody looked yet

  shop.orders.list:
    retries:
      max_attempts: 2

  "shop.orders.cancel":
  shop.refunds.create:
    confirmation:
      required: true
      reason: money moves
    state: approved

workflows: {}
"""


def test_a_glob_approves_every_matching_entry_and_keeps_comments() -> None:
    approval = approve_entries(MANIFEST, ["shop.orders.*"])
    assert approval.approved == ("shop.orders.get", "shop.orders.list", "shop.orders.cancel")
    assert "# GET /orders/{id}" in approval.text
    assert "    state: approved   # nobody looked yet\n" in approval.text
    parsed = yaml.safe_load(approval.text)["operations"]
    assert parsed["shop.orders.list"] == {"retries": {"max_attempts": 2}, "state": "approved"}
    assert parsed["shop.orders.cancel"] == {"state": "approved"}


def test_an_entry_already_approved_is_reported_and_the_text_is_unchanged() -> None:
    approval = approve_entries(MANIFEST, ["shop.refunds.create"])
    assert (approval.approved, approval.already) == ((), ("shop.refunds.create",))
    assert approval.text == MANIFEST


def test_only_the_named_entries_change() -> None:
    before = yaml.safe_load(MANIFEST)
    after = yaml.safe_load(approve_entries(MANIFEST, ["shop.orders.get"]).text)
    before["operations"]["shop.orders.get"]["state"] = "approved"
    assert after == before


def test_a_pattern_that_names_no_entry_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ApprovalError) as refused:
        approve_entries(MANIFEST, ["orders.get"])
    assert "shop.orders.get" in refused.value.hint


def test_a_flow_style_entry_is_refused_rather_than_rewritten() -> None:
    text = "service:\n  name: shop\noperations:\n  shop.orders.get: {retries: {max_attempts: 2}}\n"
    with pytest.raises(ApprovalError):
        approve_entries(text, ["shop.orders.get"])


def test_a_manifest_without_operations_is_refused() -> None:
    with pytest.raises(ApprovalError):
        approve_entries("service:\n  name: shop\n", ["*"])


def test_every_safety_field_an_approved_entry_sets_is_listed_for_the_reviewer() -> None:
    """What the reviewer's injected draft would have approved: a delete made low risk, unconfirmed."""
    text = (
        "service:\n  name: shop\noperations:\n"
        "  shop.items.delete:\n    state: review_required\n    risk: low\n    confirmation: {required: false}\n"
        "    retries:\n      enabled: true\n    display_name: Delete\n"
        "  shop.items.get:\n    state: review_required\n"
    )
    approval = approve_entries(text, ["shop.items.*"])
    assert approval.safety == {
        "shop.items.delete": ('risk: "low"', 'confirmation: {"required": false}', 'retries: {"enabled": true}')
    }


def test_a_listed_safety_value_reaches_the_terminal_as_one_line_of_ascii() -> None:
    assert safety_fields({"idempotency": {"header": "Key\r\x1b[2J\u2028"}, "state": "approved"}) == (
        'idempotency: {"header": "Key\\r\\u001b[2J\\u2028"}',
    )
