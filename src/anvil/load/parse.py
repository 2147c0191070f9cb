"""Parsing one source file (JSON or YAML) into JSON-compatible values, and locating pointers in it.

YAML is read with libyaml (PyYAML's C parser) and a small constructor of our own: mapping keys are always
the key's source text (so ``200:`` is ``"200"`` and ``on:`` is ``"on"``), scalars resolve by the YAML 1.2
core schema (``yes``/``no``/``on``/``off`` and ``NO`` stay strings, as JavaScript YAML readers keep
them), timestamps stay the text written, and values JSON cannot hold (``.nan``, ``.inf``, binary) stay
text too. Aliases share one object and may not expand beyond a budget.
"""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from anvil._dataclass import dataclass
from anvil._types import JSONValue

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - libyaml is present wherever PyYAML ships wheels
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

__all__ = ["MAX_DEPTH", "ParseFailure", "Parsed", "collector_paused", "compose", "locate", "parse_bytes"]

_STR: Final = "tag:yaml.org,2002:str"
_INT: Final = "tag:yaml.org,2002:int"
_FLOAT: Final = "tag:yaml.org,2002:float"
_BOOL: Final = "tag:yaml.org,2002:bool"
_NULL: Final = "tag:yaml.org,2002:null"
_MERGE: Final = "tag:yaml.org,2002:merge"
_SEQ: Final = "tag:yaml.org,2002:seq"
_MAP: Final = "tag:yaml.org,2002:map"
_TEXT_TAGS: Final = frozenset(
    {_STR, "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary", "tag:yaml.org,2002:value"}
)
_MAP_TAGS: Final = frozenset({_MAP, "tag:yaml.org,2002:omap", "tag:yaml.org,2002:set"})
_SEQ_TAGS: Final = frozenset({_SEQ, "tag:yaml.org,2002:pairs"})

# The YAML 1.2 core schema, indexed by first character like PyYAML's resolver tables.
_CORE: Final[list[tuple[str, str, re.Pattern[str]]]] = [
    (_NULL, "~nN", re.compile(r"^(?:~|null|Null|NULL)$")),
    (_BOOL, "tTfF", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")),
    (_INT, "-+0123456789", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")),
    (
        _FLOAT,
        "-+.0123456789",
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
    ),
    (_MERGE, "<", re.compile(r"^<<$")),
]
_RESOLVERS: Final[dict[str, list[tuple[str, re.Pattern[str]]]]] = {}
for _tag, _firsts, _pattern in _CORE:
    for _char in _firsts:
        _RESOLVERS.setdefault(_char, []).append((_tag, _pattern))
_RESOLVERS[""] = [(_NULL, re.compile(r"^$"))]

#: The deepest a document may nest (objects and arrays): real specs stay under 32, and every later stage
#: walks schemas recursively, so a deeper one is refused here rather than overflowing the stack there.
MAX_DEPTH: Final = 128
#: How far aliases may expand a document: a multiple of its distinct nodes, with a floor.
_EXPANSION_FACTOR: Final = 20
_EXPANSION_FLOOR: Final = 1_000_000


class _Loader(_BaseLoader):
    """libyaml's parser and composer with a YAML 1.2 core resolver (construction is ours)."""

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            if implicit[0]:
                for tag, pattern in _RESOLVERS.get(value[:1], ()):
                    if pattern.match(value):
                        return tag
            return _STR
        return _SEQ if kind is SequenceNode else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """Why a file did not parse, with the 1-based position when the parser knew it, and the code to
    report it with (``source/too_deep`` for a document nested past :data:`MAX_DEPTH`)."""

    message: str
    line: int | None = None
    column: int | None = None
    code: str = "source/parse_error"


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed file: its value (JSON-compatible) and the syntax it was read as.

    ``truncated`` holds the 1-based (line, column) of each YAML node that contained an alias to itself:
    the inner occurrence was cut to an empty stub, so the value has no object cycles.
    """

    value: JSONValue
    syntax: str
    truncated: tuple[tuple[int, int], ...] = ()


class _YamlError(Exception):
    """A construction problem at a node (unknown tag, complex key, recursive alias)."""

    def __init__(self, message: str, node: Node) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


def _scalar(node: ScalarNode) -> JSONValue:
    tag = node.tag
    value: str = node.value
    if tag == _STR or tag in _TEXT_TAGS:
        return value
    if tag == _INT:
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value)
    if tag == _FLOAT:
        if value[-1:] in "fFnN":  # .inf / .nan: JSON has no such numbers, so the text is kept
            return value
        number = float(value)
        return number if math.isfinite(number) else value
    if tag == _BOOL:
        return value in ("true", "True", "TRUE")
    if tag == _NULL:
        return None
    raise _YamlError(f"unsupported YAML tag {tag!r}", node)


class _Builder:
    """Builds JSON-compatible values from composed YAML nodes; aliased nodes share one value."""

    __slots__ = ("_done", "_open", "aliases", "truncated")

    def __init__(self) -> None:
        self._done: dict[int, JSONValue] = {}
        self._open: set[int] = set()
        self.aliases = 0
        self.truncated: list[tuple[int, int]] = []

    def build(self, node: Node) -> JSONValue:
        if type(node) is ScalarNode:
            return _scalar(node)
        key = id(node)
        if key in self._done:
            self.aliases += 1
            return self._done[key]
        if key in self._open:
            mark = node.start_mark
            self.truncated.append((mark.line + 1, mark.column + 1))
            return [] if type(node) is SequenceNode else {}
        self._open.add(key)
        value: JSONValue
        if type(node) is SequenceNode:
            if node.tag not in _SEQ_TAGS:
                raise _YamlError(f"unsupported YAML tag {node.tag!r}", node)
            value = [self.build(item) for item in node.value]
        else:
            value = self._mapping(node)
        self._open.discard(key)
        self._done[key] = value
        return value

    def _mapping(self, node: Node) -> dict[str, JSONValue]:
        if node.tag not in _MAP_TAGS:
            raise _YamlError(f"unsupported YAML tag {node.tag!r}", node)
        out: dict[str, JSONValue] = {}
        merged: list[dict[str, JSONValue]] = []
        for key_node, value_node in node.value:
            if type(key_node) is not ScalarNode:
                raise _YamlError("a mapping key must be a scalar", key_node)
            if key_node.tag == _MERGE:
                merged.extend(self._merge_sources(value_node))
                continue
            out[key_node.value] = self.build(value_node)
        if merged:
            base: dict[str, JSONValue] = {}
            for source in reversed(merged):
                base.update(source)
            base.update(out)
            out = base
        return out

    def _merge_sources(self, node: Node) -> list[dict[str, JSONValue]]:
        items = node.value if type(node) is SequenceNode else [node]
        sources: list[dict[str, JSONValue]] = []
        for item in items:
            value = self.build(item)
            if not isinstance(value, dict):
                raise _YamlError("a merge key ('<<') needs a mapping or a list of mappings", item)
            sources.append(value)
        return sources


def _expanded_size(value: JSONValue, memo: dict[int, int]) -> int:
    children: Iterable[JSONValue]
    if isinstance(value, dict):
        children = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return 1
    key = id(value)
    if key in memo:
        return memo[key]
    size = 1 + sum(_expanded_size(child, memo) for child in children)
    memo[key] = size
    return size


def _yaml_failure(exc: Exception) -> ParseFailure:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if mark is not None:
            return ParseFailure(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1)
        return ParseFailure(f"invalid YAML: {problem}")
    if isinstance(exc, yaml.reader.ReaderError):
        return ParseFailure(f"invalid YAML: {exc.reason}")
    return ParseFailure(f"invalid YAML: {exc}")


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a document is built, back as it was after.

    Parsing allocates one container per node and keeps them all, so every collection would walk the
    growing tree again for nothing: 3 MB of YAML composes 5x faster without it (parsing makes no cycles
    but an alias to itself, left to the next collection). A whole compile keeps the document (and what it
    builds from it) to the end, so ``anvil compile`` runs paused too (:func:`anvil.cli.compile.compile_bundle`).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse_yaml(data: bytes) -> Parsed | ParseFailure:
    loader = _Loader(data)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        return _yaml_failure(exc)
    finally:
        loader.dispose()
    if node is None:
        return Parsed(None, "yaml")
    builder = _Builder()
    try:
        value = builder.build(node)
    except _YamlError as exc:
        mark = exc.node.start_mark
        return ParseFailure(f"invalid YAML: {exc.message}", mark.line + 1, mark.column + 1)
    if builder.aliases:
        memo: dict[int, int] = {}
        limit = max(_EXPANSION_FLOOR, _EXPANSION_FACTOR * (len(builder._done) + 1))
        if _expanded_size(value, memo) > limit:
            return ParseFailure("invalid YAML: aliases expand the document beyond the allowed size")
    return Parsed(value, "yaml", tuple(builder.truncated))


def _json_float(text: str) -> JSONValue:
    number = float(text)
    return number if math.isfinite(number) else text


#: A ``\\uD800``-``\\uDFFF`` escape: JSON may spell a lone surrogate, which no UTF-8 text can hold.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")


def _parse_json(data: bytes) -> JSONValue | ParseFailure:
    try:
        value = json.loads(data, parse_float=_json_float, parse_constant=str)
    except json.JSONDecodeError as exc:
        return ParseFailure(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno)
    except UnicodeDecodeError as exc:
        return ParseFailure(f"invalid JSON: not UTF-8 ({exc.reason})")
    if _SURROGATE_ESCAPE.search(data):  # a pair is one character; a lone half would break every writer
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return ParseFailure("invalid JSON: a string holds a lone surrogate (\\uD800-\\uDFFF), not Unicode text")
    return value


def _looks_like_json(data: bytes) -> bool:
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1] in (b"{", b"[")


def parse_bytes(data: bytes, name: str) -> Parsed | ParseFailure:
    """Parse a source file's bytes, choosing JSON or YAML by content (then by ``name``'s extension).

    Content that opens with ``{`` or ``[`` is read as JSON first; when that fails and the file is not
    named ``*.json``, it is read as YAML (a superset). Everything else is YAML.

    Args:
        data: The file's bytes (UTF-8, optionally with a BOM).
        name: The file's name, used only to choose which error to report.

    Returns:
        The parsed value and syntax, or a :class:`ParseFailure` (never raises for bad input).
    """
    try:
        with collector_paused():
            found = _parse(data, name)
    except RecursionError:
        return ParseFailure("the document nests too deeply", code="source/too_deep")
    if isinstance(found, Parsed) and _deeper_than(found.value, MAX_DEPTH):
        return ParseFailure(f"the document nests deeper than {MAX_DEPTH} levels", code="source/too_deep")
    return found


def _parse(data: bytes, name: str) -> Parsed | ParseFailure:
    if _looks_like_json(data):
        parsed = _parse_json(data)
        if not isinstance(parsed, ParseFailure):
            return Parsed(parsed, "json")
        if name.lower().endswith(".json"):
            return parsed
        fallback = _parse_yaml(data)
        return parsed if isinstance(fallback, ParseFailure) else fallback
    return _parse_yaml(data)


def _deeper_than(value: JSONValue, limit: int) -> bool:
    """True when ``value`` nests objects and arrays more than ``limit`` levels (without recursion)."""
    level: list[Any] = [value]
    for _ in range(limit + 1):
        below: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                below.extend(child for child in node.values() if isinstance(child, dict | list))
            elif isinstance(node, list):
                below.extend(child for child in node if isinstance(child, dict | list))
        if not below:
            return False
        level = below
    return True


def compose(data: bytes) -> Node | None:
    """The YAML node tree of ``data`` (JSON reads as YAML too), for placing diagnostics; ``None`` if unreadable."""
    loader = _Loader(data)
    try:
        node: Node | None = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    return node


def locate(root: Node | None, tokens: list[str]) -> tuple[int, int] | None:
    """The 1-based line and column where the node ``tokens`` names starts, if ``root`` holds it."""
    node = root
    for token in tokens:
        if isinstance(node, MappingNode):
            node = next((value for key, value in node.value if getattr(key, "value", None) == token), None)
        elif isinstance(node, SequenceNode) and token.isascii() and token.isdigit() and int(token) < len(node.value):
            node = node.value[int(token)]
        else:
            node = None
        if node is None:
            return None
    if node is None:
        return None
    return node.start_mark.line + 1, node.start_mark.column + 1
