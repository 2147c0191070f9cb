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
``is_valid`` walk, and the error description is worked out only for an invalid call.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from anvil._types import JSONObject, JSONValue

__all__ = ["MAX_ARGUMENT_DEPTH", "ArgumentCheck", "Violation", "call_schema", "format_field", "too_deep"]

#: The deepest nesting arguments may have (objects and arrays); deeper is refused before any recursion.
MAX_ARGUMENT_DEPTH: Final = 64


@dataclass(frozen=True, slots=True)
class Violation:
    """Why arguments were refused: a message naming inputs (never values) and the envelope details."""

    message: str
    details: JSONObject
    field: str | None = None


def call_schema(published: JSONObject, relaxed: Collection[str]) -> JSONObject:
    """The schema a call is validated against: ``published`` with the ``relaxed`` inputs unconstrained.

    The ``relaxed`` names (the safety controls) leave ``required`` and accept any value; unknown
    arguments are refused even when the published schema does not say so.
    """
    schema = copy.deepcopy(published)
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = schema["properties"] = {}
    for name in relaxed:
        if name in properties:
            properties[name] = {}
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
    """Draft 2020-12 with ``integer`` meaning an int (never a float such as ``1.0``, never a bool)."""
    global _STRICT
    if _STRICT is None:
        from jsonschema import Draft202012Validator, validators

        checker = Draft202012Validator.TYPE_CHECKER.redefine(
            "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
        )
        _STRICT = validators.extend(Draft202012Validator, type_checker=checker)  # type: ignore[no-untyped-call]
    return _STRICT


class ArgumentCheck:
    """One tool's argument validator, compiled on first use (jsonschema, draft 2020-12)."""

    __slots__ = ("_properties", "_required", "_schema", "_validator")

    def __init__(self, schema: JSONObject) -> None:
        """Hold ``schema`` (from :func:`call_schema`); nothing is compiled yet."""
        self._schema = schema
        properties = schema.get("properties")
        self._properties: frozenset[str] = frozenset(properties) if isinstance(properties, dict) else frozenset()
        required = schema.get("required")
        self._required: tuple[str, ...] = tuple(r for r in required if isinstance(r, str)) if required else ()
        self._validator: Any = None

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
        return self._validator

    def check(self, arguments: Mapping[str, JSONValue]) -> Violation | None:
        """None when ``arguments`` fit; else the first problem: missing inputs, unknown ones, then values."""
        missing = [name for name in self._required if name not in arguments]
        if missing:
            return Violation(f"Missing required input: {', '.join(missing)}.", {"missing": missing}, missing[0])
        unknown = sorted(name for name in arguments if name not in self._properties)
        if unknown:
            return Violation(f"Unknown input: {', '.join(unknown)}.", {"unknown": unknown}, unknown[0])
        validator = self._compiled()
        try:
            if validator.is_valid(arguments):
                return None
        except Exception:  # an unresolvable $ref deep in a schema: judge by the minimal schema from now on
            validator = self._compiled(minimal=True)
            if validator.is_valid(arguments):
                return None
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(arguments))
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
