"""The input schemas as the original compiles them, which the disclosure figures measure (original-core §3.2, §3.7)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from anvil.air.disclosure_surface import measure_tool_surface
from anvil.compiler import build
from anvil.compiler.original_view import OriginalSchemas, original_view
from anvil.load.spec import load_spec

NOTE = "nested reference truncated by Anvil to keep the schema JSON-safe and bounded"


def hop_stub(name: str, kind: str | None = "object") -> dict[str, Any]:
    described = (
        f"A '{name}' object; nested one level deep to keep this schema a bounded size — "
        f"see the '{name}' schema for its full fields. ({NOTE})"
    )
    return {"type": kind, "description": described} if kind else {"description": described}


def spec(schemas: dict[str, Any], body: dict[str, Any] | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": "createTag", "responses": {"201": {"description": "ok"}}}
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Tags", "version": "1"},
        "paths": {"/tags": {"post": operation}},
        "components": {"schemas": schemas},
    }


TAG = {"type": "object", "properties": {"name": {"type": "string"}, "owner": {"$ref": "#/components/schemas/User"}}}
USER = {"type": "object", "properties": {"id": {"type": "string"}}}


def test_the_operations_schema_follows_one_named_hop_and_a_deeper_reference_is_a_stub_naming_it() -> None:
    schemas = OriginalSchemas(spec({"Tag": TAG, "User": USER}))
    viewed = schemas.materialize({"type": "object", "properties": {"data": {"$ref": "#/components/schemas/Tag"}}})
    assert viewed == {
        "type": "object",
        "properties": {
            "data": {"type": "object", "properties": {"name": {"type": "string"}, "owner": hop_stub("User")}}
        },
    }


def test_an_inline_copy_of_a_named_schema_is_found_by_its_shape() -> None:
    # Sentry's spec is fully dereferenced: its bodies repeat component schemas inline.
    schemas = OriginalSchemas(spec({"Tag": TAG, "User": USER}))
    viewed = schemas.materialize({"$ref": "#/components/schemas/Tag"})
    inline_copy = schemas.materialize({"type": "object", "properties": {"name": {"type": "string"}, "owner": USER}})
    assert (
        viewed
        == inline_copy
        == {"type": "object", "properties": {"name": {"type": "string"}, "owner": hop_stub("User")}}
    )


def test_named_schemas_of_one_shape_are_all_found_as_the_name_that_sorts_first() -> None:
    schemas = OriginalSchemas(
        spec({"Tag": TAG, "User": USER, "Person": dict(USER), "TagAlias": {"$ref": "#/components/schemas/Tag"}})
    )
    assert schemas.materialize({"type": "array", "items": {"$ref": "#/components/schemas/TagAlias"}}) == {
        "type": "array",
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "owner": hop_stub("Person")}},
    }


def test_a_schema_differing_from_a_named_one_only_in_its_own_description_is_found_as_that_one() -> None:
    # Plaid's request schemas for two endpoints differ only in the description naming the endpoint.
    first = {**USER, "description": "The first."}
    second = {**USER, "description": "The second."}
    schemas = OriginalSchemas(spec({"AUser": first, "User": second, "Tag": TAG}))
    assert schemas.materialize({"$ref": "#/components/schemas/User"}) == first
    tag = schemas.materialize({"$ref": "#/components/schemas/Tag"})
    assert isinstance(tag, dict)
    assert tag["properties"]["owner"] == hop_stub("AUser")


def test_a_leaf_named_schema_stays_inline_wherever_it_is_used() -> None:
    card = {
        "type": "object",
        "properties": {
            "name": {"$ref": "#/components/schemas/Name"},
            "blob": {"$ref": "#/components/schemas/Blob"},
            "owner": {"$ref": "#/components/schemas/User"},
        },
    }
    leaves = {"Name": {"type": "string", "description": "A name."}, "Blob": {"type": "object", "description": "Any."}}
    schemas = OriginalSchemas(spec({**leaves, "Card": card, "User": USER}))
    viewed = schemas.materialize({"$ref": "#/components/schemas/Card"})
    assert viewed == {
        "type": "object",
        "properties": {"name": leaves["Name"], "blob": leaves["Blob"], "owner": hop_stub("User")},
    }


def test_anonymous_structure_six_levels_below_a_schemas_root_is_cut_to_a_stub() -> None:
    # Levels: properties 1, x 2, properties 3, y 4, properties 5, a 6 (every object and list counts).
    deep = {"type": "object", "properties": {"a": {"type": "object", "description": "A.", "properties": {}}}}
    nested = {"type": "object", "properties": {"x": {"type": "object", "properties": {"y": deep}}}}
    schemas = OriginalSchemas(spec({}))
    viewed = schemas.materialize(nested)
    assert isinstance(viewed, dict)
    cut = viewed["properties"]["x"]["properties"]["y"]["properties"]["a"]
    assert cut == {"type": "object", "description": f"A. ({NOTE})"}
    listed = schemas.materialize({"properties": {"a": {"properties": {"b": {"items": {"enum": [1]}}}}}})
    assert '"enum": []' in json.dumps(listed)


def test_schemas_keep_the_openapi_3_0_dialect_as_written() -> None:
    schemas = OriginalSchemas(spec({}))
    field = {"type": "string", "nullable": True, "example": "x", "x-vendor": 1}
    assert schemas.materialize(field) == field


def test_the_figure_is_taken_over_the_originals_schemas_while_air_keeps_its_own(tmp_path: Path) -> None:
    source = tmp_path / "tags.json"
    body = {"type": "object", "properties": {"data": {"$ref": "#/components/schemas/Tag"}}}
    source.write_text(json.dumps(spec({"Tag": TAG, "User": USER}, body)), encoding="utf-8")
    document = build(source, service_id="tags").document
    op = document.operations[0]
    assert op.input.body is not None
    assert op.input.body.schema["properties"]["data"]["properties"]["owner"] == USER  # served whole
    loaded = json.loads(source.read_text(encoding="utf-8"))
    viewed = original_view(op, loaded, OriginalSchemas(loaded))
    assert viewed.input.body is not None
    assert viewed.input.body.schema["properties"]["data"]["properties"]["owner"] == hop_stub("User")
    assert op.disclosure_cost == measure_tool_surface(viewed) != measure_tool_surface(op)


def test_inputs_this_compiler_names_apart_are_measured_under_the_one_name_the_original_gives_them(
    tmp_path: Path,
) -> None:
    # Jira's PUT /projectCategory/{id} takes a path id and a body field id.
    source = tmp_path / "categories.json"
    document = spec({})
    document["paths"] = {
        "/categories/{id}": {
            "put": {
                "operationId": "updateCategory",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                            }
                        }
                    }
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    }
    source.write_text(json.dumps(document), encoding="utf-8")
    built = build(source, service_id="categories").document
    op = built.operations[0]
    assert op.input.schema is not None
    assert list(op.input.schema["properties"])[:3] == ["id", "id_body", "name"]
    loaded = json.loads(source.read_text(encoding="utf-8"))
    named = dataclasses.replace(op, input=dataclasses.replace(op.input, body=_unnamed(op.input.body)))
    viewed = original_view(op, loaded, OriginalSchemas(loaded), named)
    assert viewed.input.schema is not None
    assert list(viewed.input.schema["properties"])[:2] == ["id", "name"]
    assert viewed.input.schema["properties"]["id"]["type"] == "string"
    assert op.disclosure_cost == measure_tool_surface(viewed)


def _unnamed(body: Any) -> Any:
    return dataclasses.replace(body, fields=tuple(dataclasses.replace(f, agent_name=None) for f in body.fields))


def test_a_body_shared_by_a_swagger_path_item_is_not_measured_as_the_originals_converter_leaves_it_out(
    tmp_path: Path,
) -> None:
    source = tmp_path / "logs.json"
    source.write_text(
        json.dumps(
            {
                "swagger": "2.0",
                "info": {"title": "Logs", "version": "1"},
                "paths": {
                    "/builds/{build_id}/log": {
                        "parameters": [
                            {"name": "build_id", "in": "path", "required": True, "type": "string"},
                            {"name": "msg", "in": "body", "schema": {"type": "object", "properties": {"m": {}}}},
                        ],
                        "post": {"operationId": "updateLog", "responses": {"204": {"description": "ok"}}},
                    }
                },
            }
        ),
        encoding="utf-8",
    )
    op = build(source, service_id="logs").document.operations[0]
    assert op.input.body is not None  # served: the upstream takes the body
    loaded = load_spec(source).document
    assert loaded is not None
    viewed = original_view(op, loaded, OriginalSchemas(loaded))
    assert viewed.input.body is None
    assert op.disclosure_cost == measure_tool_surface(viewed)


def test_a_node_a_reference_points_into_is_reused_as_bundled_where_first_met_unless_six_levels_down() -> None:
    # PagerDuty points into other schemas (#/components/schemas/Tag/allOf/0).
    inner = {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}}
    home = {"type": "object", "properties": {"inner": inner}}
    schemas = OriginalSchemas(spec({"Home": home}))
    pointer = {"$ref": "#/components/schemas/Home/properties/inner"}
    at_home = schemas.materialize({"$ref": "#/components/schemas/Home"})
    assert isinstance(at_home, dict)
    deeper = schemas.materialize(
        {"type": "object", "properties": {"x": {"type": "object", "properties": {"y": pointer}}}}
    )
    assert isinstance(deeper, dict)
    assert deeper["properties"]["x"]["properties"]["y"] == at_home["properties"]["inner"]
    assert at_home["properties"]["inner"]["properties"]["a"] == {"type": "string", "enum": ["x"]}  # not cut at 6
    six_down = {"properties": {"p": {"properties": {"q": {"properties": {"r": pointer}}}}}}  # r is level 6
    cut = schemas.materialize(six_down)
    assert isinstance(cut, dict)
    assert cut["properties"]["p"]["properties"]["q"]["properties"]["r"] == {"type": "object", "description": NOTE}


def test_a_reference_with_keys_of_its_own_is_inlined_with_them_first_and_winning() -> None:
    # OpenAI writes {"$ref": "#/components/schemas/AssistantsApiResponseFormatOption", "nullable": true}.
    option = {"description": "The format.", "oneOf": [{"type": "string"}, {"type": "integer"}], "x-tag": 1}
    schemas = OriginalSchemas(spec({"Option": option}))
    viewed = schemas.materialize(
        {"properties": {"f": {"$ref": "#/components/schemas/Option", "nullable": True, "x-tag": 2}}}
    )
    assert isinstance(viewed, dict)
    assert list(viewed["properties"]["f"].items()) == [
        ("nullable", True),
        ("x-tag", 2),
        ("description", "The format."),
        ("oneOf", [{"type": "string"}, {"type": "integer"}]),
    ]


def test_of_named_schemas_of_one_shape_the_one_named_as_the_nodes_title_is_found_before_the_first_name() -> None:
    # OpenAI's Reasoning and its copy BetaReasoning are both titled "Reasoning".
    reasoning = {"type": "object", "title": "Reasoning", "properties": {"effort": {"type": "string"}}}
    wrapper = {"type": "object", "properties": {"r": {"$ref": "#/components/schemas/Reasoning"}}}
    schemas = OriginalSchemas(spec({"BetaReasoning": dict(reasoning), "Reasoning": reasoning, "Wrapper": wrapper}))
    viewed = schemas.materialize({"$ref": "#/components/schemas/Wrapper"})
    assert isinstance(viewed, dict)
    assert viewed["properties"]["r"] == hop_stub("Reasoning")


def test_vendor_extensions_beside_a_reference_leave_it_the_schema_it_names() -> None:
    # Adyen's Checkout API: {"x-addedInVersion": "40", "description": ..., "$ref": ".../AccountInfo"}.
    extended = {"x-addedInVersion": "40", "description": "The owner.", "$ref": "#/components/schemas/User"}
    nullable = {"description": "The owner.", "nullable": True, "$ref": "#/components/schemas/User"}
    wrapper = {"type": "object", "properties": {"owner": extended, "maybe": nullable}}
    schemas = OriginalSchemas(spec({"User": USER, "Wrapper": wrapper}))
    viewed = schemas.materialize({"$ref": "#/components/schemas/Wrapper"})
    assert isinstance(viewed, dict)
    assert viewed["properties"]["owner"] == hop_stub("User")
    # A schema keyword beside it still makes another shape: an inline copy with the reference's keys first.
    assert viewed["properties"]["maybe"] == {"description": "The owner.", "nullable": True, **USER}


def _checkout(extensions: bool) -> dict[str, Any]:
    """A checkout API's payment request: most fields name a component, with the version they came in."""
    detail = {"type": "string", "maxLength": 64}
    account = {f"field{i}": {**detail, "description": f"Account detail {i}."} for i in range(12)}
    fields: dict[str, Any] = {"merchantAccount": {"type": "string", "description": "The merchant account."}}
    for name in ("AccountInfo", "Company", "BrowserInfo"):
        field: dict[str, Any] = {"description": f"The {name}.", "$ref": f"#/components/schemas/{name}"}
        fields[name[0].lower() + name[1:]] = {"x-addedInVersion": "40", **field} if extensions else field
    schemas: dict[str, Any] = {"AccountInfo": {"type": "object", "properties": account}}
    schemas["Company"] = {"type": "object", "properties": {"name": {"type": "string"}, "taxId": {"type": "string"}}}
    schemas["BrowserInfo"] = {"type": "object", "properties": {"userAgent": {"type": "string"}}}
    schemas["PaymentRequest"] = {"type": "object", "required": ["merchantAccount"], "properties": fields}
    document = spec(schemas, {"$ref": "#/components/schemas/PaymentRequest"})
    document["openapi"] = "3.1.0"
    return document


def test_a_request_whose_references_carry_vendor_extensions_measures_as_one_without_them(tmp_path: Path) -> None:
    figures = []
    for extensions in (True, False):
        source = tmp_path / f"checkout-{extensions}.json"
        source.write_text(json.dumps(_checkout(extensions)), encoding="utf-8")
        cost = build(source, service_id="checkout").document.operations[0].disclosure_cost
        assert cost is not None
        figures.append(cost.tool_tokens)
    assert figures[0] == figures[1]  # the extended references are stubs, not inline copies of each schema
