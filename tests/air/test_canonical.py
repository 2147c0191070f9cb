from __future__ import annotations

from anvil.air.canonical import canonical_json, hash_canonical, js_number, pretty_json


def test_canonical_json_sorts_keys_recursively_and_keeps_array_order() -> None:
    assert canonical_json({"b": [2, 1], "a": {"d": 1, "c": None}}) == '{"a":{"c":null,"d":1},"b":[2,1]}'


def test_canonical_json_writes_non_ascii_raw_and_integral_floats_as_integers() -> None:
    assert canonical_json({"name": "café", "n": 1.0, "x": 1.5}) == '{"n":1,"name":"café","x":1.5}'


def test_canonical_json_orders_keys_by_utf16_code_units_like_javascript() -> None:
    # U+FF5E sorts after U+1F600 in UTF-16 (0xD83D < 0xFF5E), the reverse of code-point order.
    assert canonical_json({"\uff5e": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\uff5e":1}'


def test_numbers_print_as_javascript_prints_them() -> None:
    assert [js_number(v) for v in (2500, 1.5, 1e21, 1e-7, 0.000001, 123456789.0)] == [
        "2500",
        "1.5",
        "1e+21",
        "1e-7",
        "0.000001",
        "123456789",
    ]


def test_hash_of_a_fixed_document_matches_the_javascript_canonical_hash() -> None:
    # sha256 of the string '{"a":[1,"é",null],"b":{"c":true}}' as Node computes it.
    doc = {"b": {"c": True}, "a": [1, "é", None]}
    assert canonical_json(doc) == '{"a":[1,"é",null],"b":{"c":true}}'
    assert hash_canonical(doc) == "ead29b9720d6773f7c0894a6887abb712781ca9ced685f8f5d95b0b20defe3f1"


def test_hash_matches_node_for_escapes_astral_keys_and_exponents() -> None:
    # Reference values computed with Node's JSON.stringify over recursively sorted keys.
    doc = {"service": {"id": "payments", "n": 1.0, "x": 0.1, "big": 1e21, "s": '\u0001\t"\\ é 😀'}, "ｚ": 1, "😀": 2}
    assert canonical_json(doc) == (
        '{"service":{"big":1e+21,"id":"payments","n":1,"s":"\\u0001\\t\\"\\\\ é 😀","x":0.1},"😀":2,"ｚ":1}'
    )
    assert hash_canonical(doc) == "b2c44dd9faeb6e1fc0672acd4a93b6d01edb2a2bf03da0d65cec8c2ed14e5ab9"


def test_pretty_json_is_two_space_indented_with_a_trailing_newline() -> None:
    assert pretty_json({"a": [], "b": {}, "c": 2.0}) == '{\n  "a": [],\n  "b": {},\n  "c": 2\n}\n'
