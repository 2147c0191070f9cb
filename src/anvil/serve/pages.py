"""Paged reads and the response budget: the page size that fits, where to continue, the silent page cap.

Three things the gateway does for a read whose AIR ``pagination`` it knows (original-core §5.6 steps 3
and 5):

* **Page size from the budget** (:meth:`Paging.page_size`): when the read takes a page-size input,
  the caller set none, and the size of one item is known, the gateway sends the largest page that
  fits the response budget: at least 1, never above the upstream's maximum (``maxPageSize``; else
  its default page size; else :data:`FALLBACK_PAGE_CAP`, since an upstream that documents no maximum
  may still refuse a large one). The size of one item comes, best first, from this gateway's own
  earlier answers to the operation (:class:`ItemSizes`, a running estimate), from the proof lanes'
  measure recorded in AIR (``disclosureCost.responseItemTokens``), or from the spec's examples of an
  item (:func:`example_item_chars`).
* **Where to continue** (:meth:`Paging.continuation`): the inputs that fetch what follows the items
  an answer served: the next offset, page (with a page size that lands on the first item not served),
  the last served item's id for an id cursor (``starting_after``, or a cursor the upstream sets to its
  last item's id), else the upstream's next cursor.
* **The silent page cap** (:meth:`Paging.page_cap`): a list answer holding exactly ``maxPageSize``
  items and no continuation may be an upstream that stops at its maximum without saying so.

Inputs are named as the caller names them (the published property, not the wire name).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import input_bindings
from anvil.air.model import Document, Operation
from anvil.serve.budget import compact

__all__ = [
    "FALLBACK_PAGE_CAP",
    "ItemSizes",
    "Paging",
    "example_item_chars",
    "resolved_schema",
]

#: The largest page injected when the upstream documents neither a maximum nor a default page size.
FALLBACK_PAGE_CAP: Final = 100
#: Share of the budget a sized page aims at (the rest is room for the estimate to be off).
_PAGE_SHARE: Final = 0.85
#: Answer fields that say whether more pages follow: booleans, then continuations (set: more follow).
_LAST: Final = ("isLast", "is_last")
_HAS_MORE: Final = ("has_more", "hasMore", "more")
_NEXT: Final = ("next_page", "nextPage", "next", "next_cursor", "nextCursor", "next_page_token", "nextPageToken")
#: Cursor inputs that take an item's id (Stripe's ``starting_after``).
_ID_CURSORS: Final = frozenset({"starting_after", "startingafter"})
_REF_PREFIX: Final = "#/components/schemas/"
_MAX_REFS: Final = 8


def _scalar(value: JSONValue) -> str | int | float | None:
    """A continuation value as an input takes it: a non-empty string or a number (never a boolean)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return value or None
    return value if isinstance(value, int | float) else None


def _integer(value: JSONValue) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 19:
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _walk(data: JSONValue, dotted: str) -> JSONValue:
    """``data`` at a dotted field path (``response_metadata.next_cursor``); the whole name first."""
    if isinstance(data, dict) and dotted in data:
        return data[dotted]
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


@dataclass(frozen=True, slots=True)
class Paging:
    """How one read pages, with its inputs as the caller names them.

    Attributes:
        style: ``cursor``, ``page``, ``offset`` or ``link``.
        cursor_input: The input that continues (a cursor, page number or offset), if published.
        size_input: The page-size input, if any.
        size_type: The page-size input's JSON type (``integer``, ``number`` or ``string``).
        size_min: The smallest page size the input admits (at least 1).
        cap: The largest page size injected (see the module docstring).
        max_page_size: The upstream's documented maximum page, if any (the page-cap notice).
        items_field: The field holding the items (None: the answer is the list, or the only list field).
        next_field: The field holding the next cursor (dotted), if known.
        first_page: The number of the first page (``page`` style).
    """

    style: str
    cursor_input: str | None
    size_input: str | None
    size_type: str
    size_min: int
    cap: int
    max_page_size: int | None
    items_field: str | None
    next_field: str | None
    first_page: int = 1

    @classmethod
    def of(cls, op: Operation) -> Paging | None:
        """The paging of ``op``, or None when it declares none (or is not a read)."""
        pagination = op.pagination
        if pagination is None or not op.is_read:
            return None
        inputs = {
            binding.wire_name: (binding.property, binding.schema)
            for binding in input_bindings(op)
            if binding.location in ("query", "body_field")
        }
        cursor = inputs.get(pagination.cursor_param or "")
        size = inputs.get(pagination.page_size_param or "")
        size_schema: JSONObject = size[1] if size is not None and isinstance(size[1], dict) else {}
        kind = size_schema.get("type")
        size_type = kind if kind in ("integer", "number", "string") else "integer"
        minimum = _integer(size_schema.get("minimum"))
        maximum = _integer(size_schema.get("maximum"))
        top = pagination.max_page_size or maximum
        cap = top or pagination.default_page_size or FALLBACK_PAGE_CAP
        if maximum is not None:
            cap = min(cap, maximum)
        first = 1
        if cursor is not None and pagination.style == "page" and isinstance(cursor[1], dict):
            start = _integer(cursor[1].get("minimum"))
            if start is None:
                start = _integer(cursor[1].get("default"))
            first = start if start is not None and start in (0, 1) else 1
        return cls(
            style=pagination.style,
            cursor_input=cursor[0] if cursor is not None else None,
            size_input=size[0] if size is not None else None,
            size_type=size_type,
            size_min=max(1, minimum or 1),
            cap=max(1, cap),
            max_page_size=pagination.max_page_size,
            items_field=pagination.items_field,
            next_field=pagination.next_field,
            first_page=first,
        )

    # --- reading an answer ---------------------------------------------------------------------

    def items(self, data: JSONValue) -> tuple[list[Any], tuple[str, ...]] | None:
        """The answer's items and their path: the items field, the answer itself, or its only list field."""
        if self.items_field is not None:
            found = _walk(data, self.items_field)
            if not isinstance(found, list):
                return None
            named = isinstance(data, dict) and self.items_field in data
            return found, (self.items_field,) if named else tuple(self.items_field.split("."))
        if isinstance(data, list):
            return data, ()
        if isinstance(data, dict):
            lists = [key for key, value in data.items() if isinstance(value, list)]
            if len(lists) == 1:
                return data[lists[0]], (lists[0],)
        return None

    def next_token(self, data: JSONValue) -> str | int | float | None:
        """The upstream's next cursor in ``data`` (``cursor`` style with a known next field), else None."""
        if self.style != "cursor" or self.next_field is None:
            return None
        return _scalar(_walk(data, self.next_field))

    def says_more(self, data: JSONValue) -> bool | None:
        """Whether ``data`` says another page follows.

        True: a next cursor, ``has_more: true``, ``isLast: false``, a non-empty ``next_page``...; False:
        the answer says it is the last page (``has_more: false``, ``isLast: true``); None: it does not
        say (no cursor where one would be, a null ``next``), which is what a silent page cap looks like.
        """
        if self.next_token(data) is not None:
            return True
        if not isinstance(data, dict):
            return None
        for key in _LAST:
            if isinstance(data.get(key), bool):
                return not data[key]
        for key in _HAS_MORE:
            if isinstance(data.get(key), bool):
                return bool(data[key])
        for key in _NEXT:
            value = data.get(key)
            if value not in (None, "", False, [], {}):
                return True
        return None

    # --- where to continue ---------------------------------------------------------------------

    def _arg(self, args: Mapping[str, JSONValue], name: str | None) -> JSONValue:
        return args.get(name) if name is not None else None

    def continuation(
        self, data: JSONValue, args: Mapping[str, JSONValue], served: int | None
    ) -> tuple[JSONObject, bool] | None:
        """The inputs that fetch what follows, and whether they fetch exactly the items not served.

        Args:
            data: The whole answer.
            args: The call's arguments (the page it asked for).
            served: How many of the page's items the caller got (None: all of them).

        Returns:
            ``({input: value, ...}, exact)``: ``exact`` is True when the inputs continue right after the
            last served item, False when they fetch the upstream's next page (the items of this page
            not served are then skipped). None when the answer says of no way on.
        """
        found = self.items(data)
        if self.cursor_input is None or found is None:
            return None
        items, _ = found
        whole = served is None or served >= len(items)
        if self.style == "offset":
            start = _integer(self._arg(args, self.cursor_input))
            step = len(items) if served is None else served
            if step <= 0 or (start is None and self._arg(args, self.cursor_input) is not None):
                return None
            return {self.cursor_input: (start or 0) + step}, True
        if self.style == "page":
            given = self._arg(args, self.cursor_input)
            page = _integer(given) if given is not None else self.first_page
            if page is None:
                return None
            if whole:
                return {self.cursor_input: page + 1}, True
            assert served is not None
            size = _integer(self._arg(args, self.size_input)) or len(items)
            offset = (page - self.first_page) * size + served  # the first item not served
            step = next((d for d in range(served, 0, -1) if offset % d == 0), 1) if served > 0 else 0
            if self.size_input is not None and step * 2 >= served and step > 0:
                return {self.cursor_input: offset // step + self.first_page, self.size_input: step}, True
            return {self.cursor_input: page + 1}, False
        if self.style == "cursor":
            token = self.next_token(data)
            last = items[-1] if items else None
            by_id = self.cursor_input.lower() in _ID_CURSORS or (
                token is not None and isinstance(last, dict) and _scalar(last.get("id")) == token
            )
            upto = len(items) if served is None else min(served, len(items))
            if by_id and upto > 0 and (not whole or token is not None or self.says_more(data) is True):
                kept = items[upto - 1]
                value = _scalar(kept.get("id")) if isinstance(kept, dict) else None
                if value is not None:
                    return {self.cursor_input: value}, True
            if token is not None:
                return {self.cursor_input: token}, whole
        return None

    def page_cap(self, data: JSONValue, args: Mapping[str, JSONValue]) -> JSONObject | None:
        """The silent-page-cap facts, when ``data`` holds exactly the maximum page and says nothing of more.

        ``{"items", "path", "max_page_size", "next"?}`` (``next``: the inputs of the next page when they
        can be worked out).
        """
        if self.max_page_size is None:
            return None
        found = self.items(data)
        if found is None or len(found[0]) != self.max_page_size or self.says_more(data) is not None:
            return None
        items, path = found
        facts: JSONObject = {"items": len(items), "path": path, "max_page_size": self.max_page_size}
        if self.style in ("page", "offset"):
            following = self.continuation(data, args, None)
            if following is not None:
                facts["next"] = following[0]
        return facts

    # --- sizing a page -------------------------------------------------------------------------

    def page_size(self, item_tokens: float, overhead_tokens: float, budget: int) -> int:
        """The largest page whose answer fits ``budget`` tokens, within what the input and upstream admit."""
        room = budget * _PAGE_SHARE - max(0.0, overhead_tokens)
        count = math.floor(room / item_tokens) if item_tokens > 0 else self.cap
        return max(self.size_min, min(self.cap, count))

    def size_value(self, size: int) -> JSONValue:
        """``size`` typed as the page-size input takes it."""
        return str(size) if self.size_type == "string" else size


class ItemSizes:
    """A running estimate, per operation, of tokens per item and of the rest of an answer.

    Fed by this gateway's successful answers to paged reads; each new answer weighs half. It also
    keeps the most items an answer held and still fitted the budget whole: a page proven to fit is
    never sized smaller (an estimate is cautious; a page served whole is a fact). Bounded by the
    number of operations served.
    """

    __slots__ = ("_fitted", "_known")

    def __init__(self) -> None:
        self._known: dict[str, tuple[float, float]] = {}
        self._fitted: dict[str, int] = {}

    def observe(self, operation: str, item_tokens: float, overhead_tokens: float) -> None:
        """One answer of ``operation``: its tokens per item and the tokens of everything else."""
        before = self._known.get(operation)
        if before is None:
            self._known[operation] = (item_tokens, overhead_tokens)
        else:
            self._known[operation] = ((before[0] + item_tokens) / 2, (before[1] + overhead_tokens) / 2)

    def fits(self, operation: str, items: int) -> None:
        """An answer of ``operation`` holding ``items`` items fitted the budget whole."""
        if items > self._fitted.get(operation, 0):
            self._fitted[operation] = items

    def estimate(self, operation: str) -> tuple[float, float] | None:
        """``(tokens per item, tokens of the rest)`` for ``operation``, if any answer was observed."""
        return self._known.get(operation)

    def fitted(self, operation: str) -> int:
        """The most items an answer of ``operation`` held and still fitted the budget whole (0: none yet)."""
        return self._fitted.get(operation, 0)


def resolved_schema(schema: JSONValue, document: Document) -> JSONValue:
    """``schema`` with its top-level ``$ref`` chain followed into ``document``'s named schemas (bounded)."""
    for _ in range(_MAX_REFS):
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if not isinstance(ref, str) or not ref.startswith(_REF_PREFIX):
            return schema
        schema = document.schemas.get(ref[len(_REF_PREFIX) :])
    return schema


def _example(schema: JSONValue) -> JSONValue:
    if not isinstance(schema, dict):
        return None
    if "example" in schema:
        return schema["example"]
    examples = schema.get("examples")
    return examples[0] if isinstance(examples, list) and examples else None


def example_item_chars(op: Operation, document: Document, paging: Paging) -> float | None:
    """The compact-JSON characters of one item, from the spec's examples, if it gives any.

    Looked for, in order: an example of the item schema, of the items array (characters per item),
    and of the whole response (its items).
    """
    response = resolved_schema(op.output.schema, document)
    array: JSONValue = response
    if paging.items_field is not None and isinstance(response, dict):
        properties = response.get("properties")
        array = resolved_schema(properties.get(paging.items_field), document) if isinstance(properties, dict) else None
    if isinstance(array, dict):
        item = _example(resolved_schema(array.get("items"), document))
        if item is not None:
            return float(len(compact(item)))
        listed = _example(array)
        if isinstance(listed, list) and listed:
            return (len(compact(listed)) - 1) / len(listed)
    whole = _example(response)
    found = paging.items(whole) if whole is not None else None
    if found is not None and found[0]:
        return (len(compact(found[0])) - 1) / len(found[0])
    return None
