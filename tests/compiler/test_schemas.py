"""Schema materialization: self-contained input schemas, recursion and size budgets through $defs."""

from __future__ import annotations

from typing import Any

import jsonschema

from anvil.compiler.capabilities import capability_state
from anvil.compiler.schemas import RefCloser, SchemaMaterializer, def_name, lookup_pointer


def components(**schemas: Any) -> dict[str, Any]:
    return {"components": {"schemas": schemas}}


def test_plain_references_are_inlined() -> None:
    doc = components(
        Money={"type": "integer"},
        Refund={"type": "object", "properties": {"amount": {"$ref": "#/components/schemas/Money"}}},
    )
    out = SchemaMaterializer(doc).materialize({"$ref": "#/components/schemas/Refund"})
    assert out == {"type": "object", "properties": {"amount": {"type": "integer"}}}


def test_mutual_recursion_keeps_every_member_in_defs() -> None:
    doc = components(
        A={"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        B={
            "type": "object",
            "properties": {"a": {"$ref": "#/components/schemas/A"}, "leaf": {"$ref": "#/components/schemas/Leaf"}},
        },
        Leaf={"type": "string"},
    )
    out = SchemaMaterializer(doc).materialize({"type": "array", "items": {"$ref": "#/components/schemas/A"}})
    assert out["items"] == {"$ref": "#/$defs/A"}
    assert sorted(out["$defs"]) == ["A", "B"]
    assert out["$defs"]["B"]["properties"]["leaf"] == {"type": "string"}
    jsonschema.Draft202012Validator.check_schema(out)
    assert jsonschema.Draft202012Validator(out).is_valid([{"b": {"a": {"b": {"leaf": "x"}}}}])


def test_a_component_over_the_size_budget_is_referenced_not_inlined() -> None:
    big = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(50)}}
    doc = components(Big=big)
    materializer = SchemaMaterializer(doc, budget=20)
    out = materializer.materialize(
        {
            "type": "object",
            "properties": {"x": {"$ref": "#/components/schemas/Big"}, "y": {"$ref": "#/components/schemas/Big"}},
        }
    )
    assert out["properties"]["x"] == {"$ref": "#/$defs/Big"}
    assert list(out["$defs"]) == ["Big"]
    assert out["$defs"]["Big"]["properties"]["p0"] == {"type": "string"}


def test_ref_siblings_are_kept_and_dangling_refs_accept_anything() -> None:
    doc = components(Id={"type": "string"})
    out = SchemaMaterializer(doc).materialize({"$ref": "#/components/schemas/Id", "description": "The id."})
    assert out == {"type": "string", "description": "The id."}
    assert SchemaMaterializer(doc).materialize({"$ref": "#/components/schemas/Nope"}) == {}
    assert SchemaMaterializer(doc).materialize("not a schema") == {}


def test_property_names_are_never_read_as_keywords() -> None:
    schema = {"type": "object", "properties": {"nullable": {"type": "boolean"}, "$ref": {"type": "string"}}}
    assert SchemaMaterializer({}).materialize(schema) == schema


def test_pointers_and_def_names_unescape_per_rfc_6901() -> None:
    doc = {"paths": {"/a/b": {"get": {"x": 1}}}}
    assert lookup_pointer(doc, "#/paths/~1a~1b/get/x") == 1
    assert lookup_pointer(doc, "#/paths/missing") is None
    assert def_name("#/components/schemas/Pet") == "Pet"
    assert def_name("#/paths/~1a/get") == "ptr_paths__~1a__get"


def test_capability_state_rolls_up_member_states() -> None:
    assert capability_state(["generated", "approved", "blocked"]) == "approved"
    assert capability_state(["blocked", "blocked"]) == "blocked"
    assert capability_state(["blocked", "review_required"]) == "review_required"
    assert capability_state(["generated"]) == "generated"


def test_a_reference_into_a_component_or_to_another_section_is_replaced_by_what_it_names() -> None:
    spec: dict[str, Any] = {
        "components": {
            "parameters": {"state": {"name": "state", "in": "query", "schema": {"type": "string", "enum": ["a", "b"]}}},
            "schemas": {
                "Base": {"allOf": [{"type": "object", "properties": {"id": {"type": "string"}}}]},
                "Kind": {"type": "string"},
                "Item": {
                    "allOf": [
                        {"$ref": "#/components/schemas/Base/allOf/0"},
                        {
                            "properties": {
                                "state": {"$ref": "#/components/parameters/state/schema", "description": "kept"},
                                "kind": {"$ref": "#/components/schemas/Kind"},
                            }
                        },
                    ]
                },
                "Loop": {"properties": {"next": {"$ref": "#/components/schemas/Loop/properties/next"}}},
                "Dangling": {"$ref": "#/components/schemas/Nowhere/allOf/0"},
            },
        }
    }
    closed = RefCloser(spec).components()
    first, second = closed["Item"]["allOf"]
    assert first == {"type": "object", "properties": {"id": {"type": "string"}}}
    assert second["properties"]["state"] == {"type": "string", "enum": ["a", "b"], "description": "kept"}
    assert second["properties"]["kind"] == {"$ref": "#/components/schemas/Kind"}  # a whole component stays named
    assert closed["Loop"]["properties"]["next"] == {"$ref": "#/components/schemas/Loop/properties/next"}
    assert closed["Dangling"] == {"$ref": "#/components/schemas/Nowhere/allOf/0"}
    assert spec["components"]["schemas"]["Item"]["allOf"][0] == {"$ref": "#/components/schemas/Base/allOf/0"}
