"""The structure-aware cut of an answer to a token budget (``anvil.serve.budget``)."""

from __future__ import annotations

import json
import time
from typing import Any

from hypothesis import given, settings, strategies as st

from anvil.air.tokens import count_tokens
from anvil.serve.budget import (
    LONG_STRING_CHARS,
    MAX_CUT_KEYS,
    BudgetCut,
    Cut,
    compact,
    cut_to_budget,
    encoded,
    estimate_tokens,
    json_path,
    text_tokens,
)
from tests.serve.budget_upstream import item_list


def cut(value: Any, budget: int = 2000, beside: int = 0) -> BudgetCut:
    return cut_to_budget(value, len(encoded(value)), budget=budget, chars_per_token=4.0, beside=lambda _: beside)


def test_a_list_over_the_budget_keeps_whole_leading_items_and_every_other_field() -> None:
    answer = {"object": "list", "data": item_list(500), "has_more": True, "url": "/items"}
    done = cut(answer, 2000, beside=100)
    view = json.loads(done.text)
    served = len(view["data"])
    assert view == {**answer, "data": answer["data"][:served]} and 0 < served < 500
    assert done.tokens == count_tokens(done.text) and done.tokens + 100 <= 2000
    assert done.tokens > 2000 * 0.8  # close to the budget, not far under it
    assert done.cuts == (Cut(("data",), served, 500, "items"),) and done.shortened == 0 and done.fits


def test_strings_over_two_thousand_characters_are_shortened_with_an_ellipsis_in_a_cut() -> None:
    answer = [{"id": n, "body": f"{n} " + "word " * 3000} for n in range(40)]
    done = cut(answer, 4000)
    view = json.loads(done.text)
    assert len(view) > 1 and done.shortened == len(view)
    assert view[0]["body"] == answer[0]["body"][:LONG_STRING_CHARS] + "…" and view[0]["id"] == 0


def test_the_largest_of_two_lists_gets_the_room_the_other_leaves_at_its_smallest() -> None:
    answer = {"small": item_list(600, prefix="s"), "large": item_list(900, prefix="l"), "total": 1500}
    done = cut(answer, 3000)
    view = json.loads(done.text)
    assert view["total"] == 1500 and 0 < len(view["large"]) < 900
    assert len(view["small"]) <= 1  # whatever room the large list's whole items left
    assert [(item.path, item.total) for item in done.cuts] == [(("large",), 900), (("small",), 600)]


def test_a_list_whose_first_item_does_not_fit_serves_that_item_cut_inside() -> None:
    answer = [{"rows": item_list(800)}, {"rows": []}]
    done = cut(answer, 1500)
    view = json.loads(done.text)
    assert len(view) == 1 and 0 < len(view[0]["rows"]) < 800
    assert Cut((), 1, 2, "items") in done.cuts and Cut((0, "rows"), len(view[0]["rows"]), 800, "items") in done.cuts
    assert json_path((0, "rows")) == "$[0].rows"


def test_an_object_with_more_keys_than_the_cut_limit_keeps_its_leading_entries() -> None:
    answer = {f"id-{n}": {"n": n, "label": "x" * 40} for n in range(MAX_CUT_KEYS * 5)}
    done = cut(answer, 1500)
    view = json.loads(done.text)
    assert list(view) == list(answer)[: len(view)] and 0 < len(view) < MAX_CUT_KEYS
    assert done.cuts == (Cut((), len(view), MAX_CUT_KEYS * 5, "keys"),)


def test_a_long_string_answer_is_cut_to_what_fits() -> None:
    done = cut("é" * 1_000_000, 300)
    view = json.loads(done.text)
    assert view.endswith("…") and 0 < len(view) < 1000 and done.tokens <= 300
    assert done.cuts == (Cut((), len(view) - 1, 1_000_000, "characters"),)


def test_a_budget_smaller_than_what_travels_beside_serves_the_smallest_view_marked_as_not_fitting() -> None:
    done = cut({"data": item_list(50), "n": 1}, 100, beside=500)
    assert done.fits is False and json.loads(done.text) == {"data": [], "n": 1}


def test_the_same_answer_is_cut_the_same_way() -> None:
    answer = {"data": item_list(700), "meta": {"next": "abc"}}
    first, again = cut(answer, 2500, beside=90), cut(json.loads(json.dumps(answer)), 2500, beside=90)
    assert (first.text, first.cuts, first.tokens) == (again.text, again.cuts, again.tokens)


def test_a_view_the_estimate_undersizes_is_cut_again_smaller_until_its_count_fits() -> None:
    answer = [{"digits": list(range(n, n + 40))} for n in range(0, 40_000, 40)]  # about 2 characters a token
    done = cut_to_budget(answer, len(encoded(answer)), budget=1000, chars_per_token=6.0, beside=lambda _: 0)
    assert (
        done.tokens == count_tokens(done.text) <= 1000
        and json.loads(done.text) == answer[: len(answer) - 0][: len(json.loads(done.text))]
    )


def test_long_runs_of_one_character_class_are_counted_in_bounded_time_and_never_under() -> None:
    started = time.perf_counter()
    for text in ("a" * 40_000, "é" * 40_000, "😀" * 10_000, "-" * 40_000, " " * 40_000, "漢" * 40_000):
        assert text_tokens(json.dumps([text], ensure_ascii=False)) > 0
    assert time.perf_counter() - started < 5  # counted whole, "é" * 40,000 alone would take minutes
    sample = '{"a":"' + "x" * 300 + '","b":[1,2,3],"c":"lorem ipsum dolor"}'
    assert text_tokens(sample) >= count_tokens(sample)
    ordinary = compact({"data": item_list(20)})
    assert text_tokens(ordinary) == count_tokens(ordinary)  # ordinary JSON is counted exactly


def test_tokens_are_estimated_from_characters_per_token_with_four_by_default() -> None:
    assert estimate_tokens(4001, 4.0) == 1001 and estimate_tokens(100, 0) == 25 and estimate_tokens(90, 4.5) == 20


def test_a_path_is_written_as_json_path_with_odd_keys_quoted() -> None:
    assert json_path(()) == "$" and json_path(("data",)) == "$.data"
    assert json_path(("a b", 3, "ünï")) == '$["a b"][3]["ünï"]'


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=60),
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(st.text(max_size=8), inner, max_size=8),
    max_leaves=80,
)


@settings(max_examples=150, deadline=None)
@given(value=JSON, budget=st.integers(min_value=1, max_value=120), beside=st.integers(min_value=0, max_value=40))
def test_every_cut_parses_as_json_and_fits_its_budget_or_says_it_cannot(value: Any, budget: int, beside: int) -> None:
    done = cut(value, budget, beside)
    assert json.loads(done.text) == done.view
    assert done.tokens == count_tokens(done.text)
    if done.fits:
        assert done.tokens + beside <= budget
