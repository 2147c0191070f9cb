"""Parsing YAML and JSON into JSON-compatible values."""

from __future__ import annotations

import gc
import json

from anvil.load.parse import MAX_DEPTH, Parsed, ParseFailure, parse_bytes


def _value(text: str, name: str = "spec.yaml") -> object:
    parsed = parse_bytes(text.encode(), name)
    assert isinstance(parsed, Parsed), parsed
    return parsed.value


def test_mapping_keys_are_always_their_source_text() -> None:
    value = _value("200: a\non: b\nyes: c\nnull: d\n1.5: e\n")
    assert value == {"200": "a", "on": "b", "yes": "c", "null": "d", "1.5": "e"}


def test_scalars_resolve_by_the_yaml_1_2_core_schema() -> None:
    value = _value("a: yes\nb: NO\nc: true\nd: ~\ne: 0o17\nf: 0x1F\ng: 1_000\nh: 012\ni: 1.5e3\n")
    assert value == {"a": "yes", "b": "NO", "c": True, "d": None, "e": 15, "f": 31, "g": "1_000", "h": 12, "i": 1500.0}


def test_dates_and_values_json_cannot_hold_stay_text() -> None:
    value = _value("d: 2020-09-14\nt: 2001-12-14t21:59:43.10-05:00\nn: .nan\ni: -.inf\nbig: 1e999\nb: !!binary aGk=\n")
    assert value == {
        "d": "2020-09-14",
        "t": "2001-12-14t21:59:43.10-05:00",
        "n": ".nan",
        "i": "-.inf",
        "big": "1e999",
        "b": "aGk=",
    }
    json.dumps(value, allow_nan=False)


def test_json_non_finite_numbers_stay_text() -> None:
    assert _value('{"a": NaN, "b": 1e999, "c": 2.5}', "x.json") == {"a": "NaN", "b": "1e999", "c": 2.5}


def test_aliases_and_merge_keys_are_expanded() -> None:
    value = _value("base: &b {type: string, maxLength: 3}\ncopy: *b\nmerged:\n  <<: *b\n  maxLength: 5\n")
    assert value == {
        "base": {"type": "string", "maxLength": 3},
        "copy": {"type": "string", "maxLength": 3},
        "merged": {"type": "string", "maxLength": 5},
    }


def test_an_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    parsed = parse_bytes("\n".join(lines).encode(), "bomb.yaml")
    assert isinstance(parsed, ParseFailure)


def test_a_recursive_alias_is_cut_to_a_stub_and_its_position_kept() -> None:
    parsed = parse_bytes(b"a: &a\n  type: object\n  properties:\n    self: *a\n", "loop.yaml")
    assert isinstance(parsed, Parsed)
    assert parsed.value == {"a": {"type": "object", "properties": {"self": {}}}}
    assert parsed.truncated == ((1, 4),)


def test_python_specific_tags_are_refused_not_executed() -> None:
    parsed = parse_bytes(b"a: !!python/object/apply:os.system ['true']\n", "evil.yaml")
    assert isinstance(parsed, ParseFailure)
    assert (parsed.line, parsed.column) == (1, 4)


def test_json_like_yaml_falls_back_to_yaml_unless_named_json() -> None:
    assert _value("{a: 1, b: [x]}") == {"a": 1, "b": ["x"]}
    assert isinstance(parse_bytes(b"{a: 1}", "spec.json"), ParseFailure)


def test_a_byte_order_mark_is_accepted() -> None:
    assert _value("\ufeffopenapi: 3.0.3\n") == {"openapi": "3.0.3"}
    assert _value('\ufeff{"openapi": "3.1.0"}', "x.json") == {"openapi": "3.1.0"}


def test_deep_nesting_is_a_parse_failure_not_a_crash() -> None:
    parsed = parse_bytes(b"[" * 100_000 + b"]" * 100_000, "deep.json")
    assert isinstance(parsed, ParseFailure)


def _nested_schema(levels: int) -> dict[str, object]:
    schema: dict[str, object] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "required": ["a"], "properties": {"a": schema}}
    return schema


def test_a_schema_nested_300_deep_is_refused_with_its_own_code() -> None:
    parsed = parse_bytes(json.dumps({"schema": _nested_schema(300)}).encode(), "deep.json")
    assert isinstance(parsed, ParseFailure) and parsed.code == "source/too_deep"
    assert f"deeper than {MAX_DEPTH} levels" in parsed.message
    assert isinstance(parse_bytes(json.dumps(_nested_schema(50)).encode(), "ok.json"), Parsed)
    recursion = parse_bytes(b"[" * 100_000 + b"]" * 100_000, "deep.json")
    assert isinstance(recursion, ParseFailure) and recursion.code == "source/too_deep"


def test_parsing_leaves_the_garbage_collector_as_it_found_it() -> None:
    was_enabled = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            for text, name in (("a: [1, 2]\n", "spec.yaml"), ('{"a": 1}', "spec.json"), ("a: [\n", "spec.yaml")):
                parse_bytes(text.encode(), name)
                assert gc.isenabled() is enabled, (text, enabled)
    finally:
        (gc.enable if was_enabled else gc.disable)()
