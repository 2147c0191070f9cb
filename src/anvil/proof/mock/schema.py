"""JSON Schema helpers for the mock: following ``$ref``, generating values, validating requests.

Refs reach the AIR document's shared schemas (``Document.schemas``) under any of the spellings a
compiled spec uses (``#/components/schemas/X``, ``#/definitions/X``, ``#/$defs/X``); anything else
stays opaque. Every walk is bounded in depth and size, so a hostile or cyclic schema costs little.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from functools import lru_cache
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.patterns import linear_validator, pattern_budget
from anvil.air.value_check import answer_node, walk_pointer
from anvil.air.values import CannotMake, ValueGenerator

__all__ = ["MAX_DEPTH", "SchemaSet", "Validator", "ValueMaker", "answer_schema"]

#: How deep a generated value or a ref chain may go.
MAX_DEPTH: Final = 6
_MAX_PROPERTIES: Final = 64
_MAX_NODES: Final = 2000
_REF_PREFIXES: Final = ("#/components/schemas/", "#/definitions/", "#/$defs/")
#: Keywords whose value maps names to schemas (the names are not keywords).
_NAME_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_MAX_SCHEMA_DEPTH: Final = 64


def answer_schema(schema: JSONValue, depth: int = 0) -> JSONValue:
    """``schema`` with every composition stated as a published output schema states it
    (:func:`anvil.air.value_check.answer_node`): the mock judges its answers as the gateway does.
    Nesting beyond 64 levels is kept as it is (bounded work)."""
    if depth > _MAX_SCHEMA_DEPTH:
        return schema
    if isinstance(schema, list):
        return [answer_schema(item, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: JSONObject = {}
    for key, value in schema.items():
        if key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: answer_schema(item, depth + 1) for name, item in value.items()}
        else:
            out[key] = answer_schema(value, depth + 1)
    return answer_node(out)


@dataclass(frozen=True, slots=True)
class SchemaSet:
    """The shared schemas a ref may name (``Document.schemas``)."""

    schemas: Mapping[str, JSONValue] = field(default_factory=dict)

    def deref(self, schema: JSONValue, depth: int = 0) -> JSONObject | None:
        """``schema`` with its ``$ref`` chain followed (sibling keys kept); None when not an object."""
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < MAX_DEPTH:
            target = self._target(schema["$ref"])
            if not isinstance(target, dict):
                return {k: v for k, v in schema.items() if k != "$ref"}
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings}
            seen += 1
        return schema if isinstance(schema, dict) else None

    def _target(self, ref: str) -> JSONValue:
        """The node a reference names: a shared schema, or a JSON pointer into one
        (``#/components/schemas/Tag/allOf/0``, as real specs share one branch of a composition)."""
        rest = next((ref[len(p) :] for p in _REF_PREFIXES if ref.startswith(p)), None)
        if rest is None:
            return None
        name, *pointer = [part.replace("~1", "/").replace("~0", "~") for part in rest.split("/")]
        return walk_pointer(self.schemas.get(name), pointer)

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
        # An item of one of several shapes has the fields of each; a field two shapes share takes
        # what either allows (``action_type`` is ``script`` in one shape, ``job`` in the other).
        shared: dict[str, list[JSONValue]] = {}
        for keyword in ("oneOf", "anyOf"):
            for branch in resolved.get(keyword) or ():
                if isinstance(branch, dict) and len(out) + len(shared) < _MAX_PROPERTIES:
                    for name, sub in self.properties(branch).items():
                        if name not in out:
                            shared.setdefault(name, []).append(sub)
        for name, subs in shared.items():
            out[name] = subs[0] if len(subs) == 1 else {"anyOf": subs}
        return dict(list(out.items())[:_MAX_PROPERTIES])

    def is_object(self, schema: JSONValue) -> bool:
        """True for an object schema with properties, or a choice (``oneOf``/``anyOf``) of such objects."""
        resolved = self.deref(schema)
        if resolved is None:
            return False
        if self.first_type(resolved) == "object" and self.properties(resolved):
            return True
        for keyword in ("oneOf", "anyOf"):
            branches = [b for b in resolved.get(keyword) or () if isinstance(b, dict) and b.get("type") != "null"]
            if branches and all(self.first_type(b) == "object" and self.properties(b) for b in branches):
                return True
        return False

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
        if isinstance(resolved.get("items"), dict):  # a list of schemas under ``items`` is a tuple of old
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
    """The mock's answers from the one value generator (:mod:`anvil.air.values`): the same seed and calls
    give the same values, and every value validates against the published output schema it was made for.
    """

    def __init__(self, schemas: SchemaSet, seed: int = 0) -> None:
        """Args: schemas: where refs lead; seed: varies generated strings, numbers and uuids."""
        self.schemas = schemas
        self.seed = seed
        self._generator = ValueGenerator(schemas.schemas, seed=seed)

    def value(self, schema: JSONValue, name: str = "value") -> JSONValue:
        """A value that fits ``schema`` (valid declared examples, enums, defaults first); None when none can be."""
        if schema is None:
            return None
        return self._generator.attempt(schema, name=name, direction="response", published=True)

    def fresh(self, schema: JSONValue, name: str) -> JSONValue:
        """A new value for ``schema`` (never a declared example; an id for a new item); None when none can be made."""
        try:
            return self._generator.make(schema, name=name, fresh=True, direction="response", published=True)
        except CannotMake:
            return None

    def fits(self, value: JSONValue, schema: JSONValue) -> bool:
        """True when ``value`` satisfies ``schema`` (refs resolved against the document's schemas)."""
        return self._generator.fits(value, schema)


@lru_cache(maxsize=1)
def _openapi_validator() -> Any:
    """JSON Schema 2020-12 that also reads OpenAPI 3.0's ``nullable: true`` (and ``x-nullable``) as "or
    null" and a list under ``items`` as a tuple: a document's shared schemas are judged as the spec
    means them (and as their published form says), not as plain 2020-12."""
    from jsonschema import validators

    base = linear_validator()  # draft 2020-12 matching patterns in linear time
    checks = base.VALIDATORS

    def or_null(keyword: str) -> Any:
        def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            if instance is None and (schema.get("nullable") is True or schema.get("x-nullable") is True):
                return
            yield from checks[keyword](validator, value, instance, schema)

        return check

    def items(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        # Swagger's (draft 4) tuple form, ``items: [a, b]``: what 2020-12 spells ``prefixItems``.
        keyword = "prefixItems" if isinstance(value, list) else "items"
        yield from checks[keyword](validator, value, instance, schema)

    extend: Any = validators.extend  # untyped in jsonschema
    return extend(base, {"type": or_null("type"), "enum": or_null("enum"), "items": items})


class Validator:
    """A JSON Schema 2020-12 check (OpenAPI's ``nullable`` honoured) that never raises: an unusable
    schema accepts everything."""

    def __init__(self, schema: JSONObject | None, schemas: SchemaSet) -> None:
        """Args: schema: the schema (None accepts everything); schemas: where its refs lead."""
        self._validator: Any = None
        if not schema:
            return
        try:
            self._validator = _openapi_validator()(schemas.root(schema))
        except Exception:  # a spec's schema we cannot judge is not the caller's fault
            self._validator = None

    def problem(self, value: JSONValue) -> str | None:
        """The first problem with ``value`` (``<path>: <message>``, bounded), or None when it fits."""
        if self._validator is None:
            return None
        try:
            with pattern_budget():
                error = next(iter(self._validator.iter_errors(value)), None)
        except Exception:  # a pathological ref: judged as fitting
            return None
        if error is None:
            return None
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "(root)"
        return f"{where.lstrip('.')}: {str(error.message)[:200]}"
