"""Argument validation: strict on business inputs, silent on the safety controls the gates own."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry

from anvil.air.patterns import linear_validator
from anvil.serve.mcp.validation import (
    _ASSERTING,
    MAX_ARGUMENT_DEPTH,
    ArgumentCheck,
    Unsure,
    _strict_validator,
    call_schema,
    compile_fast,
    format_field,
    json_equal,
    too_deep,
)

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


# --- the compiled check (no per-call jsonschema on the hot path) answers exactly what jsonschema answers ---

_NAMES = st.sampled_from(["a", "b", "c"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 2.0, -1.5, 0.5, 1e300]),
    st.sampled_from(["", "a", "ab", "abc", "x1", "Ünï", "2024-01-01"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_NAMES, inner, max_size=3)),
    max_leaves=10,
)
_TYPE = st.sampled_from(["object", "array", "string", "number", "integer", "boolean", "null"])
_ANNOTATIONS = st.fixed_dictionaries(
    {},
    optional={
        "title": st.just("t"),
        "description": st.just("d"),
        "x-anvil-wire-name": st.just("w"),
        "nullable": st.booleans(),
        "format": st.sampled_from(["email", "date", "uuid"]),
        "examples": st.just([1]),
    },
)


def _keywords(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """One to three keywords (so each one often decides the answer), plus annotations jsonschema ignores."""
    choices: dict[str, st.SearchStrategy[Any]] = {
        "type": st.one_of(_TYPE, st.lists(_TYPE, min_size=1, max_size=3, unique=True)),
        "enum": st.lists(_VALUES, min_size=1, max_size=3),
        "const": _VALUES,
        "minimum": st.sampled_from([0, 1, 1.5, -2]),
        "maximum": st.sampled_from([0, 2, 2.5]),
        "exclusiveMinimum": st.sampled_from([0, 1]),
        "exclusiveMaximum": st.sampled_from([1, 3.0]),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "pattern": st.sampled_from(["^a", "b", "[0-9]", "^$"]),
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(0, 2),
        "minProperties": st.integers(0, 2),
        "maxProperties": st.integers(0, 2),
        "required": st.lists(_NAMES, max_size=3, unique=True),
        "properties": st.dictionaries(_NAMES, inner, max_size=3),
        "additionalProperties": st.one_of(st.booleans(), inner),
        "items": st.one_of(st.booleans(), inner),
        "allOf": st.lists(inner, min_size=1, max_size=2),
        "anyOf": st.lists(inner, min_size=1, max_size=2),
        "oneOf": st.lists(inner, min_size=1, max_size=3),
        "not": inner,
        "$ref": st.sampled_from(["#/$defs/Item", "#/$defs/Tree", "#"]),
    }
    picked = st.lists(st.sampled_from(sorted(choices)), min_size=1, max_size=3, unique=True)
    keywords = picked.flatmap(lambda names: st.fixed_dictionaries({name: choices[name] for name in names}))
    return st.tuples(keywords, _ANNOTATIONS).map(lambda pair: {**pair[0], **pair[1]})


#: Values on every boundary the drawn keywords use, tried against every schema besides the drawn ones.
_PROBES: list[Any] = [
    *(None, True, False, 0, 1, 2, 3, -2, -3, 0.0, 1.0, 1.5, 2.0, 2.5, 3.0, -1.5),
    *("", "a", "ab", "abc", "b", "x1", "Ünï"),
    *([], [1], [1, "a"], [True, None, 2.0], [[1], [2, [3]]], [1, 2, 3]),
    *({}, {"a": 1}, {"a": "a", "b": True}, {"n": 0}, {"n": -1}, {"n": 1.0}, {"a": None, "b": [], "c": {}}),
]
_SCHEMAS = st.recursive(st.one_of(st.booleans(), _ANNOTATIONS), _keywords, max_leaves=6)
_DEFS = {
    "Item": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]},
    "Tree": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/Tree"}},
}


@settings(max_examples=250, deadline=None)
@given(schema=_SCHEMAS, instances=st.lists(_VALUES, min_size=1, max_size=6))
def test_the_compiled_check_answers_exactly_what_jsonschema_answers(schema: Any, instances: list[Any]) -> None:
    root = {**schema, "$defs": _DEFS} if isinstance(schema, dict) else schema
    for strict, validator in (
        (True, _strict_validator()(root)),
        (False, linear_validator()(root, registry=Registry())),  # what an answer is judged by
    ):
        fast = compile_fast(root, strict_integer=strict)
        assert fast is not None  # every keyword drawn here is one the compiler models
        for instance in [*_PROBES, *instances]:
            try:
                expected = validator.is_valid(instance)
            except RecursionError:  # a schema referring to itself with nothing in between: both give up
                continue
            assert fast(instance) == expected, (root, instance, strict)


def test_the_compiled_check_knows_every_keyword_jsonschema_applies_and_leaves_the_rest_to_it() -> None:
    assert frozenset(Draft202012Validator.VALIDATORS) == _ASSERTING
    for unmodelled in (
        {"multipleOf": 2},
        {"uniqueItems": True},
        {"patternProperties": {"^a": {}}},
        {"prefixItems": [{}]},
        {"if": {"type": "string"}, "then": {"minLength": 1}},
        {"$ref": "https://example.com/s.json"},
        {"$ref": "#/$defs/a~1b", "$defs": {"a/b": {}}},
        {"$defs": {"x": {"$id": "https://example.com/x"}}, "$ref": "#/$defs/x"},
        {"properties": {"a": {"$anchor": "here"}}},
        {"$ref": "#/$defs/missing"},
    ):
        assert compile_fast(unmodelled, strict_integer=True) is None
    assert compile_fast({"type": "integer", "title": "t", "x-any": 1}, strict_integer=True) is not None


def test_a_number_no_json_parser_makes_is_left_to_jsonschema() -> None:
    fast = compile_fast({"type": "number", "minimum": 1}, strict_integer=True)
    assert fast is not None and fast(2) and not fast("2")
    with pytest.raises(Unsure):
        fast(Decimal("2"))
    assert (
        ArgumentCheck({"type": "object", "properties": {"n": {"minimum": 1}}}).check({"n": Decimal("0.5")}) is not None
    )


def test_json_equality_keeps_booleans_apart_from_numbers() -> None:
    assert json_equal(1, 1.0) and json_equal([1, {"a": 2}], [1.0, {"a": 2.0}])
    assert not json_equal(True, 1) and not json_equal([False], [0]) and not json_equal({"a": 1}, {"b": 1})


#: The reviewer's slug pattern: with Python's re, a 27-character argument froze the gateway for 17.6 s.
SLUG = r"^([a-z0-9]+-?)+$"


@pytest.mark.parametrize("length", [20, 25, 27, 30, 35, 40])
@pytest.mark.parametrize("jsonschema_only", [False, True])
def test_a_slug_pattern_refuses_a_hostile_argument_at_once_on_either_path(length: int, jsonschema_only: bool) -> None:
    published: dict[str, Any] = {
        "type": "object",
        "properties": {"slug": {"type": "string", "pattern": SLUG}, "tags": {"type": "object"}},
        "required": ["slug"],
    }
    if jsonschema_only:  # a keyword the compiled check leaves to jsonschema: its pattern keyword is ours too
        published["properties"]["tags"] = {
            "type": "object",
            "patternProperties": {SLUG: {"type": "string"}},
            "additionalProperties": False,
        }
    argument_check = ArgumentCheck(call_schema(published, []))
    assert (compile_fast(call_schema(published, []), strict_integer=True) is None) is jsonschema_only
    started = time.perf_counter()
    violation = argument_check.check({"slug": "a" * length + "!"})
    assert time.perf_counter() - started < 0.5
    assert violation is not None and violation.details == {"field": "slug", "keyword": "pattern"}
    assert argument_check.check({"slug": "my-slug-" + "a" * length}) is None
    started = time.perf_counter()
    key_violation = argument_check.check({"slug": "ok", "tags": {"a" * length + "!": "x"}})
    assert time.perf_counter() - started < 0.5
    assert (key_violation is None) is not jsonschema_only  # a key no pattern names is an extra one there


def test_a_mebibyte_argument_is_checked_against_its_pattern_within_the_bound() -> None:
    argument_check = ArgumentCheck(call_schema({"type": "object", "properties": {"slug": {"pattern": SLUG}}}, []))
    started = time.perf_counter()
    violation = argument_check.check({"slug": "a" * (1 << 20) + "!"})
    assert time.perf_counter() - started < 0.5 and violation is not None


def test_arguments_past_the_pattern_work_budget_are_refused() -> None:
    # each text is within its own bound; together they are past one call's budget (anvil.air.patterns)
    schema = {"type": "object", "properties": {"names": {"type": "array", "items": {"pattern": "^a*$"}}}}
    argument_check = ArgumentCheck(call_schema(schema, []))
    assert argument_check.check({"names": ["a" * (1 << 19)] * 4}) is None
    violation = argument_check.check({"names": ["a" * (1 << 19)] * 9})
    assert violation is not None and violation.details["keyword"] == "pattern"
