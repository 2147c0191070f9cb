"""Form bodies on the wire: one flattening for urlencoded and multipart, deterministic bytes, decodable back."""

from __future__ import annotations

import hashlib
import time

import pytest
from hypothesis import given, settings, strategies as st

from anvil.air.forms import FormError, decode_form, encode_form, form_pairs, is_form_media_type

URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"

_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20)
_NAME = st.text(alphabet=st.characters(exclude_categories=["Cs", "Cc"]), min_size=1, max_size=10)


def test_the_form_media_types_are_recognized_with_parameters_and_in_any_case() -> None:
    assert is_form_media_type("application/x-www-form-urlencoded; charset=utf-8")
    assert is_form_media_type("Multipart/Form-Data")
    assert not is_form_media_type("application/json")
    assert not is_form_media_type("multipart/mixed")


def test_a_body_flattens_to_text_pairs_arrays_repeated_objects_as_json_and_nulls_left_out() -> None:
    body = {"To": "+1 555", "Amount": 12.5, "Count": 3, "Ok": False, "Tags": ["a", 2], "Meta": {"x": 1}, "No": None}
    assert form_pairs(body) == [
        ("To", "+1 555", False),
        ("Amount", "12.5", False),
        ("Count", "3", False),
        ("Ok", "false", False),
        ("Tags", "a", False),
        ("Tags", "2", False),
        ("Meta", '{"x":1}', True),
    ]


def test_a_urlencoded_body_is_percent_encoded_pairs_in_field_order() -> None:
    content, header = encode_form(URLENCODED, {"To": "+1 555", "IdempotencyKey": "k-1", "Tags": ["a&b", "c"]})
    assert header == URLENCODED
    assert content == b"To=%2B1+555&IdempotencyKey=k-1&Tags=a%26b&Tags=c"


def test_a_multipart_body_has_a_boundary_derived_from_its_field_names() -> None:
    first, header = encode_form(MULTIPART, {"a": "1", "b": {"x": True}})
    again, header_again = encode_form(MULTIPART, {"a": "1", "b": {"x": True}})
    other_value, same_header = encode_form(MULTIPART, {"a": "2", "b": {"x": True}})
    _, other_header = encode_form(MULTIPART, {"a": "1", "c": {"x": True}})
    assert (first, header) == (again, header_again)  # MCP, REST, the CLI and a retry send these bytes
    assert same_header == header and other_value != first  # a caller's key changes a value, not the boundary
    assert other_header != header
    boundary = header.split("boundary=", 1)[1]
    assert boundary == "anvil-" + hashlib.sha256(b"a\0b").hexdigest()[:32]
    assert (
        first
        == (
            f'--{boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="b"\r\nContent-Type: application/json\r\n\r\n'
            f'{{"x":true}}\r\n--{boundary}--\r\n'
        ).encode()
    )


def test_a_value_holding_the_boundary_gets_a_suffix_no_part_holds_so_it_cannot_end_its_part() -> None:
    _, header = encode_form(MULTIPART, {"a": "x"})
    boundary = header.split("boundary=", 1)[1]
    forged = f'x\r\n--{boundary}\r\nContent-Disposition: form-data; name="admin"\r\n\r\ntrue'
    content, forged_header = encode_form(MULTIPART, {"a": forged})
    assert forged_header == f"{header}-0" and decode_form(content, forged_header) == {"a": [forged]}
    # a suffix longer than every run of digits a value shows after the boundary
    shown = f"{boundary}-0 {boundary}-12 {boundary}-2x {boundary}-"
    content, suffixed = encode_form(MULTIPART, {"a": shown})
    assert suffixed == f"{header}-000" and decode_form(content, suffixed) == {"a": [shown]}
    # runs too long to read whole: the least 13-digit number none of them starts with
    long_runs = f"{boundary}-{'0' * 20} {boundary}-{'0' * 12}1999"
    content, cut = encode_form(MULTIPART, {"a": long_runs})
    assert cut == f"{header}-{'0' * 12}2" and decode_form(content, cut) == {"a": [long_runs]}


def _old_boundary_chain(names: str, size: int) -> str:
    """The boundaries the field-name derivation tried in turn (``anvil-`` + sha256 of the names, then
    salted with NUL while a part held it), joined up to ``size`` characters: the reviewer's value."""
    digest = hashlib.sha256(names.encode("utf-8"))
    chain: list[str] = []
    while sum(map(len, chain)) < size:
        chain.append("anvil-" + digest.hexdigest()[:32])
        digest.update(b"\0")
    return "".join(chain)


def test_a_mebibyte_value_built_from_the_boundary_chain_is_encoded_in_linear_time() -> None:
    value = _old_boundary_chain("a", 1 << 20)
    started = time.perf_counter()
    content, header = encode_form(MULTIPART, {"a": value})  # the old derivation took 4.7 s (quadratic)
    assert time.perf_counter() - started < 0.5
    boundary = header.split("boundary=", 1)[1]
    assert boundary.endswith("-0") and boundary not in value and content.count(boundary.encode()) == 2
    assert decode_form(content, header) == {"a": [value]}


def test_a_multipart_field_name_can_never_end_its_header() -> None:
    content, header = encode_form(MULTIPART, {'a"; filename="x\r\nX-Evil: 1': "v"})
    assert b'name="a%22; filename=%22x%0D%0AX-Evil: 1"' in content
    assert decode_form(content, header) == {"a%22; filename=%22x%0D%0AX-Evil: 1": ["v"]}


@pytest.mark.parametrize("media", [URLENCODED, MULTIPART])
@pytest.mark.parametrize("body", [["a"], "text", 3, None])
def test_a_body_that_is_not_an_object_cannot_be_a_form(media: str, body: object) -> None:
    with pytest.raises(FormError) as caught:
        encode_form(media, body)  # type: ignore[arg-type]
    assert caught.value.field == "body"


def test_bytes_that_are_not_the_declared_form_do_not_decode() -> None:
    assert decode_form(b"a=\xff", URLENCODED) is None  # not UTF-8
    assert decode_form(b"--x\r\nno boundary was declared\r\n--x--\r\n", MULTIPART) is None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([URLENCODED, MULTIPART]), st.dictionaries(_NAME, st.lists(_TEXT, min_size=1, max_size=3)))
def test_any_form_of_text_fields_decodes_back_to_its_fields(media: str, fields: dict[str, list[str]]) -> None:
    content, header = encode_form(media, {name: list(values) for name, values in fields.items()})
    if media == MULTIPART:
        fields = {name.replace('"', "%22"): values for name, values in fields.items()}
    assert decode_form(content, header) == fields
