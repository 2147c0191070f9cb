"""Schema ``pattern`` matching in time linear in the text: ECMA-262 patterns rendered for RE2.

A JSON Schema ``pattern`` is an ECMA-262 regular expression applied as a search. Python's ``re``
backtracks, so an ordinary slug pattern such as ``^([a-z0-9]+-?)+$`` takes time exponential in the
length of a string it does not match (27 characters froze a gateway for 17 s). Every schema pattern is
therefore matched by RE2 (``google-re2``), whose time is linear in the text, and never by ``re``.

A pattern is read by Python's own parser (``re._parser``: the syntax the compiler accepts, what
:mod:`anvil.air.regex_values` generates from) and rendered in RE2's syntax with ECMA-262's meanings:
``\\d``, ``\\w`` and ``\\b`` are ASCII, ``\\s`` is ECMA-262's white space and line terminators, ``.``
matches no line terminator, and ``$`` is the end of the text only (``re`` also matches before a final
``\\n``). A lone surrogate in a text is matched as U+FFFD.

RE2 has no lookarounds and no backreferences:

* lookaheads right after a leading ``^`` (``^(?!https://)...``, ``^(?=.*\\d)...``, the forms real specs
  use) and lookbehinds right before a final ``$`` are checked exactly, each as an anchored match of its own;
  an empty lookahead is exact too (``(?!)`` never matches);
* any other lookaround is dropped, a backreference matches what its group matches, a conditional either
  branch: the check is looser than the pattern (it refuses only texts the pattern refuses), ``exact`` is
  False, and the compiler warns ``schema/pattern_loosened``; the upstream judges the rest;
* a pattern RE2 cannot hold even so (counts past RE2's limits, a program over its memory bound, a
  source over :data:`MAX_PATTERN_CHARS`) is checked with its counts loosened, or not at all.

The work is bounded: a text costs its length times a weight that grows with the pattern's program size;
a text over :data:`MAX_TEXT_UNITS` does not match, and inside :func:`pattern_budget` (one validation
of one call or answer) every text draws on one budget, past which texts do not match either. The
jsonschema glue (:func:`linear_validator`) makes jsonschema use these matchers for ``pattern``,
``patternProperties`` and ``additionalProperties``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Final

import re2

from anvil._dataclass import dataclass

__all__ = [
    "MAX_PATTERN_CHARS",
    "MAX_TEXT_UNITS",
    "VALIDATION_UNITS",
    "SchemaPattern",
    "linear_validator",
    "pattern_budget",
    "schema_pattern",
]

_PARSER: Any = importlib.import_module("re._parser")  # stdlib; private name, stable since Python 3.11
_RE2: Any = importlib.import_module("re2._re2")  # the binding itself: re2's wrapper costs 5x per call
_MAXREPEAT: Final[int] = _PARSER.MAXREPEAT
_UNANCHORED: Final = _RE2.RE2.Anchor.UNANCHORED

#: The longest pattern source read; a longer one is not checked (reading it would stall the caller).
MAX_PATTERN_CHARS: Final = 2048
#: One text's cost bound: its length times the pattern's weight (1, plus 1 per 256 program instructions).
MAX_TEXT_UNITS: Final = 1 << 20
#: What one :func:`pattern_budget` allows over every text it checks (an argument set or an answer).
VALIDATION_UNITS: Final = 1 << 22
#: RE2's memory bound per pattern (its program and DFA cache): bounds compile time too.
_MAX_MEM: Final = 1 << 20
_WEIGHT_STEP: Final = 256
#: RE2's largest repetition count, and the most instructions one count may expand to (else loosened).
_RE2_COUNT: Final = 1000
_MAX_EXPANSION: Final = 4000
#: The most instructions a rendered pattern may be estimated at (RE2 would refuse it, slowly).
_MAX_PROGRAM: Final = 12_000
_MAX_CODE: Final = 0x10FFFF
_SURROGATES: Final = (0xD800, 0xDFFF)
_REPLACEMENT: Final = 0xFFFD
_NEVER: Final = r"[^\x00-\x{10FFFF}]"
# re's flag bits (re.IGNORECASE, re.MULTILINE, re.DOTALL)
_I: Final = 2
_M: Final = 8
_S: Final = 16

Ranges = list[tuple[int, int]]
_DIGIT: Final[Ranges] = [(0x30, 0x39)]
_WORD: Final[Ranges] = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
#: ECMA-262 ``\s``: WhiteSpace (Zs included) and LineTerminator.
_SPACE: Final[Ranges] = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
]
_LINE_TERMINATORS: Final[Ranges] = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]


class _Loose(Exception):
    """Rendering met a construct the exact rendering cannot hold."""


def _options() -> Any:
    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    options.max_mem = _MAX_MEM
    return options


_OPTIONS: Final = _options()


def _merge(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def _complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    start = 0
    for low, high in _merge(ranges):
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _MAX_CODE:
        out.append((start, _MAX_CODE))
    return out


@lru_cache(maxsize=8)
def _category(name: str) -> tuple[tuple[int, int], ...]:
    base = _DIGIT if "DIGIT" in name else _WORD if "WORD" in name else _SPACE
    return tuple(_complement(base) if "NOT_" in name else base)


def _code(point: int) -> str:
    char = chr(point)
    return char if char.isascii() and char.isalnum() else f"\\x{{{point:X}}}"


def _class(ranges: Ranges) -> str:
    """A character class RE2 reads; surrogates (never in a matched text) become U+FFFD."""
    kept: Ranges = []
    for low, high in _merge(ranges):
        if high < _SURROGATES[0] or low > _SURROGATES[1]:
            kept.append((low, high))
            continue
        kept.append((_REPLACEMENT, _REPLACEMENT))
        if low < _SURROGATES[0]:
            kept.append((low, _SURROGATES[0] - 1))
        if high > _SURROGATES[1]:
            kept.append((_SURROGATES[1] + 1, high))
    kept = _merge(kept)
    if not kept:
        return _NEVER
    body = "".join(_code(low) if low == high else f"{_code(low)}-{_code(high)}" for low, high in kept)
    return f"[{body}]"


class _Renderer:
    """One rendering of a parsed pattern; ``exact`` falls when a construct is only approximated.

    Each piece comes with an estimate of the RE2 instructions it compiles to, so that a count which
    would expand past :data:`_MAX_EXPANSION` (``(?:x{1000}){1000}``) is loosened before RE2 spends time
    compiling it.
    """

    def __init__(self, groups: Mapping[int, Any], loose: bool) -> None:
        """``loose``: every count is loosened (``x{3,5}`` read as ``x+``); else only those RE2 cannot hold."""
        self.groups = groups
        self.loose = loose
        self.exact = True
        #: a count the loose rendering would read otherwise (else rendering loosely changes nothing)
        self.counted = False
        self._open: set[int] = set()
        #: how deep in a backreference's copy of its group this rendering is (anchors hold there no longer)
        self._copying = 0

    def sequence(self, items: Any, flags: int) -> tuple[str, int]:
        pieces = [self.item(str(op), av, flags) for op, av in items]
        return "".join(text for text, _ in pieces), sum(size for _, size in pieces)

    def item(self, name: str, av: Any, flags: int) -> tuple[str, int]:
        if name == "LITERAL":
            return (_class([(av, av)]) if _SURROGATES[0] <= av <= _SURROGATES[1] else _code(av)), 1
        if name == "NOT_LITERAL":
            return _sized_class(_complement([(av, av)]))
        if name == "ANY":
            return _sized_class([(0, _MAX_CODE)] if flags & _S else _complement(_LINE_TERMINATORS))
        if name == "IN":
            return self.members(av)
        if name == "AT":
            if self._copying:  # a reference matches the captured text, not where the group stood
                return "", 0
            return self.anchor(str(av), flags), 1
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            if name == "POSSESSIVE_REPEAT":
                self.exact = False  # not ECMA-262; read as the greedy repeat, which accepts more
            low, high, inner = av
            body, size = self.sequence(inner, flags)
            count, copies = self.count(low, high, size)
            return f"(?:{body}){count}", size * copies + 1
        if name == "BRANCH":
            pieces = [self.sequence(branch, flags) for branch in av[1]]
            return "(?:" + "|".join(text for text, _ in pieces) + ")", sum(size for _, size in pieces) + 1
        if name == "SUBPATTERN":
            group, add, remove, inner = av
            if group is not None:
                self._open.add(group)
            body, size = self.sequence(inner, (flags | add) & ~remove)
            if group is not None:
                self._open.discard(group)
            on = "i" if add & _I else ""
            off = "-i" if remove & _I else ""
            return f"(?{on}{off}:{body})", size
        if name == "ATOMIC_GROUP":
            self.exact = False
            body, size = self.sequence(av, flags)
            return f"(?:{body})", size
        if name == "GROUPREF":
            self.exact = False
            return self.reference(av, flags)
        if name == "GROUPREF_EXISTS":
            self.exact = False
            _group, yes, no = av
            (first, one), (second, two) = self.sequence(yes, flags), self.sequence(no or [], flags)
            return f"(?:{first}|{second})", one + two + 1
        if name in ("ASSERT", "ASSERT_NOT"):
            _direction, inner = av
            if not inner:  # (?=) always holds, (?!) never does
                return ("", 0) if name == "ASSERT" else (_NEVER, 1)
            self.exact = False
            return "", 0  # dropped: what is left accepts more than the pattern
        raise _Loose(name)

    def members(self, items: Any) -> tuple[str, int]:
        ranges: Ranges = []
        negate = False
        for op, av in items:
            kind = str(op)
            if kind == "NEGATE":
                negate = True
            elif kind == "LITERAL":
                ranges.append((av, av))
            elif kind == "RANGE":
                ranges.append(av)
            elif kind == "CATEGORY":
                ranges.extend(_category(str(av)))
            else:
                raise _Loose(kind)
        return _sized_class(_complement(ranges) if negate else ranges)

    def anchor(self, at: str, flags: int) -> str:
        if at == "AT_BEGINNING":
            return "(?m:^)" if flags & _M else r"\A"
        if at == "AT_END":
            return "(?m:$)" if flags & _M else r"\z"
        if at == "AT_BEGINNING_STRING":
            return r"\A"
        if at == "AT_END_STRING":
            return r"\z"
        if at == "AT_BOUNDARY":
            return r"\b"
        if at == "AT_NON_BOUNDARY":
            return r"\B"
        raise _Loose(at)

    def count(self, low: int, high: int, size: int) -> tuple[str, int]:
        """The RE2 quantifier for ``{low,high}`` over a body of ``size``, and how many copies RE2 makes."""
        bounded = high != _MAXREPEAT
        largest = high if bounded else low
        self.counted = self.counted or low > 1 or high not in (1, _MAXREPEAT)
        copies = max(1, largest + (0 if bounded else 1))
        if (self.loose and (low > 1 or high not in (1, _MAXREPEAT))) or (
            largest > _RE2_COUNT or size * copies > _MAX_EXPANSION
        ):
            self.exact = False  # x{3,5} and x{3,} both lie within x+, x{0,5} within x*
            return ("*" if low == 0 else "+"), 1
        if not bounded:
            return ("*" if low == 0 else "+" if low == 1 else f"{{{low},}}"), copies
        return (f"{{{low}}}" if low == high else f"{{{low},{high}}}"), copies

    def reference(self, group: int, flags: int) -> tuple[str, int]:
        inner = self.groups.get(group)
        if inner is None or group in self._open:
            return r"(?s:.*)", 2  # a group referring to itself: anything, looser still
        self._open.add(group)
        self._copying += 1
        # what the group matched, under every flag that widens it (the reference may sit elsewhere)
        body, size = self.sequence(inner, flags | _I | _S | _M)
        self._copying -= 1
        self._open.discard(group)
        return f"(?i:(?:{body})?)", size + 1


def _sized_class(ranges: Ranges) -> tuple[str, int]:
    """A class and its instruction estimate (a range of multibyte characters compiles to several)."""
    return _cached_class(tuple(ranges)), 1 + 3 * len(ranges)


@lru_cache(maxsize=256)
def _cached_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return _class(list(ranges))


def _groups(items: Any, out: dict[int, Any]) -> dict[int, Any]:
    """Every capturing group's body by number (for backreferences)."""
    pending = [items]
    while pending:
        for op, av in pending.pop():
            name = str(op)
            if name == "SUBPATTERN":
                if av[0] is not None:
                    out[av[0]] = av[3]
                pending.append(av[3])
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                pending.append(av[2])
            elif name == "BRANCH":
                pending.extend(av[1])
            elif name in ("ASSERT", "ASSERT_NOT"):
                pending.append(av[1])
            elif name == "ATOMIC_GROUP":
                pending.append(av)
            elif name == "GROUPREF_EXISTS":
                pending.extend(part for part in av[1:] if part)
    return out


@dataclass(frozen=True, slots=True)
class _Part:
    """One RE2 search of a pattern's check and the answer it must give."""

    source: str
    wanted: bool


def _split(items: list[Any], flags: int) -> tuple[list[_Part], list[Any]]:
    """Leading lookaheads after ``^`` and trailing lookbehinds before ``$``, as anchored searches of their own.

    ``^(?=A)(?!B)R`` holds exactly when ``\\A(?:A)`` matches, ``\\A(?:B)`` does not and ``^R`` does (``^``
    is the start of the text); ``R(?<=C)$`` likewise with ``(?:C)\\z``. A lookaround that holds one of
    its own (or a reference) stays where it is, to be dropped.
    """
    parts: list[_Part] = []
    if flags & _M or not items:
        return parts, items
    rest = list(items)
    if _is_anchor(rest[0], "AT_BEGINNING", "AT_BEGINNING_STRING"):
        index = 1
        while index < len(rest) and (part := _around(rest[index], 1, flags, "\\A(?:{})")) is not None:
            parts.append(part)
            index += 1
        rest = [rest[0], *rest[index:]]
    if _is_anchor(rest[-1], "AT_END", "AT_END_STRING"):
        index = len(rest) - 2
        while index >= 0 and (part := _around(rest[index], -1, flags, "(?:{})\\z")) is not None:
            parts.append(part)
            index -= 1
        rest = [*rest[: index + 1], rest[-1]]
    return parts, rest


def _is_anchor(item: Any, *names: str) -> bool:
    return str(item[0]) == "AT" and str(item[1]) in names


def _around(item: Any, direction: int, flags: int, shape: str) -> _Part | None:
    """The search a lookaround in ``direction`` at the text's edge stands for, or None when it cannot."""
    op, av = item
    if str(op) not in ("ASSERT", "ASSERT_NOT") or av[0] != direction or not av[1]:
        return None
    renderer = _Renderer({}, loose=False)
    try:
        body, _size = renderer.sequence(av[1], flags)
    except _Loose:
        return None
    if not renderer.exact:
        return None
    return _Part(_flagged(shape.format(body), flags), str(op) == "ASSERT")


def _flagged(body: str, flags: int) -> str:
    """``body`` under the pattern's global flags (``(?i)``; ``(?s)`` and ``(?m)`` are rendered in place)."""
    return f"(?i:{body})" if flags & _I else body


class SchemaPattern:
    """One schema pattern, ready to search texts in linear time (see the module docstring)."""

    __slots__ = ("_parts", "_weight", "enforced", "exact", "source")

    def __init__(self, source: str, parts: tuple[tuple[Any, bool], ...], *, exact: bool) -> None:
        """Args: source: the pattern as the schema wrote it; parts: compiled RE2 searches and the answer
        each must give (none: nothing is checked); exact: the parts decide exactly what ECMA-262 decides."""
        self.source = source
        self._parts = parts
        self.exact = exact
        #: False when nothing is checked at all (every text matches).
        self.enforced = bool(parts)
        size = max((regexp.ProgramSize() for regexp, _ in parts), default=0)
        self._weight = 1 + size // _WEIGHT_STEP

    def cost(self, text: str) -> int:
        """What checking ``text`` draws on a budget (its length times the pattern's weight)."""
        return len(text) * self._weight

    def search(self, text: str) -> bool:
        """True when ``text`` matches; False too when it is over the work bounds (module docstring)."""
        if not self._parts:
            return True
        cost = len(text) * self._weight
        if cost > MAX_TEXT_UNITS:
            return False
        budget = _BUDGET.get()
        if budget is not None:
            budget[0] -= cost
            if budget[0] < 0:
                return False
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
        end = len(data)
        for regexp, wanted in self._parts:
            if (regexp.Match(_UNANCHORED, data, 0, end)[0][0] >= 0) is not wanted:
                return False
        return True

    def __repr__(self) -> str:
        return f"SchemaPattern({self.source!r}, exact={self.exact}, enforced={self.enforced})"


def _compiled(parts: list[_Part]) -> tuple[tuple[Any, bool], ...] | None:
    out: list[tuple[Any, bool]] = []
    for part in parts:
        regexp = _RE2.RE2(part.source.encode("utf-8"), _OPTIONS)
        if not regexp.ok():
            return None
        out.append((regexp, part.wanted))
    return tuple(out)


@lru_cache(maxsize=4096)
def schema_pattern(source: str) -> SchemaPattern:
    """The matcher for pattern ``source`` (cached); one Python cannot parse checks nothing."""
    unchecked = SchemaPattern(source, (), exact=False)
    if len(source) > MAX_PATTERN_CHARS:
        return unchecked
    try:
        parsed = _PARSER.parse(source)
    except (_PARSER.error, RecursionError, OverflowError, ValueError, TypeError):
        return unchecked
    flags = int(parsed.state.flags)
    items = list(parsed)
    groups = _groups(items, {})
    for loose in (False, True):
        try:
            parts, rest = ([], items) if loose else _split(items, flags)
            renderer = _Renderer(groups, loose)
            body, size = renderer.sequence(rest, flags)
        except (_Loose, RecursionError):
            continue
        compiled = None if size > _MAX_PROGRAM else _compiled([*parts, _Part(_flagged(body, flags), True)])
        if compiled is not None:
            return SchemaPattern(source, compiled, exact=renderer.exact)
        if not renderer.counted:
            break  # reading the counts loosely would make the same program
    return unchecked


_BUDGET: ContextVar[list[int] | None] = ContextVar("anvil_pattern_budget", default=None)


@contextmanager
def pattern_budget(units: int = VALIDATION_UNITS) -> Iterator[None]:
    """Every pattern search inside draws on one budget of ``units`` (one call's arguments, one answer)."""
    token = _BUDGET.set([units])
    try:
        yield
    finally:
        _BUDGET.reset(token)


# --- jsonschema: the keywords that match patterns, with these matchers ---------------------------------


def _searcher(pattern: object) -> Callable[[str], bool]:
    return schema_pattern(pattern).search if isinstance(pattern, str) else (lambda _text: True)


def _keywords() -> dict[str, Callable[..., Iterator[Any]]]:
    from jsonschema import _keywords as stock
    from jsonschema.exceptions import ValidationError

    unevaluated: Any = stock.unevaluatedProperties  # typed as returning None; it yields errors

    def pattern(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not _searcher(value)(instance):
            yield ValidationError(f"the text does not match {value!r}")

    def pattern_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for source, subschema in value.items():
            search = _searcher(source)
            for key, item in instance.items():
                if search(key):
                    yield from validator.descend(item, subschema, path=key, schema_path=source)

    def additional_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        declared = schema.get("properties", {})
        searches = [_searcher(source) for source in schema.get("patternProperties", {})]
        extras = [key for key in instance if key not in declared and not any(s(key) for s in searches)]
        if validator.is_type(value, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], value, path=extra)
        elif not value and extras:
            yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, sorted(extras)))})")

    def unevaluated_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # jsonschema finds the evaluated names with re; where a pattern might take part, the upstream judges
        if not _names_patterns(schema):
            yield from unevaluated(validator, value, instance, schema)

    return {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
        "unevaluatedProperties": unevaluated_properties,
    }


def _names_patterns(schema: object) -> bool:
    """True when ``schema`` holds a ``patternProperties`` or a reference (which might lead to one)."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if "patternProperties" in node or "$ref" in node or "$dynamicRef" in node:
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


@lru_cache(maxsize=16)
def _linear_class(base: Any) -> Any:
    from jsonschema import validators

    extend: Any = validators.extend  # untyped in jsonschema
    return extend(base, _keywords())


def linear_validator(base: Any = None) -> Any:
    """The jsonschema validator class ``base`` (default: draft 2020-12) matching patterns with RE2."""
    if base is None:
        from jsonschema import Draft202012Validator

        base = Draft202012Validator
    return _linear_class(base)
