"""Schema patterns matched in linear time with ECMA-262's meanings: no text stalls the caller."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from anvil.air.patterns import (
    MAX_PATTERN_CHARS,
    MAX_TEXT_UNITS,
    VALIDATION_UNITS,
    linear_validator,
    pattern_budget,
    schema_pattern,
)

#: The reviewer's pattern: an ordinary slug, exponential for Python's re on a text it does not match.
SLUG = r"^([a-z0-9]+-?)+$"
#: What one check may take here (the benchmark holds the loop to 50 ms; a loaded test machine gets slack).
QUICK_S = 0.5


def _timed(check: Any, *args: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    answer = check(*args)
    return answer, time.perf_counter() - started


@pytest.mark.parametrize("length", [20, 25, 27, 30, 35, 40])
def test_the_slug_pattern_refuses_a_20_to_40_character_text_at_once(length: int) -> None:
    matcher = schema_pattern(SLUG)
    refused, took = _timed(matcher.search, "a" * length + "!")
    assert refused is False and took < QUICK_S
    assert matcher.exact and matcher.search("my-slug-" + "a" * length)


def test_a_mebibyte_text_is_checked_within_the_bound() -> None:
    matcher = schema_pattern(SLUG)
    refused, took = _timed(matcher.search, "a" * (1 << 20) + "!")
    assert refused is False and took < QUICK_S
    assert matcher.search("a" * (1 << 20))


def test_patterns_take_their_ecma_262_meanings() -> None:
    assert not schema_pattern(r"^\d+$").search("١٢٣")  # \d is ASCII
    assert not schema_pattern(r"^\w+$").search("é")  # \w is ASCII
    assert not schema_pattern(r"^[a-z]+$").search("abc\n")  # $ is the end of the text, not before a \n
    assert [schema_pattern(r"^\s$").search(c) for c in ("\u00a0", "\ufeff", "\u2028", "\x1c")] == [
        True,
        True,
        True,
        False,
    ]
    assert [schema_pattern(r"^.$").search(c) for c in ("a", "\n", "\r", "\u2028")] == [True, False, False, False]
    assert schema_pattern(r"^\u00e9\/$").search("é/")  # \uXXXX and escaped punctuation
    assert schema_pattern(r"(?i)^abc$").search("ABC")
    assert schema_pattern("^a$").search("a\ud800") is False and schema_pattern("\ufffd").search("a\ud800")


@pytest.mark.parametrize(
    ("pattern", "texts"),
    [
        (r"^(?![0-9]+$)[a-z0-9_\-]+$", {"123": False, "a12": True, "12a": True}),
        (r"^(?!https://)[a-z:/.]{1,256}.(html?|pdf)$", {"https://x.pdf": False, "x/y.pdf": True}),
        (r"^(?=.*\d)(?=.*[A-Z])[A-Za-z\d]{8,}$", {"Abcdefg1": True, "abcdefg1": False, "ABCDEFGH": False}),
        (r"^[a-z-]+(?<!-)$", {"abc": True, "ab-": False}),
        (r"^(a+)+(?!)$", {"aaa": False, "a" * 40: False}),
        (r"(?=)a", {"a": True, "b": False}),
    ],
)
def test_lookarounds_at_the_edges_and_empty_ones_are_checked_exactly(pattern: str, texts: dict[str, bool]) -> None:
    matcher = schema_pattern(pattern)
    assert matcher.exact
    assert {text: matcher.search(text) for text in texts} == texts


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(r"(^1)(\w)\1(1$)", "1111"), (r"(^a)\1b", "aab"), (r"(\ba)-?\1c", "aac")],
)
def test_a_backreference_to_an_anchored_group_accepts_the_captured_text_wherever_it_stands(
    pattern: str, text: str
) -> None:
    assert re.search(pattern, text) and schema_pattern(pattern).search(text)


@pytest.mark.parametrize(
    "pattern",
    [r"a(?=b)", r"([ab])(,\1)*", r"^(a)(?(1)b|c)$", r"^x{1,2000}$", r"^(?:[a-z]{1,100}x){1,100}$", r"(?>a+)b"],
)
def test_what_re2_lacks_is_checked_loosely_and_never_refuses_what_the_pattern_accepts(pattern: str) -> None:
    matcher = schema_pattern(pattern)
    assert not matcher.exact and matcher.enforced
    for text in ("ab", "a,a", "abc", "ac", "x" * 1500, "ax" * 3, "aab", ""):
        if re.search(pattern, text):
            assert matcher.search(text), text


def test_a_pattern_over_the_size_bounds_is_not_checked() -> None:
    assert not schema_pattern("a" * (MAX_PATTERN_CHARS + 1)).enforced
    huge = "^" + r"[\s\S]{0,1000}" * 8 + "$"  # RE2 would build a program of 136k instructions for it
    started = time.perf_counter()
    matcher = schema_pattern(huge)
    assert time.perf_counter() - started < QUICK_S
    assert not matcher.exact and matcher.search("x" * 10)
    unparsed = schema_pattern("(unclosed")
    assert not unparsed.enforced and unparsed.search("anything")


def test_a_text_over_the_work_bound_does_not_match() -> None:
    matcher = schema_pattern("^a*$")
    assert matcher.search("a" * MAX_TEXT_UNITS)
    assert not matcher.search("a" * (MAX_TEXT_UNITS + 1))


def test_one_budget_covers_every_text_of_a_validation() -> None:
    matcher = schema_pattern("^a*$")
    text = "a" * (MAX_TEXT_UNITS // 2)
    with pattern_budget():
        answers = [matcher.search(text) for _ in range(VALIDATION_UNITS // len(text) + 1)]
    assert all(answers[:-1]) and answers[-1] is False
    assert matcher.search(text)  # outside a budget, each text is bounded on its own


def test_jsonschema_matches_patterns_property_names_and_extras_in_linear_time() -> None:
    hostile = "a" * 40 + "!"
    extension = "^x-([a-z0-9]+-?)+$"
    validator = linear_validator()(
        {
            "type": "object",
            "properties": {"slug": {"type": "string", "pattern": SLUG}},
            "patternProperties": {extension: {"type": "integer"}},
            "additionalProperties": False,
            "propertyNames": {"pattern": SLUG},
        }
    )
    for instance in ({"slug": hostile}, {"x-" + hostile: 1}, {"b" + hostile: 1}):
        valid, took = _timed(validator.is_valid, instance)
        assert valid is False and took < QUICK_S
    assert validator.is_valid({"slug": "a-b", "x-1": 2})
    assert not validator.is_valid({"x-1": "two"})


def test_unevaluated_properties_beside_a_pattern_is_left_to_the_upstream() -> None:
    schema = {"patternProperties": {SLUG: {"type": "integer"}}, "unevaluatedProperties": False}
    valid, took = _timed(linear_validator()(schema).is_valid, {"a" * 40 + "!": 1})
    assert valid is True and took < QUICK_S
    assert not linear_validator()({"properties": {"a": {}}, "unevaluatedProperties": False}).is_valid({"b": 1})


# --- the rendering agrees with Python's re wherever ECMA-262 and re mean the same -----------------------

_ATOMS = st.sampled_from(["a", "b", "1", "-", ".", r"\d", r"\w", r"\s", r"\D", r"[ab]", r"[^a1]", r"[a-c\d]", r"\-"])


def _regex(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _ATOMS
    inner = _regex(depth - 1)
    return st.one_of(
        _ATOMS,
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "{2,}", "*?"])).map(
            lambda p: f"(?:{p[0]}){p[1]}"
        ),
        inner.map(lambda p: f"({p})"),
        inner.map(lambda p: f"^{p}"),
        inner.map(lambda p: f"{p}$"),
        inner.map(lambda p: rf"\b{p}"),
    )


#: Texts where ECMA-262 and Python agree: ASCII without line terminators or the separators re calls spaces.
_TEXTS = st.text(alphabet="ab1- _.", max_size=8)


@settings(max_examples=300, deadline=None)
@given(pattern=_regex(3), texts=st.lists(_TEXTS, min_size=1, max_size=6))
def test_an_exact_rendering_answers_what_python_re_answers_on_plain_text(pattern: str, texts: list[str]) -> None:
    matcher = schema_pattern(pattern)
    assert matcher.exact and matcher.enforced
    for text in texts:
        assert matcher.search(text) == (re.search(pattern, text) is not None), (pattern, text)


# The backreference sits in a group of its own: a tail starting with a digit would make ``\1`` ``\11``.
_AROUND = st.sampled_from(["(?=a)", "(?!b)", "(?<=a)", "(?<!1)", r"(\w)(?:\1)", "(a)?(?(1)b|-)"])


@settings(max_examples=200, deadline=None)
@given(head=_regex(2), around=_AROUND, tail=_regex(2), texts=st.lists(_TEXTS, min_size=1, max_size=6))
def test_a_loosened_rendering_never_refuses_a_text_the_pattern_accepts(
    head: str, around: str, tail: str, texts: list[str]
) -> None:
    pattern = head + around + tail
    matcher = schema_pattern(pattern)
    for text in texts:
        if re.search(pattern, text):
            assert matcher.search(text), (pattern, text)
        elif matcher.exact:
            assert not matcher.search(text), (pattern, text)
