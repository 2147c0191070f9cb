"""Merging a multi-file spec into one document whose every ``$ref`` is internal.

One structure-aware walk over the entry document (OpenAPI 3.x or Swagger 2.0 shape) does all of it:

* a reference to a *schema* in another file (or inside another file) hoists that schema into the entry's
  schema section (``components.schemas`` or ``definitions``) under a deterministic unique name and
  becomes ``#/components/schemas/<name>``; hoisting is keyed by (file, pointer), so cycles stay refs;
* a reference to anything else in another file (path item, parameter, response, request body, example,
  extension content...) is replaced by the referenced object, walked once in its own file's context and
  shared between the places that use it; a cycle through such objects is reported, never followed;
* references inside the entry file are kept and checked once the walk is done: a dangling one is
  reported and dropped (its object keeps any sibling keys), so later stages never meet one;
* values that are data, not structure (``example``, ``default``, ``enum``, ``const``...), are not
  walked: a ``$ref`` key there is literal data.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Final, TypeAlias

from anvil._types import JSONObject, JSONValue
from anvil.diagnostics import Diagnostic, diagnostic
from anvil.load.parse import ParseFailure
from anvil.load.refs import MISSING, Resolver, escape_token, follow, join_pointer
from anvil.load.sources import SourceSet, classify_ref

__all__ = ["METHODS", "bundle_document"]

#: HTTP methods a path item may declare (OpenAPI 3 and Swagger 2).
METHODS: Final = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})

_SCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE: Final = (
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "contentSchema",
)
_SCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
_NAME_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")
_FILE_LIKE: Final = re.compile(r"\.(?:ya?ml|json)(?:#|$)", re.IGNORECASE)

# A location: (parent location, token), built lazily so walking costs no string work.
_Loc: TypeAlias = "tuple[_Loc, str] | None"
_Key: TypeAlias = tuple[str, tuple[str, ...]]
_Walker: TypeAlias = Callable[[JSONValue, str, _Loc], JSONValue]


def _tokens(loc: _Loc) -> list[str]:
    out: list[str] = []
    while loc is not None:
        loc, token = loc
        out.append(token)
    out.reverse()
    return out


def _loc_of(tokens: tuple[str, ...]) -> _Loc:
    loc: _Loc = None
    for token in tokens:
        loc = (loc, token)
    return loc


def _without_ref(node: JSONObject) -> JSONObject:
    return {key: value for key, value in node.items() if key != "$ref"}


class _Bundler:
    """One merge of one spec (see the module docstring)."""

    def __init__(self, sources: SourceSet, entry: str, document: JSONObject, schema_path: tuple[str, ...]) -> None:
        self.sources = sources
        self.entry = entry
        self.doc = document
        self.schema_path = schema_path
        self.schema_prefix = "#" + join_pointer(schema_path) + "/"
        self.hoisted: dict[_Key, str] = {}
        self.slots: dict[str, _Key] = {}
        self.inlined: dict[_Key, JSONValue] = {}
        self.inlining: set[_Key] = set()
        self.walked: set[int] = set()
        self.replaced: dict[int, tuple[JSONObject, JSONValue]] = {}
        self.sites: list[tuple[JSONObject, str, _Loc]] = []
        self.diagnostics: list[Diagnostic] = []
        self.kinds: dict[str, _Walker] = {
            "schema": self.schema,
            "parameter": self.parameter,
            "header": self.parameter,
            "response": self.response,
            "requestBody": self.request_body,
            "example": self.example,
            "pathItem": self.path_item,
            "callback": self.callback,
            "operation": self.operation,
            "mediaType": self.media_type,
            "encoding": self.encoding,
            "any": self.any,
        }

    # --- reporting ------------------------------------------------------------------------------

    def report(
        self, code: str, message: str, file: str, loc: _Loc, *, warning: bool = False, hint: str | None = None
    ) -> None:
        line, column, pointer = self.sources.where(file, _tokens(loc))
        self.diagnostics.append(
            diagnostic(
                code,
                message,
                severity="warning" if warning else None,
                file=file,
                line=line,
                column=column,
                pointer=pointer,
                hint=hint,
            )
        )

    # --- references -----------------------------------------------------------------------------

    def ref(self, node: JSONObject, kind: str, file: str, loc: _Loc) -> JSONValue:
        """Handle the reference object ``node`` met where a ``kind`` is expected."""
        done = self.replaced.get(id(node))
        if done is not None:
            return done[1]
        result = self._ref(node, kind, file, loc)
        self.replaced[id(node)] = (node, result)
        return result

    def _ref(self, node: JSONObject, kind: str, file: str, loc: _Loc) -> JSONValue:
        ref = node["$ref"]
        here: _Loc = (loc, "$ref")
        if not isinstance(ref, str):
            self.report("source/ref_invalid", f"$ref must be a string, not {type(ref).__name__}", file, here)
            return _without_ref(node)
        target = classify_ref(ref, file)
        if target.kind == "external":
            self.report(
                "source/external_ref",
                f"$ref {ref!r} points at a URL; it is not fetched",
                file,
                here,
                hint="Download the referenced file next to the spec and refer to it by a relative path.",
            )
            return _without_ref(node)
        if target.kind == "escape":
            self.report(
                "source/path_escape",
                f"$ref {ref!r} points outside the spec's folder",
                file,
                here,
                hint="Load the spec with a root folder that holds every file it refers to.",
            )
            return _without_ref(node)
        if target.kind == "invalid":
            self.report("source/ref_invalid", f"$ref {ref!r} has a fragment that is not a JSON pointer", file, here)
            return _without_ref(node)
        if target.file == self.entry:
            if file != self.entry:
                node["$ref"] = "#" + join_pointer(target.tokens)
            self.sites.append((node, file, here))
            return node
        key: _Key = (target.file, target.tokens)
        if kind == "schema":
            name = self.hoist(key, ref, file, here)
            if name is None:
                return _without_ref(node)
            node["$ref"] = self.schema_prefix + escape_token(name)
            return node
        value = self.inline(key, kind, ref, file, here)
        if value is MISSING:
            return _without_ref(node)
        if len(node) > 1 and isinstance(value, dict):
            return {**value, **_without_ref(node)}
        return value

    def target(self, key: _Key, ref: str, file: str, loc: _Loc) -> JSONValue:
        """The node ``key`` names, or :data:`MISSING` (reported at the referring site)."""
        source = self.sources.read(key[0])
        if source is None:
            refusal = self.sources.refusals.get(key[0])
            if refusal is not None:
                self.report(refusal.code, f"$ref {ref!r}: file {key[0]!r} was not read: {refusal.reason}", file, loc)
            else:
                self.report("source/ref_missing", f"$ref {ref!r}: file {key[0]!r} cannot be read", file, loc)
            return MISSING
        if isinstance(source.parsed, ParseFailure):
            return MISSING
        value = follow(source.value, key[1])
        if value is MISSING:
            self.report("source/ref_missing", f"$ref {ref!r} names nothing in {key[0]!r}", file, loc)
        return value

    def hoist(self, key: _Key, ref: str, file: str, loc: _Loc) -> str | None:
        """The schema-section name of the schema ``key`` names, hoisting (and walking) it on first use."""
        name = self.hoisted.get(key)
        if name is not None:
            return name
        value = self.target(key, ref, file, loc)
        if value is MISSING:
            return None
        name = self._unique_name(key)
        self.hoisted[key] = name
        section = self._section()
        section[name] = value
        section[name] = self.schema(value, key[0], _loc_of(key[1]))
        return name

    def inline(self, key: _Key, kind: str, ref: str, file: str, loc: _Loc) -> JSONValue:
        """The object ``key`` names, walked once as ``kind`` in its own file; :data:`MISSING` on failure."""
        if key in self.inlined:
            return self.inlined[key]
        if key in self.inlining:
            self.report(
                "source/ref_invalid",
                f"$ref {ref!r} is circular through objects that are not schemas; it cannot be inlined",
                file,
                loc,
                warning=kind == "any",
            )
            return MISSING
        value = self.target(key, ref, file, loc)
        if value is MISSING:
            return MISSING
        self.inlining.add(key)
        result = self.kinds[kind](value, key[0], _loc_of(key[1]))
        self.inlining.discard(key)
        self.inlined[key] = result
        return result

    def _section(self) -> JSONObject:
        container = self.doc
        for part in self.schema_path:
            inner = container.get(part)
            if not isinstance(inner, dict):
                inner = {}
                container[part] = inner
            container = inner
        return container

    def _unique_name(self, key: _Key) -> str:
        file, tokens = key
        stem = posixpath.splitext(posixpath.basename(file))[0]
        parent = posixpath.basename(posixpath.dirname(file))
        base = tokens[-1] if tokens else stem
        candidates = [base]
        if tokens:
            candidates.append(f"{stem}_{base}")
        if parent:
            candidates.append(f"{parent}_{candidates[-1]}")
        taken = self._section()
        cleaned = [_NAME_UNSAFE.sub("_", candidate).strip("_") or "schema" for candidate in candidates]
        for candidate in cleaned:
            if candidate not in taken and candidate not in self.slots:
                return candidate
        number = 2
        while f"{cleaned[0]}_{number}" in taken or f"{cleaned[0]}_{number}" in self.slots:
            number += 1
        return f"{cleaned[0]}_{number}"

    def reserve_slots(self) -> None:
        """Let ``components.schemas.X: {$ref: x.yaml}`` in the entry hoist ``x.yaml`` under the name ``X``."""
        section = follow(self.doc, self.schema_path)
        if not isinstance(section, dict):
            return
        for name, node in section.items():
            if isinstance(node, dict) and len(node) == 1 and isinstance(node.get("$ref"), str):
                target = classify_ref(node["$ref"], self.entry)
                if target.kind == "file" and target.file != self.entry:
                    key: _Key = (target.file, target.tokens)
                    if key not in self.hoisted:
                        self.hoisted[key] = name
                        self.slots[name] = key

    # --- the structure ------------------------------------------------------------------------------

    def _enter(self, node: JSONValue) -> bool:
        """True the first time a container is walked (aliases and shared objects are walked once)."""
        marker = id(node)
        if marker in self.walked:
            return False
        self.walked.add(marker)
        return True

    def _map(self, node: JSONValue, file: str, loc: _Loc, walk: _Walker, *, extensions: bool = True) -> None:
        if isinstance(node, dict) and self._enter(node):
            for name, value in node.items():
                if isinstance(value, (dict, list)):
                    walker = self.any if extensions and name.startswith("x-") else walk
                    new = walker(value, file, (loc, name))
                    if new is not value:
                        node[name] = new

    def _list(self, node: JSONValue, file: str, loc: _Loc, walk: _Walker) -> None:
        if isinstance(node, list) and self._enter(node):
            for index, value in enumerate(node):
                if isinstance(value, (dict, list)):
                    new = walk(value, file, (loc, str(index)))
                    if new is not value:
                        node[index] = new

    def _fields(self, node: JSONObject, file: str, loc: _Loc, table: dict[str, _Walker], *, open_: bool) -> None:
        """Walk ``node``'s fields by ``table``; other fields are walked as :meth:`any` when ``open_`` (or
        when they are extensions), else skipped. Hoisting may add fields to the root, hence the copy."""
        for name, value in list(node.items()):
            if not isinstance(value, (dict, list)):
                continue
            walker = table.get(name)
            if walker is None:
                if not (open_ or name.startswith("x-")):
                    continue
                walker = self.any
            new = walker(value, file, (loc, name))
            if new is not value:
                node[name] = new

    def _mapper(self, walk: _Walker) -> _Walker:
        """A walker for a map of ``walk``-things; the map itself may be a reference (inlined as a map)."""
        kind = f"map:{walk.__name__}"

        def walk_map(node: JSONValue, file: str, loc: _Loc) -> JSONValue:
            if isinstance(node, dict) and isinstance(node.get("$ref"), str):
                return self.ref(node, kind, file, loc)
            self._map(node, file, loc, walk)
            return node

        self.kinds[kind] = walk_map
        return walk_map

    def _lister(self, walk: _Walker) -> _Walker:
        def walk_list(node: JSONValue, file: str, loc: _Loc) -> JSONValue:
            self._list(node, file, loc, walk)
            return node

        return walk_list

    def _tables(self) -> None:
        parameters = self._lister(self.parameter)
        self.t_root: dict[str, _Walker] = {
            "paths": self._mapper(self.path_item),
            "webhooks": self._mapper(self.path_item),
            "components": self.components,
            "definitions": self.schema_section,
            "parameters": self._mapper(self.parameter),
            "responses": self._mapper(self.response),
        }
        self.t_components: dict[str, _Walker] = {
            "schemas": self.schema_section,
            "parameters": self._mapper(self.parameter),
            "headers": self._mapper(self.parameter),
            "responses": self._mapper(self.response),
            "requestBodies": self._mapper(self.request_body),
            "examples": self._mapper(self.example),
            "callbacks": self._mapper(self.callback),
            "pathItems": self._mapper(self.path_item),
        }
        self.t_path_item: dict[str, _Walker] = dict.fromkeys(METHODS, self.operation)
        self.t_path_item["parameters"] = parameters
        self.t_operation: dict[str, _Walker] = {
            "parameters": parameters,
            "requestBody": self.request_body,
            "responses": self._mapper(self.response),
            "callbacks": self._mapper(self.callback),
        }
        self.t_parameter: dict[str, _Walker] = {
            "schema": self.schema,
            "items": self.schema,
            "content": self._mapper(self.media_type),
            "examples": self._mapper(self.example),
        }
        self.t_request_body: dict[str, _Walker] = {"content": self._mapper(self.media_type)}
        self.t_media_type: dict[str, _Walker] = {
            "schema": self.schema,
            "examples": self._mapper(self.example),
            "encoding": self._mapper(self.encoding),
        }
        self.t_encoding: dict[str, _Walker] = {"headers": self._mapper(self.parameter)}
        self.t_response: dict[str, _Walker] = {
            "headers": self._mapper(self.parameter),
            "content": self._mapper(self.media_type),
            "schema": self.schema,
            "links": self._mapper(self.any),
        }

    def document(self) -> None:
        """Walk the entry document from its root."""
        self._tables()
        self.reserve_slots()
        if self._enter(self.doc):
            self._fields(self.doc, self.entry, None, self.t_root, open_=True)

    def components(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict) and self._enter(node):
            self._fields(node, file, loc, self.t_components, open_=True)
        return node

    def schema_section(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        """The entry's named schemas; a slot reserved by :meth:`reserve_slots` receives its file's schema."""
        if not (isinstance(node, dict) and self._enter(node)):
            return node
        is_section = file == self.entry and _tokens(loc) == list(self.schema_path)
        for name, value in list(node.items()):
            if not isinstance(value, (dict, list)):
                continue
            key = self.slots.get(name) if is_section else None
            if key is not None and isinstance(value, dict) and "$ref" in value:
                target = self.target(key, value["$ref"], file, ((loc, name), "$ref"))
                node[name] = {} if target is MISSING else self.schema(target, key[0], _loc_of(key[1]))
                continue
            new = self.schema(value, file, (loc, name))
            if new is not value:
                node[name] = new
        return node

    def path_item(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict):
            if "$ref" in node:
                return self.ref(node, "pathItem", file, loc)
            if self._enter(node):
                self._fields(node, file, loc, self.t_path_item, open_=True)
        return node

    def operation(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            return self.ref(node, "operation", file, loc)
        if isinstance(node, dict) and self._enter(node):
            self._fields(node, file, loc, self.t_operation, open_=True)
        return node

    def callback(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict) and "$ref" in node:
            return self.ref(node, "callback", file, loc)
        self._map(node, file, loc, self.path_item)
        return node

    def parameter(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        """A parameter or header (OpenAPI 3 or Swagger 2)."""
        if isinstance(node, dict):
            if "$ref" in node:
                return self.ref(node, "parameter", file, loc)
            if self._enter(node):
                self._fields(node, file, loc, self.t_parameter, open_=False)
        return node

    def request_body(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict):
            if "$ref" in node:
                return self.ref(node, "requestBody", file, loc)
            if self._enter(node):
                self._fields(node, file, loc, self.t_request_body, open_=False)
        return node

    def media_type(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            return self.ref(node, "mediaType", file, loc)
        if isinstance(node, dict) and self._enter(node):
            self._fields(node, file, loc, self.t_media_type, open_=False)
        return node

    def encoding(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            return self.ref(node, "encoding", file, loc)
        if isinstance(node, dict) and self._enter(node):
            self._fields(node, file, loc, self.t_encoding, open_=False)
        return node

    def response(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict):
            if "$ref" in node:
                return self.ref(node, "response", file, loc)
            if self._enter(node):
                self._fields(node, file, loc, self.t_response, open_=False)
        return node

    def example(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        if isinstance(node, dict) and "$ref" in node:
            return self.ref(node, "example", file, loc)
        return node

    def schema(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        """A JSON Schema: subschemas are walked; annotations and data (``example``, ``enum``...) are not."""
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            node = self.ref(node, "schema", file, loc)
            if not isinstance(node, dict):
                return node
        if not self._enter(node):
            return node
        for name, value in node.items():
            if not isinstance(value, (dict, list)):
                continue
            if name in _SCHEMA_MAPS:
                self._map(value, file, (loc, name), self.schema, extensions=False)
            elif name in _SCHEMA_LISTS:
                self._list(value, file, (loc, name), self.schema)
            elif name in _SCHEMA_ONE or name == "items":
                if isinstance(value, list):
                    self._list(value, file, (loc, name), self.schema)
                else:
                    new = self.schema(value, file, (loc, name))
                    if new is not value:
                        node[name] = new
            elif name == "discriminator":
                self._discriminator(value, file, (loc, name))
            elif name.startswith("x-"):
                new = self.any(value, file, (loc, name))
                if new is not value:
                    node[name] = new
        return node

    def _discriminator(self, node: JSONValue, file: str, loc: _Loc) -> None:
        mapping = node.get("mapping") if isinstance(node, dict) else None
        if not isinstance(mapping, dict):
            return
        for name, value in mapping.items():
            if not isinstance(value, str) or not (value.startswith("#") or _FILE_LIKE.search(value)):
                continue
            target = classify_ref(value, file)
            if target.kind == "file" and target.file == self.entry:
                mapping[name] = "#" + join_pointer(target.tokens)
            elif target.kind in ("file", "internal") and target.file != self.entry:
                hoisted = self.hoist((target.file, target.tokens), value, file, ((loc, "mapping"), name))
                if hoisted is not None:
                    mapping[name] = self.schema_prefix + escape_token(hoisted)

    def any(self, node: JSONValue, file: str, loc: _Loc) -> JSONValue:
        """Content of unknown structure (extensions, ``info``...): references are followed and inlined."""
        if isinstance(node, dict):
            if "$ref" in node:
                return self.ref(node, "any", file, loc)
            self._map(node, file, loc, self.any)
        elif isinstance(node, list):
            self._list(node, file, loc, self.any)
        return node

    # --- the check ------------------------------------------------------------------------------

    def check_sites(self) -> None:
        """Report and drop every kept internal reference that names nothing in the merged document."""
        resolver = Resolver(self.doc)
        for holder, file, loc in self.sites:
            ref = holder.get("$ref")
            if isinstance(ref, str) and not resolver.contains(ref):
                self.report("source/ref_missing", f"$ref {ref!r} names nothing in the document", file, loc)
                del holder["$ref"]


def bundle_document(sources: SourceSet, entry: str, document: JSONObject, *, swagger: bool) -> list[Diagnostic]:
    """Merge every file ``document`` references into it, in place (see the module docstring).

    Args:
        sources: The spec's files (the entry already read).
        entry: The entry file's key.
        document: The entry file's parsed document; it is modified in place.
        swagger: True for Swagger 2.0 shape (schemas hoist into ``definitions``).

    Returns:
        The diagnostics of the merge (unreadable or dangling references, URLs, escapes...).
    """
    bundler = _Bundler(sources, entry, document, ("definitions",) if swagger else ("components", "schemas"))
    bundler.document()
    bundler.check_sites()
    return bundler.diagnostics
