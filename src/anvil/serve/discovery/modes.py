"""How much of the served surface ``tools/list`` shows at rest: the disclosure modes and their budget.

* ``flat``: every tool the caller may call is listed (what Anvil always did).
* ``search``: three meta-tools (:mod:`anvil.serve.discovery.meta`) plus the pinned tools are listed;
  every other tool is found with ``anvil_search_tools`` and called through the proxies, or directly by
  its name (search controls discovery, not access).
* ``laddered``: the original's disclosure ladder (original-core §5.15): one lane card per lane, members
  listed once their card is opened, plus the proxies.
* ``auto`` (the default): ``flat`` when the caller's whole list fits the surface budget, else ``search``.

The surface budget (default :data:`DEFAULT_SURFACE_BUDGET_TOKENS`, the original's surface at rest) is
measured as ``tools/list`` publishes the tools: each tool as compact JSON, counted with o200k_base
(:func:`anvil.air.tokens.count_tokens`), summed. Counting stops as soon as the budget is passed, and a
list whose UTF-8 size is within the budget fits without counting (a token is at least one byte), so a
small bundle never loads the tokenizer at start-up; a large one is read only until it passes the budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, Literal, get_args

from anvil._dataclass import dataclass
from anvil._types import JSONObject

__all__ = [
    "DEFAULT_RESULT_TOKEN_BUDGET",
    "DEFAULT_SURFACE_BUDGET_TOKENS",
    "MAX_SURFACE_BUDGET_TOKENS",
    "MODES",
    "DisclosureMode",
    "DisclosureSettings",
    "Measure",
    "measure_listing",
    "tool_text",
]

DisclosureMode = Literal["auto", "flat", "search", "laddered"]
#: The modes ``--disclosure`` / ``ANVIL_DISCLOSURE`` accept.
MODES: Final[tuple[str, ...]] = get_args(DisclosureMode)
#: The surface-at-rest budget (original-core §3.7).
DEFAULT_SURFACE_BUDGET_TOKENS: Final = 20_000
#: The largest surface budget accepted (a budget beyond any context is no budget).
MAX_SURFACE_BUDGET_TOKENS: Final = 2_000_000
#: The response budget of one answer's text (original-core §3.7); 0 turns the cut off.
DEFAULT_RESULT_TOKEN_BUDGET: Final = 8_000


@dataclass(frozen=True, slots=True, kw_only=True)
class DisclosureSettings:
    """What a served surface shows at rest.

    Attributes:
        mode: ``auto``, ``flat``, ``search`` or ``laddered``.
        surface_budget: The surface-at-rest budget in o200k tokens.
    """

    mode: DisclosureMode = "auto"
    surface_budget: int = DEFAULT_SURFACE_BUDGET_TOKENS


@dataclass(frozen=True, slots=True)
class Measure:
    """A listing measured against a budget.

    Attributes:
        tools: How many tools the listing holds.
        size: Its UTF-8 bytes as compact JSON (when over: of the tools read before measuring stopped).
        tokens: Its o200k tokens, when counted; None when its size alone proved it fits.
        over: True when it is over the budget (``tokens`` then counts at least the budget plus one).
    """

    tools: int
    size: int
    tokens: int | None
    over: bool

    def shown(self, budget: int) -> str:
        """``1,234 tokens``, ``over the 20,000-token budget`` or ``5,678 bytes, within ...`` for reports."""
        if self.over:
            return f"over the {budget:,}-token budget"
        if self.tokens is None:
            return f"{self.size:,} bytes, within the {budget:,}-token budget"
        return f"{self.tokens:,} tokens"


def tool_text(tool: JSONObject) -> str:
    """One listed tool as compact JSON, non-ASCII as is (what is measured)."""
    return json.dumps(tool, separators=(",", ":"), ensure_ascii=False)


def measure_listing(tools: Sequence[JSONObject], budget: int | None = None) -> Measure:
    """``tools`` measured against ``budget`` (None: count every token).

    With a budget the listing is read in one pass that stops at the first tool that passes it (``over``
    is then True, and ``tokens`` and ``size`` cover the tools read so far): a caller of a large API is
    composed without encoding or counting its whole list. A listing whose size in bytes stays within
    the budget is not counted at all (a token is at least one byte).
    """
    texts: list[str] = []
    size = 0
    tokens: int | None = None
    for tool in tools:
        text = tool_text(tool)
        size += len(text.encode("utf-8"))
        if tokens is None:
            texts.append(text)
            if budget is not None and size <= budget:
                continue
            tokens = _count(texts)  # the tokenizer loads only when a count is needed
        else:
            tokens += _count([text])
        if budget is not None and tokens > budget:
            return Measure(len(tools), size, tokens, True)
    if tokens is None and budget is None:
        tokens = _count(texts)
    return Measure(len(tools), size, tokens, False)


def _count(texts: Sequence[str]) -> int:
    from anvil.air.tokens import count_tokens

    return sum(count_tokens(text) for text in texts)
