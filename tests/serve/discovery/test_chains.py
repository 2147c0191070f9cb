"""Which tools' answers supply another tool's required ids (``_meta["anvil/inputs_from"]``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from anvil.air.model import Document
from anvil.compiler import build
from anvil.serve.auth.naming import fleet_tool_name
from anvil.serve.discovery.chains import MAX_SUPPLIERS, inputs_from
from tests.conftest import corpus_dir, missing


def _object(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


def _answer(schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}}


def _listing(**lists: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "array", "items": items} for name, items in lists.items()}}


def _path_id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


WIDGET = {"$ref": "#/components/schemas/Widget"}
PART = {"$ref": "#/components/schemas/Part"}
BODY = {"content": {"application/json": {"schema": _object("name")}}}
SHOP: dict[str, Any] = {
    "openapi": "3.0.0",
    "info": {"title": "Shop", "version": "1"},
    "servers": [{"url": "https://shop.example"}],
    "components": {"schemas": {"Widget": _object("id", "name"), "Part": _object("id", "size")}},
    "paths": {
        "/widgets": {
            "get": {"operationId": "listWidgets", "responses": _answer(_listing(widgets=WIDGET))},
            "post": {"operationId": "createWidget", "requestBody": BODY, "responses": _answer(WIDGET)},
        },
        "/widgets/{widget_id}": {
            "get": {"operationId": "getWidget", "parameters": [_path_id("widget_id")], "responses": _answer(WIDGET)},
            "put": {
                "operationId": "updateWidget",
                "parameters": [_path_id("widget_id")],
                "requestBody": BODY,
                "responses": _answer(WIDGET),
            },
        },
        "/widgets/{widget_id}/parts": {
            "get": {
                "operationId": "listParts",
                "parameters": [_path_id("widget_id")],
                "responses": _answer({"type": "array", "items": PART}),
            }
        },
        "/widgets/{widget_id}/parts/{partId}": {
            "get": {
                "operationId": "getPart",
                "parameters": [_path_id("widget_id"), _path_id("partId")],
                "responses": _answer(PART),
            }
        },
        "/search": {
            "get": {
                "operationId": "searchEverything",
                "responses": _answer(_listing(widgets=WIDGET, gadgets=_object("name"))),
            }
        },
        "/gadgets": {
            "get": {"operationId": "listGadgets", "responses": _answer({"type": "array", "items": _object("name")})}
        },
        "/gadgets/{gadget_id}": {
            "get": {
                "operationId": "getGadget",
                "parameters": [_path_id("gadget_id")],
                "responses": _answer(_object("name")),
            }
        },
    },
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Document:
    spec = tmp_path_factory.mktemp("shop") / "shop.json"
    spec.write_text(json.dumps(SHOP), encoding="utf-8")
    document = build(spec, manifest=None, service_id="shop", source_uri="shop.json").document
    assert document is not None
    return document


def _served(document: Document, *hidden: str) -> dict[str, str]:
    return {op.id: op.mcp.tool_name for op in document.operations if op.id not in hidden}


def test_a_gets_id_is_supplied_by_its_collections_list_then_a_named_search_then_the_create(shop: Document) -> None:
    chains = inputs_from(shop, _served(shop).get)
    assert chains["shop.widgets.get"] == {
        "widget_id": ("shop_list_widgets", "shop_search_everything", "shop_create_widget")
    }


def test_a_child_needs_its_parents_id_from_the_parents_suppliers_and_its_own_from_the_child_list(
    shop: Document,
) -> None:
    chains = inputs_from(shop, _served(shop).get)
    assert chains["shop.parts.get"]["widget_id"][0] == "shop_list_widgets"
    assert chains["shop.parts.get"]["part_id"] == ("shop_list_parts",)  # needs the widget's id, not its own


def test_an_operation_that_needs_the_same_id_or_reads_one_never_supplies_it(shop: Document) -> None:
    chains = inputs_from(shop, _served(shop).get)
    suppliers = {tool for inputs in chains.values() for tools in inputs.values() for tool in tools}
    assert "shop_update_widget" not in suppliers and "shop_get_widget" not in suppliers
    assert "shop.widgets.list" not in chains  # nothing required


def test_an_input_whose_candidate_answers_show_no_id_has_no_entry(shop: Document) -> None:
    chains = inputs_from(shop, _served(shop).get)
    assert "shop.gadgets.get" not in chains  # the gadget list and the search answer gadgets without ids


def test_an_operation_not_served_neither_supplies_nor_is_listed(shop: Document) -> None:
    chains = inputs_from(shop, _served(shop, "shop.widgets.list", "shop.parts.get").get)
    assert chains["shop.widgets.get"] == {"widget_id": ("shop_search_everything", "shop_create_widget")}
    assert "shop.parts.get" not in chains


def test_suppliers_are_named_as_the_caller_dials_them_in_a_fleet(shop: Document) -> None:
    names = {op_id: fleet_tool_name("retail/shop", tool) for op_id, tool in _served(shop).items()}
    chains = inputs_from(shop, names.get)
    assert chains["shop.widgets.replace"]["widget_id"][0] == "retail_shop__shop_list_widgets"


# --- the corpus: one large spec ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def pagerduty() -> Document:
    folder = corpus_dir()
    if not (folder / "INDEX.tsv").is_file():
        missing(f"corpus not found at {folder} (set ANVIL_CORPUS)")
    spec = Path(folder / "pagerduty-rest.json")
    document = build(spec, manifest=None, service_id="pagerduty-rest", source_uri=spec.name).document
    assert document is not None and len(document.operations) > 400
    return document


@pytest.mark.corpus
def test_pagerduty_incident_ids_come_from_the_incident_list_and_create_within_bounded_time(
    pagerduty: Document,
) -> None:
    start = time.perf_counter()
    chains = inputs_from(pagerduty, _served(pagerduty).get)
    assert time.perf_counter() - start < 0.5
    incident = chains["pagerduty-rest.incidents.get.by_id"]["id"]
    assert incident[:2] == ("pagerduty-rest_list_incidents", "pagerduty-rest_create_incident_direct")
    note = chains["pagerduty-rest.notes.replace"]
    assert note["id"][:2] == incident[:2]  # /incidents/{id}/notes/{note_id}: id is the incident's
    assert note["note_id"] == ("pagerduty-rest_list_incident_notes", "pagerduty-rest_create_incident_note")
    assert all(0 < len(tools) <= MAX_SUPPLIERS for inputs in chains.values() for tools in inputs.values())
    served = set(_served(pagerduty).values())
    assert {tool for inputs in chains.values() for tools in inputs.values() for tool in tools} <= served
