"""Per-capability waivers of the per-tool disclosure budget (original-core §2.8 ``allow_large``).

A reviewer who accepts that a capability's tools are large says so in the manifest
(``capabilities: {<id>: {state: approved, allow_large: true, note: <why>}}``); the compiler records it on
the AIR capability (``allowLarge``, with the note as ``reviewNote``), so the waiver is part of the
contract hash. The compiler's ``disclosure/input_over_budget`` warning, ``anvil certify``'s
``tool_surface_within_disclosure_budget`` check and ``anvil simulate``'s ``disclosure/tool-surface``
cell all read it through :func:`budget_waivers`: a waived tool over the budget passes, said with the
capability and its note; every other tool is judged against the budget as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from anvil._dataclass import dataclass
from anvil.air.model import Document

__all__ = ["MAX_NOTE_CHARS", "BudgetWaiver", "budget_waivers", "waiver_lever"]

#: Characters of a reviewer's note said in a check's detail or a diagnostic.
MAX_NOTE_CHARS: Final = 200


@dataclass(frozen=True, slots=True)
class BudgetWaiver:
    """A reviewed waiver: the capability that waives the budget for a tool, and the reviewer's note."""

    capability_id: str
    note: str

    def said(self) -> str:
        """``capability review <id> ("<note>")``: who waived it and why, for a check's detail.

        The note is cut to :data:`MAX_NOTE_CHARS` (the whole one is in AIR's ``reviewNote``).
        """
        note = self.note if len(self.note) <= MAX_NOTE_CHARS else self.note[: MAX_NOTE_CHARS - 1] + "…"
        return f'capability review {self.capability_id} ("{note}")'


def budget_waivers(doc: Document) -> dict[str, BudgetWaiver]:
    """Operation id -> the waiver of its capability, for every operation whose capability waives the budget.

    A capability waives it when its review approved it with ``allowLarge`` and a non-empty note (the
    manifest refuses ``allow_large`` otherwise; a hand-edited AIR without a note waives nothing).
    """
    waiving = {
        cap.id: BudgetWaiver(cap.id, " ".join(cap.review_note.split()))
        for cap in doc.capabilities
        if cap.allow_large is True and cap.lifecycle == "approved" and cap.review_note and cap.review_note.strip()
    }
    return {
        op.id: waiving[op.capability_id]
        for op in doc.operations
        if op.capability_id is not None and op.capability_id in waiving
    }


def waiver_lever(capability_ids: Iterable[str]) -> str:
    """The per-capability lever for tools over the budget: name the capabilities to waive it for."""
    named = ", ".join(sorted(set(capability_ids)))
    return (
        "or, to accept these tools as they are, waive the budget per capability in anvil.yaml with "
        f"`capabilities: {{<id>: {{state: approved, allow_large: true, note: <why>}}}}` (over it: {named})"
    )
