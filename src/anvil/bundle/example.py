"""Example inputs for an operation (original-core §4.2 ``exampleInput``).

Declared examples win when their JSON type fits the property's declared type; otherwise a value is
synthesized from the schema ("example", 1, true, the first enum value, merged ``allOf``, the first
``oneOf``/``anyOf`` arm). Safety inputs get ``"<canonical>-example-key"`` and ``true``. Deterministic.
"""

from __future__ import annotations

from typing import Any

from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import safety_keys
from anvil.air.model import Operation
from anvil.air.tools import operation_input_schema

__all__ = ["example_input", "example_value"]

_MAX_DEPTH = 6
_TYPE_CHECKS: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _fits(value: JSONValue, schema: JSONObject) -> bool:
    declared = schema.get("type")
    if declared is None:
        return True
    kinds = declared if isinstance(declared, list) else [declared]
    for kind in kinds:
        if kind == "null" and value is None:
            return True
        expected = _TYPE_CHECKS.get(kind) if isinstance(kind, str) else None
        if expected is None:
            continue
        if isinstance(value, bool) and kind in ("integer", "number"):
            continue
        if isinstance(value, expected):
            return True
    return False


def _declared(schema: JSONObject) -> tuple[bool, JSONValue]:
    examples = schema.get("examples")
    if isinstance(examples, list) and examples and _fits(examples[0], schema):
        return True, examples[0]
    for key in ("example", "default"):
        if key in schema and _fits(schema[key], schema):
            return True, schema[key]
    if "const" in schema:
        return True, schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return True, enum[0]
    return False, None


def _merge_all_of(schema: JSONObject) -> JSONObject:
    merged: JSONObject = {k: v for k, v in schema.items() if k != "allOf"}
    properties: dict[str, Any] = dict(merged.get("properties") or {})
    required: list[str] = list(merged.get("required") or [])
    for part in schema.get("allOf") or []:
        if not isinstance(part, dict):
            continue
        part = _merge_all_of(part) if "allOf" in part else part
        for key, value in part.items():
            if key == "properties" and isinstance(value, dict):
                properties.update(value)
            elif key == "required" and isinstance(value, list):
                required.extend(item for item in value if item not in required)
            else:
                merged.setdefault(key, value)
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged


def example_value(schema: JSONValue, depth: int = 0) -> JSONValue:
    """A deterministic example for a JSON Schema (required object properties only)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return "example"
    if "allOf" in schema:
        schema = _merge_all_of(schema)
    found, value = _declared(schema)
    if found:
        return value
    for key in ("oneOf", "anyOf"):
        arms = schema.get(key)
        if isinstance(arms, list) and arms:
            return example_value(arms[0], depth + 1)
    declared = schema.get("type")
    kind = next((k for k in declared if k != "null"), "string") if isinstance(declared, list) else declared
    if kind is None and "properties" in schema:
        kind = "object"
    if kind == "integer" or kind == "number":
        minimum = schema.get("minimum")
        return minimum if isinstance(minimum, int | float) and not isinstance(minimum, bool) and minimum > 1 else 1
    if kind == "boolean":
        return True
    if kind == "array":
        return [example_value(schema.get("items"), depth + 1)]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            name: example_value(properties.get(name), depth + 1)
            for name in schema.get("required") or []
            if isinstance(name, str)
        }
    return "example"


def example_input(op: Operation) -> JSONObject:
    """Example arguments for ``op``: its required inputs, then its safety inputs where it has them."""
    schema = operation_input_schema(op)
    properties: dict[str, Any] = schema.get("properties") or {}
    keys = safety_keys(op)
    controls = {keys.idempotency, keys.confirm} - {None}
    out: JSONObject = {}
    for name in schema.get("required") or []:
        if name in properties and name not in controls:
            out[name] = example_value(properties[name])
    if keys.idempotency is not None:
        out[keys.idempotency] = f"{op.canonical_name}-example-key"
    if keys.confirm is not None:
        out[keys.confirm] = True
    return out
