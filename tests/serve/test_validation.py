"""Argument validation: strict on business inputs, silent on the safety controls the gates own."""

from __future__ import annotations

from anvil.serve.validation import MAX_ARGUMENT_DEPTH, ArgumentCheck, call_schema, format_field, too_deep

PUBLISHED = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "owner": {"type": "string"},
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "idempotency_key": {"type": "string", "minLength": 1},
        "confirm": {"type": "boolean", "const": True},
        "anvil_dry_run": {"type": "boolean"},
    },
    "required": ["owner", "idempotency_key", "confirm"],
    "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
}


def check() -> ArgumentCheck:
    return ArgumentCheck(call_schema(PUBLISHED, ["idempotency_key", "confirm"]))


def test_the_safety_controls_are_left_to_the_gates() -> None:
    schema = call_schema(PUBLISHED, ["idempotency_key", "confirm"])
    assert schema["required"] == ["owner"]
    assert schema["properties"]["confirm"] == {}
    assert PUBLISHED["required"] == ["owner", "idempotency_key", "confirm"]  # the published schema is untouched
    assert check().check({"owner": "o"}) is None
    assert check().check({"owner": "o", "confirm": False, "idempotency_key": ""}) is None


def test_missing_unknown_and_mistyped_inputs_are_named() -> None:
    missing = check().check({})
    assert missing is not None and missing.details == {"missing": ["owner"]}
    unknown = check().check({"owner": "o", "zeta": 1, "alpha": 2})
    assert unknown is not None and unknown.details == {"unknown": ["alpha", "zeta"]}
    typed = check().check({"owner": "o", "anvil_dry_run": "yes"})
    assert typed is not None and typed.details == {"field": "anvil_dry_run", "keyword": "type"}


def test_nested_problems_name_their_path_through_refs() -> None:
    nested = check().check({"owner": "o", "items": [{"n": 1}, {"n": "two"}]})
    assert nested is not None and nested.details == {"field": "items[1].n", "keyword": "type"}
    absent = check().check({"owner": "o", "items": [{}]})
    assert absent is not None and absent.details == {"field": "items[0].n", "keyword": "required"}


def test_unknown_arguments_are_refused_even_when_the_schema_allows_them() -> None:
    open_schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    refused = ArgumentCheck(call_schema(open_schema, [])).check({"a": "x", "b": 1})
    assert refused is not None and refused.details == {"unknown": ["b"]}


def test_a_schema_the_validator_cannot_use_still_refuses_missing_and_unknown_inputs() -> None:
    broken = {"type": "object", "properties": {"a": {"type": "no-such-type"}}, "required": ["a"]}
    validation = ArgumentCheck(call_schema(broken, []))
    assert validation.check({"a": 1}) is None
    assert validation.check({}) is not None
    assert validation.check({"a": 1, "b": 2}) is not None


def test_fields_are_written_in_the_path_grammar() -> None:
    assert format_field(["items", 0, "name"]) == "items[0].name"
    assert format_field([]) == ""


def test_a_schema_with_a_reference_to_nothing_falls_back_to_the_minimal_check() -> None:
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}, "required": ["a"]}
    validation = ArgumentCheck(call_schema(dangling, []))
    assert validation.check({"a": 1}) is None
    assert validation.check({"a": 1, "b": 2}) is not None


def test_a_float_is_not_an_integer_even_when_it_has_no_fraction() -> None:
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}, "ratio": {"type": "number"}}}
    check = ArgumentCheck(call_schema(schema, ()))
    refused = check.check({"amount": 1.0})
    assert refused is not None and refused.details == {"field": "amount", "keyword": "type"}
    assert check.check({"amount": 1, "ratio": 1.0}) is None and check.check({"amount": True}) is not None


def test_nesting_is_measured_without_recursion_and_bounded() -> None:
    deep: object = "leaf"
    for _ in range(100_000):
        deep = [deep]
    assert too_deep({"a": deep}) is True
    shallow: object = 1
    for _ in range(MAX_ARGUMENT_DEPTH - 1):
        shallow = {"k": shallow}
    assert too_deep({"a": shallow}) is False and too_deep({"a": [shallow]}) is True
