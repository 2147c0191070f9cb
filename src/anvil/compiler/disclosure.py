"""Disclosure measurement (original-core §3.7): what publishing each operation as a tool costs an agent.

Every operation gets ``disclosureCost``: ``toolTokens`` for the compact JSON of the tool surface the
server publishes (name, title, description, input schema with the reserved arguments, output schema,
annotations, ``_meta``), and ``charsPerToken``. The original counts with the o200k_base tokenizer;
its table is not available offline here, so the count is an estimate, and the estimator id says so
(``chars/4``: one token per four characters, rounded up). Response figures stay 0 until a proof lane
measures real answers.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Final

from anvil.air.model import DisclosureCost, Document
from anvil.air.tools import tool_definition

__all__ = [
    "CHARS_PER_TOKEN",
    "ESTIMATOR",
    "RESPONSE_BUDGET_TOKENS",
    "SURFACE_BUDGET_TOKENS",
    "TOOL_BUDGET_TOKENS",
    "estimate_tokens",
    "measure_disclosure",
]

#: The estimator id recorded in AIR.
ESTIMATOR: Final = "chars/4"
#: Characters per token the estimator assumes.
CHARS_PER_TOKEN: Final = 4
#: The default budgets of original-core §3.7: one tool's surface, one response page, the tool list at rest.
TOOL_BUDGET_TOKENS: Final = 1200
RESPONSE_BUDGET_TOKENS: Final = 8000
SURFACE_BUDGET_TOKENS: Final = 20_000


def estimate_tokens(text: str) -> int:
    """The estimator's token count for ``text``: one token per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _cost(text: str) -> DisclosureCost:
    tokens = estimate_tokens(text)
    ratio = round(len(text) / tokens, 3) if tokens else CHARS_PER_TOKEN
    return DisclosureCost(tool_tokens=tokens, chars_per_token=ratio, estimator=ESTIMATOR)


def measure_disclosure(document: Document) -> Document:
    """``document`` with ``disclosureCost`` measured on every operation."""
    operations = []
    for op in document.operations:
        surface = json.dumps(tool_definition(op, document.schemas), separators=(",", ":"), ensure_ascii=False)
        operations.append(dataclasses.replace(op, disclosure_cost=_cost(surface)))
    return dataclasses.replace(document, operations=tuple(operations))
