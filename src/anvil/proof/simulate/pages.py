"""Paged reads in the simulator (original-core §8.4 ``pagination``): how the upstream pages, how an agent continues.

The simulated upstream serves every paged read as two pages: page 1 is full (the declared default
page size, at most :data:`MAX_PAGE_ITEMS`; :data:`PAGE_ITEMS` when none is declared) and page 2
holds one item and ends. How a caller reaches page 2 is the read's AIR ``pagination``:

* ``cursor`` with a ``nextField``: page 1 carries a seeded token there, page 2 an empty one; the
  upstream accepts only tokens it issued (an unknown cursor is a 400, as real APIs answer);
* ``cursor`` without one (Stripe's ``starting_after``): the last item's ``id`` continues;
* ``page``: the next page number; ``offset``: the number of items seen so far.

The agent side (:func:`continuation`) reads the continuation from the answer exactly as the
contract says, so a surface that loses the cursor argument, or a contract that names the wrong
field, sends the upstream a request for the wrong page and a cell fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.model import Pagination

__all__ = [
    "MAX_PAGE_ITEMS",
    "PAGE_ITEMS",
    "PageServed",
    "continuation",
    "items_of",
    "locatable",
    "page_items",
    "page_length",
    "received_continuation",
    "set_path",
]

#: Items on page 1 when the read declares no default page size.
PAGE_ITEMS: Final = 2
#: The most items the simulator puts on one page (a bound, whatever the contract declares).
MAX_PAGE_ITEMS: Final = 100
_MAX_BODY: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class PageServed:
    """One page the upstream served.

    Attributes:
        page: The page number.
        received: The continuation value as the request carried it (None: absent).
        handed_out: The continuation this page gave for the next one (None: the pages end here).
    """

    page: int
    received: str | None
    handed_out: str | None = None


def page_length(paging: Pagination) -> int:
    """How many items page 1 holds."""
    return max(1, min(paging.default_page_size or PAGE_ITEMS, MAX_PAGE_ITEMS))


def page_items(paging: Pagination, page: int) -> int:
    """How many items page ``page`` holds: a full page 1, a short page 2 (one item, none after a one-item page)."""
    length = page_length(paging)
    if page == 1:
        return length
    return min(1, length - 1) if page == 2 else 0


def _scalar(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def received_continuation(request: httpx.Request, name: str | None) -> str | None:
    """The continuation input ``name`` as the request carries it: the query, else a JSON body field."""
    if name is None:
        return None
    if name in request.url.params:
        return request.url.params[name]
    content = request.content
    if not content or len(content) > _MAX_BODY:
        return None
    try:
        body = json.loads(content)
    except ValueError:
        return None
    return _scalar(body.get(name)) if isinstance(body, dict) else None


def _walk(data: JSONValue, path: str) -> JSONValue:
    for part in path.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def set_path(data: JSONValue, path: str, value: JSONValue) -> None:
    """Set the dotted ``path`` of ``data`` (an object) to ``value``, creating objects on the way."""
    if not isinstance(data, dict):
        return
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[last] = value


def items_of(paging: Pagination, data: JSONValue) -> list[JSONValue] | None:
    """The items of a page as the contract locates them (None: the contract does not say where they are)."""
    found = _walk(data, paging.items_field) if paging.items_field else data
    return found if isinstance(found, list) else None


def _last_id(items: list[JSONValue] | None) -> str | None:
    last = items[-1] if items else None
    return _scalar(last.get("id")) if isinstance(last, dict) else None


def continuation(paging: Pagination, data: JSONValue, *, page: int, length: int) -> str | None:
    """The value that continues after this page, read as the contract says (None: the pages end here).

    Args:
        paging: The read's AIR pagination.
        data: The page as the caller received it.
        page: The page number this answer is (1 for the first request).
        length: Items on a full page (a short page is the last one for page and offset styles).
    """
    items = items_of(paging, data)
    if paging.style == "cursor":
        if paging.next_field:
            token = _scalar(_walk(data, paging.next_field))
            return token or None
        return _last_id(items) if items is not None and len(items) >= length else None
    if paging.style in ("page", "offset") and items is not None and len(items) >= length:
        return str(page + 1) if paging.style == "page" else str(page * length)
    return None


def locatable(paging: Pagination, item_schema: Mapping[str, Any] | None) -> bool:
    """True when a caller can find the continuation from the contract (a cell can claim page 2).

    ``item_schema`` is the resolved schema of one item, None when the contract does not locate items.
    """
    if paging.style == "cursor":
        if paging.next_field:
            return True
        properties = item_schema.get("properties") if isinstance(item_schema, Mapping) else None
        return isinstance(properties, Mapping) and "id" in properties
    return paging.style in ("page", "offset") and item_schema is not None  # a short page ends them
