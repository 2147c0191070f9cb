"""Materialize source schemas into self-contained JSON Schema 2020-12 (what input schemas publish).

The loader hands over one document whose ``$ref``s are all internal (``#/...``). An input schema must
stand alone (it is an MCP tool schema), so :class:`SchemaMaterializer` inlines referenced schemas. A
referenced schema that is recursive, or whose inlined form would exceed a size budget, is kept as
``{"$ref": "#/$defs/<Name>"}`` with its definition under the root ``$defs``. Inlined components are
memoized, so a component used by hundreds of operations is expanded once.

OpenAPI 3.0 dialect is translated on the way (``nullable``, boolean ``exclusiveMinimum``, ``type:
file``) and keywords that would make the schema invalid under 2020-12 (a ``required: true`` inside a
property, a pattern Python cannot compile, a non-integer ``maxLength``...) are dropped: the upstream
still validates what it receives, so dropping an unusable constraint only loosens a pre-check.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Final

from anvil._types import JSONObject, JSONValue

__all__ = ["DEFAULT_BUDGET", "RefCloser", "SchemaMaterializer", "def_name", "lookup_pointer"]

#: Inline a referenced schema only while its expanded form stays under this many JSON nodes.
DEFAULT_BUDGET: Final = 4000

_SCHEMA_VALUED: Final = frozenset(
    {"additionalProperties", "not", "contains", "propertyNames", "if", "then", "else", "unevaluatedItems"}
    | {"unevaluatedProperties", "additionalItems", "contentSchema", "items"}
)
_SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "dependentSchemas"})
_DROPPED: Final = frozenset(
    {"$id", "$schema", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$recursiveRef", "$dynamicRef"}
    | {"$defs", "definitions", "$vocabulary", "id"}
)
_TYPES: Final = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
_COUNTS: Final = frozenset(
    {"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains", "minContains"}
)
_NUMBERS: Final = frozenset({"minimum", "maximum", "multipleOf"})
_BOOLEANS: Final = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})
_STRINGS: Final = frozenset({"title", "description", "format", "contentEncoding", "contentMediaType"})
_COMPONENT_PREFIX: Final = "#/components/schemas/"


def lookup_pointer(document: JSONValue, ref: str) -> JSONValue:
    """The node an internal ``#/...`` reference names, or None when it names nothing."""
    if not ref.startswith("#"):
        return None
    node = document
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            if part not in node:
                return None
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def def_name(ref: str) -> str:
    """The ``$defs`` name for a reference: the component name, or the pointer's segments joined."""
    if ref.startswith(_COMPONENT_PREFIX) and "/" not in ref[len(_COMPONENT_PREFIX) :]:
        return ref[len(_COMPONENT_PREFIX) :].replace("~1", "/").replace("~0", "~")
    return "ptr_" + "__".join(part for part in ref[2:].split("/") if part)


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


class SchemaMaterializer:
    """Turns schema nodes of one document into self-contained schemas; memoized per document."""

    def __init__(self, document: JSONObject, *, budget: int = DEFAULT_BUDGET) -> None:
        self._document = document
        self._budget = budget
        self._edges: dict[str, tuple[str, ...]] = {}
        self._index: dict[str, int] = {}
        self._recursive: set[str] = set()
        self._inlined: dict[str, tuple[JSONValue, int, frozenset[str]]] = {}
        self._bodies: dict[str, tuple[JSONValue, frozenset[str]]] = {}

    # --- public -----------------------------------------------------------------------------------------

    def materialize(self, node: JSONValue) -> JSONObject:
        """A self-contained copy of schema ``node`` (root ``$defs`` only when needed).

        Never raises for odd input: a non-object schema becomes ``{}`` (anything), a dangling
        reference becomes ``{}``.
        """
        if not isinstance(node, dict):
            return {} if node is not False else {"not": {}}
        needed: set[str] = set()
        out, _size = self._walk(node, needed)
        result: JSONObject = dict(out) if isinstance(out, dict) else {}
        defs = self._closure(needed)
        if defs:
            result["$defs"] = defs
        return result

    def resolve(self, node: JSONValue) -> JSONValue:
        """Follow ``$ref`` chains of a (non-schema) node such as a parameter or a response."""
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
            node = lookup_pointer(self._document, node["$ref"])
            seen += 1
        return node

    # --- reference graph ------------------------------------------------------------------------------

    def _refs_in(self, node: JSONValue, out: list[str]) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                if ref.startswith("#/") and ref not in out:
                    out.append(ref)
            for key, value in node.items():
                if key in _SCHEMA_VALUED or key in _SCHEMA_LISTS:
                    self._refs_in(value, out)
                elif key in _SCHEMA_MAPS and isinstance(value, dict):
                    for item in value.values():
                        self._refs_in(item, out)
        elif isinstance(node, list):
            for item in node:
                self._refs_in(item, out)

    def _edges_of(self, ref: str) -> tuple[str, ...]:
        edges = self._edges.get(ref)
        if edges is None:
            found: list[str] = []
            self._refs_in(lookup_pointer(self._document, ref), found)
            edges = tuple(found)
            self._edges[ref] = edges
        return edges

    def _analyze(self, root: str) -> None:
        """Tarjan's SCC from ``root`` (iterative); marks every reference on a cycle recursive."""
        if root in self._index:
            return
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            ref, child = work.pop()
            if child == 0:
                self._index[ref] = low[ref] = len(self._index)
                stack.append(ref)
                on_stack.add(ref)
            edges = self._edges_of(ref)
            if child > 0:
                low[ref] = min(low[ref], low[edges[child - 1]])
            pushed = False
            while child < len(edges):
                target = edges[child]
                child += 1
                if target not in self._index:
                    work.append((ref, child))
                    work.append((target, 0))
                    pushed = True
                    break
                if target in on_stack:
                    low[ref] = min(low[ref], self._index[target])
            if pushed:
                continue
            if low[ref] == self._index[ref]:
                members: list[str] = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    members.append(item)
                    if item == ref:
                        break
                if len(members) > 1 or ref in edges:
                    self._recursive.update(members)

    # --- inlining --------------------------------------------------------------------------------------

    def _is_def(self, ref: str) -> bool:
        self._analyze(ref)
        if ref in self._recursive:
            return True
        return self._inline_ref(ref)[1] > self._budget

    def _inline_ref(self, ref: str) -> tuple[JSONValue, int, frozenset[str]]:
        memo = self._inlined.get(ref)
        if memo is None:
            needed: set[str] = set()
            target = lookup_pointer(self._document, ref)
            node, size = self._walk(target, needed) if isinstance(target, dict) else ({}, 1)
            memo = (node, size, frozenset(needed))
            self._inlined[ref] = memo
        return memo

    def _def_body(self, ref: str) -> tuple[JSONValue, frozenset[str]]:
        memo = self._bodies.get(ref)
        if memo is None:
            needed: set[str] = set()
            target = lookup_pointer(self._document, ref)
            node, _size = self._walk(target, needed) if isinstance(target, dict) else ({}, 1)
            memo = (node, frozenset(needed))
            self._bodies[ref] = memo
        return memo

    def _closure(self, needed: set[str]) -> JSONObject:
        defs: dict[str, JSONValue] = {}
        pending = sorted(needed)
        done: set[str] = set()
        while pending:
            ref = pending.pop()
            if ref in done:
                continue
            done.add(ref)
            body, more = self._def_body(ref)
            defs[def_name(ref)] = body
            pending.extend(sorted(more - done))
        return {name: defs[name] for name in sorted(defs)}

    def _walk(self, node: JSONValue, needed: set[str]) -> tuple[JSONValue, int]:
        """Copy a schema node, inlining or def-referencing every ``$ref``; returns (copy, node count)."""
        if isinstance(node, bool):
            return node, 1
        if not isinstance(node, dict):
            return {}, 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._walk_ref(ref, node, needed)
        out: dict[str, Any] = {}
        size = 1
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key in _SCHEMA_VALUED:
                if key == "items" and isinstance(value, list):
                    out["prefixItems"], extra = self._walk_list(value, needed)
                else:
                    out[key], extra = self._walk(value, needed)
            elif key in _SCHEMA_LISTS:
                if not isinstance(value, list):
                    continue
                out[key], extra = self._walk_list(value, needed)
            elif key in _SCHEMA_MAPS:
                if not isinstance(value, dict):
                    continue
                mapped: dict[str, Any] = {}
                extra = 0
                for name, item in value.items():
                    mapped[name], item_size = self._walk(item, needed)
                    extra += item_size
                out[key] = mapped
            else:
                out[key] = value
                extra = 1
            size += extra
        return _dialect(out), size

    def _walk_list(self, items: list[Any], needed: set[str]) -> tuple[list[Any], int]:
        out: list[Any] = []
        size = 0
        for item in items:
            walked, item_size = self._walk(item, needed)
            out.append(walked)
            size += item_size
        return out, size

    def _walk_ref(self, ref: str, node: JSONObject, needed: set[str]) -> tuple[JSONValue, int]:
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not ref.startswith("#/") or lookup_pointer(self._document, ref) is None:
            base: JSONValue = {}
            size = 1
        elif self._is_def(ref):
            needed.add(ref)
            base = {"$ref": "#/$defs/" + _escape(def_name(ref))}
            size = 1
        else:
            base, size, inner = self._inline_ref(ref)
            needed.update(inner)
        if not siblings:
            return base, size
        extra, extra_size = self._walk(siblings, needed)
        if isinstance(base, dict) and isinstance(extra, dict):
            return {**base, **extra}, size + extra_size
        return base, size


def _dialect(schema: dict[str, Any]) -> dict[str, Any]:
    """Translate OpenAPI 3.0 keywords to 2020-12 and drop keywords that would invalidate the schema."""
    kind = schema.get("type")
    if kind == "file":
        schema["type"] = "string"
        schema.setdefault("format", "binary")
    elif isinstance(kind, list):
        kinds = ["string" if k == "file" else k for k in kind if k in _TYPES or k == "file"]
        if kinds:
            schema["type"] = list(dict.fromkeys(kinds))
        else:
            del schema["type"]
    elif kind is not None and kind not in _TYPES:
        del schema["type"]
    nullable = schema.pop("nullable", None)
    if nullable is True:
        _allow_null(schema)
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(bound)
        if isinstance(flag, bool):
            del schema[bound]
            if flag and _is_number(schema.get(limit)):
                schema[bound] = schema.pop(limit)
        elif flag is not None and not _is_number(flag):
            del schema[bound]
    for key in list(schema):
        value = schema[key]
        if (
            (key in _COUNTS and not _is_count(value))
            or (key in _NUMBERS and not _is_number(value))
            or (key in _BOOLEANS and not isinstance(value, bool))
            or (key in _STRINGS and not isinstance(value, str))
        ):
            del schema[key]
        elif key in _COUNTS and isinstance(value, float):
            schema[key] = int(value)
    if "multipleOf" in schema and schema["multipleOf"] <= 0:
        del schema["multipleOf"]
    required = schema.get("required")
    if required is not None:
        if isinstance(required, list) and all(isinstance(r, str) for r in required):
            schema["required"] = list(dict.fromkeys(required))
        else:
            del schema["required"]
    if "enum" in schema and not isinstance(schema["enum"], list):
        del schema["enum"]
    if "examples" in schema and not isinstance(schema["examples"], list):
        del schema["examples"]
    pattern = schema.get("pattern")
    if pattern is not None and not _compiles(pattern):
        del schema["pattern"]
    return schema


def _allow_null(schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        schema["type"] = [*kind, "null"]
    enum = schema.get("enum")
    if isinstance(enum, list) and None not in enum:
        schema["enum"] = [*enum, None]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return _is_number(value) and float(value) >= 0 and float(value).is_integer()  # type: ignore[arg-type]


def _compiles(pattern: object) -> bool:
    return isinstance(pattern, str) and _compiles_text(pattern)


@lru_cache(maxsize=4096)
def _compiles_text(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


_NAMED_COMPONENT: Final = re.compile(r"^#/components/schemas/[^/]+$")
_MAX_CLOSE_DEPTH: Final = 24


class RefCloser:
    """Makes every reference of a schema name a whole component (``#/components/schemas/X``).

    Specs also point into a component (``#/components/schemas/Tag/allOf/0``) or elsewhere
    (``#/components/parameters/state/schema``, ``#/components/responses/R/content/...``). A published
    output schema resolves only whole components, so such a reference would read as "anything": inside
    a ``oneOf`` that makes every answer match two branches and fail. Each one is replaced by a copy of
    what it names (its own references closed the same way); one that names nothing, or only itself,
    stays as it is. Copies are memoized per reference.
    """

    def __init__(self, spec: JSONObject) -> None:
        """Args: spec: the loaded document every ``#/...`` reference points into."""
        self._spec = spec
        self._memo: dict[str, JSONValue] = {}

    def close(self, node: JSONValue, open_refs: tuple[str, ...] = ()) -> JSONValue:
        """A copy of ``node`` whose references each name a whole component (see the class docstring)."""
        if isinstance(node, list):
            return [self.close(item, open_refs) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and not _NAMED_COMPONENT.match(ref) and ref.startswith("#/"):
            if ref in open_refs or len(open_refs) >= _MAX_CLOSE_DEPTH:
                return node
            if ref not in self._memo:
                target = lookup_pointer(self._spec, ref)
                closed = self.close(target, (*open_refs, ref)) if isinstance(target, dict | bool) else None
                self._memo[ref] = closed
            inlined = self._memo[ref]
            if inlined is None:
                return node
            siblings = {key: self.close(value, open_refs) for key, value in node.items() if key != "$ref"}
            if not siblings:
                return inlined
            return {**inlined, **siblings} if isinstance(inlined, dict) else {"allOf": [inlined], **siblings}
        return {key: self.close(value, open_refs) for key, value in node.items()}

    def components(self) -> JSONObject:
        """The spec's ``components.schemas``, each closed."""
        components = self._spec.get("components")
        schemas = components.get("schemas") if isinstance(components, dict) else None
        if not isinstance(schemas, dict):
            return {}
        return {name: self.close(schema) for name, schema in schemas.items()}
