"""Paged reads under the response budget: inputs, where to continue, the page cap, sizes (``anvil.serve.pages``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anvil.air.model import Document, Operation, Pagination
from anvil.serve.pages import FALLBACK_PAGE_CAP, ItemSizes, Paging, example_item_chars
from tests.serve.budget_upstream import catalog_document


@pytest.fixture(scope="module")
def catalog() -> Document:
    return catalog_document()


def op(catalog: Document, op_id: str) -> Operation:
    found = catalog.operation(op_id)
    assert found is not None
    return found


def paging(catalog: Document, op_id: str) -> Paging:
    found = Paging.of(op(catalog, op_id))
    assert found is not None
    return found


def test_a_reads_paging_names_its_inputs_as_the_caller_sends_them_with_the_upstreams_bounds(catalog: Document) -> None:
    items = paging(catalog, "catalog.items.list")
    assert (items.style, items.cursor_input, items.size_input, items.cap, items.max_page_size) == (
        "cursor",
        "starting_after",
        "limit",
        100,
        100,
    )
    pages = paging(catalog, "catalog.pages.list")
    assert (pages.first_page, pages.size_input, pages.cap) == (1, "per_page", 30)
    assert Paging.of(op(catalog, "catalog.exports.create")) is None  # a write never pages
    assert Paging.of(op(catalog, "catalog.report.list")) is None


def test_an_offset_read_continues_after_the_served_items_or_the_whole_page(catalog: Document) -> None:
    records = paging(catalog, "catalog.records.list")
    page = {"records": [{"id": n} for n in range(40)]}
    assert records.continuation(page, {"offset": 80}, 12) == ({"offset": 92}, True)
    assert records.continuation(page, {}, None) == ({"offset": 40}, True)
    assert records.continuation(page, {"offset": 80}, 0) is None  # nothing served: no way on
    assert records.continuation(page, {"offset": "eighty"}, 3) is None


def test_a_page_read_cut_continues_on_a_page_size_that_lands_on_the_first_item_not_served(catalog: Document) -> None:
    pages = paging(catalog, "catalog.pages.list")
    page = [{"n": n} for n in range(30)]
    assert pages.continuation(page, {"page": 1}, 25) == ({"page": 2, "per_page": 25}, True)
    assert pages.continuation(page, {"page": 3, "per_page": 30}, 25) == ({"page": 6, "per_page": 17}, True)
    assert pages.continuation(page, {"page": 2}, 29) == ({"page": 3}, False)  # no size lands near: next page
    assert pages.continuation(page, {}, None) == ({"page": 2}, True)


def test_a_cursor_read_continues_from_its_next_cursor_or_the_last_served_id(catalog: Document) -> None:
    events = paging(catalog, "catalog.events.list")
    answer = {"events": [{"n": 1}, {"n": 2}], "response_metadata": {"next_cursor": "c-2"}}
    assert events.next_token(answer) == "c-2" and events.says_more(answer) is True
    assert events.continuation(answer, {}, None) == ({"cursor": "c-2"}, True)
    assert events.continuation(answer, {}, 1) == ({"cursor": "c-2"}, False)  # skips the item not served
    by_id = {"events": [{"id": "e1"}, {"id": "e2"}], "response_metadata": {"next_cursor": "e2"}}
    assert events.continuation(by_id, {}, 1) == ({"cursor": "e1"}, True)  # the upstream's cursor is an item id
    items = paging(catalog, "catalog.items.list")
    stripe = {"data": [{"id": "a"}, {"id": "b"}], "has_more": True}
    assert items.continuation(stripe, {}, 1) == ({"starting_after": "a"}, True)
    assert items.continuation(stripe, {}, None) == ({"starting_after": "b"}, True)
    assert items.continuation({**stripe, "has_more": False}, {}, None) is None


def test_a_full_page_is_a_silent_cap_only_when_the_answer_says_nothing_of_more(catalog: Document) -> None:
    records = paging(catalog, "catalog.records.list")
    full = {"records": [{"id": n} for n in range(50)]}
    assert records.page_cap(full, {"offset": 50}) == {
        "items": 50,
        "path": ("records",),
        "max_page_size": 50,
        "next": {"offset": 100},
    }
    for said in ({"isLast": True}, {"isLast": False}, {"has_more": False}, {"next": "/records?offset=50"}):
        assert records.page_cap({**full, **said}, {}) is None
    assert records.page_cap({**full, "next": None}, {}) is not None
    assert records.page_cap({"records": full["records"][:49]}, {}) is None
    events = paging(catalog, "catalog.events.list")
    full_events = {"events": [{}] * 200, "response_metadata": {"next_cursor": ""}}
    assert events.page_cap(full_events, {}) == {"items": 200, "path": ("events",), "max_page_size": 200}


def test_a_page_is_sized_to_the_budget_within_what_the_input_and_upstream_admit(catalog: Document) -> None:
    items = paging(catalog, "catalog.items.list")
    assert items.page_size(100.0, 200.0, 8000) == 66  # (8,000 * 0.85 - 200) / 100
    assert items.page_size(1.0, 0.0, 8000) == 100  # never above the upstream's maximum
    assert items.page_size(50_000.0, 0.0, 8000) == 1  # at least one item
    assert items.size_value(7) == 7 and replace(items, size_type="string").size_value(7) == "7"
    loose = Pagination(style="cursor", cursor_param="starting_after", page_size_param="limit")
    assert Paging.of(replace(op(catalog, "catalog.items.list"), pagination=loose)) is not None
    unbounded = replace(op(catalog, "catalog.events.list"), pagination=replace(loose, page_size_param="nope"))
    assert paging(catalog, "catalog.events.list").cap == 200
    found = Paging.of(unbounded)
    assert found is not None and found.size_input is None and found.cap == FALLBACK_PAGE_CAP


def test_the_item_size_estimate_follows_each_answer_by_half_and_keeps_the_largest_fitting_page(
    catalog: Document,
) -> None:
    sizes = ItemSizes()
    assert sizes.estimate("a") is None
    sizes.observe("a", 100.0, 40.0)
    sizes.observe("a", 50.0, 20.0)
    assert sizes.estimate("a") == (75.0, 30.0) and sizes.estimate("b") is None
    assert sizes.fitted("a") == 0  # neither answer was said to fit whole
    sizes.fits("a", 40)
    sizes.fits("a", 12)
    assert sizes.fitted("a") == 40  # the most items a page held and still fitted


def test_an_items_size_is_read_from_the_specs_example_of_one_item(catalog: Document) -> None:
    records = op(catalog, "catalog.records.list")
    chars = example_item_chars(records, catalog, paging(catalog, "catalog.records.list"))
    assert chars == len(
        '{"id":1234,"title":"A record of something that happened, with a title long enough to weigh a few tokens"}'
    )
    assert example_item_chars(op(catalog, "catalog.items.list"), catalog, paging(catalog, "catalog.items.list")) is None
    listed = {"type": "object", "properties": {"events": {"type": "array", "example": [{"n": 1}, {"n": 22}]}}}
    events = replace(op(catalog, "catalog.events.list"), output=replace(records.output, schema=listed))
    # Each item with its comma: (len('[{"n":1},{"n":22}]') - 1) / 2.
    assert example_item_chars(events, catalog, paging(catalog, "catalog.events.list")) == 8.5
    whole = {"type": "object", "example": {"events": [{"n": 333}]}}
    events = replace(events, output=replace(records.output, schema=whole))
    assert example_item_chars(events, catalog, paging(catalog, "catalog.events.list")) == 10.0
