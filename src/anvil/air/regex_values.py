"""Strings that match a JSON Schema ``pattern``: a small generator over Python's own regex parser.

JSON Schema's ``pattern`` is a search, and the compiler keeps only patterns Python compiles, so
Python's parser (``re._parser``, what ``hypothesis.from_regex``, ``exrex`` and ``rstr.xeger`` all walk)
reads every pattern a bundle can hold: literals, classes and categories, quantifiers (greedy or lazy),
groups and back-references, alternation and anchors. Lookarounds and word boundaries are not generated;
every candidate is checked with :func:`anvil.air.patterns.schema_pattern` (linear time, never ``re``,
which backtracks exponentially on texts a hostile pattern does not match) and the length bounds, and a
few seeded tries later the caller learns the pattern was not met (None).

The work is bounded: no text longer than :data:`MAX_TEXT` characters is made, and one call builds at
most :data:`MAX_WORK` characters and nodes over all its tries (``((a{1000}){1000}){1000}`` gives up
instead of building a billion characters).

Characters are chosen from readable ones first (letters, digits, ``-`` ``_``), so generated ids look
like ids. Deterministic for a :class:`random.Random` state.
"""

from __future__ import annotations

import importlib
import random
import string
from functools import lru_cache
from typing import Any, Final

from anvil.air.patterns import MAX_PATTERN_CHARS, schema_pattern

__all__ = ["MAX_TEXT", "MAX_WORK", "pattern_string"]

_PARSER: Any = importlib.import_module("re._parser")  # stdlib; private name, stable since Python 3.11
#: Repetition beyond this is "unbounded" (``+``, ``*``, ``{n,}``).
_OPEN: Final = 1000
#: Readable characters first: a class or ``.`` picks among these when it allows any of them.
_READABLE: Final = string.ascii_letters + string.digits + "-_"
_FALLBACK: Final = _READABLE + ".,:;/+=@#$%&*!?~^'\"()[]{}<>| \t"
_WORD: Final = string.ascii_letters + string.digits + "_"
_TRIES: Final = 12
#: The longest string made.
MAX_TEXT: Final = 10_000
#: What one :func:`pattern_string` call may build over all its tries (characters plus nodes walked).
MAX_WORK: Final = 200_000


class _Unsupported(Exception):
    """A construct the generator does not produce (the caller falls back or gives up)."""


@lru_cache(maxsize=512)
def _parsed(pattern: str) -> Any:
    return _PARSER.parse(pattern)


def _category(name: str) -> str:
    if name.endswith("NOT_DIGIT"):
        return string.ascii_letters
    if name.endswith("DIGIT"):
        return string.digits
    if name.endswith("NOT_WORD"):
        return "-. "
    if name.endswith("WORD"):
        return _WORD
    if name.endswith("NOT_SPACE"):
        return _READABLE
    if name.endswith("SPACE"):
        return " "
    return _READABLE


def _in_set(items: list[tuple[Any, Any]]) -> str:
    """The characters an ``IN`` node (a ``[...]`` class) accepts, readable ones first."""
    negate = False
    allowed: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            allowed.append(chr(av))
        elif name == "RANGE":
            low, high = av
            readable = [c for c in _FALLBACK if low <= ord(c) <= high]
            allowed.extend(readable or [chr(code) for code in range(low, min(high, low + 64) + 1)])
        elif name == "CATEGORY":
            allowed.extend(_category(str(av)))
    if negate:
        excluded = set(allowed)
        return "".join(c for c in _FALLBACK if c not in excluded)
    preferred = [c for c in allowed if c in _READABLE]
    return "".join(dict.fromkeys(preferred + allowed))


class _Builder:
    """One walk over a parsed pattern; ``stretch`` extra repetitions for every open quantifier."""

    def __init__(self, rng: random.Random, stretch: int, shortest: bool, work: list[int]) -> None:
        self.rng = rng
        self.stretch = stretch
        self.shortest = shortest
        self.groups: dict[int, str] = {}
        self.work = work

    def spend(self, units: int) -> None:
        self.work[0] -= units
        if self.work[0] < 0:
            raise _Unsupported("more work than a generated value may take")

    def pick(self, chars: str) -> str:
        if not chars:
            raise _Unsupported("an empty character class")
        readable = [c for c in chars if c in _READABLE] or list(chars)
        return self.rng.choice(readable)

    def count(self, low: int, high: int) -> int:
        if self.shortest:
            return low
        if high >= _OPEN:
            return low + self.stretch + self.rng.randrange(2)
        return min(high, low + self.stretch + self.rng.randrange(high - low + 1))

    def walk(self, nodes: Any) -> str:
        out: list[str] = []
        size = 0
        self.spend(1)
        for op, av in nodes:
            part = self.node(str(op), av)
            out.append(part)
            size += len(part)
            self.spend(1 + len(part))
            if size > MAX_TEXT:
                raise _Unsupported("the text grew too long")
        return "".join(out)

    def node(self, name: str, av: Any) -> str:
        if name == "LITERAL":
            return chr(av)
        if name == "NOT_LITERAL":
            return self.pick("".join(c for c in _READABLE if ord(c) != av))
        if name == "ANY":
            return self.pick(string.ascii_letters)
        if name == "IN":
            return self.pick(_in_set(av))
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, item = av
            return "".join(self.walk(item) for _ in range(self.count(low, high)))
        if name == "BRANCH":
            branches = av[1]
            return self.walk(branches[0] if self.shortest else self.rng.choice(branches))
        if name == "SUBPATTERN":
            group, _add, _del, item = av
            text = self.walk(item)
            if group is not None:
                self.groups[group] = text
            return text
        if name == "ATOMIC_GROUP":
            return self.walk(av)
        if name == "GROUPREF":
            return self.groups.get(av, "")
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            return ""  # anchors match by position; lookarounds are checked on the result
        raise _Unsupported(name)


def pattern_string(
    pattern: str, rng: random.Random, *, min_length: int = 0, max_length: int | None = None
) -> str | None:
    """A string ``pattern`` matches (as a search), ``min_length`` to ``max_length`` characters long.

    Returns None when no try (shortest first, then seeded ones that stretch open quantifiers towards
    ``min_length``) satisfies the pattern and the bounds within the work bounds: the pattern uses a
    construct the generator does not produce, it contradicts the bounds, or ``min_length`` is over
    :data:`MAX_TEXT`.
    """
    if min_length > MAX_TEXT or len(pattern) > MAX_PATTERN_CHARS:
        return None
    try:
        parsed = _parsed(pattern)
    except (_PARSER.error, RecursionError, OverflowError, ValueError):
        return None
    matcher = schema_pattern(pattern)
    high = min(max_length, MAX_TEXT) if max_length is not None else MAX_TEXT
    stretch = 0
    work = [MAX_WORK]
    for attempt in range(_TRIES):
        builder = _Builder(random.Random(rng.random()), stretch=stretch, shortest=attempt == 0, work=work)
        try:
            text = builder.walk(parsed)
        except (_Unsupported, RecursionError, ValueError):
            return None
        if len(text) < min_length and not _anchored_end(pattern):
            text += "".join(builder.pick(_READABLE) for _ in range(min_length - len(text)))
        if min_length <= len(text) <= high and matcher.search(text):
            return text
        if len(text) < min_length:
            stretch += max(1, min_length - len(text))  # every open quantifier repeats more next time
        elif len(text) > high and attempt > 0:
            stretch = max(0, stretch - 1)
    return None


def _anchored_end(pattern: str) -> bool:
    return pattern.endswith("$") and not pattern.endswith("\\$")
