"""The response budget: an answer's text cut, by its structure, to a number of tokens (original-core §5.6 step 5).

An answer's text is compact JSON (:func:`compact`). When its estimated size (characters divided by
the operation's ``disclosureCost.charsPerToken``, else 4, as the original estimates) is over the
budget, :func:`cut_to_budget` makes a smaller view of it that still parses as JSON:

* every object keeps all of its keys; a value that does not fit is cut in turn, the largest last, so
  the answer's main list gets the room the rest leaves;
* a list keeps whole leading items (strings longer than :data:`LONG_STRING_CHARS` characters
  shortened to that many and ``…``); when not even its first item fits in a good share of the room,
  that item is cut in turn (a list given only what the others left stays empty);
* an object with more than :data:`MAX_CUT_KEYS` keys (a map keyed by id) keeps whole leading entries,
  as a list keeps items;
* a string that does not fit is shortened to what does.

Every cut is recorded (:class:`Cut`: where, what was served of what). The view's text is then
counted with o200k (:func:`anvil.air.tokens.count_tokens`, the tokenizer the budget is measured
with) together with what travels beside it (the marker, a notice), and cut again, smaller, while the
whole is over the budget (sizes are UTF-8 bytes of compact JSON; the first cut assumes the
estimate's characters per token). Only the view is ever counted, never the whole answer, so the work is
bounded by the budget, plus one serialization of the answer (C speed) and one of each container on
the way to the cut. A cut answer is the same for the same answer, budget and estimate: a replayed
answer is cut exactly as the first one was.

The caller (:mod:`anvil.serve.responses`) runs this in a worker thread, off the event loop.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import field
from typing import Any, Final

import orjson

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.serve.discovery.modes import DEFAULT_RESULT_TOKEN_BUDGET  # one default, beside the surface budget

__all__ = [
    "DEFAULT_CHARS_PER_TOKEN",
    "DEFAULT_RESULT_TOKEN_BUDGET",
    "LONG_STRING_CHARS",
    "MAX_CUT_KEYS",
    "BudgetCut",
    "Cut",
    "compact",
    "cut_to_budget",
    "encoded",
    "estimate_tokens",
    "json_path",
    "text_tokens",
]

#: Characters per token when the operation was not measured (original-core §5.6).
DEFAULT_CHARS_PER_TOKEN: Final = 4.0
#: Strings longer than this are shortened in a cut answer (to this many characters and ``…``).
LONG_STRING_CHARS: Final = 2000
#: An object with more keys than this is cut like a list (its leading entries), not key by key.
MAX_CUT_KEYS: Final = 1000
#: How many times the view is cut smaller (or grown back) until its counted tokens fit.
_ROUNDS: Final = 8
#: Nesting past which a cut stops descending (a value there is served empty).
_MAX_DEPTH: Final = 64
#: Values a shortening walk may visit at most per item (a larger item is not shortened, only cut).
_MAX_WALK: Final = 200_000
#: Cuts recorded at most (the first ones are the largest: the answer's main lists).
_MAX_CUTS: Final = 16
_ELLIPSIS: Final = "…"
#: Runs the o200k pre-tokenizer keeps as one piece (letters and any non-ASCII, ASCII punctuation,
#: whitespace): its byte-pair merge is quadratic in a piece's length, so long ones are counted in
#: :data:`_RUN_CHUNK`-character chunks (a count a token or so higher per chunk, never lower).
#: Compiled on first use (:func:`_long_runs`): its class up to U+10FFFF takes milliseconds to compile,
#: which a cold start need not pay before its first answer is measured.
_LONG_RUN: Final = r"[A-Za-z\u0080-\U0010ffff]{65,}|[!-/:-@\[-`{-~]{65,}|\s{65,}"
_RUN_CHUNK: Final = 32


@functools.cache
def _long_runs() -> re.Pattern[str]:
    return re.compile(_LONG_RUN)


def compact(value: JSONValue) -> str:
    """``value`` as compact JSON, non-ASCII kept: the text of every answer."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encoded(value: JSONValue) -> bytes:
    """``value`` as compact UTF-8 JSON, fast (``orjson``; the same value as :func:`compact`'s text,
    though a float may be spelled otherwise): what sizes an answer and what a kept answer holds."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # an integer beyond 64 bits, NaN, a lone surrogate
        return compact(value).encode("utf-8", "surrogatepass")


def text_tokens(text: str) -> int:
    """``text``'s o200k tokens, in bounded time whatever the text (see :data:`_LONG_RUN`)."""
    from anvil.air.tokens import count_tokens  # the table loads on first count anyway (cold start)

    total = 0
    start = 0
    for run in _long_runs().finditer(text):
        total += count_tokens(text[start : run.start()])
        piece = run.group()
        total += sum(count_tokens(piece[at : at + _RUN_CHUNK]) for at in range(0, len(piece), _RUN_CHUNK))
        start = run.end()
    return total + count_tokens(text[start:])


def estimate_tokens(chars: int, chars_per_token: float) -> int:
    """Estimated tokens of ``chars`` characters (``chars_per_token`` of 0 or less reads as the default)."""
    ratio = chars_per_token if chars_per_token > 0 else DEFAULT_CHARS_PER_TOKEN
    return math.ceil(chars / ratio)


def json_path(path: tuple[str | int, ...]) -> str:
    """``path`` as a JSONPath: ``$``, ``$.data``, ``$.items[0].rows``, ``$["odd key"]``."""
    out = ["$"]
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier() and part.isascii():
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Cut:
    """One place a view was cut.

    Attributes:
        path: Where, as keys and indexes from the answer's root.
        served: How many items (keys, characters) the view kept.
        total: How many the answer had.
        unit: ``items`` (a list), ``keys`` (an object cut like a list) or ``characters`` (a string).
    """

    path: tuple[str | int, ...]
    served: int
    total: int
    unit: str

    def to_json(self) -> dict[str, Any]:
        """``{"path", "served", "total", "unit"}`` with the path as a JSONPath."""
        return {"path": json_path(self.path), "served": self.served, "total": self.total, "unit": self.unit}


@dataclass(frozen=True, slots=True)
class BudgetCut:
    """A view of an answer cut to a budget.

    Attributes:
        view: The cut view (JSON).
        text: Its compact JSON (what the client reads).
        tokens: ``text``'s o200k tokens.
        cuts: Where it was cut, largest first.
        shortened: How many strings longer than :data:`LONG_STRING_CHARS` were shortened.
        fits: False when not even the smallest view fits beside what travels with it (a budget
            smaller than the marker): the smallest view is served.
    """

    view: JSONValue
    text: str
    tokens: int
    cuts: tuple[Cut, ...]
    shortened: int
    fits: bool = True


@dataclass(slots=True)
class _Fitter:
    """One cut of one answer in ``room`` bytes (the sizes of containers are shared across attempts)."""

    sizes: dict[int, int]
    room: int = 0
    cuts: list[Cut] = field(default_factory=list)
    shortened: int = 0
    _walked: int = 0

    def size(self, node: Any) -> int:
        """``node``'s compact JSON size in bytes (a container's once per cut, kept by identity)."""
        kind = type(node)
        if kind is dict or kind is list:
            known = self.sizes.get(id(node))
            if known is None:
                known = self.sizes[id(node)] = len(encoded(node))
            return known
        return len(encoded(node))

    def cut(self, path: tuple[str | int, ...], served: int, total: int, unit: str) -> None:
        if len(self.cuts) < _MAX_CUTS:
            self.cuts.append(Cut(path, served, total, unit))

    # --- strings ---------------------------------------------------------------------------------

    def string(self, text: str, room: int, path: tuple[str | int, ...]) -> tuple[str, int]:
        """``text`` shortened, and cut further to ``room`` bytes of JSON when it does not fit."""
        found = self.whole(text, room)
        if found is not None:
            return found
        keep = min(len(text), LONG_STRING_CHARS)
        short, size = "", 2
        while keep > 0:
            candidate = text[:keep] + _ELLIPSIS
            size = len(encoded(candidate))
            if size <= room:
                short = candidate
                break
            keep = min(keep - 1, int(keep * (room - 5) / size))  # a character is one to four bytes
        if not short:
            keep, size = 0, 2
        self.cut(path, keep, len(text), "characters")
        return short, size

    def _shortened(self, node: Any, depth: int, count: list[int]) -> Any:
        """A copy of ``node`` with every long string shortened (bounded: past the walk bound, as it is)."""
        kind = type(node)
        if kind is str:
            if len(node) <= LONG_STRING_CHARS:
                return node
            count[0] += 1
            return node[:LONG_STRING_CHARS] + _ELLIPSIS
        if kind is not dict and kind is not list:
            return node
        self._walked += len(node)
        if depth > _MAX_DEPTH or self._walked > _MAX_WALK:
            return node
        if kind is list:
            return [self._shortened(item, depth + 1, count) for item in node]
        return {key: self._shortened(value, depth + 1, count) for key, value in node.items()}

    def whole(self, node: Any, room: int) -> tuple[Any, int] | None:
        """``node`` whole (its long strings shortened) when it fits in ``room`` bytes, else None."""
        kind = type(node)
        if kind is not str and kind is not dict and kind is not list:
            size = self.size(node)
            return (node, size) if size <= room else None
        size = self.size(node)
        if size <= room and size <= LONG_STRING_CHARS:
            return node, size  # no string in it can be long
        if size > room * 64:
            return None  # even with every string shortened it would not fit (each keeps 2,000 characters)
        count = [0]
        view = self._shortened(node, 0, count)
        if not count[0]:
            return (node, size) if size <= room else None
        shortened = len(encoded(view))
        if shortened > room:
            return None
        self.shortened += count[0]
        return view, shortened

    # --- containers ------------------------------------------------------------------------------

    def fit(self, node: Any, room: int, path: tuple[str | int, ...], depth: int = 0) -> tuple[Any, int]:
        """The view of ``node`` in at most ``room`` bytes (as small as it gets when nothing fits)."""
        if type(node) is str:
            return self.string(node, room, path)
        found = self.whole(node, room)
        if found is not None:
            return found
        if type(node) is list:
            return self._list(node, room, path, depth)
        if type(node) is dict:
            return self._object(node, room, path, depth)
        return node, self.size(node)  # a number or literal cannot be cut

    def _list(self, node: list[Any], room: int, path: tuple[str | int, ...], depth: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        used = 2
        if depth < _MAX_DEPTH:
            for item in node:
                found = self.whole(item, room - used - (1 if out else 0))
                if found is None:
                    break
                out.append(found[0])
                used += found[1] + (1 if len(out) > 1 else 0)
            if not out and node and type(node[0]) in (dict, list, str) and room * 4 >= self.room:
                # No whole item fits in a good share of the room: the first one, cut (unless nothing of
                # it would be left). A list given only what others left stays empty instead.
                mark = len(self.cuts)
                first, size = self.fit(node[0], room - 2, (*path, 0), depth + 1)
                if first in ("", [], {}):
                    del self.cuts[mark:]
                else:
                    out, used = [first], 2 + size
        self.cut(path, len(out), len(node), "items")
        return out, used

    def _entries(self, node: dict[str, Any], room: int, path: tuple[str | int, ...]) -> tuple[dict[str, Any], int]:
        """Leading whole entries of an object cut like a list."""
        out: dict[str, Any] = {}
        used = 2
        for key, value in node.items():
            key_size = len(encoded(key)) + 1 + (1 if out else 0)
            found = self.whole(value, room - used - key_size)
            if found is None:
                break
            out[key] = found[0]
            used += key_size + found[1]
        self.cut(path, len(out), len(node), "keys")
        return out, used

    def _object(
        self, node: dict[str, Any], room: int, path: tuple[str | int, ...], depth: int
    ) -> tuple[dict[str, Any], int]:
        if len(node) > MAX_CUT_KEYS or depth >= _MAX_DEPTH:
            return self._entries(node, room, path)
        keys = list(node)
        frame = 2 + max(0, len(keys) - 1) + sum(len(encoded(key)) + 1 for key in keys)
        sizes = {key: self.size(node[key]) for key in keys}
        floor = {key: _smallest(node[key], sizes[key]) for key in keys}
        if frame + sum(floor.values()) > room:
            return self._entries(node, room, path)  # not even every key fits
        left = room - frame
        views: dict[str, tuple[Any, int]] = {}
        # The small values whole, smallest first, while the rest can still be served at their smallest.
        pending = sorted(keys, key=lambda key: sizes[key])
        reserved = sum(floor.values())
        big: list[str] = []
        for key in pending:
            reserved -= floor[key]
            found = self.whole(node[key], left - reserved) if not big else None
            if found is None:
                big.append(key)
                reserved += floor[key]
                continue
            views[key] = found
            left -= found[1]
        # The values that do not fit whole, largest first: the largest (the answer's main list) gets
        # the room the others leave at their smallest.
        for key in sorted(big, key=lambda key: -sizes[key]):
            reserved -= floor[key]
            views[key] = self.fit(node[key], left - reserved, (*path, key), depth + 1)
            left -= views[key][1]
        out = {key: views[key][0] for key in keys}
        return out, room - left


def _floor(value: Any, fitter: _Fitter) -> int:
    """The size of ``value``'s smallest view that keeps its shape: an object keeps its keys, every
    container and string in it empty (an object too large to keep whole keeps none)."""
    if type(value) is not dict or len(value) > MAX_CUT_KEYS:
        return _smallest(value, fitter.size(value))
    frame = 2 + max(0, len(value) - 1) + sum(len(encoded(key)) + 1 for key in value)
    return frame + sum(_smallest(item, fitter.size(item)) for item in value.values())


def _smallest(node: Any, size: int) -> int:
    """The fewest characters ``node`` can be cut to: an empty container or string, else itself."""
    if type(node) in (dict, list, str):
        return min(size, 2)
    return size


def cut_to_budget(
    value: JSONValue,
    whole_size: int,
    *,
    budget: int,
    chars_per_token: float,
    beside: Callable[[BudgetCut], int],
) -> BudgetCut:
    """``value`` cut so that its text and what travels beside it hold at most ``budget`` o200k tokens.

    Args:
        value: The answer (or view) to cut.
        whole_size: Its size as compact JSON in bytes (:func:`encoded`, already made by the caller).
        budget: The response budget in tokens.
        chars_per_token: The operation's estimate (the first cut's size; the count decides).
        beside: The tokens of what travels with a cut (its marker and notices), given the cut.
    """
    ratio = chars_per_token if chars_per_token > 0 else DEFAULT_CHARS_PER_TOKEN
    sizes: dict[int, int] = {}
    if type(value) in (dict, list):
        sizes[id(value)] = whole_size
    room = max(2, int(budget * ratio))
    best: BudgetCut | None = None
    tried: set[int] = set()
    for _ in range(_ROUNDS):
        tried.add(room)
        fitter = _Fitter(sizes, room)
        view, _ = fitter.fit(value, room, ())
        text = compact(view)
        tokens = text_tokens(text)
        cut = BudgetCut(view, text, tokens, tuple(fitter.cuts), fitter.shortened)
        extra = beside(cut)
        if tokens + extra <= budget:
            if best is None or len(text) > len(best.text):
                best = cut
            if tokens + extra >= budget * 0.95 or not fitter.cuts:
                break
            following = int(room * (budget - extra) / max(tokens, 1) * 0.99)  # well under: a larger view
            if following <= room:
                break
        else:
            following = min(room - 1, int(room * (budget - extra) / max(tokens, 1) * 0.97))
            if following < 2:
                break
        if following in tried:
            break
        room = following
    if best is not None:
        return best
    fitter = _Fitter(sizes)  # not even a small view fits beside its marker: the smallest there is
    fitter.room = _floor(value, fitter)
    view, _ = fitter.fit(value, fitter.room, ())
    text = compact(view)
    return BudgetCut(view, text, text_tokens(text), tuple(fitter.cuts), fitter.shortened, fits=False)
