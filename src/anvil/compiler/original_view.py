"""The input schemas as the original compiles them: what its disclosure figures measure (original-core §3.2, §3.7).

AIR's ``disclosureCost`` is a contract value and must be the original's, so it is measured over the
tool the original publishes, whose input schemas the original builds differently from this
compiler (which inlines every reference it can, translates the OpenAPI 3.0 dialect and keeps
recursion under ``$defs``):

* **bundle**: every reference is inlined, then each node with the shape of a named component
  (``#/components/schemas/X``, see :func:`_found_by_shape`) becomes a reference to it again, so
  an inline copy of a component is found as well as a ``$ref`` to it. A shape leaves out the
  node's own ``description``, so two components that differ only there are one shape; of several
  components of one shape, the one named as the node's ``title`` is found, else the name that sorts
  first. A reference with keys of its own is inlined with them (so ``nullable``, ``title``,
  ``default`` or ``deprecated`` beside it make another shape), except that vendor extensions
  (``x-...``) are no schema keywords: beside a reference they leave it the schema it names.
  Anonymous structure nested
  :data:`ANONYMOUS_DEPTH` levels below a schema's root (every object and list counts as a level) is
  cut to a stub. Above that, a node met again (a reference pointing into another schema) reuses
  what it became where it was met at that depth or shallower; every named schema is bundled first,
  in document order;
* **materialize**: an operation's schema follows one named-schema hop: a reference at its top level
  is inlined (its own body, bundled), a reference inside that body becomes a stub naming the
  schema. A component inlined once is reused wherever it appears again in the same schema;
* schemas are kept verbatim otherwise (``nullable``, ``example``, vendor keys, no dialect translation).

:func:`original_view` gives an operation whose params and body carry these schemas, so the
assembled input schema (:func:`anvil.air.inputs.assemble_input_schema`, colliding inputs assembled
as the original assembles them) is the original's. Only the
measurement reads it; what AIR stores and the gateway serves stay this compiler's schemas.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import assemble_input_schema
from anvil.air.model import BodyField, Operation
from anvil.compiler.normalize import projected_fields
from anvil.compiler.schemas import lookup_pointer
from anvil.load.swagger import SHARED_BODY

__all__ = ["ANONYMOUS_DEPTH", "OriginalSchemas", "original_view"]

#: Levels of anonymous structure below a schema's root the original keeps before cutting to a stub.
ANONYMOUS_DEPTH: Final = 6
_COMPONENT_PREFIX: Final = "#/components/schemas/"
_CUT_NOTE: Final = "nested reference truncated by Anvil to keep the schema JSON-safe and bounded"
_MAX_INLINE_CHAIN: Final = 64


#: Keywords that give a schema structure of its own: a named schema with one is found again by its shape.
_STRUCTURE: Final = frozenset(
    {"properties", "additionalProperties", "patternProperties", "items", "enum", "allOf", "anyOf", "oneOf"}
)


def _found_by_shape(body: JSONValue) -> bool:
    """Whether the original recognizes ``body`` (a named schema without its own description) wherever
    its shape recurs.

    A leaf (a scalar schema without an enum, or a bare ``{"type": "object"}``) is not: it stays
    inline wherever it is used, like anonymous structure.
    """
    if not isinstance(body, dict):
        return False
    return any(key in body for key in _STRUCTURE) or (body.get("type") == "object" and len(body) > 1)


def _stub(node: JSONObject) -> JSONObject:
    """The original's stand-in for cut structure: the type (when one string) and a description saying so."""
    stub: JSONObject = {}
    if isinstance(node.get("type"), str):
        stub["type"] = node["type"]
    described = node.get("description")
    stub["description"] = f"{described} ({_CUT_NOTE})" if isinstance(described, str) else _CUT_NOTE
    return stub


def _scalar_key(value: object) -> tuple[str, object]:
    """What tells a scalar's JSON text apart from every other's: its kind and value (a float by its text,
    so ``0.0`` and ``-0.0`` stay apart as JSON writes them)."""
    if value is None or isinstance(value, str | int):  # bool is an int: its kind keeps True apart from 1
        return type(value).__name__, value
    if isinstance(value, float):
        return "float", float.__repr__(value)
    return "str", str(value)


class OriginalSchemas:
    """Schemas of one loaded document as the original bundles and materializes them (module docstring)."""

    def __init__(self, spec: JSONObject) -> None:
        """Args: spec: the loaded document (OpenAPI 3 shape, internal ``$ref``s kept)."""
        self._spec = spec
        components = spec.get("components")
        named = components.get("schemas") if isinstance(components, dict) else None
        self._named: JSONObject = named if isinstance(named, dict) else {}
        self._bundled: dict[str, JSONValue] = {}
        # Source node (by identity) -> (depth, bundled value, the node).
        self._seen: dict[int, tuple[int, JSONValue, JSONValue]] = {}
        # Shape -> name. Several named schemas of one shape (aliases, copies such as OpenAI's Metadata and
        # BetaMetadata) are found as the one whose name is the node's title (OpenAI's Reasoning, titled
        # "Reasoning" like its copy BetaReasoning), else as the one whose name sorts first.
        self._digests: dict[tuple[int, bool], tuple[JSONValue, int]] = {}
        # A shape is a small number: one per distinct structure of (keyword, shape) pairs, so two nodes
        # have one shape exactly when their structures are equal (no text is written or hashed for it).
        self._structures: dict[tuple[object, ...], int] = {}
        self._shapes: dict[int, str] = {}
        self._titled: set[tuple[int, str]] = set()
        for name in sorted(self._named):
            body = self.resolve(self._named[name])
            if isinstance(body, dict) and _found_by_shape({k: v for k, v in body.items() if k != "description"}):
                shape = self._shape(body)
                self._shapes.setdefault(shape, name)
                if body.get("title") == name:
                    self._titled.add((shape, name))

    def materialize(self, schema: JSONValue) -> JSONValue:
        """``schema`` (a source schema node) bundled, then materialized one named-schema hop deep."""
        if not self._bundled:
            for name in self._named:  # the original bundles every named schema first, in document order
                self._bundled_body(name)
        cache: dict[str, tuple[int, JSONValue]] = {}
        return self._resolve(self._bundle(schema, 0, ()), 0, (), cache)

    def resolve(self, node: JSONValue) -> JSONValue:
        """Follow the ``$ref`` chain of a non-schema node (a parameter or a request body)."""
        for _ in range(_MAX_INLINE_CHAIN):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                break
            node = lookup_pointer(self._spec, node["$ref"])
        return node

    # --- bundle ------------------------------------------------------------------------------------------

    def _name(self, ref: str) -> str | None:
        if not ref.startswith(_COMPONENT_PREFIX):
            return None
        name = ref[len(_COMPONENT_PREFIX) :].replace("~1", "/").replace("~0", "~")
        return name if name in self._named else None

    def _bundled_body(self, name: str) -> JSONValue:
        if name not in self._bundled:
            self._bundled[name] = self._bundle(self._named[name], 0, (), defining=name)
        return self._bundled[name]

    def _bundle(self, node: JSONValue, depth: int, inlining: tuple[str, ...], defining: str | None = None) -> JSONValue:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                target = lookup_pointer(self._spec, ref)
                if not isinstance(target, dict) or ref in inlining or len(inlining) >= _MAX_INLINE_CHAIN:
                    return dict(node)  # dangling or cyclic: left as the source wrote it
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                if any(key.startswith("x-") for key in siblings):
                    # Vendor extensions are no schema keywords: a reference whose other keys of its own
                    # are only its description is the schema it names (Adyen writes {"$ref": ...,
                    # "description": ..., "x-addedInVersion": "40"} on most of its request fields).
                    kept = {k: v for k, v in siblings.items() if not k.startswith("x-")}
                    named = self._found_as({**kept, **{k: v for k, v in target.items() if k not in kept}}, defining)
                    if named is not None:
                        return named
                # The original inlines every reference, then finds named schemas again by their shape.
                # Its own keys come first and win (OpenAI: {"$ref": ..., "nullable": true}).
                inlined = {**siblings, **{k: v for k, v in target.items() if k not in siblings}} if siblings else target
                return self._bundle(inlined, depth, (*inlining, ref), defining)
            named = self._found_as(node, defining)
            if named is not None:
                return named
        if not isinstance(node, dict | list):
            return node
        if depth >= ANONYMOUS_DEPTH:
            return _stub(node) if isinstance(node, dict) else []
        # A node met again (a reference points into it) reuses what it became where it was met at this
        # depth or shallower, as the original reuses it: named schemas are bundled first, in document order.
        seen = self._seen.get(id(node))
        if seen is not None and seen[2] is node and seen[0] <= depth:
            return seen[1]
        out: JSONValue
        if isinstance(node, dict):
            out = {key: self._bundle(value, depth + 1, inlining) for key, value in node.items()}
        else:
            out = [self._bundle(item, depth + 1, inlining) for item in node]
        self._seen[id(node)] = (depth, out, node)  # the node is kept, so its id is not reused
        return out

    def _found_as(self, node: JSONObject, defining: str | None) -> JSONObject | None:
        """A reference to the named schema of ``node``'s shape (of several, the one named as its title),
        None when there is none or it is the schema being defined."""
        shape, title = self._shape(node), node.get("title")
        same = title if isinstance(title, str) and (shape, title) in self._titled else self._shapes.get(shape)
        if same is None or same == defining:
            return None
        return {"$ref": _COMPONENT_PREFIX + same.replace("~", "~0").replace("/", "~1")}

    def _shape(self, node: JSONValue, following: tuple[str, ...] = (), root: bool = True) -> int:
        """The shape of ``node`` with every reference inlined (a cycle keeps its reference), independent of
        key order, and of the node's own ``description`` (an OpenAPI 3.1 reference may carry its own):
        equal for a ``$ref`` to a schema and an inline copy of it."""
        if not isinstance(node, dict | list):
            return self._structures.setdefault(("value", *_scalar_key(node)), len(self._structures))
        memo = self._digests.get((id(node), root))
        if memo is not None and memo[0] is node:
            return memo[1]
        structure: tuple[object, ...]
        if isinstance(node, dict):
            ref = node.get("$ref")
            target = lookup_pointer(self._spec, ref) if isinstance(ref, str) else None
            if isinstance(ref, str) and isinstance(target, dict) and ref not in following:
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                digest = self._shape({**target, **siblings} if siblings else target, (*following, ref), root)
                self._digests[(id(node), root)] = (node, digest)
                return digest
            shape = self._shape
            if root and "description" in node:
                pairs = [(key, shape(value, following, False)) for key, value in node.items() if key != "description"]
            else:
                pairs = [(key, shape(value, following, False)) for key, value in node.items()]
            pairs.sort()
            structure = ("object", *pairs)
        else:
            structure = ("array", *[self._shape(item, following, False) for item in node])
        digest = self._structures.setdefault(structure, len(self._structures))
        self._digests[(id(node), root)] = (node, digest)  # the node is kept, so its id is not reused
        return digest

    # --- materialize -------------------------------------------------------------------------------------

    def _resolve(
        self, node: JSONValue, hops: int, names: tuple[str, ...], cache: dict[str, tuple[int, JSONValue]]
    ) -> JSONValue:
        if isinstance(node, dict):
            ref = node.get("$ref")
            name = self._name(ref) if isinstance(ref, str) else None
            if isinstance(ref, str):
                if name is None:
                    return node
                cached = cache.get(name)
                if cached is not None and cached[0] <= hops:
                    return cached[1]
                if name in names or hops >= 1:
                    return self._hop_stub(name)
                value = self._resolve(self._bundled_body(name), hops + 1, (*names, name), cache)
                cache[name] = (hops, value)
                return value
            return {key: self._resolve(value, hops, names, cache) for key, value in node.items()}
        if isinstance(node, list):
            return [self._resolve(item, hops, names, cache) for item in node]
        return node

    def _hop_stub(self, name: str) -> JSONObject:
        target = self.resolve(self._named[name])
        kind = target.get("type") if isinstance(target, dict) else None
        described = (
            f"A '{name}' object; nested one level deep to keep this schema a bounded size — "
            f"see the '{name}' schema for its full fields."
        )
        return _stub({"type": kind, "description": described} if isinstance(kind, str) else {"description": described})


def _raw_operation(spec: JSONObject, op: Operation) -> tuple[JSONObject, JSONObject] | None:
    paths = spec.get("paths")
    path, method = op.source_ref.path, op.source_ref.method
    item = paths.get(path) if isinstance(paths, dict) and path else None
    raw = item.get(method) if isinstance(item, dict) and method else None
    return (item, raw) if isinstance(item, dict) and isinstance(raw, dict) else None


def _raw_params(schemas: OriginalSchemas, item: JSONObject, raw: JSONObject) -> dict[tuple[str, str], JSONObject]:
    merged: dict[tuple[str, str], JSONObject] = {}
    for group in (item.get("parameters"), raw.get("parameters")):
        for entry in group if isinstance(group, list) else ():
            param = schemas.resolve(entry)
            if isinstance(param, dict) and isinstance(param.get("name"), str) and isinstance(param.get("in"), str):
                merged[(param["name"], param["in"])] = param
    return merged


def _param_schema(schemas: OriginalSchemas, param: JSONObject) -> JSONValue:
    raw_schema = param.get("schema")
    if raw_schema is None and isinstance(param.get("content"), dict):
        media = next(iter(param["content"].values()), None)
        raw_schema = media.get("schema") if isinstance(media, dict) else None
    return schemas.materialize(raw_schema) if raw_schema is not None else {"type": "string"}


def original_view(
    op: Operation, spec: JSONObject, schemas: OriginalSchemas, named: Operation | None = None
) -> Operation:
    """``op`` with its params' and body's schemas as the original compiles them (module docstring).

    Everything else (requiredness, safety keys, effect) is ``op``'s own, and its input schema is
    assembled again from these schemas as the original assembles it.

    Args:
        op: the compiled operation.
        spec: the loaded document it was compiled from.
        schemas: that document's :class:`OriginalSchemas`.
        named: ``op`` before its colliding inputs were given names of their own
            (:func:`anvil.compiler.inputs.disambiguate_inputs`): the original publishes them under
            one name, the later input's schema in the first one's place. None when none collided.

    An operation whose source is not found in ``spec`` is returned as is.
    """
    found = _raw_operation(spec, op)
    if found is None:
        return op
    if named is not None:
        op = _names_of(op, named)
    item, raw = found
    raw_params = _raw_params(schemas, item, raw)
    params = tuple(
        dataclasses.replace(p, schema=_as_object(_param_schema(schemas, raw_params[(p.name, p.in_)])))
        if (p.name, p.in_) in raw_params
        else p
        for p in op.input.params
    )
    body = op.input.body
    raw_body = schemas.resolve(raw.get("requestBody"))
    if isinstance(raw_body, dict) and raw_body.get(SHARED_BODY) is True:
        body = None  # the original's Swagger converter leaves a path item's shared body parameter out
    if body is not None:
        content = raw_body.get("content") if isinstance(raw_body, dict) else None
        media = content.get(body.content_type) if isinstance(content, dict) else None
        if isinstance(media, dict) and media.get("schema") is not None:
            schema = _as_object(schemas.materialize(media["schema"]))
            fields = projected_fields(schema)
            if fields is None:
                body = dataclasses.replace(body, schema=schema, projection="whole", fields=())
            else:
                body = dataclasses.replace(
                    body, schema=schema, projection="fields", fields=_fields(body.fields, fields)
                )
    viewed = dataclasses.replace(op, input=dataclasses.replace(op.input, params=params, body=body, schema=None))
    schema = assemble_input_schema(viewed, later_wins=True)
    return dataclasses.replace(viewed, input=dataclasses.replace(viewed.input, schema=schema))


def _names_of(op: Operation, named: Operation) -> Operation:
    """``op`` with the agent names its inputs had in ``named``."""
    params = op.input.params
    if len(params) == len(named.input.params):
        pairs = zip(params, named.input.params, strict=True)
        params = tuple(dataclasses.replace(p, agent_name=before.agent_name) for p, before in pairs)
    body, before_body = op.input.body, named.input.body
    if body is not None and before_body is not None and len(body.fields) == len(before_body.fields):
        matched = zip(body.fields, before_body.fields, strict=True)
        fields = tuple(dataclasses.replace(f, agent_name=before.agent_name) for f, before in matched)
        body = dataclasses.replace(body, fields=fields)
    return dataclasses.replace(op, input=dataclasses.replace(op.input, params=params, body=body))


def _as_object(schema: JSONValue) -> JSONObject:
    return schema if isinstance(schema, dict) else {}


def _fields(ours: tuple[BodyField, ...], theirs: tuple[BodyField, ...]) -> tuple[BodyField, ...]:
    """The original's fields, keeping the agent names and aliases a manifest gave ours."""
    named: dict[str, Any] = {f.name: f for f in ours}
    return tuple(
        dataclasses.replace(named[f.name], schema=f.schema, required=f.required) if f.name in named else f
        for f in theirs
    )
