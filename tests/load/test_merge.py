"""Multi-file specs merge into one document whose every $ref is internal; cycles stay references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvil.load.refs import Resolver
from anvil.load.spec import count_operations, load_spec
from tests.load.helpers import FIXTURES, refs_in, unresolved_refs


def _multi() -> dict[str, Any]:
    result = load_spec(FIXTURES / "multi/openapi.yaml")
    assert result.ok, result.diagnostics
    assert result.document is not None
    return result.document


def test_path_item_refs_are_followed_into_their_files() -> None:
    document = _multi()
    assert count_operations(document) == 4
    assert "$ref" not in document["paths"]["/widgets"]
    assert document["paths"]["/widgets/{id}"]["delete"]["operationId"] == "deleteWidget"


def test_every_ref_left_is_internal_and_resolves() -> None:
    document = _multi()
    data = "not-a-reference-this-is-data.yaml"  # a $ref key inside an example value is data
    assert unresolved_refs(document) == [data]
    assert all(ref.startswith("#/") for ref in refs_in(document) if ref != data)


def test_a_schema_slot_that_refers_to_a_file_receives_that_files_schema_under_its_own_name() -> None:
    schemas = _multi()["components"]["schemas"]
    assert schemas["Widget"]["required"] == ["id"]
    assert schemas["Widget"]["properties"]["error"] == {"$ref": "#/components/schemas/Error"}


def test_schemas_from_other_files_are_hoisted_under_names_from_the_pointer_tail_or_file_stem() -> None:
    document = _multi()
    schemas = document["components"]["schemas"]
    assert list(schemas) == ["Widget", "Local", "Error", "Part"]  # the entry's, then in discovery order
    assert schemas["Part"]["properties"]["sub"] == {"$ref": "#/components/schemas/Part"}
    widgets = document["paths"]["/widgets"]
    items = widgets["get"]["responses"]["200"]["content"]["application/json"]["schema"]["items"]
    assert items == {"$ref": "#/components/schemas/Widget"}


def test_parameters_responses_and_request_bodies_from_other_files_are_inlined() -> None:
    widgets = _multi()["paths"]["/widgets"]
    assert widgets["parameters"] == [{"name": "X-Tenant", "in": "header", "schema": {"type": "string"}}]
    assert widgets["get"]["parameters"][0]["name"] == "limit"
    error = widgets["get"]["responses"]["default"]
    assert error["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    body = widgets["post"]["requestBody"]
    assert body["required"] is True
    assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Widget"}


def test_a_ref_back_into_the_entry_file_becomes_an_internal_ref() -> None:
    created = _multi()["paths"]["/widgets"]["post"]["responses"]["201"]
    assert created["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Widget"}


def test_a_ref_key_inside_example_data_is_data_and_left_alone() -> None:
    media = _multi()["paths"]["/widgets"]["get"]["responses"]["200"]["content"]["application/json"]
    assert media["example"] == {"$ref": "not-a-reference-this-is-data.yaml"}


def test_files_are_keyed_by_posix_path_relative_to_the_entry_folder() -> None:
    result = load_spec(FIXTURES / "multi/openapi.yaml")
    assert list(result.files) == [
        "common/bodies.yaml",
        "common/errors.yaml",
        "common/parameters.yaml",
        "common/responses.yaml",
        "common/widget.yaml",
        "openapi.yaml",
        "paths/widget.yaml",
        "paths/widgets.yaml",
    ]


def test_yaml_scalars_keep_their_text_where_json_would_differ() -> None:
    document = _multi()
    assert document["info"]["version"] == "2024-01-01"
    assert list(document["paths"]["/widgets"]["get"]["responses"]) == ["200", "default"]


def test_a_cross_file_cycle_is_kept_as_references() -> None:
    result = load_spec(FIXTURES / "cycle/openapi.yaml")
    assert result.ok, result.diagnostics
    assert result.document is not None
    schemas = result.document["components"]["schemas"]
    assert schemas["Tree"]["properties"]["children"]["items"] == {"$ref": "#/components/schemas/Tree"}
    assert schemas["Tree"]["properties"]["forest"] == {"$ref": "#/components/schemas/forest"}
    assert schemas["forest"]["properties"]["trees"]["items"] == {"$ref": "#/components/schemas/Tree"}
    json.dumps(result.document)


def test_jira_cycles_are_kept_as_refs(corpus: Path) -> None:
    result = load_spec(corpus / "jira-platform.json")
    assert result.ok
    assert result.document is not None
    schemas = result.document["components"]["schemas"]
    assert {"$ref": "#/components/schemas/CompoundClause"} in schemas["JqlQueryClause"]["anyOf"]
    assert schemas["CompoundClause"]["properties"]["clauses"]["items"] == {
        "$ref": "#/components/schemas/JqlQueryClause"
    }
    assert schemas["LinkGroup"]["properties"]["groups"]["items"] == {"$ref": "#/components/schemas/LinkGroup"}
    resolver = Resolver(result.document)
    assert resolver.resolve(schemas["CompoundClause"]["properties"]["clauses"]["items"]) is schemas["JqlQueryClause"]


def test_pagerduty_self_reference_is_kept(corpus: Path) -> None:
    result = load_spec(corpus / "pagerduty-rest.json")
    assert result.ok
    assert result.document is not None
    predicate = result.document["components"]["schemas"]["MatchPredicate"]
    assert predicate["properties"]["children"]["items"] == {"$ref": "#/components/schemas/MatchPredicate"}


def test_lob_path_items_in_other_files_yield_its_operations(corpus: Path) -> None:
    result = load_spec(corpus / "lob/lob-api-public.yml")
    assert result.ok
    assert result.document is not None
    assert count_operations(result.document) == 105
    assert all("$ref" not in item for item in result.document["paths"].values())
    assert "resources/addresses/addresses.yml" in result.files
    assert unresolved_refs(result.document) == []


def test_a_cycle_through_objects_that_are_not_schemas_is_reported_not_followed(tmp_path: Path) -> None:
    (tmp_path / "openapi.yaml").write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    $ref: a.yaml\n"
    )
    (tmp_path / "a.yaml").write_text(
        "get:\n  responses: {'200': {description: ok}}\n"
        "  callbacks:\n    back:\n      '{$url}':\n        $ref: a.yaml\n"
    )
    result = load_spec(tmp_path / "openapi.yaml")
    assert [d.code for d in result.diagnostics] == ["source/ref_invalid"]
    assert result.document is not None
    assert count_operations(result.document) == 1
