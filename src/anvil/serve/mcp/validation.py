"""Argument validation against a tool's published input schema, compiled once per tool.

The gateway validates arguments itself so that every refusal is an Anvil envelope with a code, never
an SDK validation string. The safety controls are the executor's gates, not the schema's: the
confirm input and the idempotency-key input are left out of ``required`` and accept any value here,
so a missing ``confirm`` is ``confirmation_required`` and a missing required key is
``idempotency_required``, exactly as on every other surface. Everything else is checked strictly:
required business inputs, types and constraints, and no argument the tool does not declare.
``integer`` means a JSON integer: ``1.0`` is a number, not an integer (it would reach the upstream as
a float), so it is refused where the schema says integer.

The validator is compiled on the first call of a tool and kept; the hot path after that is one
walk of a compiled check (:func:`compile_fast`: closures for the keywords tool schemas use, answering
exactly what jsonschema's ``is_valid`` answers, pinned by a property test), and jsonschema itself
works out the error description, only for an invalid call. A schema using a keyword the compiled
check does not model is validated by jsonschema alone.

Both match ``pattern`` (and ``patternProperties``) with :mod:`anvil.air.patterns`, in time linear in the
text and never with ``re``, whose backtracking a caller's 27-character argument turned into 17 s of a
frozen event loop; one call's texts share one work budget (:func:`~anvil.air.patterns.pattern_budget`).
"""

from __future__ import annotations

import copy
import numbers
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "ArgumentCheck",
    "Check",
    "Unsure",
    "Violation",
    "call_schema",
    "compile_fast",
    "format_field",
    "json_equal",
    "too_deep",
]

#: The deepest nesting arguments may have (objects and arrays); deeper is refused before any recursion.
MAX_ARGUMENT_DEPTH: Final = 64


@dataclass(frozen=True, slots=True)
class Violation:
    """Why arguments were refused: a message naming inputs (never values) and the envelope details."""

    message: str
    details: JSONObject
    field: str | None = None


def call_schema(
    published: JSONObject, relaxed: Collection[str], ignored: Mapping[str, JSONObject] | None = None
) -> JSONObject:
    """The schema a call is validated against: ``published`` with the ``relaxed`` inputs unconstrained.

    The ``relaxed`` names (the safety controls) leave ``required`` and accept any value; the
    ``ignored`` names (a ``confirm`` the tool does not take) are accepted with their schema and then
    dropped by the caller; every other unknown argument is refused even when the published schema
    does not say so.
    """
    schema = copy.deepcopy(published)
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = schema["properties"] = {}
    for name in relaxed:
        if name in properties:
            properties[name] = {}
    for name, accepted in (ignored or {}).items():
        properties.setdefault(name, dict(accepted))
    required = schema.get("required")
    if isinstance(required, list):
        schema["required"] = [name for name in required if name not in relaxed]
    schema["additionalProperties"] = False
    schema.setdefault("type", "object")
    return schema


def too_deep(value: object, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """True when ``value`` nests objects and arrays more than ``limit`` levels (checked without recursion)."""
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def format_field(path: Collection[Any]) -> str:
    """A JSON location as a path-grammar tail: ``items[0].name`` (``""`` for the whole arguments)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_STRICT: Any = None


def _strict_validator() -> Any:
    """Draft 2020-12 with ``integer`` meaning an int (never a float such as ``1.0``, never a bool), and
    patterns matched in linear time (:func:`anvil.air.patterns.linear_validator`)."""
    global _STRICT
    if _STRICT is None:
        from jsonschema import validators

        from anvil.air.patterns import linear_validator

        base = linear_validator()
        checker = base.TYPE_CHECKER.redefine(
            "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
        )
        _STRICT = validators.extend(base, type_checker=checker)  # type: ignore[no-untyped-call]
    return _STRICT


class ArgumentCheck:
    """One tool's argument validator, compiled on first use (jsonschema, draft 2020-12)."""

    __slots__ = ("_fast", "_properties", "_required", "_schema", "_validator")

    def __init__(self, schema: JSONObject) -> None:
        """Hold ``schema`` (from :func:`call_schema`); nothing is compiled yet."""
        self._schema = schema
        properties = schema.get("properties")
        self._properties: frozenset[str] = frozenset(properties) if isinstance(properties, dict) else frozenset()
        required = schema.get("required")
        self._required: tuple[str, ...] = tuple(r for r in required if isinstance(r, str)) if required else ()
        self._validator: Any = None
        self._fast: Check | None = None

    def _compiled(self, *, minimal: bool = False) -> Any:
        if self._validator is None or minimal:
            from jsonschema.exceptions import SchemaError

            schema = self._schema
            if not minimal:
                try:
                    _strict_validator().check_schema(schema)
                except SchemaError:
                    minimal = True
            if minimal:
                # A schema the validator cannot use still refuses what it can: unknown and missing inputs.
                schema = {
                    "type": "object",
                    "properties": {name: {} for name in self._properties},
                    "required": list(self._required),
                    "additionalProperties": False,
                }
            self._validator = _strict_validator()(schema)
            self._fast = compile_fast(schema, strict_integer=True)
        return self._validator

    def check(self, arguments: Mapping[str, JSONValue]) -> Violation | None:
        """None when ``arguments`` fit; else the first problem: missing inputs, unknown ones, then values."""
        from anvil.air.patterns import pattern_budget  # RE2 loads with the first call checked (cold start)

        with pattern_budget():
            return self._check(arguments)

    def _check(self, arguments: Mapping[str, JSONValue]) -> Violation | None:
        missing = [name for name in self._required if name not in arguments]
        if missing:
            return Violation(f"Missing required input: {', '.join(missing)}.", {"missing": missing}, missing[0])
        unknown = sorted(name for name in arguments if name not in self._properties)
        if unknown:
            return Violation(f"Unknown input: {', '.join(unknown)}.", {"unknown": unknown}, unknown[0])
        validator = self._compiled()
        fast = self._fast
        try:
            if fast is not None and fast(arguments):
                return None
        except (Unsure, RecursionError):
            pass  # not modelled: jsonschema decides
        try:
            if validator.is_valid(arguments):
                return None
        except Exception:  # an unresolvable $ref deep in a schema: judge by the minimal schema from now on
            validator = self._compiled(minimal=True)
            if validator.is_valid(arguments):
                return None
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(arguments))
        if error is None:  # pragma: no cover - is_valid said no, so there is an error
            return None
        location = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            absent = next((n for n in error.validator_value if n not in error.instance), None)
            if absent is not None:
                location.append(absent)
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            declared = error.schema.get("properties") or {}
            extra = next((n for n in sorted(error.instance) if n not in declared), None)
            if extra is not None:
                location.append(extra)
        field = format_field(location)
        keyword = str(error.validator)
        shown = field or "arguments"
        return Violation(
            f"Input '{shown}' does not match its schema ({keyword}).", {"field": shown, "keyword": keyword}, shown
        )


# --- the fast path: a compiled validator for the keywords tool schemas use -----------------------------

#: Keywords that change how references resolve: a schema using any of them is left to jsonschema.
_RESOLUTION: Final = frozenset({"$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor"})
_POINTER_PART: Final = re.compile(r"^[A-Za-z0-9_.:@$-]+$")
#: Every keyword jsonschema's draft 2020-12 validator applies (a test keeps this equal to the installed
#: jsonschema's); any other word in a schema is ignored by it, and so here.
_ASSERTING: Final = frozenset(
    {"$dynamicRef", "$ref", "additionalProperties", "allOf", "anyOf", "const", "contains", "dependentRequired"}
    | {"dependentSchemas", "enum", "exclusiveMaximum", "exclusiveMinimum", "format", "if", "items", "maxItems"}
    | {"maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf"}
    | {"not", "oneOf", "pattern", "patternProperties", "prefixItems", "properties", "propertyNames", "required"}
    | {"type", "unevaluatedItems", "unevaluatedProperties", "uniqueItems"}
)
_TYPES: Final = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})

Check = Callable[[object], bool]


class Unsure(Exception):
    """An instance the fast validator does not model (a number that is neither int nor float): ask jsonschema."""


class _Unsupported(Exception):
    """A schema the fast validator does not compile."""


def _number(value: object) -> bool:
    """True for a JSON number (int or float, never bool), as jsonschema's ``number`` type says."""
    kind = type(value)
    if kind is int or kind is float:
        return True
    if kind is bool or not isinstance(value, numbers.Number):
        return False
    raise Unsure  # Decimal, Fraction, an int subclass: not what a JSON parser makes


def _type_check(name: str, strict_integer: bool) -> Check:
    if name == "object":
        return lambda value: isinstance(value, dict)
    if name == "array":
        return lambda value: isinstance(value, list)
    if name == "string":
        return lambda value: isinstance(value, str)
    if name == "boolean":
        return lambda value: isinstance(value, bool)
    if name == "null":
        return lambda value: value is None
    if name == "number":
        return _number
    if strict_integer:
        return lambda value: _number(value) and type(value) is int
    return lambda value: _number(value) and (type(value) is int or float(value).is_integer())  # type: ignore[arg-type]


_TRUE: Final = object()
_FALSE: Final = object()


def _unbool(value: object) -> object:
    if value is True:
        return _TRUE
    return _FALSE if value is False else value


def json_equal(one: object, two: object) -> bool:
    """Equality as JSON Schema means it (``enum``, ``const``): ``true`` is not ``1``, ``1`` is ``1.0``."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list | tuple) and isinstance(two, list | tuple):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(json_equal(one[key], two[key]) for key in one)
    return _unbool(one) == _unbool(two)


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda _value: True
    if len(checks) == 1:
        return checks[0]

    def every(value: object) -> bool:
        for check in checks:
            if not check(value):
                return False
        return True

    return every


class _Compiler:
    def __init__(self, root: object, strict_integer: bool) -> None:
        self.root = root
        self.strict_integer = strict_integer
        self.refs: dict[str, list[Check]] = {}

    def schema(self, schema: object) -> Check:
        if schema is True:
            return lambda _value: True
        if schema is False:
            return lambda _value: False
        if not isinstance(schema, dict):
            raise _Unsupported
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _RESOLUTION:
                raise _Unsupported
            if key in _ASSERTING:
                check = self.keyword(key, value, schema)
                if check is not None:
                    checks.append(check)
            # anything else (title, $defs, x-*, nullable, an unknown word) is ignored, as jsonschema ignores it
        return _all(checks)

    def keyword(self, key: str, value: Any, schema: dict[str, Any]) -> Check | None:
        if key == "type":
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not names or any(name not in _TYPES for name in names):
                raise _Unsupported
            kinds = [_type_check(name, self.strict_integer) for name in names]
            return kinds[0] if len(kinds) == 1 else lambda item: any(kind(item) for kind in kinds)
        if key == "enum":
            if not isinstance(value, list):
                raise _Unsupported
            return lambda item: any(json_equal(each, item) for each in value)
        if key == "const":
            return lambda item: json_equal(value, item)
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if type(value) not in (int, float):
                raise _Unsupported
            return _bound(key, value)
        if key in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            if type(value) is not int:
                raise _Unsupported
            return _size(key, value)
        if key == "pattern":
            if not isinstance(value, str):
                raise _Unsupported
            from anvil.air.patterns import schema_pattern

            search = schema_pattern(value).search
            return lambda item: not isinstance(item, str) or search(item)
        if key == "required":
            if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
                raise _Unsupported
            names = tuple(value)
            return lambda item: not isinstance(item, dict) or all(name in item for name in names)
        if key == "properties":
            if not isinstance(value, dict):
                raise _Unsupported
            compiled_properties = [(name, self.schema(sub)) for name, sub in value.items()]

            def properties(item: object) -> bool:
                if isinstance(item, dict):
                    for name, check in compiled_properties:
                        if name in item and not check(item[name]):
                            return False
                return True

            return properties
        if key == "additionalProperties":
            if "patternProperties" in schema:
                raise _Unsupported
            declared = schema.get("properties", {})
            if not isinstance(declared, dict):
                raise _Unsupported
            known = frozenset(declared)
            if value is True:
                return None
            extra = self.schema(value)

            def additional(item: object) -> bool:
                if isinstance(item, dict):
                    for name, child in item.items():
                        if name not in known and not extra(child):
                            return False
                return True

            return additional
        if key == "items":
            if "prefixItems" in schema:
                raise _Unsupported
            each = self.schema(value)
            return lambda item: not isinstance(item, list) or all(each(child) for child in item)
        if key in ("allOf", "anyOf", "oneOf"):
            if not isinstance(value, list) or not value:
                raise _Unsupported
            parts = [self.schema(sub) for sub in value]
            if key == "allOf":
                return _all(parts)
            if key == "anyOf":
                return lambda item: any(part(item) for part in parts)
            return lambda item: sum(1 for part in parts if part(item)) == 1
        if key == "not":
            negated = self.schema(value)
            return lambda item: not negated(item)
        if key == "$ref":
            return self.reference(value)
        if key == "format":
            return None  # an annotation: neither validator is given a format checker
        raise _Unsupported  # a keyword jsonschema applies that this compiler does not model

    def reference(self, ref: object) -> Check:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise _Unsupported
        cell = self.refs.get(ref)
        if cell is None:
            cell = self.refs[ref] = []
            target = self.root
            for part in ref[1:].split("/")[1:] if ref != "#" else []:
                if not _POINTER_PART.match(part) or not isinstance(target, dict) or part not in target:
                    raise _Unsupported
                target = target[part]
            cell.append(self.schema(target))
        return lambda item: cell[0](item)


def _bound(key: str, limit: float) -> Check:
    if key == "minimum":
        return lambda item: not _number(item) or not item < limit  # type: ignore[operator]
    if key == "maximum":
        return lambda item: not _number(item) or not item > limit  # type: ignore[operator]
    if key == "exclusiveMinimum":
        return lambda item: not _number(item) or not item <= limit  # type: ignore[operator]
    return lambda item: not _number(item) or not item >= limit  # type: ignore[operator]


def _size(key: str, limit: int) -> Check:
    kind: type = str if key.endswith("Length") else list if key.endswith("Items") else dict
    if key.startswith("min"):
        return lambda item: not isinstance(item, kind) or len(item) >= limit  # type: ignore[arg-type]
    return lambda item: not isinstance(item, kind) or len(item) <= limit  # type: ignore[arg-type]


def compile_fast(schema: object, *, strict_integer: bool) -> Check | None:
    """A validator answering exactly what jsonschema's draft 2020-12 ``is_valid`` answers for ``schema``,
    or None when the schema uses a keyword (or a reference) it does not model.

    ``strict_integer`` matches :func:`_strict_validator` (``integer`` is an int, never ``1.0``); without
    it, the stock checker's rule (an integral float counts). The check raises :class:`Unsure` for a
    number type a JSON parser never makes, and may raise ``RecursionError`` on a self-referencing
    schema; the caller asks jsonschema then.
    """
    if _resolves_elsewhere(schema):
        return None
    try:
        return _Compiler(schema, strict_integer).schema(schema)
    except (_Unsupported, RecursionError):
        return None


def _resolves_elsewhere(schema: object) -> bool:
    """True when any node names a base URI or an anchor (references would not resolve from the root)."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if any(key in _RESOLUTION for key in node):
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False
