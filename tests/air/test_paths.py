"""The effect path grammar: parsing, printing, run-time resolution, deadlines and schema walking."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from anvil.air.model import Deadline
from anvil.air.paths import (
    MAX_SCHEMA_DEPTH,
    NOTHING,
    Const,
    Path,
    PathError,
    check_schema_path,
    format_path,
    json_type_of,
    parse_path,
    parse_source,
    resolve_deadline,
    resolve_mapping,
    resolve_path,
    resolve_source,
    schema_types,
    types_fit,
)

# --- grammar -------------------------------------------------------------------------------------------

names = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$-]{0,8}", fullmatch=True)
segments = st.lists(st.one_of(names, st.integers(min_value=0, max_value=10**6)), min_size=1, max_size=6)
valid_paths = st.one_of(
    st.builds(Path, st.sampled_from(["request", "response"]), segments.map(tuple), st.booleans()),
    st.builds(Path, st.just("idempotency_key"), st.just(()), st.booleans()),
)
path_like = st.lists(
    st.sampled_from(["request", "response", "idempotency_key", ".", "[", "]", "?", "0", "12", "a", "$", "-", " ", "x"]),
    max_size=12,
).map("".join)


def test_the_documented_paths_parse() -> None:
    assert parse_path("request.owner") == Path("request", ("owner",))
    assert parse_path("response.items[0].id") == Path("response", ("items", 0, "id"))
    assert parse_path("idempotency_key") == Path("idempotency_key")
    assert parse_path("request.name?") == Path("request", ("name",), optional=True)
    assert parse_path("request.$ref-x_1") == Path("request", ("$ref-x_1",))


@pytest.mark.parametrize(
    "written",
    [
        "body.id",
        "response",
        "request.",
        "response.items[x]",
        "response.a b",
        "idempotency_key.x",
        "$.response.id",
        "",
        "?",
        "request.a??",
        "requests.a",
        "request.a[]",
        "request.a[-1]",
        "request[0]x",
        "idempotency_key[0]",
        "request.0a",
    ],
)
def test_malformed_paths_are_errors_not_exceptions(written: str) -> None:
    assert isinstance(parse_path(written), PathError)


def test_non_string_sources_are_errors() -> None:
    assert isinstance(parse_path(7), PathError)
    assert isinstance(parse_path(None), PathError)
    assert isinstance(parse_source({"const": 1, "other": 2}), PathError)
    assert isinstance(parse_source(["request.a"]), PathError)


def test_a_literal_source_is_exactly_a_const_object() -> None:
    assert parse_source({"const": None}) == Const(None)
    assert parse_source({"const": {"a": [1]}}) == Const({"a": [1]})
    assert parse_source("request.a") == Path("request", ("a",))


def test_an_absurdly_long_index_is_an_error() -> None:
    assert isinstance(parse_path("request.a[" + "9" * 5000 + "]"), PathError)


@pytest.mark.parametrize("written", ["request.a[01]", "response.items[00]", "response.items[007].id?"])
def test_an_index_with_a_leading_zero_is_refused(written: str) -> None:
    parsed = parse_path(written)
    assert isinstance(parsed, PathError)
    assert parsed.code == "effect/path_invalid"
    assert "has a leading zero" in parsed.message


def test_index_zero_and_indexes_ending_in_zero_still_parse() -> None:
    assert parse_path("response.items[0]") == Path("response", ("items", 0))
    assert parse_path("response.items[10]") == Path("response", ("items", 10))


@given(st.one_of(st.text(), path_like))
def test_the_parser_never_raises_on_arbitrary_strings(written: str) -> None:
    parsed = parse_path(written)
    assert isinstance(parsed, Path | PathError)
    if isinstance(parsed, PathError):
        assert parsed.code == "effect/path_invalid"
    else:
        assert format_path(parsed) == written  # one spelling per path


@given(valid_paths)
def test_parse_and_print_round_trip_every_valid_path(path: Path) -> None:
    written = format_path(path)
    assert parse_path(written) == path
    assert str(parse_path(written)) == written


# --- resolution ------------------------------------------------------------------------------------------


def test_resolution_walks_own_keys_and_array_indices_only() -> None:
    request = {"owner": "octo", "labels": ["a", "b"], "map": {"0": "zero"}}
    response = {"items": [{"id": 7}], "gone": None, "nested": {"x": None}}
    assert resolve_source("request.owner", request=request) == "octo"
    assert resolve_source("request.labels[1]", request=request) == "b"
    assert resolve_source("response.items[0].id", response=response) == 7
    assert resolve_source("request.toString", request=request) is NOTHING
    assert resolve_source("request.__class__", request=request) is NOTHING
    assert resolve_source("request.labels.length", request=request) is NOTHING
    assert resolve_source("request.map[0]", request=request) is NOTHING
    assert resolve_source("request.labels[2]", request=request) is NOTHING
    assert resolve_source("request.owner[0]", request=request) is NOTHING
    assert resolve_source("response.gone", response=response) is NOTHING
    assert resolve_source("response.gone.deeper", response=response) is NOTHING
    assert resolve_source("response.nested.x", response=response) is NOTHING
    assert resolve_source("response.id", response=None) is NOTHING


def test_the_idempotency_key_root_is_the_key_that_went_upstream() -> None:
    assert resolve_path(Path("idempotency_key"), idempotency_key="k-1") == "k-1"
    assert resolve_path(Path("idempotency_key"), idempotency_key=None) is NOTHING


def test_a_const_yields_its_value_even_null_and_a_bad_source_names_nothing() -> None:
    assert resolve_source({"const": None}) is None
    assert resolve_source({"const": False}) is False
    assert resolve_source("not a path") is NOTHING


def test_mapping_resolution_is_all_or_nothing() -> None:
    request = {"owner": "octo", "repo": "hello"}
    resolved = resolve_mapping(
        {"owner": "request.owner", "comment_id": "response.id", "state": {"const": "closed"}},
        request=request,
        response={"id": 100},
    )
    assert resolved.ok
    assert resolved.arguments == {"owner": "octo", "comment_id": 100, "state": "closed"}
    assert resolved.reason is None

    missing = resolve_mapping(
        {"owner": "request.owner", "comment_id": "response.gone", "repo": "request.nope"},
        request=request,
        response={"gone": None},
    )
    assert not missing.ok
    assert missing.arguments is None
    assert (missing.argument, missing.source) == ("comment_id", "response.gone")
    assert missing.reason is not None and "comment_id" in missing.reason


def test_an_optional_path_that_names_nothing_leaves_its_argument_out() -> None:
    resolved = resolve_mapping({"tag": "request.tag", "name": "request.name?"}, request={"tag": "v1"})
    assert resolved.arguments == {"tag": "v1"}
    present = resolve_mapping({"name": "request.name?"}, request={"name": "One"})
    assert present.arguments == {"name": "One"}


def test_a_malformed_source_makes_the_mapping_unavailable() -> None:
    resolved = resolve_mapping({"a": {"const": 1, "x": 2}}, request={})
    assert not resolved.ok
    assert resolved.argument == "a"


# --- deadlines --------------------------------------------------------------------------------------------


def test_deadlines_resolve_to_epoch_milliseconds() -> None:
    assert resolve_deadline(None, answered_at_ms=1000) is None
    assert resolve_deadline(Deadline(within_ms=500), answered_at_ms=1000) == 1500
    at = Deadline(at="response.expires_at")
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": "2024-01-01T00:00:00Z"}) == 1704067200000
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": "2024-01-01T01:00:00+01:00"}) == (
        1704067200000
    )
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": "2024-01-01T00:00:00.250"}) == (1704067200250)
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": "2024-01-01"}) == 1704067200000
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": 99}) == 99
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": 99.0}) == 99
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": 99.5}) == 99.5


@pytest.mark.parametrize("value", ["soon", "", float("inf"), float("nan"), True, None, {"at": 1}, [1]])
def test_a_deadline_at_that_names_no_time_is_unknown(value: Any) -> None:
    at = Deadline(at="response.expires_at")
    assert resolve_deadline(at, answered_at_ms=0, response={"expires_at": value}) is NOTHING
    assert resolve_deadline(at, answered_at_ms=0, response={}) is NOTHING


# --- schema walking --------------------------------------------------------------------------------------

COMMENT = {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}, "body": {"type": "string"}}}
SCHEMAS: dict[str, Any] = {
    "Comment": COMMENT,
    "Alias": {"$ref": "#/components/schemas/Comment"},
    "Closed": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
}


def test_declared_paths_are_declared_with_their_types() -> None:
    lookup = check_schema_path(COMMENT, ["id"])
    assert lookup.status == "declared"
    assert lookup.types == frozenset({"integer"})
    listing = {"type": "array", "items": {"$ref": "#/components/schemas/Comment"}}
    assert check_schema_path(listing, [0, "body"], SCHEMAS).types == frozenset({"string"})
    assert check_schema_path({"$ref": "#/components/schemas/Alias"}, ["id"], SCHEMAS).status == "declared"
    assert check_schema_path({"$ref": "#/definitions/Comment"}, ["id"], SCHEMAS).status == "declared"


def test_compositions_search_all_of_every_branch_and_any_of_one() -> None:
    one_of = {"oneOf": [{"type": "object", "properties": {"a": {}}}, {"type": "object", "properties": {"b": {}}}]}
    assert check_schema_path(one_of, ["b"]).status == "declared"
    assert check_schema_path(one_of, ["c"]).status == "missing"
    all_of = {"allOf": [{"$ref": "#/components/schemas/Comment"}, {"properties": {"extra": {"type": "boolean"}}}]}
    assert check_schema_path(all_of, ["extra"], SCHEMAS).status == "declared"
    assert check_schema_path(all_of, ["id"], SCHEMAS).types == frozenset({"integer"})
    assert check_schema_path(all_of, ["nope"], SCHEMAS).status == "missing"
    open_branch = {"anyOf": [{"type": "object"}, {"type": "object", "properties": {"a": {}}}]}
    assert check_schema_path(open_branch, ["z"]).status == "unverified"


def test_undeclared_names_in_a_closed_schema_are_missing() -> None:
    assert check_schema_path(SCHEMAS["Closed"], ["b"]).status == "missing"
    assert check_schema_path(COMMENT, ["nope"]).status == "missing"
    assert check_schema_path(COMMENT, ["id", "deeper"]).status == "missing"
    assert check_schema_path(COMMENT, ["id", 0]).status == "missing"
    assert check_schema_path({"type": "string"}, ["x"]).status == "missing"


def test_open_or_unresolvable_schemas_are_unverified() -> None:
    assert check_schema_path(None, ["a"]).status == "unverified"
    assert check_schema_path({}, ["a"]).status == "unverified"
    assert check_schema_path({"type": "object"}, ["a"]).status == "unverified"
    open_map = {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}}
    assert check_schema_path(open_map, ["b"]).status == "unverified"
    invited = {"type": "object", "properties": {"a": {}}, "additionalProperties": True}
    assert check_schema_path(invited, ["b"]).status == "unverified"
    assert check_schema_path({"$ref": "#/components/schemas/Nope"}, ["a"], SCHEMAS).status == "unverified"
    assert check_schema_path({"$ref": "https://example.com/x.json"}, ["a"], SCHEMAS).status == "unverified"
    assert check_schema_path({"type": "array"}, [0]).status == "unverified"


def test_references_into_the_roots_own_defs_are_followed_first() -> None:
    schema = {
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/Comment"}},
        "$defs": {"Comment": {"type": "object", "properties": {"local": {"type": "boolean"}}}},
    }
    assert check_schema_path(schema, ["item", "local"], SCHEMAS).status == "declared"
    assert check_schema_path(schema, ["item", "id"], SCHEMAS).status == "missing"
    prop = schema["properties"]["item"]
    assert check_schema_path(prop, ["local"], SCHEMAS, root=schema).types == frozenset({"boolean"})


def test_nesting_deeper_than_the_limit_is_unverified() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH + 2):
        schema = {"type": "object", "properties": {"a": schema}, "additionalProperties": False}
    assert check_schema_path(schema, ["a"] * 5).status == "declared"
    assert check_schema_path(schema, ["a"] * (MAX_SCHEMA_DEPTH + 2)).status == "unverified"
    looping = {"Loop": {"$ref": "#/components/schemas/Loop"}}
    assert check_schema_path({"$ref": "#/components/schemas/Loop"}, ["a"], looping).status == "unverified"


def test_the_root_itself_is_declared() -> None:
    assert check_schema_path(COMMENT, []).status == "declared"
    assert check_schema_path(COMMENT, []).types == frozenset({"object"})


def test_types_come_from_type_else_const_or_enum_literals() -> None:
    assert schema_types({"type": ["string", "null"]}) == frozenset({"string", "null"})
    assert schema_types({"const": True}) == frozenset({"boolean"})
    assert schema_types({"enum": ["open", 1]}) == frozenset({"string", "integer"})
    assert schema_types({"description": "anything"}) is None
    assert json_type_of(1.5) == "number"
    assert json_type_of(2) == "integer"
    assert json_type_of({}) == "object"


def test_an_integer_fits_a_number_and_nothing_else_converts() -> None:
    assert types_fit(frozenset({"integer"}), frozenset({"number"}))
    assert types_fit(frozenset({"integer"}), frozenset({"integer"}))
    assert not types_fit(frozenset({"number"}), frozenset({"integer"}))
    assert not types_fit(frozenset({"string"}), frozenset({"integer"}))
    assert types_fit(frozenset({"string", "null"}), frozenset({"string"}))
