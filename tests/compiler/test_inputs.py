"""Colliding public input names get deterministic, free names, and each value still reaches its wire coordinate."""

from __future__ import annotations

import json
from typing import Any

from anvil.air.inputs import input_bindings
from anvil.compiler import build, compile_source
from anvil.compiler.inputs import spelled_key
from anvil.load.result import LoadResult
from anvil.runtime.request import build_request, prepare

_SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Calls", "version": "1"},
    "paths": {
        "/calls/{id}": {
            "post": {
                "operationId": "updateCall",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "StartTime", "in": "query", "schema": {"type": "string"}},
                    {"name": "StartTime<", "in": "query", "schema": {"type": "string"}},
                    {"name": "StartTime>", "in": "query", "schema": {"type": "string"}},
                ],
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}}
                    }
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


def _compile() -> Any:
    return compile_source(LoadResult(document=_SPEC, version="3.0.3"), None, service_id="calls")


def test_colliding_inputs_are_renamed_by_the_documented_rule_and_not_blocked() -> None:
    result = _compile()
    (op,) = result.document.operations
    names = {(b.location, b.wire_name): b.property for b in input_bindings(op)}
    assert names == {
        ("path", "id"): "id",
        ("query", "StartTime"): "start_time",
        ("query", "StartTime<"): "start_time_lt",
        ("query", "StartTime>"): "start_time_gt",
        ("body_field", "id"): "id_body",
    }
    codes = [d.code for d in result.diagnostics]
    assert "duplicate_agent_input_name" not in codes
    assert codes.count("input_renamed") == 3
    properties = op.input.schema["properties"]
    assert properties["start_time_lt"]["x-anvil-wire-name"] == "StartTime<"
    assert properties["id_body"]["x-anvil-wire-name"] == "id"


def test_each_renamed_value_reaches_its_own_wire_coordinate() -> None:
    (op,) = _compile().document.operations
    arguments = {"id": "c1", "start_time": "t0", "start_time_lt": "t1", "start_time_gt": "t2", "id_body": "b9"}
    request = build_request(prepare(op), arguments, "https://api.example.test", None)
    assert request.url.startswith("https://api.example.test/calls/c1?")
    assert "StartTime=t0" in request.url and "StartTime%3C=t1" in request.url and "StartTime%3E=t2" in request.url
    assert request.body == {"id": "b9"}


def test_the_names_are_the_same_on_every_compile() -> None:
    first = [d.message for d in _compile().diagnostics if d.code == "input_renamed"]
    assert first == [d.message for d in _compile().diagnostics if d.code == "input_renamed"]


def test_comparison_operators_are_spelled_out() -> None:
    assert [spelled_key(name) for name in ("Date<=", "Date>=", "Date!=", "Tags[]")] == [
        "date_lte",
        "date_gte",
        "date_ne",
        "tags_list",
    ]


# --- the manifest's inputs: key ---------------------------------------------------------------------------


def _build(tmp_path: Any, inputs_yaml: str) -> Any:
    spec = tmp_path / "calls.json"
    spec.write_text(json.dumps(_SPEC), encoding="utf-8")
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(
        f"service:\n  name: calls\noperations:\n  updateCall:\n    state: approved\n    inputs:\n{inputs_yaml}",
        encoding="utf-8",
    )
    return build(spec, manifest=manifest)


def test_a_manifest_names_an_input_and_the_compiler_keeps_that_name(tmp_path: Any) -> None:
    result = _build(tmp_path, '      "StartTime<": start_time_before\n      "body:id": call_id\n')
    (op,) = result.document.operations
    names = {(b.location, b.wire_name): b.property for b in input_bindings(op)}
    assert names[("query", "StartTime<")] == "start_time_before"
    assert names[("body_field", "id")] == "call_id"
    assert names[("path", "id")] == "id"
    assert names[("query", "StartTime>")] == "start_time_gt"
    assert op.is_approved


def test_a_manifest_input_name_that_matches_nothing_or_two_inputs_is_an_input_error(tmp_path: Any) -> None:
    result = _build(tmp_path, "      StartTimes: start\n      id: the_id\n")
    unknown = [d for d in result.diagnostics if d.code == "manifest/unknown_input"]
    assert len(unknown) == 2 and {d.severity for d in unknown} == {"error"}
    assert "several inputs" in unknown[1].message


def test_two_inputs_the_manifest_gives_one_name_stay_blocked(tmp_path: Any) -> None:
    result = _build(tmp_path, '      "path:id": same\n      "body:id": same\n')
    assert "duplicate_agent_input_name" in [d.code for d in result.diagnostics]
    (op,) = result.document.operations
    assert op.state == "blocked"
