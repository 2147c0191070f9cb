"""How much one generated value may take, and how a lane stops a value being made.

:mod:`anvil.air.values` makes every value within these bounds: a schema asking for more (a
``minLength`` of two billion, arrays of arrays of 64 items, ``oneOf`` nested in ``oneOf``) is a
:class:`~anvil.air.values.CannotMake` the lanes report as their "cannot make a value" skip, never a
stalled process. Inside :func:`stopping_when`, a value being made is abandoned once the lane's check
holds, so a time cap or a signal holds while values are made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from anvil.air.regex_values import MAX_TEXT

__all__ = ["CHARS_PER_STEP", "MAX_STEPS", "MAX_STRING", "STOP_EVERY", "current_stop", "stopping_when"]

#: The work one value may take: nodes made plus schema nodes judged on the way.
MAX_STEPS: Final = 100_000
#: The longest string made (a longer ``minLength`` cannot be met).
MAX_STRING: Final = MAX_TEXT
#: How many characters of the strings made count as one step of :data:`MAX_STEPS`.
CHARS_PER_STEP: Final = 16
#: How many steps pass between two looks at :func:`stopping_when`'s check.
STOP_EVERY: Final = 512

_STOP: ContextVar[Callable[[], bool] | None] = ContextVar("anvil_generation_stop", default=None)


@contextmanager
def stopping_when(check: Callable[[], bool]) -> Iterator[None]:
    """Values made inside are abandoned once ``check()`` holds (asked every :data:`STOP_EVERY` steps):
    a lane's time cap and stop signal hold while a value is being made, which then cannot be made."""
    token = _STOP.set(check)
    try:
        yield
    finally:
        _STOP.reset(token)


def current_stop() -> Callable[[], bool] | None:
    """The check of the innermost :func:`stopping_when`, or None outside one."""
    return _STOP.get()
