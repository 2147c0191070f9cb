"""What an agent pays to see a bundle's tools, measured the way the compiler measures (original-core §3.7).

Shared by ``anvil certify`` (the static budget checks) and ``anvil simulate`` (the ``disclosure``
cells). The measured surface is the one ``anvil serve`` publishes: :func:`served_tool_definition`,
the AIR tool definition (its output schema included) plus the effect keys the server lists, as compact
JSON, counted in o200k_base tokens like AIR's ``disclosureCost`` (which measures the original's
reconstruction of the tool, without output schema or effect keys, so the two differ).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from anvil._types import JSONObject, JSONValue
from anvil.air.model import Document, Operation
from anvil.air.surface import surface_of
from anvil.compiler.disclosure import ESTIMATOR, count_tokens
from anvil.serve.mcp.listing import served_tool_definition

__all__ = ["ESTIMATOR", "Figure", "served_tools", "tokens_of", "tool_budget"]


@dataclass(frozen=True, slots=True)
class Figure:
    """One measurement against a budget: the report's ``figure`` object."""

    tokens: int
    budget_tokens: int
    seed: int | None = None

    @property
    def within(self) -> bool:
        """True when the measurement does not exceed the budget."""
        return self.tokens <= self.budget_tokens

    def to_json(self) -> JSONObject:
        """``{tokens, budgetTokens, estimator, seed?}``."""
        out: JSONObject = {"tokens": self.tokens, "budgetTokens": self.budget_tokens, "estimator": ESTIMATOR}
        if self.seed is not None:
            out["seed"] = self.seed
        return out


def tokens_of(value: JSONValue) -> int:
    """The o200k_base tokens of ``value`` as compact JSON (strings as they are)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return count_tokens(text)


def served_tools(doc: Document) -> dict[str, JSONObject]:
    """Operation id -> the ``tools/list`` entry ``anvil serve`` publishes, for every approved operation."""
    approved: list[Operation] = [op for op in doc.operations if op.is_approved]
    names = {op.id: op.mcp.tool_name for op in approved}
    surface = surface_of(doc)
    every = doc.service.list_effect_class == "all"
    return {op.id: served_tool_definition(op, names.get, surface=surface, every_effect_class=every) for op in approved}


def tool_budget(doc: Document) -> int:
    """The tool budget ``doc`` publishes within: its ``disclosure.toolBudgetTokens``, else the default 1200."""
    return surface_of(doc).budget_tokens
