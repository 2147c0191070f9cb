"""Swagger 2.0 input comes out in OpenAPI 3.0 shape (single file and multi-file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anvil.load.spec import count_operations, load_spec
from tests.load.helpers import FIXTURES, unresolved_refs


def _shop() -> dict[str, Any]:
    result = load_spec(FIXTURES / "swagger.yaml")
    assert result.ok, result.diagnostics
    assert (result.kind, result.version) == ("swagger", "2.0")
    assert result.document is not None
    return result.document


def test_the_converted_document_is_openapi_3_0_with_only_resolvable_refs() -> None:
    document = _shop()
    assert document["openapi"].startswith("3.0")
    assert "swagger" not in document and "definitions" not in document
    assert unresolved_refs(document) == []
    assert count_operations(document) == 4


def test_host_base_path_and_schemes_become_one_https_server() -> None:
    assert _shop()["servers"] == [{"url": "https://api.shop.example/v2"}]


def test_a_body_parameter_becomes_a_required_request_body_per_consumes() -> None:
    create = _shop()["paths"]["/orders"]["post"]
    assert create["requestBody"] == {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Order"}}},
        "required": True,
    }
    assert [p["name"] for p in create["parameters"]] == ["Idempotency-Key"]
    assert create["parameters"][0]["schema"] == {"type": "string"}
    assert create["x-idempotent"] is True


def test_form_data_becomes_an_urlencoded_object_body_with_its_required_list() -> None:
    note = _shop()["paths"]["/orders/{id}/notes"]["post"]
    assert note["requestBody"] == {
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "pinned": {"type": "boolean"}},
                    "required": ["text"],
                }
            }
        },
        "required": True,
    }


def test_a_file_upload_makes_the_form_body_multipart_with_a_binary_field() -> None:
    item = _shop()["paths"]["/orders/{id}/receipt"]
    body = item["put"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert body["properties"]["file"] == {"type": "string", "format": "binary"}
    assert body["required"] == ["file"]
    assert item["parameters"] == [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]


def test_security_definitions_become_security_schemes() -> None:
    schemes = _shop()["components"]["securitySchemes"]
    assert schemes["basic"] == {"type": "http", "scheme": "basic"}
    assert schemes["key"] == {"type": "apiKey", "name": "X-Api-Key", "in": "header"}
    assert schemes["implicit"]["flows"] == {
        "implicit": {"authorizationUrl": "https://auth.example/authorize", "scopes": {"read": "read things"}}
    }
    assert schemes["password"]["flows"] == {"password": {"tokenUrl": "https://auth.example/token", "scopes": {}}}
    assert schemes["machine"]["flows"] == {
        "clientCredentials": {"tokenUrl": "https://auth.example/token", "scopes": {"admin": "everything"}}
    }
    assert schemes["code"]["flows"] == {
        "authorizationCode": {
            "authorizationUrl": "https://auth.example/authorize",
            "tokenUrl": "https://auth.example/token",
            "scopes": {"write": "write things"},
        }
    }


def test_definitions_refs_are_rewritten_to_components_schemas() -> None:
    schemas = _shop()["components"]["schemas"]
    assert schemas["Order"]["properties"]["lines"]["items"] == {"$ref": "#/components/schemas/Line"}
    assert schemas["Line"]["properties"]["order"] == {"$ref": "#/components/schemas/Order"}
    assert schemas["Order"]["properties"]["total"] == {"type": "number", "nullable": True}
    assert schemas["Error"]["discriminator"] == {"propertyName": "kind"}


def test_csv_arrays_and_referenced_parameters_keep_their_meaning() -> None:
    document = _shop()
    listing = document["paths"]["/orders"]["get"]
    page, status = listing["parameters"]
    assert page == {"$ref": "#/components/parameters/pageSize"}
    assert document["components"]["parameters"]["pageSize"]["schema"] == {"type": "integer", "default": 20}
    assert "orderBody" not in document["components"]["parameters"]
    assert (status["style"], status["explode"]) == ("form", False)
    assert status["schema"] == {"type": "array", "items": {"type": "string", "enum": ["open", "closed"]}}


def test_responses_get_content_by_produces_with_headers_examples_and_refs() -> None:
    document = _shop()
    listed = document["paths"]["/orders"]["get"]["responses"]["200"]
    assert listed["content"]["application/json"]["example"] == [{"id": "o1"}]
    created = document["paths"]["/orders"]["post"]["responses"]
    assert created["201"]["headers"]["Location"] == {"description": "where", "schema": {"type": "string"}}
    assert created["404"] == {"$ref": "#/components/responses/NotFound"}
    not_found = document["components"]["responses"]["NotFound"]
    assert not_found["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_vendor_extensions_are_kept() -> None:
    assert _shop()["paths"]["/orders"]["x-owner"] == "sales"


def test_a_multi_file_swagger_spec_is_merged_then_converted() -> None:
    folder = FIXTURES / "swagger_multi"
    result = load_spec(folder / "spec/swagger.yaml", root=folder)
    assert result.ok, result.diagnostics
    assert result.document is not None
    post = result.document["paths"]["/pets"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Pet"}
    assert post["parameters"][0]["schema"] == {"type": "array", "items": {"type": "string"}}
    pet = result.document["components"]["schemas"]["Pet"]
    assert pet["properties"]["friend"] == {"$ref": "#/components/schemas/Pet"}
    assert result.document["servers"] == [{"url": "/api"}]
    assert sorted(result.files) == ["shared/Pet.yaml", "spec/parameters.yaml", "spec/swagger.yaml"]


def test_the_oai_petstore_separate_spec_loads_from_its_folder(corpus: Path) -> None:
    folder = corpus / "oai-petstore-separate"
    result = load_spec(folder / "spec/swagger.yaml", root=folder)
    assert result.ok
    assert result.document is not None
    assert count_operations(result.document) == 4
    assert result.document["servers"] == [{"url": "http://petstore.swagger.io/api"}]
    schemas = result.document["components"]["schemas"]
    assert sorted(schemas) == ["Error", "NewPet", "Pet"]
    assert schemas["NewPet"]["allOf"][0] == {"$ref": "#/components/schemas/Pet"}
    assert len(result.files) == 5


def test_a_path_items_shared_body_parameter_is_every_methods_body_marked_as_shared(tmp_path: Path) -> None:
    # Netlify's POST /builds/{build_id}/log declares its body on the path item.
    source = tmp_path / "logs.yaml"
    source.write_text(
        "swagger: '2.0'\n"
        "info: {title: Logs, version: '1'}\n"
        "paths:\n"
        "  /builds/{build_id}/log:\n"
        "    parameters:\n"
        "      - {name: build_id, in: path, required: true, type: string}\n"
        "      - {name: msg, in: body, required: true, schema: {type: object}}\n"
        "    post:\n"
        "      responses: {'204': {description: ok}}\n"
        "    put:\n"
        "      parameters: [{name: own, in: body, schema: {type: string}}]\n"
        "      responses: {'204': {description: ok}}\n",
        encoding="utf-8",
    )
    document = load_spec(source).document
    assert document is not None
    item = document["paths"]["/builds/{build_id}/log"]
    assert item["post"]["requestBody"] == {
        "content": {"application/json": {"schema": {"type": "object"}}},
        "required": True,
        "x-anvil-shared-body": True,
    }
    assert "x-anvil-shared-body" not in item["put"]["requestBody"]
