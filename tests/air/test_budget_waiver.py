"""Per-capability waivers of the tool budget: only an approved review with allowLarge and a note waives it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from anvil.air.budget_waiver import MAX_NOTE_CHARS, BudgetWaiver, budget_waivers
from anvil.air.model import Document
from anvil.compiler import build

PAYMENTS = Path(__file__).resolve().parents[2] / "examples" / "payments"


@pytest.fixture(scope="module")
def payments() -> Document:
    return build(PAYMENTS / "openapi.yaml", service_id="payments", source_uri="openapi.yaml").document


def _reviewed(doc: Document, **review: object) -> Document:
    capabilities = tuple(replace(c, **review) if c.id == "payments.refunds" else c for c in doc.capabilities)
    return replace(doc, capabilities=capabilities)


def test_an_approved_review_allowing_large_tools_with_a_note_waives_the_budget_for_every_tool_of_it(
    payments: Document,
) -> None:
    doc = _reviewed(payments, lifecycle="approved", allow_large=True, review_note="  Refunds  carry a reason. ")
    members = {op.id for op in doc.operations if op.capability_id == "payments.refunds"}
    waiver = BudgetWaiver("payments.refunds", "Refunds carry a reason.")
    assert members and budget_waivers(doc) == dict.fromkeys(members, waiver)


@pytest.mark.parametrize(
    "review",
    [
        {"lifecycle": "proposed", "allow_large": True, "review_note": "why"},
        {"lifecycle": "rejected", "allow_large": True, "review_note": "why"},
        {"lifecycle": "approved", "allow_large": None, "review_note": "why"},
        {"lifecycle": "approved", "allow_large": True, "review_note": "   "},
        {"lifecycle": "approved", "allow_large": True, "review_note": None},
    ],
)
def test_anything_short_of_an_approved_review_with_allow_large_and_a_note_waives_nothing(
    payments: Document, review: dict[str, object]
) -> None:
    assert budget_waivers(_reviewed(payments, **review)) == {}


def test_a_long_note_is_cut_where_a_detail_says_it() -> None:
    said = BudgetWaiver("s.things", "x" * 1000).said()
    assert said == f'capability review s.things ("{"x" * (MAX_NOTE_CHARS - 1)}…")'
