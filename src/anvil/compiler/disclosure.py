"""Disclosure measurement (original-core §3.7): what publishing each operation as a tool costs an agent.

Every operation gets ``disclosureCost``: ``toolTokens``, the o200k_base tokens of the compact JSON of
its tool as the original measures it (:mod:`anvil.air.disclosure_surface`: no output schema, no effect
keys, the input schemas as the original compiles them: :mod:`anvil.compiler.original_view`), and
``charsPerToken``, so the figures, and the contract hash that covers them, are the
original's. Response figures stay 0 until a proof lane measures real answers. What ``anvil serve``
lists (output schemas cut to the tool budget, effect keys) is counted by ``anvil certify``.

An approved operation whose tool is over the budget without any output schema (its input schema
alone is too large to publish within it) is a ``disclosure/input_over_budget`` warning (an info
``capability_tool_budget_waived`` instead when its capability's review waives the budget with
``allow_large`` and a note: :mod:`anvil.air.budget_waiver`) naming the tool and
its size as listed, in o200k_base tokens as ``anvil certify`` reports it (the listing's own cut estimates
characters over four; a tool that estimate puts over but o200k_base does not is within the budget certify
checks, so it is not warned about). Every argument stays published, since an agent cannot call a tool
whose inputs it does not know (an input schema over the input budget is published summarised, the whole
one as a resource: :mod:`anvil.air.input_summary`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Final

from anvil.air.budget_waiver import budget_waivers
from anvil.air.disclosure_surface import measured_surface_json, surface_cost
from anvil.air.input_summary import schema_uri
from anvil.air.model import Document, Operation
from anvil.air.surface import (
    CHARS_PER_TOKEN,
    TOOL_BUDGET_TOKENS,
    Published,
    ToolSurface,
    estimate_tokens,
    surface_measured,
    surface_of,
)
from anvil.air.token_counter import TokenCounter
from anvil.air.tokens import ESTIMATOR, count_tokens
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = [
    "CHARS_PER_TOKEN",
    "ESTIMATOR",
    "RESPONSE_BUDGET_TOKENS",
    "SURFACE_BUDGET_TOKENS",
    "TOOL_BUDGET_TOKENS",
    "count_tokens",
    "estimate_tokens",
    "measure_disclosure",
]

#: The default budgets of original-core §3.7 besides one tool's: one response page, the tool list at rest.
RESPONSE_BUDGET_TOKENS: Final = 8000
SURFACE_BUDGET_TOKENS: Final = 20_000


def _listed_text(surface: ToolSurface, op: Operation) -> str:
    """``op``'s listed tool as compact JSON: its o200k_base tokens are the figure ``anvil certify`` reports.

    Counted only for a tool over the budget, so a bundle whose tools all fit counts nothing more here.
    """
    return json.dumps(surface.listed(op), separators=(",", ":"), ensure_ascii=False)


def measure_disclosure(
    document: Document,
    original: Callable[[Operation], Operation] | None = None,
    *,
    counter: TokenCounter | None = None,
) -> tuple[Document, list[Diagnostic]]:
    """``document`` with ``disclosureCost`` measured on every operation, and the tools over budget.

    Args:
        document: the compiled document.
        original: the operation as the original compiles it (its input schemas:
            :func:`anvil.compiler.original_view.original_view`), which the figure is taken over;
            each operation as it stands when omitted.
        counter: counts the tokens (a compile starts its helper process before the spec loads);
            in this process when omitted. Either way the figures are :func:`count_tokens`'s.

    Returns:
        The measured document, and a ``disclosure/input_over_budget`` warning per approved operation
        whose tool is over the budget before any output schema is added.
    """
    counter = counter if counter is not None else TokenCounter(executable="")
    texts = []
    for op in document.operations:
        text = measured_surface_json(original(op) if original is not None else op)
        counter.add(text)  # counted by the helper while the next surfaces are built here
        texts.append(text)
    # What each approved tool publishes depends on no figure: worked out while the helper counts.
    surface = surface_of(document)
    over: list[tuple[Operation, Published]] = []
    for op in document.operations:
        if not op.is_approved:
            continue
        published = surface.published(op)
        if published.rest_chars > surface.budget_chars:
            counter.add(_listed_text(surface, op))
            over.append((op, published))
    counts = counter.counts()
    costs = [surface_cost(text, tokens) for text, tokens in zip(texts, counts[: len(texts)], strict=True)]
    operations = tuple(
        dataclasses.replace(op, disclosure_cost=cost) for op, cost in zip(document.operations, costs, strict=True)
    )
    measured = dataclasses.replace(document, operations=operations)
    surface_measured(document, measured)  # the bundle's tools.json finds these published tools again
    waivers = budget_waivers(measured)
    found: list[Diagnostic] = []
    for (op, published), tokens in zip(over, counts[len(texts) :], strict=True):
        if tokens <= surface.budget_tokens:
            continue  # within the budget as certify counts it: no second, contradicting figure
        waiver = waivers.get(op.id)
        if waiver is not None:
            found.append(
                diagnostic(
                    "capability_tool_budget_waived",
                    f"Tool '{op.mcp.tool_name}' is listed at {tokens:,} tokens ({ESTIMATOR}), over the "
                    f"{surface.budget_tokens:,}-token tool budget, waived by {waiver.said()}.",
                    operation=op.id,
                )
            )
            continue
        left_out = ", and its output schema is left out" if published.output_state == "omitted" else ""
        shown = (
            f"summarised (the whole one is the resource {schema_uri(op.mcp.tool_name)})"
            if published.input_summarised
            else "whole"
        )
        found.append(
            diagnostic(
                "disclosure/input_over_budget",
                f"Tool '{op.mcp.tool_name}' is listed at {tokens:,} tokens ({ESTIMATOR}) without any output "
                f"schema, over the {surface.budget_tokens:,}-token tool budget: its input schema is published "
                f"{shown}{left_out}.",
                operation=op.id,
                hint="Narrow the operation's inputs in the spec, raise disclosure.tool_budget_tokens "
                "in the manifest, or waive the budget for its capability with "
                f"`capabilities: {{{op.capability_id}: {{state: approved, allow_large: true, note: <why>}}}}`.",
            )
        )
    return measured, found
