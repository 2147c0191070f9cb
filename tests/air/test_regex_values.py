"""Strings for a ``pattern``: the regex subset real specs use, each result checked by ``re.search``."""

from __future__ import annotations

import random
import re
import time

import pytest

from anvil.air.regex_values import MAX_TEXT, pattern_string


@pytest.mark.parametrize(
    "pattern",
    [
        r"^card_[a-zA-Z0-9]+$",  # literals and a class
        r"^\d{5}(-\d{4})?$",  # categories, counted repeats, an optional group
        r"^[^\"\\]{0,500}$",  # a negated class
        r"^(letters|postcards|checks)/[a-z]{3,4}_[a-z0-9]{15,16}$",  # alternation
        r"^(?:[A-Z]{2}|C2)$",  # a non-capturing group
        r"^#[A-Fa-f0-9]{6}$",
        r"^[0-9]{1,14}?$",  # a lazy quantifier
        r"(a|b)\1",  # a back-reference
        r"^.{1,300}$",  # any character
        r"^$|^[A-Za-z0-9]{2,4}$",  # an empty alternative
        r"\bword\b",  # word boundaries
        r"^(?![0-9]+$)[a-z0-9_\-]+$",  # a negative lookahead, checked on the result
        r"[0-9]{4}",  # unanchored
    ],
)
def test_the_string_made_matches_the_pattern(pattern: str) -> None:
    text = pattern_string(pattern, random.Random(7))
    assert text is not None and re.search(pattern, text), text


def test_length_bounds_stretch_open_repeats_and_pad_an_unanchored_pattern() -> None:
    text = pattern_string(r"^[a-z]+$", random.Random(1), min_length=30, max_length=40)
    assert text is not None and 30 <= len(text) <= 40
    padded = pattern_string(r"^ab", random.Random(1), min_length=6)
    assert padded is not None and padded.startswith("ab") and len(padded) == 6


def test_a_pattern_the_bounds_exclude_or_that_does_not_compile_gives_none() -> None:
    assert pattern_string(r"^[0-9]{8}$", random.Random(1), max_length=4) is None
    assert pattern_string(r"^(unclosed", random.Random(1)) is None


def test_the_same_random_state_gives_the_same_string() -> None:
    pattern = r"^[A-Z]{3}-[0-9]{6}$"
    assert pattern_string(pattern, random.Random(5)) == pattern_string(pattern, random.Random(5))


@pytest.mark.parametrize(
    "pattern",
    [
        r"^((a{1000}){1000}){1000}$",  # a billion characters if built
        r"^(a+)+(?!)$",  # nothing matches; re backtracked exponentially on every candidate
        r"^(?:(?:){1000000})+x$",  # a million empty repetitions
    ],
)
def test_a_hostile_pattern_gives_up_within_the_work_bound(pattern: str) -> None:
    started = time.perf_counter()
    text = pattern_string(pattern, random.Random(1), min_length=25)
    assert time.perf_counter() - started < 2.0
    assert text is None or re.fullmatch(r"a*x?", text)


def test_a_min_length_past_the_longest_text_gives_none_at_once() -> None:
    assert pattern_string(r"^a+$", random.Random(1), min_length=MAX_TEXT + 1) is None
    assert pattern_string(r"^a+$", random.Random(1), min_length=2_000_000_000) is None
    made = pattern_string(r"^a+$", random.Random(1), min_length=MAX_TEXT)
    assert made is not None and len(made) == MAX_TEXT
