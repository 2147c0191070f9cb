"""Numbers for a schema: bounds in either spelling (2020-12 numbers, OpenAPI 3.0 booleans) and ``multipleOf``."""

from __future__ import annotations

import math

from anvil._types import JSONObject
from anvil.air.value_check import bound, multiple_fits

__all__ = ["number_for"]


def number_for(node: JSONObject, integer: bool, index: int) -> int | float | None:
    """A number ``node`` accepts (an integer when ``integer``), varied by ``index``; None when none fits."""
    low, low_open = bound(node, "minimum", "exclusiveMinimum")
    high, high_open = bound(node, "maximum", "exclusiveMaximum")
    step = node.get("multipleOf")
    preferred: float = (1 if integer else 1.5) + index
    picks: list[float] = [preferred]
    if low is not None:
        picks += [low + 1, low + 0.5, low] if low_open else [low, low + 1]
    if high is not None:
        picks += [high - 1, high - 0.5, high] if high_open else [high, high - 1]
    if low is not None and high is not None:
        picks.append((low + high) / 2)
    if isinstance(step, int | float) and not isinstance(step, bool) and step > 0:
        start = low if low is not None else 0
        first = math.ceil(start / step) if abs(start / step) < 1e15 else 0
        picks = [step * (1 + index)] + [k * step for k in range(first, first + 4)]
    for pick in picks:
        if integer:
            if not float(pick).is_integer():
                continue
            value: int | float = int(pick)
        else:
            value = int(pick) if float(pick).is_integer() and isinstance(step, int) else pick
        if _number_ok(value, low, low_open, high, high_open, step):
            return value
    return None


def _number_ok(
    value: float, low: float | None, low_open: bool, high: float | None, high_open: bool, step: object
) -> bool:
    if low is not None and (value < low or (low_open and value == low)):
        return False
    if high is not None and (value > high or (high_open and value == high)):
        return False
    if isinstance(step, int | float) and not isinstance(step, bool) and step > 0:
        return multiple_fits(value, step)
    return True
