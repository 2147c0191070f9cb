"""The work budget of one JMESPath evaluation (:mod:`anvil.serve.projection`'s module docstring).

Apart from the projection so that its metered interpreter (:mod:`anvil.serve.interpreter`, loaded with the
first projection) and the projection share it without importing each other.
"""

from __future__ import annotations

import sys
from typing import Any, Final

__all__ = ["CHARS_PER_UNIT", "WORK_FLOOR", "WORK_PER_VALUE", "Exhausted", "Meter", "json_size"]

#: Work units every evaluation may spend, whatever the answer.
WORK_FLOOR: Final = 200_000
#: Work units added per value of the answer once the floor is spent (reading a large answer whole).
WORK_PER_VALUE: Final = 8
#: Characters of a string counted as one more value (strings are cheap to copy, not free).
CHARS_PER_UNIT: Final = 64


class Exhausted(Exception):
    """The evaluation spent its work budget."""


def json_size(value: object, limit: int) -> int:
    """``value``'s size as an expanded JSON tree; the count stops soon after it passes ``limit``.

    One unit per value (object, array, scalar), one per object key and one more per 64 characters of
    a string. Shared references count once per place they appear, as serializing them would; the walk
    has no recursion and stops once the count passes ``limit``, whatever the sharing.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return 1 + len(value) // CHARS_PER_UNIT if kind is str else 1  # type: ignore[arg-type]
    count = 0
    pending: list[Any] = [value]
    push = pending.append
    while pending:
        container = pending.pop()
        items = container.values() if type(container) is dict else container
        count += 1 + len(container) if type(container) is dict else 1
        for item in items:
            kind = type(item)
            if kind is dict or kind is list:
                push(item)
            elif kind is str:
                count += 1 + len(item) // CHARS_PER_UNIT
            else:
                count += 1
        if count > limit:
            break
    return count


class Meter:
    """The work budget of one evaluation (module docstring)."""

    __slots__ = ("_answer", "answer_size", "left")

    def __init__(self, answer: object) -> None:
        self._answer = answer
        self.answer_size: int | None = None  # counted once, when the floor is spent
        self.left = WORK_FLOOR

    def _extend(self) -> bool:
        """Add the answer-sized share once; False when it was already added."""
        if self.answer_size is not None:
            return False
        self.answer_size = json_size(self._answer, sys.maxsize)  # the answer is a finite tree
        self.left += WORK_PER_VALUE * self.answer_size
        return True

    def spend(self, units: int) -> None:
        """Charge ``units``.

        Raises:
            Exhausted: the budget is spent.
        """
        self.left -= units
        if self.left < 0 and not (self._extend() and self.left >= 0):
            raise Exhausted

    def expanded(self, value: object) -> int:
        """Charge the expanded size of ``value`` and return it (the walk stops at the budget left).

        Raises:
            Exhausted: the budget is spent.
        """
        size = json_size(value, self.left)
        if size > self.left and self._extend():
            size = json_size(value, self.left)
        self.spend(size)
        return size
