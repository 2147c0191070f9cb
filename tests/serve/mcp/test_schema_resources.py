"""A tool whose input schema is too large is listed summarised; its whole schema is a resource; calls meet the whole.

Served through the fleet and the official MCP client; the upstream is an ``httpx.MockTransport``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jsonschema
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from anvil.air.input_summary import INPUT_SCHEMA_BUDGET_TOKENS
from anvil.air.model import Document
from anvil.air.outputs import compact_size
from anvil.air.surface import INPUT_SCHEMA_META
from anvil.air.tools import published_input_schema
from anvil.compiler import build
from anvil.runtime.context import RuntimeContext
from anvil.serve.auth.grants import parse_grants
from anvil.serve.auth.principals import STATIC_ISSUER, Principal
from anvil.serve.fleet import Fleet, FleetBundle
from anvil.serve.mcp.resources import RESOURCE_NOT_FOUND, SCHEMA_JSON
from anvil.serve.mcp.server import build_server
from tests.serve.support import token_variable

pytestmark = pytest.mark.anyio

CREATE, GET = "shop_create_order", "shop_get_order"
URI = f"anvil://schema/{CREATE}"


def _address(lines: int) -> dict[str, Any]:
    described = {
        f"line{i}": {"type": "string", "description": f"Address line {i} of the recipient, as printed on the label."}
        for i in range(lines)
    }
    geo = {"type": "object", "properties": {"lat": {"type": "number"}, "lng": {"type": "number"}}}
    return {
        "type": "object",
        "properties": {**described, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}, "geo": geo},
        "required": ["zip"],
    }


def _spec(notes: int = 0) -> dict[str, Any]:
    """Orders: a create whose optional shipping address alone is ~20 KB of schema (and ``notes`` optional
    strings of ~100 characters each), and a small read."""
    noted = {f"note{i}": {"type": "string", "description": "A note for the courier. " * 4} for i in range(notes)}
    body = {
        "type": "object",
        "required": ["sku"],
        "properties": {
            "sku": {"type": "string"},
            "shipping": {
                "type": "object",
                "properties": {"address": {"$ref": "#/components/schemas/Address"}, "carrier": {"type": "string"}},
            },
            **noted,
        },
    }
    answer = {"content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Shop", "version": "1.0.0"},
        "servers": [{"url": "https://shop.example.test"}],
        "components": {
            "schemas": {"Address": _address(200)},
            "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}},
        },
        "security": [{"key": []}],
        "paths": {
            "/orders": {
                "post": {
                    "operationId": "createOrder",
                    "summary": "Create an order",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                    "responses": {"201": {"description": "created", **answer}},
                }
            },
            "/orders/{id}": {
                "get": {
                    "operationId": "getOrder",
                    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "the order", **answer}},
                }
            },
        },
    }


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Document:
    folder = tmp_path_factory.mktemp("shop")
    (folder / "openapi.json").write_text(json.dumps(_spec()), encoding="utf-8")
    manifest = "operations:\n  createOrder:\n    state: approved\n  getOrder:\n    state: approved\n"
    (folder / "anvil.yaml").write_text(manifest, encoding="utf-8")
    result = build(folder / "openapi.json", manifest=folder / "anvil.yaml", service_id="shop")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    return result.document


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[httpx.AsyncClient, list[httpx.Request]]]:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"id": "o_1"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        yield client, seen


def _bundle(doc: Document, client: httpx.AsyncClient, bundle_id: str = "shop") -> FleetBundle:
    context = RuntimeContext(
        service_id=doc.service.id,
        base_url="http://127.0.0.1:9",
        client=client,
        env="dev",
        allowed_hosts=("127.0.0.1",),
        credentials={token_variable(doc): "shop-key"},
    )
    return FleetBundle(id=bundle_id, document=doc, context=context)


def _op(doc: Document, tool: str) -> Any:
    return next(op for op in doc.operations if op.mcp.tool_name == tool)


def _order(zip_code: object) -> dict[str, Any]:
    address = {"zip": zip_code, "line7": "Flat 3", "geo": {"lat": 1.5, "lng": 2.5}}
    return {"body": {"sku": "sku_1", "shipping": {"address": address, "carrier": "ups"}}, "confirm": True}


async def test_a_tool_over_the_input_budget_is_listed_summarised_and_its_whole_schema_is_its_resource(
    shop: Document, upstream: tuple[httpx.AsyncClient, list[httpx.Request]]
) -> None:
    fleet = Fleet([_bundle(shop, upstream[0])])
    whole = published_input_schema(_op(shop, CREATE))
    assert compact_size(whole) > INPUT_SCHEMA_BUDGET_TOKENS * 4
    async with Client(build_server(fleet)) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        resources = (await client.list_resources()).resources
        read = await client.read_resource(URI)
    create, get = listed[CREATE], listed[GET]
    assert create.meta is not None and create.meta[INPUT_SCHEMA_META] == "summarised"
    assert compact_size(create.input_schema) <= INPUT_SCHEMA_BUDGET_TOKENS * 4
    assert URI in json.dumps(create.input_schema)
    assert get.meta is not None and INPUT_SCHEMA_META not in get.meta  # within the budget: listed whole
    assert get.input_schema == published_input_schema(_op(shop, GET))
    assert [(str(item.uri), item.mime_type) for item in resources] == [(URI, SCHEMA_JSON)]
    [content] = read.contents
    assert (str(content.uri), content.mime_type) == (URI, SCHEMA_JSON)
    assert json.loads(getattr(content, "text", "")) == whole


async def test_a_call_the_summary_admits_but_the_whole_schema_refuses_is_a_validation_error(
    shop: Document, upstream: tuple[httpx.AsyncClient, list[httpx.Request]]
) -> None:
    client_http, seen = upstream
    fleet = Fleet([_bundle(shop, client_http)])
    listed = next(tool for tool in fleet.tools if tool["name"] == CREATE)["inputSchema"]
    whole = published_input_schema(_op(shop, CREATE))
    bad, good = _order(12345), _order("12345")  # the zip, deep in an optional part, must be a string
    assert jsonschema.Draft202012Validator(listed).is_valid(bad)  # what a stock client checks: admitted
    assert not jsonschema.Draft202012Validator(whole).is_valid(bad)
    async with Client(build_server(fleet)) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool(CREATE, bad)
            assert seen == []
            done = await client.call_tool(CREATE, good)
    assert refused.is_error is True
    error = json.loads(refused.content[0].text)["error"]
    assert error["code"] == "validation_error"
    assert "shipping" in json.dumps(error)
    assert done.is_error is not True, done.content
    [request] = seen
    assert json.loads(request.content)["shipping"]["address"] == good["body"]["shipping"]["address"]


async def test_a_fleet_serves_the_schema_under_the_dialed_name_and_only_to_a_caller_whose_listing_shows_the_tool(
    shop: Document, upstream: tuple[httpx.AsyncClient, list[httpx.Request]]
) -> None:
    client_http = upstream[0]
    fleet = Fleet([_bundle(shop, client_http), _bundle(shop, client_http, "mirror")])
    prefixed = f"anvil://schema/shop__{CREATE}"
    listed = next(tool for tool in fleet.tools if tool["name"] == f"shop__{CREATE}")
    assert prefixed in json.dumps(listed["inputSchema"]) and URI + ")" not in json.dumps(listed["inputSchema"])
    assert [resource.uri for resource in fleet.resources] == [prefixed, f"anvil://schema/mirror__{CREATE}"]

    def caller(mode: str) -> Principal:
        grants = parse_grants([{"connector": "shop", "operations": ["*"], "mode": mode, "confirm": "allow"}])
        return Principal(id=mode, grants=grants, issuer=STATIC_ISSUER, subject=mode, verified=True)

    writer, reader = fleet.compose(caller("write")), fleet.compose(caller("read"))
    assert [resource.uri for resource in writer.resources] == [prefixed]
    assert writer.resource(prefixed) is not None
    assert f"shop__{CREATE}" not in [tool["name"] for tool in reader.tools]
    assert reader.resources == ()
    async with Client(build_server(fleet, select=lambda _request: reader)) as client:
        with pytest.raises(MCPError) as hidden:
            await client.read_resource(prefixed)
        with pytest.raises(MCPError) as unknown:
            await client.read_resource(f"anvil://schema/shop__{GET}")  # listed, but whole: no resource
    assert hidden.value.error.code == unknown.value.error.code == RESOURCE_NOT_FOUND
    assert hidden.value.error.message == unknown.value.error.message


def _compiled(folder: Path, notes: int) -> list[str]:
    (folder / "openapi.json").write_text(json.dumps(_spec(notes)), encoding="utf-8")
    (folder / "anvil.yaml").write_text("operations:\n  createOrder:\n    state: approved\n", encoding="utf-8")
    result = build(folder / "openapi.json", manifest=folder / "anvil.yaml", service_id="shop")
    return [d.message for d in result.diagnostics if d.code == "disclosure/input_over_budget"]


def test_a_summary_within_the_tool_budget_leaves_no_warning_and_one_over_it_says_it_is_summarised(
    tmp_path: Path,
) -> None:
    assert _compiled(tmp_path, 0) == []  # the summary brought the whole tool within its 1,200 tokens
    [warning] = _compiled(tmp_path, 100)  # a hundred optional notes: still over the tool budget
    assert f"its input schema is published summarised (the whole one is the resource {URI})" in warning
