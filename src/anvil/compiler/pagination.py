"""Pagination inference for reads (original-core §3.4, §1.3 ``pagination``).

A read pages when it takes a continuation input: a cursor (``cursor``, ``starting_after``,
``page_token``...), a page number (``page``) or an offset (``offset``, ``startAt``, ``skip``). The
page-size input, the items array and the next-token field are recorded only when the source makes
them unambiguous (exactly one candidate); a guess would send an agent paging the wrong way. As in the
original, the items array is a property the success schema declares ``type: array`` in place: a
reference to a named array schema, or an ``items`` keyword without the type, is not located (the
sentence "items at '...'" is part of the tool description the disclosure figures measure).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final, Literal

from anvil._types import JSONObject, JSONValue
from anvil.air.model import Operation, Pagination
from anvil.air.naming import snake

__all__ = ["infer_pagination"]

Style = Literal["cursor", "page", "offset", "link"]

#: Continuation input names per style, compared snake-cased and lowercased; styles are checked in this
#: order, and within a style the input matching the earliest name is the continuation (``offset``
#: before ``startAt`` when a read takes both, as the original chooses).
CONTINUATION: Final[tuple[tuple[Style, tuple[str, ...]], ...]] = (
    (
        "cursor",
        (
            *("cursor", "starting_after", "page_token", "pagetoken", "next_token", "nexttoken", "next_page_token"),
            *("continuation_token", "continuation", "page_cursor", "next_cursor", "after", "marker"),
        ),
    ),
    ("page", ("page", "page_number", "pagenumber")),
    ("offset", ("offset", "start_at", "startat", "skip")),
)
#: The actions of reads that page: a read of one item (``get``) or of a status (``poll``) does not.
PAGED_ACTIONS: Final = frozenset({"list", "search"})
#: Page-size input names.
PAGE_SIZE: Final = frozenset(
    {"limit", "page_size", "pagesize", "per_page", "perpage", "max_results", "maxresults", "page_limit"}
)
#: Response fields that carry the next continuation token.
NEXT_FIELDS: Final = frozenset(
    {"next", "next_cursor", "nextcursor", "next_page_token", "nextpagetoken", "next_token", "nexttoken"}
    | {"next_page", "nextpage", "cursor", "next_page_cursor", "offset", "next_offset", "continuation_token"}
)
#: Envelope objects whose next field counts (``response_metadata.next_cursor``).
ENVELOPES: Final = frozenset({"meta", "metadata", "response_metadata", "pagination", "paging", "links", "page_info"})
_MAX_SIZE: Final = 10_000_000


def _keys(name: str) -> set[str]:
    return {name.lower(), snake(name)}


def _integer(value: JSONValue) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return None
    number = int(value)
    return number if 0 < number <= _MAX_SIZE else None


def _inputs(op: Operation) -> list[tuple[str, JSONObject]]:
    """(wire name, schema) of the inputs a continuation can travel in: query params and projected body fields."""
    found = [(p.name, p.schema) for p in op.input.params if p.in_ == "query"]
    body = op.input.body
    if body is not None and body.projection == "fields":
        found.extend((f.name, f.schema) for f in body.fields)
    return found


def _one(candidates: Iterable[str]) -> str | None:
    unique = list(dict.fromkeys(candidates))
    return unique[0] if len(unique) == 1 else None


def _is_array(schema: JSONValue) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def _next_field(properties: JSONObject, resolve: Callable[[JSONValue], JSONValue]) -> str | None:
    candidates = [name for name in properties if _keys(name) & NEXT_FIELDS]
    for name, raw in properties.items():
        if not (_keys(name) & ENVELOPES):
            continue
        inner = resolve(raw)
        nested = inner.get("properties") if isinstance(inner, dict) else None
        if isinstance(nested, dict):
            candidates.extend(f"{name}.{key}" for key in nested if _keys(key) & NEXT_FIELDS)
    return _one(candidates)


def infer_pagination(op: Operation, resolve: Callable[[JSONValue], JSONValue]) -> Pagination | None:
    """The pagination of a read, or None when it takes no continuation input (or is not a read).

    Args:
        op: the normalized operation.
        resolve: follows a ``$ref`` of the source document (the success schema may be a reference).
    """
    if op.effect.kind != "read" or op.effect.action not in PAGED_ACTIONS:
        return None
    inputs = _inputs(op)
    style: Style | None = None
    cursor: str | None = None
    for candidate, names in CONTINUATION:
        matches = [name for known in names for name, _ in inputs if known in _keys(name)]
        if matches:
            style, cursor = candidate, matches[0]
            break
    if style is None or cursor is None:
        return None
    size_name = _one(name for name, _ in inputs if _keys(name) & PAGE_SIZE)
    size_schema = next((schema for name, schema in inputs if name == size_name), {}) if size_name else {}
    schema = resolve(op.output.schema) if op.output.schema is not None else None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    items_field = next_field = None
    if isinstance(properties, dict):
        items_field = _one(name for name, raw in properties.items() if _is_array(raw))
        if style == "cursor":
            next_field = _next_field(properties, resolve)
    return Pagination(
        style=style,
        cursor_param=cursor,
        next_field=next_field,
        items_field=items_field,
        page_size_param=size_name,
        max_page_size=_integer(size_schema.get("maximum")) if size_name else None,
        default_page_size=_integer(size_schema.get("default")) if size_name else None,
    )
