"""A strict, position-keeping validator over a composed YAML node tree.

The manifest is composed (not constructed) with PyYAML's safe loader, so every node keeps its
``start_mark``. :class:`Walker` checks a node against a :class:`Spec` and returns plain Python data
(``dict``/``list``/scalars) with every invalid piece left out, collecting one diagnostic per problem:
``manifest/unknown_key`` (with the closest known key as a hint), ``manifest/wrong_type``,
``manifest/secret_value`` and ``manifest/parse_error`` (duplicate keys, runaway nesting or aliases).
It records the position of every key and value by path for the model builder.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, Final, Literal

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from anvil._dataclass import dataclass
from anvil.compiler.manifest.model import Location
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = [
    "INVALID",
    "Path",
    "Spec",
    "Walker",
    "any_json",
    "flag",
    "integer",
    "mapping",
    "obj",
    "one_of",
    "path_text",
    "seq",
    "source",
    "text",
]

Path = tuple[str | int, ...]
Kind = Literal["str", "bool", "int", "list", "object", "map", "json", "source"]


class _Invalid:
    """Marks a value that failed validation (and was reported)."""

    def __repr__(self) -> str:
        return "INVALID"


INVALID: Final = _Invalid()

_MAX_DEPTH = 64
_MAX_NODES = 200_000

# Keys whose literal value would be a credential. A mapping value (``provider.api_key: {in, name}``)
# is a carrier description, not a secret, so only scalar values are flagged.
_SECRET_KEYS: Final = frozenset(
    {
        "token", "secret", "password", "passwd", "client_secret", "api_key", "apikey", "access_token",
        "refresh_token", "private_key", "secret_key", "auth_token", "bearer_token",
    }
)  # fmt: skip
_SECRET_VALUES: Final = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\b[sr]k_(?:live|test)_[0-9A-Za-z]{10,}"
    r"|\bgh[pousr]_[0-9A-Za-z]{30,}"
    r"|\bxox[abprs]-[0-9A-Za-z-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{35}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|^\s*(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{12,}\s*$"
)


@dataclass(frozen=True, slots=True)
class Spec:
    """What a value must be. Build with :func:`text`, :func:`obj`, ... rather than directly."""

    kind: Kind
    enum: tuple[str, ...] | None = None
    pattern: re.Pattern[str] | None = None
    min_len: int = 0
    minimum: int | None = None
    maximum: int | None = None
    item: Spec | None = None
    fields: Mapping[str, Spec] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    refuse: Mapping[str, str] = field(default_factory=dict)
    convert: Callable[[Any], Any] | None = None
    describe: str = ""
    numeric_text: bool = False


def text(*, min_len: int = 0, pattern: str | None = None, describe: str = "", numeric: bool = False) -> Spec:
    """A string (``min_len`` characters at least, matching ``pattern`` when given).

    ``numeric`` also accepts an integer and reads it as its digits (``429`` as ``"429"``).
    """
    compiled = re.compile(pattern) if pattern else None
    return Spec("str", min_len=min_len, pattern=compiled, describe=describe, numeric_text=numeric)


def one_of(values: tuple[str, ...]) -> Spec:
    """A string out of ``values``."""
    return Spec("str", enum=tuple(values))


def flag() -> Spec:
    """A boolean."""
    return Spec("bool")


def integer(minimum: int | None = None, maximum: int | None = None) -> Spec:
    """An integer within the inclusive bounds."""
    return Spec("int", minimum=minimum, maximum=maximum)


def seq(item: Spec, *, convert: Callable[[Any], Any] | None = None) -> Spec:
    """A list whose items match ``item``; ``convert`` maps an item (returning None rejects it)."""
    return Spec("list", item=item, convert=convert)


def obj(fields: Mapping[str, Spec], *, required: tuple[str, ...] = (), refuse: Mapping[str, str] | None = None) -> Spec:
    """A mapping with exactly these keys; ``refuse`` maps a known-but-unsupported key to a hint."""
    return Spec("object", fields=dict(fields), required=frozenset(required), refuse=dict(refuse or {}))


def mapping(value: Spec) -> Spec:
    """A mapping with free string keys whose values match ``value``."""
    return Spec("map", item=value)


def any_json() -> Spec:
    """Any JSON value."""
    return Spec("json")


def source() -> Spec:
    """An argument source: a non-empty string (a path) or exactly ``{const: <JSON>}``."""
    return Spec("source")


def path_text(path: Path) -> str:
    """``operations.createRefund.effect.inverse`` / ``workflows.x.steps[0]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(top level)"


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


@dataclass(slots=True)
class Walker:
    """Validates nodes of one file, collecting diagnostics and positions."""

    file: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    keys: dict[Path, Location] = field(default_factory=dict)
    values: dict[Path, Location] = field(default_factory=dict)
    _constructor: SafeConstructor = field(default_factory=SafeConstructor)
    _nulls: set[Path] = field(default_factory=set)
    _visited: int = 0
    _exhausted: bool = False

    def location(self, node: Node) -> Location:
        """The 1-based position of ``node``."""
        mark = node.start_mark
        return Location(self.file, mark.line + 1, mark.column + 1)

    def report(self, code: str, message: str, node: Node, *, hint: str | None = None) -> None:
        """Record a diagnostic at ``node``."""
        where = self.location(node)
        self.diagnostics.append(
            diagnostic(code, message, file=where.file, line=where.line, column=where.column, hint=hint)
        )

    def walk(self, node: Node, spec: Spec, path: Path) -> Any:
        """Validate ``node`` against ``spec``; the plain value, or :data:`INVALID` (already reported)."""
        if self._exhausted:
            return INVALID
        self._visited += 1
        if self._visited > _MAX_NODES or len(path) > _MAX_DEPTH:
            self._exhausted = True
            self.report(
                "manifest/parse_error",
                "The manifest nests too deeply or expands too many aliases to be read.",
                node,
                hint="Write the manifest out plainly, without recursive or repeated anchors.",
            )
            return INVALID
        self.values[path] = self.location(node)
        if _is_null(node) and spec.kind not in ("json", "source"):
            self._nulls.add(path)
            return None
        if spec.kind == "object":
            return self._object(node, spec, path)
        if spec.kind == "map":
            return self._map(node, spec, path)
        if spec.kind == "list":
            return self._list(node, spec, path)
        if spec.kind == "json":
            return self._json(node, path)
        if spec.kind == "source":
            return self._source(node, path)
        return self._scalar(node, spec, path)

    # --- containers -------------------------------------------------------------------------------

    def _pairs(self, node: MappingNode, path: Path) -> list[tuple[str, Node, Node]] | None:
        try:
            self._constructor.flatten_mapping(node)
        except yaml.YAMLError as exc:
            self.report("manifest/parse_error", f"{path_text(path)}: a merge key cannot be read ({exc}).", node)
            return None
        seen: set[str] = set()
        out: list[tuple[str, Node, Node]] = []
        for key_node, value_node in node.value:
            key = self._constant(key_node) if isinstance(key_node, ScalarNode) else INVALID
            if not isinstance(key, str) or not key:
                self.report(
                    "manifest/wrong_type",
                    f"{path_text(path)} has a key that is not a non-empty string.",
                    key_node,
                    hint="Quote keys that YAML would read as numbers, booleans or dates.",
                )
                continue
            if key in seen:
                self.report("manifest/parse_error", f"{path_text(path)} repeats the key '{key}'.", key_node)
                continue
            seen.add(key)
            self.keys[(*path, key)] = self.location(key_node)
            out.append((key, key_node, value_node))
        return out

    def _object(self, node: Node, spec: Spec, path: Path) -> Any:
        if not isinstance(node, MappingNode):
            self._wrong(node, path, "a mapping")
            return INVALID
        pairs = self._pairs(node, path)
        if pairs is None:
            return INVALID
        out: dict[str, Any] = {}
        for key, key_node, value_node in pairs:
            if self._secret_key(key, value_node, path):
                continue
            child = spec.fields.get(key)
            if child is None:
                self._unknown(key, key_node, path, spec)
                continue
            value = self.walk(value_node, child, (*path, key))
            if value is not INVALID and value is not None:
                out[key] = value
        missing = sorted(name for name in spec.required if name not in out)
        for name in missing:
            if (*path, name) in self.keys and not self._null_at((*path, name)):
                continue  # present but invalid: already reported where it stands
            self.report(
                "manifest/wrong_type",
                f"{path_text(path)} is missing the required key '{name}'.",
                node,
                hint=f"Add '{name}'.",
            )
        return INVALID if missing else out

    def _map(self, node: Node, spec: Spec, path: Path) -> Any:
        if not isinstance(node, MappingNode):
            self._wrong(node, path, "a mapping")
            return INVALID
        pairs = self._pairs(node, path)
        if pairs is None:
            return INVALID
        assert spec.item is not None
        out: dict[str, Any] = {}
        for key, _key_node, value_node in pairs:
            value = self.walk(value_node, spec.item, (*path, key))
            if value is not INVALID and value is not None:
                out[key] = value
        return out

    def _list(self, node: Node, spec: Spec, path: Path) -> Any:
        if not isinstance(node, SequenceNode):
            self._wrong(node, path, "a list")
            return INVALID
        assert spec.item is not None
        out: list[Any] = []
        failed = False
        for index, item in enumerate(node.value):
            value = self.walk(item, spec.item, (*path, index))
            if value is None:
                self._wrong(item, (*path, index), "a value, not null")
                value = INVALID
            elif value is not INVALID and spec.convert is not None:
                converted = spec.convert(value)
                if converted is None:
                    self.report(
                        "manifest/wrong_type",
                        f"{path_text((*path, index))} is not an allowed value (got {_shown(value)}).",
                        item,
                        hint=spec.item.describe or None,
                    )
                value = INVALID if converted is None else converted
            failed = failed or value is INVALID
            out.append(value)
        # All or nothing, so item positions stay aligned with what the builder sees.
        return INVALID if failed else out

    # --- values -----------------------------------------------------------------------------------

    def _scalar(self, node: Node, spec: Spec, path: Path) -> Any:
        value = self._constant(node) if isinstance(node, ScalarNode) else INVALID
        if spec.kind == "str":
            return self._string(node, value, spec, path)
        if spec.kind == "bool":
            if isinstance(value, bool):
                return value
            self._wrong(node, path, "true or false")
            return INVALID
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong(node, path, "an integer")
            return INVALID
        if (spec.minimum is not None and value < spec.minimum) or (spec.maximum is not None and value > spec.maximum):
            bounds = f"between {spec.minimum} and {spec.maximum}" if spec.maximum is not None else f">= {spec.minimum}"
            self._wrong(node, path, f"an integer {bounds}", got=value)
            return INVALID
        return value

    def _string(self, node: Node, value: Any, spec: Spec, path: Path) -> Any:
        if spec.numeric_text and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            self._wrong(node, path, "a string", hint="Quote values YAML would read as numbers, booleans or dates.")
            return INVALID
        if spec.enum is not None and value not in spec.enum:
            close = difflib.get_close_matches(value, spec.enum, n=1)
            self._wrong(
                node,
                path,
                "one of " + ", ".join(spec.enum),
                got=value,
                hint=f"Did you mean '{close[0]}'?" if close else None,
            )
            return INVALID
        if len(value) < spec.min_len:
            self._wrong(node, path, "a non-empty string")
            return INVALID
        if spec.pattern is not None and not spec.pattern.fullmatch(value):
            self._wrong(node, path, spec.describe or f"a string matching {spec.pattern.pattern}", got=value)
            return INVALID
        self._secret_text(value, node, path)
        return value

    def _json(self, node: Node, path: Path) -> Any:
        if isinstance(node, MappingNode):
            pairs = self._pairs(node, path)
            if pairs is None:
                return INVALID
            out: dict[str, Any] = {}
            for key, _key_node, value_node in pairs:
                value = self._json_child(value_node, (*path, key))
                if value is INVALID:
                    return INVALID
                out[key] = value
            return out
        if isinstance(node, SequenceNode):
            items = [self._json_child(item, (*path, index)) for index, item in enumerate(node.value)]
            return INVALID if any(item is INVALID for item in items) else items
        value = self._constant(node)
        if value is None or isinstance(value, bool | int | str) or (isinstance(value, float) and math.isfinite(value)):
            if isinstance(value, str):
                self._secret_text(value, node, path)
            return value
        self._wrong(node, path, "a JSON value (string, number, boolean, null, list or mapping)")
        return INVALID

    def _json_child(self, node: Node, path: Path) -> Any:
        return self.walk(node, any_json(), path)

    def _source(self, node: Node, path: Path) -> Any:
        if isinstance(node, ScalarNode) and not _is_null(node):
            value = self._constant(node)
            if isinstance(value, str) and value:
                self._secret_text(value, node, path)
                return value
        elif isinstance(node, MappingNode):
            pairs = self._pairs(node, path)
            if pairs is not None and [key for key, _k, _v in pairs] == ["const"]:
                const = self.walk(pairs[0][2], any_json(), (*path, "const"))
                if const is INVALID:
                    return INVALID
                name = path[-1] if path else ""
                if isinstance(name, str) and name.lower() in _SECRET_KEYS and isinstance(const, str) and const:
                    self._secret(node, path)
                    return INVALID
                return {"const": const}
        self._wrong(node, path, "a path string (request.x, response.y, idempotency_key) or {const: <value>}")
        return INVALID

    # --- reporting helpers ------------------------------------------------------------------------

    def _constant(self, node: Node) -> Any:
        try:
            return self._constructor.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError, TypeError):
            return INVALID

    def _null_at(self, path: Path) -> bool:
        return path in self._nulls

    def _wrong(self, node: Node, path: Path, expected: str, *, got: Any = INVALID, hint: str | None = None) -> None:
        shown = f" (got {_shown(got)})" if got is not INVALID else ""
        self.report("manifest/wrong_type", f"{path_text(path)} must be {expected}{shown}.", node, hint=hint)

    def _unknown(self, key: str, node: Node, path: Path, spec: Spec) -> None:
        refused = spec.refuse.get(key)
        if refused is not None:
            where = path_text(path) if path else "the top level"
            self.report("manifest/unknown_key", f"'{key}' in {where} is not supported.", node, hint=refused)
            return
        known = sorted(spec.fields)
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.5)
        hint = f"Did you mean '{close[0]}'?" if close else "Known keys: " + ", ".join(known) + "."
        where = path_text(path) if path else "the top level"
        self.report("manifest/unknown_key", f"Unknown key '{key}' in {where}.", node, hint=hint)

    def _secret_key(self, key: str, value: Node, path: Path) -> bool:
        if key.lower() not in _SECRET_KEYS or not isinstance(value, ScalarNode) or _is_null(value):
            return False
        if value.value == "":
            return False
        self._secret(value, (*path, key))
        return True

    def _secret_text(self, value: str, node: Node, path: Path) -> None:
        if _SECRET_VALUES.search(value):
            self._secret(node, path)

    def _secret(self, node: Node, path: Path) -> None:
        self.report(
            "manifest/secret_value",
            f"{path_text(path)} looks like a secret value; a manifest must never contain secrets.",
            node,
            hint="Remove the value and rotate it; credentials come from the environment (ANVIL_<PROFILE>_*).",
        )


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null"
