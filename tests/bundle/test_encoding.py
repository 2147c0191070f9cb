"""Pretty JSON is one answer whichever encoder writes it (orjson for plain values, the hand encoder else)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from anvil.air.canonical import pretty_json
from anvil.bundle.encoding import json_file

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=6) | st.sampled_from(
    ["\x00", "\x1f", "\x7f", "\u2028", '"\\/', "é"]
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3), max_leaves=15
)


@settings(max_examples=500, deadline=None)
@given(_values)
def test_every_json_value_is_written_exactly_as_the_canonical_pretty_printer_writes_it(value: Any) -> None:
    assert json_file(value) == pretty_json(value).encode("utf-8")


def test_huge_integers_floats_and_tuples_take_the_hand_encoder_and_still_agree() -> None:
    for value in ({200: "int key"}, [2**80], {"n": 1.0, "m": 1e-7}, {"t": (1, 2)}):
        assert json_file(value) == pretty_json(value).encode("utf-8")


def test_values_with_floats_keys_to_write_and_colliding_keys_still_agree_with_the_canonical_printer() -> None:
    values: list[Any] = [
        {1: "a", "1": "b"},  # collide once written: both are kept, as JSON.stringify would never see them
        {True: 1, None: 2, 1.5: 3, "f": [1.0, -0.0]},
        [float("nan"), float("inf"), float("-inf"), 1e21, 1e20, 123456789.0],
        {"deep": [{"x": (1.25, 2**70, -(2**64))}, "é\u2028"], "plain": {"k": "v"}},
    ]
    for value in values:
        assert json_file(value) == pretty_json(value).encode("utf-8")
