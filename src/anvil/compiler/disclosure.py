"""Disclosure measurement (original-core §3.7): what publishing each operation as a tool costs an agent.

Every operation gets ``disclosureCost``: ``toolTokens`` for the compact JSON of the tool surface the
server publishes (name, title, description, input schema with the reserved arguments, output schema
as published, annotations, ``_meta``), and ``charsPerToken``. The surface is
:class:`anvil.air.surface.ToolSurface`'s, built once per document, so the figure is the published
definition's: an output schema cut to the tool budget is measured as cut. The original counts with
the o200k_base tokenizer; its table is not available offline here, so the count is an estimate, and
the estimator id says so (``chars/4``: one token per four characters, rounded up). Response figures
stay 0 until a proof lane measures real answers.

An approved operation whose tool is over the budget without any output schema (its input schema
alone is too large to publish within it) is a ``disclosure/input_over_budget`` warning naming the tool:
every argument stays published, since an agent cannot call a tool whose inputs it does not know.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Final

from anvil.air.model import DisclosureCost, Document
from anvil.air.outputs import compact_size
from anvil.air.surface import CHARS_PER_TOKEN, ESTIMATOR, TOOL_BUDGET_TOKENS, estimate_tokens, surface_of
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = [
    "CHARS_PER_TOKEN",
    "ESTIMATOR",
    "RESPONSE_BUDGET_TOKENS",
    "SURFACE_BUDGET_TOKENS",
    "TOOL_BUDGET_TOKENS",
    "estimate_tokens",
    "measure_disclosure",
]

#: The default budgets of original-core §3.7 besides one tool's: one response page, the tool list at rest.
RESPONSE_BUDGET_TOKENS: Final = 8000
SURFACE_BUDGET_TOKENS: Final = 20_000


def _cost(chars: int) -> DisclosureCost:
    tokens = math.ceil(chars / CHARS_PER_TOKEN)
    ratio = round(chars / tokens, 3) if tokens else CHARS_PER_TOKEN
    return DisclosureCost(tool_tokens=tokens, chars_per_token=ratio, estimator=ESTIMATOR)


def measure_disclosure(document: Document) -> tuple[Document, list[Diagnostic]]:
    """``document`` with ``disclosureCost`` measured on every operation, and the tools over budget.

    Returns:
        The measured document, and a ``disclosure/input_over_budget`` warning per approved operation
        whose tool is over the budget before any output schema is added.
    """
    surface = surface_of(document)
    operations = []
    found: list[Diagnostic] = []
    for op in document.operations:
        published = surface.published(op)
        operations.append(dataclasses.replace(op, disclosure_cost=_cost(compact_size(published.definition))))
        if op.is_approved and published.rest_chars > surface.budget_chars:
            tokens = math.ceil(published.rest_chars / CHARS_PER_TOKEN)
            left_out = ", and its output schema is left out" if published.output_state == "omitted" else ""
            found.append(
                diagnostic(
                    "disclosure/input_over_budget",
                    f"Tool '{op.mcp.tool_name}' costs {tokens} tokens without any output schema, over the "
                    f"{surface.budget_tokens}-token tool budget ({ESTIMATOR}): its input schema is published "
                    f"whole{left_out}.",
                    operation=op.id,
                    hint="Narrow the operation's inputs in the spec, or raise disclosure.tool_budget_tokens "
                    "in the manifest.",
                )
            )
    return dataclasses.replace(document, operations=tuple(operations)), found
