"""The fast well-formedness walk answers exactly what the draft-7 metaschema answers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from jsonschema import Draft7Validator, SchemaError, ValidationError

from anvil.air.schema_check import is_well_formed_schema

_META = Draft7Validator(Draft7Validator.META_SCHEMA)


def _metaschema_says(schema: Any) -> bool:
    try:
        _META.validate(schema)
    except (SchemaError, ValidationError):
        return False
    return True


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["", "x", "object", "string", "integer", "banana"]),
)
_keys = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "required",
        "enum",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "additionalProperties",
        "minLength",
        "maxItems",
        "multipleOf",
        "minimum",
        "pattern",
        "dependencies",
        "definitions",
        "patternProperties",
        "$ref",
        "title",
        "uniqueItems",
        "examples",
        "const",
        "format",
        "if",
        "then",
        "contains",
        "nullable",
        "x-unknown",
    ]
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_keys | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=5))
def test_the_walk_agrees_with_the_draft7_metaschema_on_arbitrary_schemas(schema: dict[str, Any]) -> None:
    assert is_well_formed_schema(schema, skip_root_defs=False) is _metaschema_says(schema)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, True),
        ({"type": ["string", "null"]}, True),
        ({"type": ["string", "string"]}, False),
        ({"type": []}, False),
        ({"required": ["a", "a"]}, False),
        ({"anyOf": []}, False),
        ({"items": []}, False),
        ({"items": [{"type": "string"}, True]}, True),
        ({"multipleOf": 0}, False),
        ({"minLength": 1.0}, True),
        ({"minLength": -1}, False),
        ({"minLength": True}, False),
        ({"properties": {"a": {"type": "nope"}}}, False),
        ({"dependencies": {"a": ["b"], "c": {"type": "object"}}}, True),
        ({"dependencies": {"a": [1]}}, False),
        ({"x-nullable": "anything", "nullable": 3}, True),
        (True, True),
        ("string", False),
    ],
)
def test_the_walk_answers_known_cases_as_the_metaschema_does(schema: Any, expected: bool) -> None:
    assert _metaschema_says(schema) is expected
    assert is_well_formed_schema(schema, skip_root_defs=False) is expected


def test_root_defs_are_left_to_the_caller_and_prefix_items_are_schemas() -> None:
    assert is_well_formed_schema({"$defs": {"A": {"type": "nope"}}, "type": "object"}) is True
    assert is_well_formed_schema({"prefixItems": [{"type": "nope"}]}) is False
    assert is_well_formed_schema({"prefixItems": "x"}) is False
