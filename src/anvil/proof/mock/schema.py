"""JSON Schema helpers for the mock: following ``$ref``, generating values, validating requests.

Refs reach the AIR document's shared schemas (``Document.schemas``) under any of the spellings a
compiled spec uses (``#/components/schemas/X``, ``#/definitions/X``, ``#/$defs/X``); anything else
stays opaque. Every walk is bounded in depth and size, so a hostile or cyclic schema costs little.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from anvil._types import JSONObject, JSONValue

__all__ = ["MAX_DEPTH", "SchemaSet", "Validator", "ValueMaker"]

#: How deep a generated value or a ref chain may go.
MAX_DEPTH: Final = 6
_MAX_PROPERTIES: Final = 64
_MAX_NODES: Final = 2000
_REF_PREFIXES: Final = ("#/components/schemas/", "#/definitions/", "#/$defs/")
_FORMATS: Final[dict[str, str]] = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/resource",
    "url": "https://example.com/resource",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
}


@dataclass(frozen=True, slots=True)
class SchemaSet:
    """The shared schemas a ref may name (``Document.schemas``)."""

    schemas: Mapping[str, JSONValue] = field(default_factory=dict)

    def deref(self, schema: JSONValue, depth: int = 0) -> JSONObject | None:
        """``schema`` with its ``$ref`` chain followed (sibling keys kept); None when not an object."""
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < MAX_DEPTH:
            ref: str = schema["$ref"]
            name = next((ref[len(p) :] for p in _REF_PREFIXES if ref.startswith(p)), None)
            target = self.schemas.get(name) if name is not None else None
            if not isinstance(target, dict):
                return {k: v for k, v in schema.items() if k != "$ref"}
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings}
            seen += 1
        return schema if isinstance(schema, dict) else None

    def ref_name(self, schema: JSONValue) -> str | None:
        """The shared schema a ``$ref`` names directly (``Issue`` for ``#/components/schemas/Issue``)."""
        if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            ref: str = schema["$ref"]
            for prefix in _REF_PREFIXES:
                if ref.startswith(prefix) and ref[len(prefix) :] in self.schemas:
                    return ref[len(prefix) :]
        return None

    def properties(self, schema: JSONValue) -> dict[str, JSONValue]:
        """The declared properties of an object schema, ``allOf`` branches merged (bounded)."""
        resolved = self.deref(schema)
        if resolved is None:
            return {}
        out: dict[str, JSONValue] = {}
        for branch in resolved.get("allOf") or ():
            if isinstance(branch, dict):
                out.update(self.properties(branch) if len(out) < _MAX_PROPERTIES else {})
        props = resolved.get("properties")
        if isinstance(props, dict):
            out.update(props)
        return dict(list(out.items())[:_MAX_PROPERTIES])

    def first_type(self, schema: JSONValue) -> str | None:
        """The schema's declared JSON type (the first non-null one of a list), if any."""
        resolved = self.deref(schema)
        if resolved is None:
            return None
        declared = resolved.get("type")
        if isinstance(declared, list):
            declared = next((t for t in declared if t != "null"), None)
        if isinstance(declared, str):
            return declared
        if "properties" in resolved or "allOf" in resolved:
            return "object"
        if "items" in resolved:
            return "array"
        return None

    def root(self, schema: JSONObject) -> JSONObject:
        """``schema`` as a validation root whose local refs reach the shared schemas."""
        defs = dict(self.schemas)
        own = schema.get("$defs")
        if isinstance(own, dict):
            defs.update(own)
        return {**schema, "$defs": defs, "definitions": dict(self.schemas), "components": {"schemas": self.schemas}}


class ValueMaker:
    """Deterministic example values from schemas: the same seed and calls give the same values."""

    def __init__(self, schemas: SchemaSet, seed: int = 0) -> None:
        """Args: schemas: where refs lead; seed: varies generated strings, numbers and uuids."""
        self.schemas = schemas
        self.seed = seed
        self._nodes = 0

    def _token(self, hint: str) -> str:
        return hashlib.sha256(f"{self.seed}:{hint}".encode()).hexdigest()[:8]

    def value(self, schema: JSONValue, name: str = "value") -> JSONValue:
        """A value that fits ``schema`` as far as its keywords say (examples, enums and defaults first)."""
        self._nodes = 0
        return self._make(schema, name, 0)

    def _make(self, schema: JSONValue, name: str, depth: int) -> JSONValue:
        self._nodes += 1
        resolved = self.schemas.deref(schema)
        if resolved is None or depth > MAX_DEPTH or self._nodes > _MAX_NODES:
            return None
        for keyword in ("const", "default"):
            if keyword in resolved:
                return resolved[keyword]
        if isinstance(resolved.get("enum"), list) and resolved["enum"]:
            return resolved["enum"][0]
        examples = resolved.get("examples")
        if isinstance(examples, list) and examples:
            return examples[0]
        if "example" in resolved:
            return resolved["example"]
        for keyword in ("oneOf", "anyOf"):
            branches = resolved.get(keyword)
            if isinstance(branches, list) and branches:
                return self._make(branches[0], name, depth + 1)
        kind = self.schemas.first_type(resolved)
        if kind == "object" or (kind is None and "allOf" in resolved):
            return self._object(resolved, name, depth)
        if kind == "array":
            items = resolved.get("items")
            size = max(1, int(resolved.get("minItems", 1) or 1)) if depth < 3 else 0
            return [self._make(items, name, depth + 1) for _ in range(min(size, 3))]
        if kind == "integer":
            return _bounded_number(resolved, 1, integer=True)
        if kind == "number":
            return _bounded_number(resolved, 1.5, integer=False)
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        return self._string(resolved, name)

    def _object(self, schema: JSONObject, name: str, depth: int) -> JSONObject:
        props = self.schemas.properties(schema)
        required = set(schema.get("required") or ())
        out: JSONObject = {}
        for key, sub in props.items():
            if depth >= 3 and key not in required:
                continue
            made = self._make(sub, key, depth + 1)
            if made is not None or key in required:
                out[key] = made
        return out

    def _string(self, schema: JSONObject, name: str) -> str:
        fmt = schema.get("format")
        if fmt == "uuid":
            digest = self._token(name) + hashlib.sha256(f"{self.seed}:{name}:uuid".encode()).hexdigest()
            text = f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"
        elif isinstance(fmt, str) and fmt in _FORMATS:
            text = _FORMATS[fmt]
        else:
            text = f"{name}-{self._token(name)}"
        low = schema.get("minLength")
        high = schema.get("maxLength")
        if isinstance(low, int) and len(text) < low:
            text = text + "x" * (low - len(text))
        if isinstance(high, int) and high >= 0 and len(text) > high:
            text = text[:high]
        return text


def _bounded_number(schema: JSONObject, preferred: float, *, integer: bool) -> int | float:
    low = schema.get("minimum")
    high = schema.get("maximum")
    value: float = preferred
    if isinstance(low, int | float) and not isinstance(low, bool) and value < low:
        value = low
    if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
        value = high
    return int(value) if integer else value


class Validator:
    """A JSON Schema 2020-12 check that never raises: an unusable schema accepts everything."""

    def __init__(self, schema: JSONObject | None, schemas: SchemaSet) -> None:
        """Args: schema: the schema (None accepts everything); schemas: where its refs lead."""
        self._validator: Any = None
        if not schema:
            return
        try:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(schemas.root(schema))
        except Exception:  # a spec's schema we cannot judge is not the caller's fault
            self._validator = None

    def problem(self, value: JSONValue) -> str | None:
        """The first problem with ``value`` (``<path>: <message>``, bounded), or None when it fits."""
        if self._validator is None:
            return None
        try:
            error = next(iter(self._validator.iter_errors(value)), None)
        except Exception:  # a pathological pattern or ref: judged as fitting
            return None
        if error is None:
            return None
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "(root)"
        return f"{where.lstrip('.')}: {str(error.message)[:200]}"
