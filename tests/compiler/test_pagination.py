"""Pagination inference for reads (original-core §3.4): the continuation input, page size, items and next field."""

from __future__ import annotations

from typing import Any

from anvil.compiler.normalize import normalize_document


def _compile(
    params: list[dict[str, Any]],
    response: dict[str, Any],
    method: str = "get",
    path: str = "/things",
    operation_id: str = "listThings",
) -> Any:
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Svc", "version": "1"},
        "paths": {
            path: {
                method: {
                    "operationId": operation_id,
                    "parameters": params,
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": response}}}},
                }
            }
        },
        "components": {
            "schemas": {
                "Thing": {"type": "object", "properties": {"id": {"type": "string"}}},
                "Things": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}},
            }
        },
    }
    return normalize_document(doc, "svc").operations[0]


PAGE = {"type": "object", "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}}}}


def test_a_cursor_read_records_its_cursor_page_size_items_and_next_field() -> None:
    params = [
        {"name": "starting_after", "in": "query", "schema": {"type": "string"}},
        {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100, "default": 10}},
    ]
    response = {**PAGE, "properties": {**PAGE["properties"], "next_cursor": {"type": "string"}}}
    paging = _compile(params, response).pagination
    assert (paging.style, paging.cursor_param, paging.page_size_param) == ("cursor", "starting_after", "limit")
    assert (paging.items_field, paging.next_field) == ("data", "next_cursor")
    assert (paging.max_page_size, paging.default_page_size) == (100, 10)


def test_page_and_offset_styles_are_recognised_by_name() -> None:
    assert _compile([{"name": "page", "in": "query"}], PAGE).pagination.style == "page"
    offset = _compile([{"name": "startAt", "in": "query"}, {"name": "maxResults", "in": "query"}], PAGE).pagination
    assert (offset.style, offset.cursor_param, offset.page_size_param) == ("offset", "startAt", "maxResults")


def test_ambiguous_items_are_left_out_and_reads_without_a_continuation_do_not_page() -> None:
    two_arrays = {"type": "object", "properties": {"a": {"type": "array"}, "b": {"type": "array"}}}
    paging = _compile([{"name": "cursor", "in": "query"}], two_arrays).pagination
    assert paging.style == "cursor" and paging.items_field is None
    assert _compile([{"name": "limit", "in": "query"}], PAGE).pagination is None


def test_a_mutation_never_pages() -> None:
    assert _compile([{"name": "cursor", "in": "query"}], PAGE, method="post").pagination is None


def test_only_a_property_declared_an_array_in_place_is_the_items_as_in_the_original() -> None:
    # Slack's files.info answers a named array (comments) beside a tuple-like object without a type.
    response = {
        "type": "object",
        "properties": {
            "comments": {"$ref": "#/components/schemas/Things"},
            "meta": {"items": [{"type": "object"}]},
            "members": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}},
        },
    }
    assert _compile([{"name": "cursor", "in": "query"}], response).pagination.items_field == "members"
    named_only = {"type": "object", "properties": {"comments": {"$ref": "#/components/schemas/Things"}}}
    assert _compile([{"name": "cursor", "in": "query"}], named_only).pagination.items_field is None


def test_only_a_list_or_search_read_pages_not_a_read_of_one_item_or_of_a_status() -> None:
    params = [{"name": "cursor", "in": "query"}, {"name": "limit", "in": "query"}]
    one = _compile([{"name": "id", "in": "path", "required": True}, *params], PAGE, path="/things/{id}")
    assert one.effect.action == "get" and one.pagination is None
    status = _compile(params, PAGE, path="/status_updates", operation_id="getStatusUpdates")
    assert status.effect.action == "poll" and status.pagination is None
    assert _compile(params, PAGE).pagination is not None


def test_the_continuation_is_the_input_matching_the_earliest_name_of_its_style() -> None:
    params = [{"name": "start_at", "in": "query"}, {"name": "offset", "in": "query"}]
    assert _compile(params, PAGE).pagination.cursor_param == "offset"
