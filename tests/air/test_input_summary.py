"""The input-schema summary: required properties whole, optional structure past a depth one stub, accepting more."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from anvil._types import JSONObject
from anvil.air.input_summary import (
    INPUT_SCHEMA_BUDGET_TOKENS,
    InputSummary,
    required_part,
    schema_uri,
    summarise_input_schema,
)
from anvil.air.inputs import safety_keys
from anvil.air.outputs import compact_size
from anvil.air.schema_check import is_well_formed_schema
from anvil.air.surface import INPUT_SCHEMA_META, ToolSurface, surface_of
from anvil.air.tokens import count_tokens
from anvil.air.tools import RESERVED_ARGUMENTS, published_input_schema
from anvil.compiler import build
from anvil.serve.mcp.listing import served_tool_definition

TOOL = "shop_create_order"
URI = "anvil://schema/shop_create_order"


def _lines(count: int, prefix: str = "line") -> JSONObject:
    return {
        f"{prefix}{i}": {"type": "string", "description": f"Line {i} of this part, as printed on the label."}
        for i in range(count)
    }


def _address(count: int = 40) -> JSONObject:
    geo = {"type": "object", "properties": {"lat": {"type": "number"}, "lng": {"type": "number"}}}
    return {
        "type": "object",
        "description": "A postal address.",
        "additionalProperties": False,
        "properties": {**_lines(count), "zip": {"type": "string", "pattern": "^[0-9]{5}$"}, "geo": geo},
        "required": ["zip"],
    }


def order_schema(count: int = 40) -> JSONObject:
    """A tool's input: a required body (its sku and its billing address required), optional shipping."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "title": "create_order",
        "additionalProperties": False,
        "properties": {
            "body": {
                "type": "object",
                "required": ["sku", "billing"],
                "properties": {
                    "sku": {"type": "string"},
                    "billing": {"$ref": "#/$defs/Address"},
                    "shipping": {
                        "type": "object",
                        "properties": {"address": {"$ref": "#/$defs/Address"}, "carrier": {"type": "string"}},
                    },
                    "gift": {"$ref": "#/$defs/Gift"},
                    "note": {"type": "string", "description": "A note to the courier."},
                },
            },
            "expand": {"type": "string", "enum": ["items", "payments"]},
            "confirm": {"type": "boolean", "const": True},
            "anvil_dry_run": {"type": "boolean"},
        },
        "required": ["body", "confirm"],
        "$defs": {"Address": _address(count), "Gift": {"type": "object", "properties": {"wrap": _address(count)}}},
    }


def _summary(schema: JSONObject, budget: int, keep: tuple[str, ...] = ("confirm", "anvil_dry_run")) -> InputSummary:
    found = summarise_input_schema(schema, budget, tool=TOOL, keep=keep)
    assert found is not None
    assert found.chars == compact_size(found.schema)
    assert is_well_formed_schema(found.schema)
    return found


def _valid(schema: JSONObject, instance: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_a_schema_within_the_budget_is_not_summarised() -> None:
    schema = order_schema(2)
    assert summarise_input_schema(schema, compact_size(schema), tool=TOOL) is None
    assert INPUT_SCHEMA_BUDGET_TOKENS == 4000


def test_required_properties_stay_whole_and_optional_structure_past_the_level_is_a_named_stub() -> None:
    schema = order_schema()
    found = _summary(schema, 4600)
    assert found.level == 1
    body = found.schema["properties"]["body"]
    # the required chain body -> billing keeps every property; its optional structure (geo) is cut, so the
    # definition is inlined there, and no definition is left to publish
    address = schema["$defs"]["Address"]
    geo = {"type": "object", "description": f"geo (summarised: read {URI})"}
    assert body["properties"]["billing"] == {**address, "properties": {**address["properties"], "geo": geo}}
    assert body["properties"]["sku"] == {"type": "string"}
    assert "$defs" not in found.schema
    # optional structure past the level is one stub: its type, and the schema (or property) it stands for
    assert body["properties"]["shipping"] == {"type": "object", "description": f"shipping (summarised: read {URI})"}
    assert body["properties"]["gift"] == {"type": "object", "description": f"Gift (summarised: read {URI})"}
    # optional scalars stay whole, and so do the reserved and safety inputs
    assert body["properties"]["note"] == schema["properties"]["body"]["properties"]["note"]
    assert found.schema["properties"]["expand"] == schema["properties"]["expand"]
    assert found.schema["required"] == ["body", "confirm"]
    assert found.schema["additionalProperties"] is False


def test_the_deepest_level_that_fits_is_kept() -> None:
    schema = order_schema()
    tight, roomy = _summary(schema, 4600), _summary(schema, 8000)
    assert (tight.level, roomy.level) == (1, 2)
    assert roomy.chars <= 8000
    shipping = roomy.schema["properties"]["body"]["properties"]["shipping"]
    assert shipping["properties"]["carrier"] == {"type": "string"}
    assert shipping["properties"]["address"] == {"type": "object", "description": f"Address (summarised: read {URI})"}
    gift = roomy.schema["properties"]["body"]["properties"]["gift"]
    assert gift["properties"]["wrap"]["description"] == f"wrap (summarised: read {URI})"


def test_definitions_only_cut_parts_reference_are_dropped_and_kept_ones_stay_shared() -> None:
    schema = order_schema()
    del schema["$defs"]["Address"]["properties"]["geo"]  # nothing inside an address is ever cut
    found = _summary(schema, 6000)
    assert found.schema["$defs"] == {"Address": schema["$defs"]["Address"]}  # Gift only stubbed: dropped
    assert found.schema["properties"]["body"]["properties"]["billing"] == {"$ref": "#/$defs/Address"}


def test_a_definition_recursing_on_a_required_chain_stays_a_reference_with_its_definition() -> None:
    node = {
        "type": "object",
        "required": ["parent"],
        "properties": {"parent": {"$ref": "#/$defs/Node"}, "extra": _address(60)},
    }
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
        "$defs": {"Node": node},
    }
    found = _summary(schema, 2000)
    root = found.schema["properties"]["root"]
    assert root["properties"]["parent"] == {"$ref": "#/$defs/Node"}
    assert root["properties"]["extra"]["description"] == f"extra (summarised: read {URI})"
    assert found.schema["$defs"] == {"Node": node}


def _with_options(count: int) -> JSONObject:
    schema = order_schema()
    options = {f"option{i}": {"type": "string", "description": "An option. " * 20} for i in range(count)}
    schema["properties"]["body"]["properties"].update(options)  # long optional scalars beside the chain
    return schema


def test_when_no_level_fits_every_optional_input_is_a_stub_within_the_budget_and_its_required_part() -> None:
    schema = _with_options(20)
    found = _summary(schema, 7000)
    assert (found.level, found.optional_left_out) == (None, False)
    body = found.schema["properties"]["body"]["properties"]
    assert body["option0"] == {"type": "string", "description": f"option0 (summarised: read {URI})"}
    assert body["note"] == {"type": "string", "description": "A note to the courier."}  # shorter than a stub
    assert body["billing"]["properties"]["zip"] == schema["$defs"]["Address"]["properties"]["zip"]  # required
    assert found.schema["properties"]["confirm"] == {"type": "boolean", "const": True}  # kept inputs: whole
    assert found.schema["properties"]["anvil_dry_run"] == {"type": "boolean"}
    assert found.schema["additionalProperties"] is False
    assert found.chars <= 7000


def test_when_not_even_the_stubs_fit_the_summary_is_the_required_part_accepting_any_other_input() -> None:
    schema = _with_options(20)
    required = required_part(schema, tool=TOOL, keep=("confirm", "anvil_dry_run"))
    assert required is not None and compact_size(required) < 1000
    found = _summary(schema, 1000)
    assert found.optional_left_out and found.schema == required
    body = found.schema["properties"]["body"]
    assert set(body["properties"]) == {"sku", "billing"}
    assert body["description"] == f"Properties left out (summarised: read {URI})."
    billing = body["properties"]["billing"]
    assert set(billing["properties"]) == {"zip"} and "additionalProperties" not in billing
    assert set(found.schema["properties"]) == {"body", "confirm", "anvil_dry_run"}
    assert "additionalProperties" not in found.schema  # the inputs left out are still accepted
    call = {"body": {"sku": "a", "billing": {"zip": "12345", "line2": "x"}, "option3": "y"}, "expand": "items"}
    assert _valid(schema, {**call, "confirm": True}) and _valid(found.schema, {**call, "confirm": True})


def test_a_branch_of_a_required_anyof_is_required_only_when_chosen_so_its_structure_is_cut() -> None:
    card = {"type": "object", "properties": {"billing": _address(30)}, "required": ["billing"]}
    schema = {
        "type": "object",
        "properties": {"payment": {"anyOf": [card, {"type": "string"}]}},
        "required": ["payment"],
    }
    found = _summary(schema, 1000)
    [branch, plain] = found.schema["properties"]["payment"]["anyOf"]
    assert branch["properties"]["billing"] == {"type": "object", "description": f"billing (summarised: read {URI})"}
    assert branch["required"] == ["billing"] and plain == {"type": "string"}


def test_a_summary_accepts_every_call_the_whole_schema_accepts() -> None:
    schema = order_schema()
    schema["properties"]["body"]["properties"]["payment"] = {
        "oneOf": [  # the branches overlap once summarised: oneOf would refuse what the whole accepts
            {"type": "object", "properties": {"card": _address(30)}, "required": ["card"]},
            {"type": "object", "properties": {"bank": _address(30)}, "required": ["bank"]},
        ]
    }
    schema["properties"]["body"]["properties"]["not_this"] = {"not": {"$ref": "#/$defs/Gift"}}
    whole_calls = [
        {"body": {"sku": "a", "billing": {"zip": "12345"}}, "confirm": True},
        {
            "body": {
                "sku": "a",
                "billing": {"zip": "12345", "line3": "x"},
                "shipping": {"address": {"zip": "54321", "line1": "y"}, "carrier": "ups"},
                "gift": {"wrap": {"zip": "00000"}},
                "payment": {"card": {"zip": "11111"}, "bank": 3},
                "not_this": 7,
            },
            "expand": "items",
            "confirm": True,
            "anvil_dry_run": False,
        },
    ]
    for budget in (500, 3000, 6000, 9000, 14_000):
        found = _summary(schema, budget)
        for call in whole_calls:
            assert _valid(schema, call)
            assert _valid(found.schema, call), (budget, found.level)
        text = json.dumps(found.schema)
        assert text.count('"additionalProperties": false') <= json.dumps(schema).count('"additionalProperties": false')
        assert text.count('"enum"') <= json.dumps(schema).count('"enum"')
    # a deep violation the whole refuses passes the summary: the gateway checks the whole schema
    deep = {"body": {"sku": "a", "billing": {"zip": "12345"}, "shipping": {"address": {"zip": 5}}}, "confirm": True}
    assert not _valid(schema, deep) and _valid(_summary(schema, 6000).schema, deep)


def test_the_summary_is_the_same_bytes_every_time_and_leaves_the_whole_schema_untouched() -> None:
    schema = order_schema()
    before = copy.deepcopy(schema)
    for budget in (500, 4600, 8000):
        _summary(schema, budget)
    assert schema == before
    first = _summary(order_schema(), 6000)
    again = _summary(json.loads(json.dumps(order_schema())), 6000)
    assert json.dumps(first.schema) == json.dumps(again.schema)
    assert schema_uri("a__b") == "anvil://schema/a__b"


@pytest.mark.parametrize(
    "change",
    [
        {"$id": "https://example.test/order"},
        {"properties": {"x": {"$ref": "#/properties/body"}}},
        {"properties": {"x": {"$ref": "https://example.test/other.json"}}},
        {"properties": {"x": {"$dynamicRef": "#node"}}},
    ],
)
def test_a_schema_a_rewrite_could_change_the_meaning_of_is_published_whole(change: JSONObject) -> None:
    schema = order_schema()
    for key, value in change.items():
        schema[key] = {**schema[key], **value} if isinstance(value, dict) and key in schema else value
    assert summarise_input_schema(schema, 6000, tool=TOOL) is None


@pytest.mark.corpus
def test_with_every_jira_operation_approved_no_listed_input_schema_exceeds_the_budget_by_more_than_its_required_part(
    corpus: Path,
) -> None:
    spec = "jira-platform.json"
    doc = build(corpus / spec, service_id="jira-platform", source_uri=spec).document
    doc = dataclasses.replace(doc, operations=tuple(dataclasses.replace(op, state="approved") for op in doc.operations))
    surface, whole_surface = surface_of(doc), ToolSurface(doc.schemas, input_budget_tokens=10**9)
    budget = surface.input_budget_tokens * 4
    summarised, before, after = [], [], []
    for op in doc.operations:
        listed = served_tool_definition(op, lambda op_id: op_id, surface=surface)
        whole = published_input_schema(op)
        before.append(count_tokens(_compact(served_tool_definition(op, lambda op_id: op_id, surface=whole_surface))))
        after.append(count_tokens(_compact(listed)))
        if listed["_meta"].get(INPUT_SCHEMA_META) != "summarised":
            assert listed["inputSchema"] == whole
            continue
        summarised.append(op.mcp.tool_name)
        keys = safety_keys(op)
        keep = [*RESERVED_ARGUMENTS, *(key for key in (keys.confirm, keys.idempotency) if key is not None)]
        required = required_part(whole, tool=op.mcp.tool_name, keep=keep)
        assert required is not None and is_well_formed_schema(listed["inputSchema"])
        assert compact_size(whole) > budget
        assert compact_size(listed["inputSchema"]) <= budget + compact_size(required), op.mcp.tool_name
        assert listed["inputSchema"]["required"] == whole["required"]
    assert 5 <= len(summarised) <= 20  # the handful no agent reads in passing (10 when measured), not 1 in 10
    # the largest listed tool was the filter create (42,000 o200k tokens); now it is the workflow create,
    # whose own description is 24,800 characters (its input schema is within the budget)
    assert max(after) * 4 < max(before)


def _compact(value: JSONObject) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
