"""Answers within the response budget (original-core §5.6 steps 3-5).

:class:`ResponseBudget` is the gateway's part: before a read runs it sizes the page
(:meth:`ResponseBudget.size_page`), and after any call it bounds what the client reads
(:meth:`ResponseBudget.bound`):

* An answer whose compact JSON is estimated (characters / ``disclosureCost.charsPerToken``, else 4)
  within the budget is served whole, once its o200k count confirms it (an answer of fewer bytes than
  the budget has fewer tokens, so only answers between the two are counted, in a worker thread).
* Over it, the data (a dry run's plan, a projection's view) is cut by its structure
  (:func:`anvil.serve.budget.cut_to_budget`) so that the text and everything sent beside it hold at
  most the budget in o200k tokens. ``content[0]`` is the cut view's compact JSON, and
  ``structuredContent`` the same view, shaped as the tool's ``outputSchema`` admits (the response's
  own shape when the view still validates against it, else ``{"anvil_projection": <expression, or
  "@">, "result": <view>}``). A text block beginning :data:`TRUNCATED_PREFIX` follows: what was served
  of what (tokens, items and where), and for a read how to get the rest (the inputs that continue
  after the last served item or fetch the next page, a page size that fits, a narrower
  ``anvil_projection``). The whole answer is kept (``AnswerKeeper.keep``, for the principal that
  made the call) and linked by a ``resource_link`` block; without a keeper, or when it keeps
  nothing, the marker says so. A dry run's plan is cut the same way but never kept.
* A list answer holding exactly the upstream's maximum page and saying of no more is followed by a
  text block beginning :data:`PAGE_CAP_PREFIX` (the original appends it after truncation).
* Errors are never touched: an envelope (its code, ``_meta.effect``) is always whole.

The marker's and the notice's facts also travel as JSON: ``_meta["anvil/truncated"]`` and
``_meta["anvil/page_cap"]`` over MCP, the ``X-Anvil-Truncated`` and ``X-Anvil-Page-Cap`` headers over
REST. Marker keys: ``served_tokens`` (o200k), ``total_tokens`` (estimated), ``budget``, ``cuts``
(``[{"path", "served", "total", "unit"}]``, largest first), ``shortened``, then for a read
``continue`` (inputs that fetch exactly what follows the served items) or ``next_page`` (the
upstream's next page; the rest of this one is only in the whole answer), ``page_size`` (a page that
fits), ``projection``; and ``answer`` (the whole answer's URI, or null) with ``answer_bytes``.

A cut depends only on the answer, the budget and the operation's estimate, so a ledger replay is
cut exactly as its first answer was. A large answer is cut in a worker thread
(``anyio.to_thread``), never on the event loop.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Final

import anyio.to_thread

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.model import Document, Operation
from anvil.air.tools import PROJECTION_ARGUMENT
from anvil.serve.answer_store import ANSWER_TTL_SECONDS, ANSWER_URI_PREFIX, AnswerKeeper, answer_owner
from anvil.serve.budget import (
    DEFAULT_CHARS_PER_TOKEN,
    LONG_STRING_CHARS,
    BudgetCut,
    Cut,
    compact,
    cut_to_budget,
    encoded,
    estimate_tokens,
    json_path,
    text_tokens,
)
from anvil.serve.mcp.results import CallResult
from anvil.serve.pages import ItemSizes, Paging, example_item_chars
from anvil.serve.projection import ProjectionRefusal, compile_projection

__all__ = [
    "PAGE_CAP_META",
    "PAGE_CAP_PREFIX",
    "TRUNCATED_META",
    "TRUNCATED_PREFIX",
    "ResponseBudget",
]

logger = logging.getLogger(__name__)

#: The first characters of the text block that follows a cut answer.
TRUNCATED_PREFIX: Final = "[truncated:"
#: The first characters of the text block that follows a list answer at the upstream's page cap.
PAGE_CAP_PREFIX: Final = "[page cap:"
#: ``_meta`` key of a cut answer: the marker's facts.
TRUNCATED_META: Final = "anvil/truncated"
#: ``_meta`` key of a list answer at the page cap: the notice's facts.
PAGE_CAP_META: Final = "anvil/page_cap"
#: Tokens kept free beside the marker for what changes once the whole answer is kept (its id).
_LINK_SLACK: Final = 12
#: Fields an item's preview projection prefers, in this order (then the item's first scalar fields).
_PREFERRED: Final = ("id", "key", "name", "title", "number", "status", "state", "type", "email", "url")
_PLACEHOLDER_URI: Final = ANSWER_URI_PREFIX + "0" * 32


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the budget needs of one operation, worked out once."""

    ratio: float
    paging: Paging | None
    example_item_tokens: float | None
    recorded_item_tokens: float | None


@dataclass(frozen=True, slots=True)
class _Request:
    """One call's part in bounding its answer."""

    op: Operation
    facts: _Facts
    answer: JSONValue
    args: Mapping[str, JSONValue]
    projected: bool
    dry_run: bool


def _jmes_path(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if part.isidentifier() and part.isascii() else json.dumps(part)
            out += f".{name}" if out else name
    return out


def _at(view: JSONValue, path: tuple[str | int, ...]) -> JSONValue:
    for part in path:
        if isinstance(part, int):
            view = view[part] if isinstance(view, list) and part < len(view) else None
        else:
            view = view.get(part) if isinstance(view, dict) else None
    return view


def _suggestion(cut: Cut, view: JSONValue) -> str | None:
    """A narrower ``anvil_projection`` over the cut list: a few fields of each item, else the next slice."""
    where = _jmes_path(cut.path)
    items = _at(view, cut.path)
    first = items[0] if isinstance(items, list) and items else None
    if isinstance(first, dict) and cut.unit == "items":
        scalars = [key for key, value in first.items() if not isinstance(value, dict | list)]
        chosen = [key for key in _PREFERRED if key in scalars][:3] or scalars[:3]
        if not chosen:
            return None
        fields = ", ".join(
            f"{name}: {name}"
            for name in (key if key.isidentifier() and key.isascii() else json.dumps(key) for key in chosen)
        )
        expression = f"{where}[].{{{fields}}}"
    elif cut.unit == "items" and cut.served > 0:
        expression = f"{where}[{cut.served}:{cut.served * 2}]"
    else:
        return None
    return None if isinstance(compile_projection(expression), ProjectionRefusal) else expression


def _inputs(values: JSONObject) -> str:
    return ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in values.items())


def _marker_text(marker: JSONObject, *, dry_run: bool, kept: bool, keeper: bool) -> str:
    """The ``[truncated: ...]`` text of a marker."""
    cuts = marker["cuts"]
    where = (
        "; ".join(f"{cut['served']:,} of {cut['total']:,} {cut['unit']} at {cut['path']}" for cut in cuts[:3])
        or "long strings shortened"
    )
    if len(cuts) > 3:
        where += f"; {len(cuts) - 3} more cut(s)"
    parts = [
        f"{TRUNCATED_PREFIX} ~{marker['served_tokens']:,} of ~{marker['total_tokens']:,} estimated tokens "
        f"(budget {marker['budget']:,}) — {where}."
    ]
    if marker["shortened"]:
        parts.append(f"{marker['shortened']:,} string(s) over {LONG_STRING_CHARS:,} characters shortened with '…'.")
    if "continue" in marker:
        parts.append(f"Continue after the served items with {_inputs(marker['continue'])}.")
    if "next_page" in marker:
        parts.append(
            f"Next page: {_inputs(marker['next_page'])} (the items of this page not served here are only in "
            "the whole answer)."
        )
    if "page_size" in marker:
        parts.append(f"{_inputs(marker['page_size'])} keeps a page within the budget.")
    if "projection" in marker:
        parts.append(f"Narrower: {PROJECTION_ARGUMENT} {json.dumps(marker['projection'], ensure_ascii=False)}.")
    if dry_run:
        parts.append("This is a dry run's plan, cut for reading; the request it describes is whole.")
    elif kept:
        parts.append(
            f"The whole answer ({marker['answer_bytes']:,} bytes), readable with resources/read by this caller "
            f"for {ANSWER_TTL_SECONDS // 60} minutes: {marker['answer']}"
        )
    elif keeper:
        parts.append("The whole answer could not be kept (larger than the answer store takes, or it is unavailable).")
    else:
        parts.append("The whole answer is not kept (this gateway has no answer store).")
    return " ".join(parts) + "]"


def _page_cap_text(facts: JSONObject, tool: str, *, cut: bool) -> str:
    text = (
        f"{PAGE_CAP_PREFIX} this answer holds exactly {facts['items']:,} items at {facts['path']}, the most "
        f"{tool} returns in one page, and does not say whether more follow: there may be more."
    )
    if cut:
        pass  # the marker before it says how to go on
    elif "next" in facts:
        text += f" Next page: {_inputs(facts['next'])}."
    else:
        text += " Narrow the request (its filters) to see what this page could not hold."
    return text + "]"


class ResponseBudget:
    """The response budget of one gateway: page sizes, cuts, kept answers (module docstring).

    Args:
        budget: Tokens an answer's text may hold (at least 1).
        keeper: Where cut answers are kept, or None (the marker then says the whole answer is not kept).
        document: The served AIR document (examples of items live in its schemas).
    """

    def __init__(self, budget: int, keeper: AnswerKeeper | None, document: Document) -> None:
        self.budget = max(1, budget)
        self.keeper = keeper
        self._document = document
        self._facts: dict[str, _Facts] = {}
        self.items = ItemSizes()

    def facts(self, op: Operation) -> _Facts:
        """What the budget needs of ``op`` (worked out on first use, then kept)."""
        found = self._facts.get(op.id)
        if found is None:
            cost = op.disclosure_cost
            ratio = cost.chars_per_token if cost is not None and cost.chars_per_token > 0 else DEFAULT_CHARS_PER_TOKEN
            paging = Paging.of(op)
            example = recorded = None
            if paging is not None and paging.size_input is not None:
                chars = example_item_chars(op, self._document, paging)
                example = chars / ratio if chars is not None else None
                if cost is not None and cost.response_item_tokens > 0:
                    recorded = float(cost.response_item_tokens)
            found = self._facts[op.id] = _Facts(ratio, paging, example, recorded)
        return found

    # --- before the call -----------------------------------------------------------------------

    def size_page(self, op: Operation, args: JSONObject) -> JSONValue:
        """Set the page size of a read in ``args`` when the caller set none and an item's size is known:
        the largest page that fits, and never fewer items than an earlier answer that fitted whole.

        Returns the size set (as the input takes it), or None when nothing was set.
        """
        facts = self.facts(op)
        paging = facts.paging
        if paging is None or paging.size_input is None or paging.size_input in args:
            return None
        learned = self.items.estimate(op.id)
        if learned is not None:
            item, rest = learned
        elif facts.recorded_item_tokens is not None:
            item, rest = facts.recorded_item_tokens, 0.0
        elif facts.example_item_tokens is not None:
            item, rest = facts.example_item_tokens, 0.0
        else:
            return None
        size = max(paging.page_size(item, rest, self.budget), min(paging.cap, self.items.fitted(op.id)))
        value = paging.size_value(size)
        args[paging.size_input] = value
        return value

    # --- after the call ------------------------------------------------------------------------

    async def bound(
        self,
        result: CallResult,
        *,
        op: Operation,
        tool: str,
        answer: JSONValue,
        args: Mapping[str, JSONValue],
        identity: Mapping[str, JSONValue] | None,
        projection: str | None,
        shape: Callable[[JSONValue], JSONObject],
    ) -> CallResult:
        """``result`` within the budget (module docstring).

        Args:
            result: The call's result (an error is returned as it is).
            op: The operation that answered.
            tool: The tool name the caller dialed (the notice names it).
            answer: The whole upstream answer (before any projection): pages are read from it.
            args: The executed arguments (the page the call asked for).
            identity: The caller's ledger identity: whose the kept answer is.
            projection: The caller's ``anvil_projection`` expression, if any.
            shape: The ``structuredContent`` of a cut view (the gateway knows the tool's output schema).
        """
        if result.kind == "error":
            return result
        dry_run = result.kind == "dry_run"
        value = result.plan if dry_run else result.data
        facts = self.facts(op)
        request = _Request(op, facts, answer, args, projection is not None, dry_run)
        paging = None if dry_run else facts.paging
        probe = encoded(value)
        room = self.budget * facts.ratio
        if len(probe) > room and len(probe.decode("utf-8", "surrogatepass")) > room:
            return await self._cut(result, request, value, probe, tool, identity, projection, shape)
        notes, meta = self._page_cap(paging, answer, args, tool)
        text = compact(value)
        if len(probe) > self.budget:  # the estimate says it fits, but a token is not always 4 characters
            counted = [text, *(note["text"] for note in notes)]
            tokens = await anyio.to_thread.run_sync(lambda: sum(text_tokens(part) for part in counted))
            if tokens > self.budget:
                return await self._cut(result, request, value, probe, tool, identity, projection, shape)
        if paging is not None and paging.size_input is not None and projection is None:
            self._learn(op, paging, answer, len(probe), fitted=True)
        return replace(result, text=text, notes=notes, meta=meta)

    def _learn(self, op: Operation, paging: Paging, answer: JSONValue, total: int, *, fitted: bool = False) -> None:
        """Feed one answer of a paged read (``total`` bytes of JSON; ``fitted``: served whole) to the
        running estimate of its item size."""
        found = paging.items(answer)
        if found is None or not found[0]:
            return
        items = found[0]
        ratio = self.facts(op).ratio
        items_bytes = len(encoded(items))
        self.items.observe(op.id, items_bytes / len(items) / ratio, max(0, total - items_bytes) / ratio)
        if fitted:
            self.items.fits(op.id, len(items))

    def _page_cap(
        self, paging: Paging | None, answer: JSONValue, args: Mapping[str, JSONValue], tool: str, *, cut: bool = False
    ) -> tuple[tuple[JSONObject, ...], JSONObject | None]:
        facts = paging.page_cap(answer, args) if paging is not None else None
        if facts is None:
            return (), None
        facts = {**facts, "path": json_path(facts["path"])}
        return ({"type": "text", "text": _page_cap_text(facts, tool, cut=cut)},), {PAGE_CAP_META: facts}

    async def _cut(
        self,
        result: CallResult,
        request: _Request,
        value: JSONValue,
        probe: bytes,
        tool: str,
        identity: Mapping[str, JSONValue] | None,
        projection: str | None,
        shape: Callable[[JSONValue], JSONObject],
    ) -> CallResult:
        """The cut answer: the view and its marker worked out in a thread, then the whole answer kept."""
        paging = None if request.dry_run else request.facts.paging
        notes, meta = self._page_cap(paging, request.answer, request.args, tool, cut=True)
        notice = notes[0]["text"] if notes else ""
        whole_chars = len(probe.decode("utf-8", "surrogatepass"))

        def work() -> tuple[BudgetCut, JSONObject]:
            if paging is not None and paging.size_input is not None and projection is None:
                self._learn(request.op, paging, request.answer, len(probe))
            notice_tokens = text_tokens(notice) if notice else 0

            def beside(cut: BudgetCut) -> int:
                marker = self._marker(cut, request, whole_chars, _PLACEHOLDER_URI, len(probe))
                text = _marker_text(marker, dry_run=request.dry_run, kept=True, keeper=True)
                return text_tokens(text) + notice_tokens + _LINK_SLACK

            cut = cut_to_budget(
                value, len(probe), budget=self.budget, chars_per_token=request.facts.ratio, beside=beside
            )
            return cut, self._marker(cut, request, whole_chars, None, len(probe))

        cut, marker = await anyio.to_thread.run_sync(work)
        if not cut.cuts and not cut.shortened:  # the estimate was off: the whole answer fits
            found = paging.items(request.answer) if paging is not None and projection is None else None
            if found is not None and found[0]:
                self.items.fits(request.op.id, len(found[0]))
            return replace(result, text=cut.text, notes=notes, meta=meta)
        uri: str | None = None
        if self.keeper is not None and not request.dry_run:
            try:
                uri = await self.keeper.keep(answer_owner(identity), probe, "application/json")
            except Exception:  # a store that fails is a store that kept nothing: the cut answer still goes out
                logger.warning("anvil: the answer store could not keep a cut answer", exc_info=True)
                uri = None
        marker["answer"] = uri
        text = _marker_text(marker, dry_run=request.dry_run, kept=uri is not None, keeper=self.keeper is not None)
        blocks: list[JSONObject] = [{"type": "text", "text": text}]
        if uri is not None:
            blocks.append(
                {
                    "type": "resource_link",
                    "uri": uri,
                    "name": "answer",
                    "title": f"The whole answer of {tool}",
                    "description": f"The whole answer, {len(probe):,} bytes of JSON (cut in this result).",
                    "mimeType": "application/json",
                    "size": len(probe),
                }
            )
        blocks.extend(notes)
        merged: JSONObject = {TRUNCATED_META: marker, **(meta or {})}
        if request.dry_run:
            return replace(result, plan=cut.view, text=cut.text, notes=tuple(blocks), meta=merged)
        return replace(
            result, data=cut.view, text=cut.text, structured=shape(cut.view), notes=tuple(blocks), meta=merged
        )

    def _marker(self, cut: BudgetCut, request: _Request, whole_chars: int, uri: str | None, size: int) -> JSONObject:
        """The marker's facts for ``cut`` (see the module docstring).

        The whole answer's tokens are estimated at the served text's own characters per token (the
        operation's estimate when the view is too small to tell): it is never counted.
        """
        if len(cut.text) >= 256 and cut.tokens:
            total = math.ceil(whole_chars * cut.tokens / len(cut.text))
        else:
            total = estimate_tokens(whole_chars, request.facts.ratio)
        marker: JSONObject = {
            "served_tokens": cut.tokens,
            "total_tokens": max(total, cut.tokens),
            "budget": self.budget,
            "cuts": [item.to_json() for item in cut.cuts],
            "shortened": cut.shortened,
        }
        op, paging = request.op, request.facts.paging
        if op.is_read and not request.dry_run:
            if paging is not None:
                self._paging_hints(marker, cut, request, paging)
            main = next((item for item in cut.cuts if item.unit in ("items", "keys")), None)
            if main is not None:
                suggestion = _suggestion(main, cut.view)
                if suggestion is not None:
                    marker["projection"] = suggestion
        marker["answer"] = uri
        marker["answer_bytes"] = size
        return marker

    @staticmethod
    def _paging_hints(marker: JSONObject, cut: BudgetCut, request: _Request, paging: Paging) -> None:
        """``continue`` or ``next_page``, and ``page_size``, for a cut answer of a paged read."""
        found = paging.items(request.answer)
        at_items: Cut | None = None
        inside = False
        if found is not None and not request.projected:
            path = found[1]
            at_items = next((item for item in cut.cuts if item.path == path and item.unit == "items"), None)
            inside = any(len(item.path) > len(path) and item.path[: len(path)] == path for item in cut.cuts)
        following = paging.continuation(request.answer, request.args, at_items.served if at_items else None)
        if following is not None:
            exact = following[1] and not request.projected and not inside
            marker["continue" if exact else "next_page"] = following[0]
        sized = following is not None and paging.size_input in following[0]
        if at_items is not None and paging.size_input is not None and at_items.served > 0 and not sized:
            marker["page_size"] = {paging.size_input: paging.size_value(at_items.served)}
