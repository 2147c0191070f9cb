"""Output schemas: named schemas projected once per document, whole schemas as before, cuts that only accept more."""

from __future__ import annotations

from dataclasses import replace

import jsonschema
from referencing import Registry

from anvil._types import JSONObject
from anvil.air.model import Cli, Effect, Idempotency, Mcp, Operation, Output, RetryPolicy
from anvil.air.outputs import DRY_RUN_PLAN_DEF, DRY_RUN_PLAN_SCHEMA, OutputSchemas

REF = "#/components/schemas/"

#: A cyclic graph: every schema reaches every other (A -> B -> C -> A), and C holds a list of A.
GRAPH: JSONObject = {
    "A": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "b": {"$ref": REF + "B"}}},
    "B": {
        "type": "object",
        "properties": {"count": {"type": "integer", "nullable": True}, "c": {"$ref": REF + "C"}},
    },
    "C": {
        "type": "object",
        "required": ["label"],
        "properties": {
            "label": {"type": "string"},
            "a": {"$ref": REF + "A"},
            "all": {"type": "array", "items": {"$ref": REF + "A"}},
            "gone": {"$ref": "#/components/responses/Nope"},
        },
    },
}


def _read(schema: JSONObject, name: str = "get_a") -> Operation:
    return Operation(
        id=f"svc.{name}",
        canonical_name=name,
        display_name=name,
        effect=Effect(kind="read", action="get", risk="none"),
        output=Output(schema=schema),
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(mode="safe", basis="read_safe", max_attempts=3),
        cli=Cli(command=f"svc {name}"),
        mcp=Mcp(tool_name=f"svc_{name}"),
        state="approved",
    )


def _validator(schema: JSONObject) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=Registry())


def test_the_whole_schema_lists_every_reachable_schema_depth_first_and_points_nowhere_outside() -> None:
    outputs = OutputSchemas(GRAPH)
    plan = outputs.plan(_read({"$ref": REF + "A"}), dry_run=True)
    assert plan is not None and not plan.wrap
    schema = outputs.full(plan).schema
    assert schema["anyOf"] == [
        {"allOf": [{"$ref": "#/$defs/A"}], "type": "object"},
        {"$ref": "#/$defs/" + DRY_RUN_PLAN_DEF},
    ]
    assert list(schema["$defs"]) == ["A", "B", "C", DRY_RUN_PLAN_DEF]
    assert schema["$defs"][DRY_RUN_PLAN_DEF] == DRY_RUN_PLAN_SCHEMA
    assert schema["$defs"]["B"]["properties"]["count"] == {"type": ["integer", "null"]}
    assert schema["$defs"]["C"]["properties"]["gone"] == {}  # a reference to no schema is anything
    assert plan.depth == {"A": 1, "B": 2, "C": 3}
    assert _validator(schema).is_valid({"id": "x", "b": {"c": {"label": "y", "all": [{"id": "z"}]}}})


def test_two_operations_answering_one_schema_share_its_projection_instead_of_copying_it() -> None:
    outputs = OutputSchemas(GRAPH)
    first = outputs.plan(_read({"$ref": REF + "A"}, "one"), dry_run=False)
    second = outputs.plan(_read({"type": "array", "items": {"$ref": REF + "C"}}, "two"), dry_run=False)
    assert first is not None and second is not None and second.wrap
    one, two = outputs.full(first).schema, outputs.full(second).schema
    assert one["$defs"]["B"] is two["$defs"]["B"]  # one projected copy per document, whatever the tools
    assert list(two["$defs"]) == ["C", "A", "B"]


def test_every_cut_accepts_what_the_whole_accepts_and_the_last_accepts_any_object() -> None:
    outputs = OutputSchemas(GRAPH)
    plan = outputs.plan(_read({"$ref": REF + "A"}), dry_run=True)
    assert plan is not None
    whole = _validator(outputs.full(plan).schema)
    good = {"id": "x", "b": {"count": None, "c": {"label": "y", "a": {"id": "w"}}}}
    deep_bad = {"id": "x", "b": {"c": {"label": "y", "a": {"id": 7}}}}
    plan_answer = {"operation": "o", "method": "GET", "url": "u", "headers": {}, "body": None}
    plan_answer |= {"idempotencyKeyPresent": False, "retryPlan": {}}
    cuts = [build() for _, build in outputs.candidates(plan)]
    assert [cut.get("description") for cut in cuts][-1] == "A (summarised)"
    assert cuts[0]["$defs"]["B"]["properties"]["c"] == {"type": "object", "description": "C (summarised)"}
    assert whole.is_valid(good) and whole.is_valid(plan_answer) and not whole.is_valid(deep_bad)
    for cut in cuts:
        check = _validator(cut)
        assert check.is_valid(good) and check.is_valid(plan_answer) and check.is_valid(deep_bad)


def test_cuts_come_deepest_first_with_estimates_that_never_grow() -> None:
    outputs = OutputSchemas(GRAPH)
    plan = outputs.plan(_read({"type": "object", "properties": {"a": {"$ref": REF + "A"}}}), dry_run=False)
    assert plan is not None
    found = list(outputs.candidates(plan))
    estimates = [estimate for estimate, _ in found]
    assert estimates == sorted(estimates, reverse=True)
    kept = [sorted(build().get("$defs", {})) for _, build in found]
    assert kept == [["A", "B"], ["A"], [], []]
    assert found[2][1]()["properties"]["a"] == {"type": "object", "description": "A (summarised)"}


def test_component_names_that_sanitise_alike_keep_distinct_definitions() -> None:
    graph = {"a b": {"type": "string"}, "a_b": {"type": "integer"}}
    outputs = OutputSchemas(graph)
    body = {"type": "object", "properties": {"x": {"$ref": REF + "a b"}, "y": {"$ref": REF + "a_b"}}}
    plan = outputs.plan(_read(body), dry_run=False)
    assert plan is not None
    schema = outputs.full(plan).schema
    assert schema["properties"] == {"x": {"$ref": "#/$defs/a_b"}, "y": {"$ref": "#/$defs/a_b_2"}}
    assert schema["$defs"] == {"a_b": {"type": "string"}, "a_b_2": {"type": "integer"}}


def test_a_reachable_schema_that_is_not_json_schema_publishes_nothing() -> None:
    graph = {**GRAPH, "C": {"type": "file"}}
    outputs = OutputSchemas(graph)
    assert outputs.plan(_read({"$ref": REF + "A"}), dry_run=False) is None
    assert outputs.plan(replace(_read({"$ref": REF + "B"}), output=Output()), dry_run=False) is None


def test_a_cut_through_a_one_of_still_accepts_what_the_whole_accepts() -> None:
    kinds: JSONObject = {
        "Script": {"type": "object", "required": ["kind"], "properties": {"kind": {"enum": ["script"]}}},
        "Job": {"type": "object", "required": ["kind"], "properties": {"kind": {"enum": ["job"]}}},
        "Other": {"type": "object", "properties": {"x": {"type": "integer"}}},
    }
    body = {
        "type": "object",
        "properties": {
            "action": {"oneOf": [{"$ref": REF + "Script"}, {"$ref": REF + "Job"}]},
            "rest": {"not": {"$ref": REF + "Other"}},
        },
    }
    outputs = OutputSchemas(kinds)
    plan = outputs.plan(_read(body), dry_run=False)
    assert plan is not None
    answer = {"action": {"kind": "job"}, "rest": "text"}
    assert _validator(outputs.full(plan).schema).is_valid(answer)
    for _, build in outputs.candidates(plan):
        assert _validator(build()).is_valid(answer)  # two summaries {"type": "object"} overlap: not oneOf


def test_an_answer_in_any_shape_its_one_of_names_is_accepted_and_a_closed_composition_opens() -> None:
    shapes: JSONObject = {
        "Agent": {"type": "object", "required": ["id", "type"], "properties": {"id": {"type": "string"}}},
        "Value": {
            "type": "object",
            "additionalProperties": False,
            "oneOf": [{"$ref": REF + "Agent"}, {"type": "object", "required": ["text"]}],
        },
    }
    body: JSONObject = {"type": "object", "properties": {"agent": {"oneOf": [{"$ref": REF + "Agent"}] * 2}}}
    outputs = OutputSchemas(shapes)
    plan = outputs.plan(_read(body), dry_run=False)
    assert plan is not None
    validator = _validator(outputs.full(plan).schema)
    assert validator.is_valid({"agent": {"id": "P1", "type": "user_reference"}})  # both branches: an answer still
    assert not validator.is_valid({"agent": {"type": "user_reference"}})  # no branch: refused
    value_plan = outputs.plan(_read({"$ref": REF + "Value"}, "get_value"), dry_run=False)
    assert value_plan is not None
    value = _validator(outputs.full(value_plan).schema)
    assert value.is_valid({"id": "P1", "type": "t", "text": "x"})  # the branches' fields, not refused as extra
    assert not value.is_valid({"type": "t"})
