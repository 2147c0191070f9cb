"""Normalize (original-core §3.3, scenarios §9.3.5-§9.3.6): operations, params, bodies, outputs, errors."""

from __future__ import annotations

from typing import Any

import jsonschema

from anvil.air.model import Operation
from anvil.compiler.normalize import Normalized, normalize_document


def spec(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "Svc", "version": "1"}, "paths": paths, **extra}


def only(result: Normalized) -> Operation:
    assert len(result.operations) == 1
    return result.operations[0]


def codes(result: Normalized) -> list[str]:
    return [d.code for _, d in result.diagnostics]


def test_operations_follow_path_order_then_method_order() -> None:
    doc = spec(
        {
            "/b": {"post": {}, "get": {}, "head": {}, "patch": {}, "delete": {}, "put": {}, "options": {}},
            "/a": {"get": {}},
        }
    )
    result = normalize_document(doc, "svc")
    assert [(op.source_ref.path, op.source_ref.method) for op in result.operations] == [
        ("/b", "get"),
        ("/b", "put"),
        ("/b", "post"),
        ("/b", "delete"),
        ("/b", "patch"),
        ("/b", "head"),
        ("/a", "get"),
    ]


def test_path_item_params_merge_and_the_operation_wins_on_name_and_location() -> None:
    doc = spec(
        {
            "/things/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "schema": {"type": "integer"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"$ref": "#/components/parameters/Trace"},
                ],
                "get": {
                    "parameters": [{"name": "limit", "in": "query", "required": True, "schema": {"type": "string"}}]
                },
            }
        },
        components={"parameters": {"Trace": {"name": "X-Trace", "in": "header", "description": "Trace id."}}},
    )
    op = only(normalize_document(doc, "svc"))
    params = {(p.name, p.in_): p for p in op.input.params}
    assert params[("id", "path")].required
    assert params[("id", "path")].schema == {"type": "integer"}
    assert params[("limit", "query")].required
    assert params[("limit", "query")].schema == {"type": "string"}
    assert params[("X-Trace", "header")].schema == {"type": "string"}
    assert params[("X-Trace", "header")].description == "Trace id."


def test_accept_content_type_and_authorization_headers_are_ignored() -> None:
    doc = spec(
        {
            "/x": {
                "get": {
                    "parameters": [
                        {"name": "Accept", "in": "header"},
                        {"name": "content-type", "in": "header"},
                        {"name": "AUTHORIZATION", "in": "header"},
                        {"name": "X-Other", "in": "header"},
                    ]
                }
            }
        }
    )
    result = normalize_document(doc, "svc")
    assert [p.name for p in only(result).input.params] == ["X-Other"]
    assert codes(result) == ["header_param_ignored"] * 3


def test_a_flat_scalar_body_is_projected_into_fields() -> None:
    body_schema = {
        "type": "object",
        "required": ["amount"],
        "properties": {
            "amount": {"type": "integer"},
            "currency": {"type": "string", "enum": ["usd"]},
            "note": {"type": "string", "nullable": True},
        },
    }
    doc = spec(
        {"/r": {"post": {"requestBody": {"$ref": "#/components/requestBodies/R"}}}},
        components={
            "requestBodies": {
                "R": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/R"}}}}
            },
            "schemas": {"R": body_schema},
        },
    )
    body = only(normalize_document(doc, "svc")).input.body
    assert body is not None
    assert body.projection == "fields"
    assert body.required
    assert [(f.name, f.required) for f in body.fields] == [("amount", True), ("currency", False), ("note", False)]
    assert body.schema["properties"]["note"] == {"type": ["string", "null"]}


def test_a_nested_or_array_body_is_kept_whole() -> None:
    nested = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    array = {"type": "array", "items": {"type": "string"}}
    for schema in (nested, array):
        doc = spec({"/r": {"post": {"requestBody": {"content": {"application/json": {"schema": schema}}}}}})
        body = only(normalize_document(doc, "svc")).input.body
        assert body is not None
        assert body.projection == "whole"
        assert body.fields == ()
        assert body.schema == schema


def test_json_is_preferred_else_the_first_media_type() -> None:
    content = {"application/xml": {"schema": {"type": "object"}}, "application/json": {"schema": {"type": "object"}}}
    doc = spec({"/r": {"post": {"requestBody": {"content": content}}}})
    body = only(normalize_document(doc, "svc")).input.body
    assert body is not None and body.content_type == "application/json"
    form = {
        "application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"a": {"type": "string"}}}}
    }
    doc = spec({"/r": {"post": {"requestBody": {"content": form}}}})
    body = only(normalize_document(doc, "svc")).input.body
    assert body is not None and body.content_type == "application/x-www-form-urlencoded"


def test_the_success_output_keeps_component_refs_and_records_a_plain_ref() -> None:
    responses = {
        "201": {"description": "Created", "content": {"application/json": {"schema": {"type": "object"}}}},
        "200": {
            "description": "OK",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}},
        },
    }
    doc = spec({"/t": {"get": {"responses": responses}}}, components={"schemas": {"Thing": {"type": "object"}}})
    output = only(normalize_document(doc, "svc")).output
    assert output.schema == {"$ref": "#/components/schemas/Thing"}
    assert output.schema_ref == "#/components/schemas/Thing"
    assert output.description == "OK"


def test_a_202_only_operation_is_long_running() -> None:
    doc = spec({"/jobs": {"post": {"responses": {"202": {"description": "Accepted"}}}}})
    op = only(normalize_document(doc, "svc"))
    assert op.long_running
    assert op.archetype == "long_running"
    assert any(c.predicate == "longRunning" for c in op.evidence.claims)


def test_an_operation_that_may_also_answer_202_is_long_running() -> None:
    # Sentry adds a member with 201, or 202 when the join waits for approval.
    responses = {"201": {"description": "Added"}, "202": {"description": "Requested"}}
    op = only(normalize_document(spec({"/members": {"post": {"responses": responses}}}), "svc"))
    assert op.long_running
    assert op.output.description == "Added"


def test_declared_error_statuses_map_to_the_runtime_taxonomy() -> None:
    responses = {
        str(status): {"description": f"status {status}"}
        for status in (200, 400, 401, 403, 404, 409, 418, 422, 429, 500, 502, 503, 504)
    }
    responses["default"] = {"description": "other"}
    op = only(normalize_document(spec({"/t": {"get": {"responses": responses}}}), "svc"))
    assert [(e.upstream.http_status if e.upstream else None, e.code) for e in op.errors] == [
        (400, "validation_error"),
        (401, "auth_required"),
        (403, "permission_denied"),
        (404, "not_found"),
        (409, "conflict"),
        (422, "validation_error"),
        (429, "rate_limited"),
        (500, "unknown_upstream_error"),
        (502, "upstream_unavailable"),
        (503, "upstream_unavailable"),
        (504, "upstream_timeout"),
    ]
    assert op.errors[0].message == "status 400"


def test_x_idempotent_upgrades_a_post_to_natural_with_a_claim() -> None:
    doc = spec({"/w": {"post": {"x-idempotent": True, "deprecated": True, "tags": ["widgets", 3]}}})
    op = only(normalize_document(doc, "svc"))
    assert op.idempotency.mode == "natural"
    assert op.retries.basis == "natural_idempotent"
    assert op.deprecated
    assert op.tags == ("widgets",)
    assert any(c.predicate == "idempotency.mode" and c.value == "natural" for c in op.evidence.claims)


def test_claims_record_existence_kind_and_name_quality() -> None:
    op = only(normalize_document(spec({"/w": {"get": {"operationId": "listWidgets"}}}), "svc"))
    predicates = [c.predicate for c in op.evidence.claims]
    assert predicates == ["exists", "effect.kind", "name.quality"]
    kind = op.evidence.claims[1]
    assert (kind.source, kind.method, kind.confidence) == ("inferred", "http_method_heuristic", 0.5)


def test_a_malformed_operation_is_skipped_with_a_warning() -> None:
    doc = spec({"/a": {"get": "nope", "post": {}}, "/b": ["not", "a", "mapping"]})
    result = normalize_document(doc, "svc")
    assert [op.source_ref.method for op in result.operations] == ["post"]
    assert codes(result) == ["operation_malformed", "operation_malformed"]


def test_a_recursive_schema_is_published_through_root_defs() -> None:
    doc = spec(
        {
            "/n": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}
                }
            }
        },
        components={
            "schemas": {
                "Node": {
                    "type": "object",
                    "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}},
                }
            }
        },
    )
    body = only(normalize_document(doc, "svc")).input.body
    assert body is not None
    assert body.schema["$ref"] == "#/$defs/Node"
    assert body.schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    jsonschema.Draft202012Validator.check_schema(body.schema)
    validator = jsonschema.Draft202012Validator(body.schema)
    assert validator.is_valid({"children": [{"children": []}]})
    assert not validator.is_valid({"children": [{"children": 1}]})


def test_openapi_3_0_keywords_become_valid_2020_12() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "nullable": True},
            "f": {"type": "file"},
            "bad": {"type": "string", "required": True, "pattern": "\\p{L}+", "maxLength": "10"},
        },
    }
    doc = spec({"/u": {"post": {"requestBody": {"content": {"application/json": {"schema": schema}}}}}})
    body = only(normalize_document(doc, "svc")).input.body
    assert body is not None
    props = body.schema["properties"]
    assert props["n"] == {"type": ["number", "null"], "exclusiveMinimum": 0}
    assert props["f"] == {"type": "string", "format": "binary"}
    assert props["bad"] == {"type": "string"}
    jsonschema.Draft202012Validator.check_schema(body.schema)


def test_an_operation_keeps_its_own_servers_else_its_path_items_and_the_services_are_not_copied() -> None:
    upload = {"url": "https://{zone}.example.com", "variables": {"zone": {"default": "up", "enum": ["up"], "x": 1}}}
    doc = spec(
        {
            "/files": {"servers": [upload], "post": {}, "get": {"servers": [{"url": "https://read.example.com"}]}},
            "/same": {"get": {"servers": [{"url": "https://{region}.api.example.com"}]}},
            "/none": {"get": {"servers": []}, "post": {}},
        },
        servers=[
            {
                "url": "https://{region}.api.example.com",
                "description": "Main",
                "variables": {"region": {"default": "us"}},
            }
        ],
    )
    by_key = {(op.source_ref.path, op.source_ref.method): op for op in normalize_document(doc, "svc").operations}
    posted = by_key[("/files", "post")].servers
    assert posted is not None and [(s.url, s.variables) for s in posted] == [
        ("https://{zone}.example.com", {"zone": {"default": "up", "enum": ["up"]}})  # only default/enum/description
    ]
    read = by_key[("/files", "get")].servers
    assert read is not None and [s.url for s in read] == ["https://read.example.com"]
    # the service's own server (variables inherited), an empty list and no list: the service's servers
    assert [by_key[key].servers for key in (("/same", "get"), ("/none", "get"), ("/none", "post"))] == [None] * 3
