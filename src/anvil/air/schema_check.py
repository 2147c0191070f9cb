"""Is this a well-formed JSON Schema? A direct walk of the draft-7 metaschema's rules.

``outputSchema`` is published only when the projected schema is well formed, because stock clients
validate ``structuredContent`` against it and a malformed schema makes every call fail on their side.
Validating each schema against the draft-7 metaschema with ``jsonschema`` cost seconds on large specs
(its ``$ref`` resolution dominates), at compile time, at ``anvil serve`` start-up and in every
freshness check; this walk applies the same rules (types of every keyword the metaschema constrains,
non-empty schema arrays, unique ``type`` and ``required`` entries, positive ``multipleOf``) in one
pass. ``formats`` are not checked, as the metaschema validation did not check them either. Keywords
the metaschema does not know are ignored, except ``prefixItems`` (2020-12), whose members are schemas.
``tests/air/test_schema_check.py`` holds it to ``jsonschema``'s answer.
"""

from __future__ import annotations

from typing import Final

from anvil._types import JSONValue

__all__ = ["is_well_formed_schema"]

_SIMPLE_TYPES: Final = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_STRINGS: Final = ("$id", "$schema", "$ref", "$comment", "title", "description", "pattern", "format")
_STRINGS_MORE: Final = ("contentMediaType", "contentEncoding")
_NUMBERS: Final = ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum")
_COUNTS: Final = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties")
_SUBSCHEMAS: Final = (
    "additionalItems",
    "contains",
    "additionalProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
)
_SCHEMA_MAPS: Final = ("definitions", "properties", "patternProperties")
_SCHEMA_ARRAYS: Final = ("allOf", "anyOf", "oneOf")


def _number(value: JSONValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: JSONValue) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return value.is_integer() and value >= 0
    return isinstance(value, int) and value >= 0


def _unique_strings(value: JSONValue) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _keywords_ok(node: dict[str, JSONValue], pending: list[JSONValue]) -> bool:
    """Check ``node``'s own keywords; queue the subschemas it holds."""
    for key in (*_STRINGS, *_STRINGS_MORE):
        if key in node and not isinstance(node[key], str):
            return False
    for key in _NUMBERS:
        if key in node and not _number(node[key]):
            return False
    for key in _COUNTS:
        if key in node and not _count(node[key]):
            return False
    if "multipleOf" in node:
        step = node["multipleOf"]
        if not _number(step) or not step > 0:
            return False
    for key in ("uniqueItems", "readOnly"):
        if key in node and not isinstance(node[key], bool):
            return False
    if "examples" in node and not isinstance(node["examples"], list):
        return False
    if "enum" in node and not isinstance(node["enum"], list):
        return False
    if "required" in node and not _unique_strings(node["required"]):
        return False
    if "type" in node:
        kind = node["type"]
        if isinstance(kind, str):
            if kind not in _SIMPLE_TYPES:
                return False
        elif not (_unique_strings(kind) and kind and all(k in _SIMPLE_TYPES for k in kind)):
            return False
    pending.extend(node[key] for key in _SUBSCHEMAS if key in node)
    if "items" in node:
        items = node["items"]
        if isinstance(items, list):
            if not items:
                return False
            pending.extend(items)
        else:
            pending.append(items)
    for key in _SCHEMA_ARRAYS:
        if key in node:
            members = node[key]
            if not isinstance(members, list) or not members:
                return False
            pending.extend(members)
    if "prefixItems" in node:
        members = node["prefixItems"]
        if not isinstance(members, list):
            return False
        pending.extend(members)
    for key in _SCHEMA_MAPS:
        if key in node:
            mapping = node[key]
            if not isinstance(mapping, dict):
                return False
            pending.extend(mapping.values())
    if "dependencies" in node:
        dependencies = node["dependencies"]
        if not isinstance(dependencies, dict):
            return False
        for value in dependencies.values():
            if isinstance(value, list):
                if not _unique_strings(value):
                    return False
            else:
                pending.append(value)
    return True


def is_well_formed_schema(schema: JSONValue, *, skip_root_defs: bool = True) -> bool:
    """True when ``schema`` satisfies the draft-7 metaschema (see the module docstring).

    ``skip_root_defs`` leaves the root's ``$defs`` out (callers check named definitions once each).
    """
    if isinstance(schema, dict) and skip_root_defs and "$defs" in schema:
        schema = {k: v for k, v in schema.items() if k != "$defs"}
    pending: list[JSONValue] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict) or not _keywords_ok(node, pending):
            return False
    return True
