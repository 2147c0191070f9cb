"""Which tools' answers supply another tool's required inputs (``_meta["anvil/inputs_from"]``).

An agent that found ``incidents.get`` by search still needs an incident id. :func:`inputs_from` says, per
operation and per required id-like input, which approved tools answer with that id, best first
(``{"id": ["list_incidents", "create_incident"]}``), so the agent can chain ``search -> list -> get``
without guessing. The heuristics are conservative; an input without a clear supplier is left out.

**What an input identifies.** A required input is *id-like* when one of its name's words is ``id``,
``key``, ``gid``, ``slug``, ``uuid`` or ``number`` (``id``, ``incident_id``, ``issueIdOrKey``,
``task_gid``, ``organization_id_or_slug``). A path parameter identifies the resource named by the
literal path segment before it (``/incidents/{id}/notes/{note_id}``: ``id`` an incident, ``note_id`` a
note), and its *collection* is the path up to that segment (``/incidents``, ``/incidents/{}/notes``).
Any other input identifies the resource its name's leading words name (``transfer_id``: a transfer).
Resource names compare singular and without separators (``log_entries`` = ``LogEntry``).

**Who supplies it.** Another served operation whose answer carries the id, by one of:

* *collection*: its path is the input's collection and it lists, searches, reads or creates there;
* *resource*: its effect's resource is the input's resource and it lists, searches or creates;
* *named list*: it lists or searches, needs no id of its own, and its answer holds an array named for
  the resource (Jira's issue search answers ``issues: [...]``).

An RPC-style operation whose path ends in ``list`` or ``search`` (Plaid's ``POST /transfer/list``) counts
as a listing whatever its classified action.

When the supplier's answer declares a schema, the id must be visible in it (a field named ``id``, the
input's own name, ``<resource>_id``, or the input's id words such as ``key`` or ``slug``, at the top of
the answer or one level down, in a list's items or a wrapped object); the named-list rule always needs
it, in that list's items. A supplier whose own required inputs identify the same resource is left out
(it cannot bootstrap the id); one that needs a parent's id (``/incidents/{id}/notes`` for a note id)
stays.

**Order.** Lists and searches, then creates, then others; within each, by evidence (collection,
resource, named list), then by tool name. At most :data:`MAX_SUPPLIERS` per input.

**Bounds.** Each answer schema is read shallowly (references followed at most :data:`MAX_REF_DEPTH`
deep, at most :data:`MAX_PROPERTIES` properties per object, memoised per schema), and candidates come
from three dictionaries built once: every corpus spec together (2,500 operations) takes about 0.2 s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import field
from functools import lru_cache
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil.air.inputs import InputBinding, input_bindings
from anvil.air.model import Document, Operation

__all__ = ["MAX_PROPERTIES", "MAX_REF_DEPTH", "MAX_SUPPLIERS", "inputs_from"]

#: The most suppliers named for one input.
MAX_SUPPLIERS: Final = 5
#: How many references (and ``allOf``/``anyOf``/``oneOf`` levels) deep an answer schema is read.
MAX_REF_DEPTH: Final = 6
#: The most properties of one object schema read.
MAX_PROPERTIES: Final = 256
#: The most branches of one ``allOf``/``anyOf``/``oneOf`` read.
_MAX_BRANCHES: Final = 16

_ID_WORDS: Final = frozenset({"id", "key", "gid", "slug", "uuid", "number"})
#: Words after the resource in an id-like name (``type_id_or_name``: the resource is ``type``).
_TAIL_WORDS: Final = _ID_WORDS | {"or", "name", "ids"}
_LISTING: Final = frozenset({"list", "search"})
#: Actions whose answer may carry ids of the resource they act on (no update or delete: those need the id).
_SUPPLYING: Final = frozenset({"list", "search", "get", "poll", "export", "create"})
_WORD: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PARAM: Final = re.compile(r"^\{([^{}]+)\}$")
_COMPONENT_REF: Final = re.compile(r"^#/components/schemas/([^/]+)$")


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes", "uses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _resource_key(words: list[str]) -> str:
    """A resource name compared singular and without separators: ``["log", "entries"]`` -> ``logentry``."""
    if not words:
        return ""
    return "".join([*words[:-1], _singular(words[-1])])


@lru_cache(maxsize=1 << 14)
def _field_key(name: str) -> str:
    return "".join(_words(name))


@dataclass(frozen=True, slots=True)
class _Need:
    """What one required input identifies: its resource, its collection path (path inputs) and the
    answer fields (normalised) that would carry it."""

    resource: str
    collection: str | None
    fields: frozenset[str]


def _need(binding: InputBinding, segments: list[str]) -> _Need | None:
    """The need of ``binding`` (in an operation whose path has ``segments``), or None when not id-like."""
    words = _words(binding.property)
    if not _ID_WORDS.intersection(words):
        return None
    end = len(words)
    while end and words[end - 1] in _TAIL_WORDS:
        end -= 1
    lead = words[:end]
    resource, collection = "", None
    if binding.location == "path":
        placeholder = "{" + binding.wire_name + "}"
        if placeholder in segments:
            at = segments.index(placeholder)
            if at and not _PARAM.match(segments[at - 1]):
                resource = _resource_key(_words(segments[at - 1]))
                collection = _normal_path(segments[:at])
    if not resource:
        resource = _resource_key(lead)
    if not resource:
        return None
    fields = {"id", _field_key(binding.property), _field_key(binding.wire_name)} | _ID_WORDS.intersection(words)
    fields.add(resource + "id")
    if lead:
        fields.add("".join(lead) + "id")
    return _Need(resource, collection, frozenset(fields))


def _segments(path: str) -> list[str]:
    return [segment for segment in path.split("/") if segment]


def _normal_path(segments: list[str]) -> str:
    return "/" + "/".join("{}" if _PARAM.match(segment) else segment for segment in segments)


@dataclass(slots=True)
class _Shape:
    """An answer, read shallowly: the fields at its top, and of each list's items and each object one
    level down (keyed by the property's resource key; ``""`` is the answer itself when it is a list)."""

    known: bool
    top: frozenset[str] = frozenset()
    arrays: dict[str, frozenset[str]] = field(default_factory=dict)
    objects: dict[str, frozenset[str]] = field(default_factory=dict)

    def carries(self, fields: frozenset[str], *, listed_as: str | None = None) -> bool:
        """True when the answer shows one of ``fields``: in the list named ``listed_as`` when given, else
        anywhere this shape reads."""
        if listed_as is not None:
            return bool(self.arrays.get(listed_as, frozenset()) & fields)
        if self.top & fields:
            return True
        return any(found & fields for found in self.arrays.values()) or any(
            found & fields for found in self.objects.values()
        )


class _Schemas:
    """Shallow reads of a document's answer schemas, each schema node read once."""

    def __init__(self, components: dict[str, Any]) -> None:
        self._components = components
        # Memoised by node identity: the nodes live in the document, which outlives this object.
        self._properties: dict[int, dict[str, Any]] = {}
        self._fields: dict[int, frozenset[str]] = {}

    def resolve(self, node: Any, depth: int = 0) -> dict[str, Any]:
        """``node`` with its ``$ref`` chain followed (the empty schema past the depth or a foreign ref)."""
        while isinstance(node, dict) and "$ref" in node and depth < MAX_REF_DEPTH:
            ref = node["$ref"]
            match = _COMPONENT_REF.match(ref) if isinstance(ref, str) else None
            if match is None:
                return {}
            node = self._components.get(match.group(1).replace("~1", "/").replace("~0", "~"))
            depth += 1
        return node if isinstance(node, dict) and "$ref" not in node else {}

    def properties(self, node: Any, depth: int = 0) -> dict[str, Any]:
        """The properties of an object schema, through references and ``allOf``/``anyOf``/``oneOf``."""
        node = self.resolve(node, depth)
        cached = self._properties.get(id(node))
        if cached is not None:
            return cached
        found: dict[str, Any] = {}
        own = node.get("properties")
        if isinstance(own, dict):
            for name in list(own)[:MAX_PROPERTIES]:
                found[name] = own[name]
        if depth < MAX_REF_DEPTH:
            for keyword in ("allOf", "anyOf", "oneOf"):
                branches = node.get(keyword)
                if isinstance(branches, list):
                    for branch in branches[:_MAX_BRANCHES]:
                        for name, value in self.properties(branch, depth + 1).items():
                            found.setdefault(name, value)
        self._properties[id(node)] = found
        return found

    def items(self, node: Any, depth: int = 0) -> Any | None:
        """The item schema of an array schema (through references and one level of ``anyOf``/``oneOf``)."""
        node = self.resolve(node, depth)
        if node.get("type") == "array" or "items" in node:
            return node.get("items")
        if depth < MAX_REF_DEPTH:
            for keyword in ("anyOf", "oneOf", "allOf"):
                branches = node.get(keyword)
                if isinstance(branches, list):
                    for branch in branches[:_MAX_BRANCHES]:
                        found = self.items(branch, depth + 1)
                        if found is not None:
                            return found
        return None

    def fields(self, node: Any) -> frozenset[str]:
        """The normalised names of an object schema's properties."""
        resolved = self.resolve(node)
        cached = self._fields.get(id(resolved))
        if cached is None:
            cached = self._fields[id(resolved)] = frozenset(_field_key(name) for name in self.properties(resolved))
        return cached

    def shape(self, op: Operation) -> _Shape:
        schema = op.output.schema
        if not isinstance(schema, dict) or not schema:
            return _Shape(known=False)
        shape = _Shape(known=True, top=self.fields(schema))
        root_items = self.items(schema)
        if root_items is not None:
            shape.arrays[""] = self.fields(root_items)
        for name, value in list(self.properties(schema).items())[:MAX_PROPERTIES]:
            key = _resource_key(_words(name))
            inner = self.items(value)
            if inner is not None:
                shape.arrays.setdefault(key, self.fields(inner))
            else:
                nested = self.fields(value)
                if nested:
                    shape.objects.setdefault(key, nested)
        return shape


def _action(op: Operation) -> str:
    """The operation's action, read as ``list`` when an RPC-style path ends in ``list`` or ``search``
    (Plaid's ``POST /transfer/list`` is classified ``create``, as every POST of it is)."""
    action = op.effect.action
    if action not in _LISTING:
        words = _words(op.source_ref.path or "")
        if words and words[-1] in _LISTING:
            return words[-1]
    return action


@dataclass(slots=True)
class _Served:
    """One served operation, as the chains read it."""

    op: Operation
    tool: str
    action: str
    path: str
    resource: str
    needs: dict[str, _Need]
    shape: _Shape | None = None


def inputs_from(document: Document, tool_of: Callable[[str], str | None]) -> dict[str, dict[str, tuple[str, ...]]]:
    """Which served tools' answers supply each served operation's required id-like inputs.

    Args:
        document: the compiled AIR document.
        tool_of: the tool name an operation is served as (a fleet's prefixed name included), or None
            when it is not served (not approved, or hidden); only served operations are read.

    Returns:
        Operation id -> {required input name (as the input schema names it) -> supplier tool names, best
        first, at most :data:`MAX_SUPPLIERS`}. Operations and inputs without a supplier are left out.
    """
    schemas = _Schemas(document.schemas)
    served: list[_Served] = []
    for op in document.operations:
        tool = tool_of(op.id)
        if tool is None:
            continue
        segments = _segments(op.source_ref.path or "")
        needs: dict[str, _Need] = {}
        for binding in input_bindings(op):
            if binding.required and binding.location != "body":
                need = _need(binding, segments)
                if need is not None:
                    needs.setdefault(binding.property, need)
        resource = _resource_key(_words(op.effect.resource or ""))
        served.append(_Served(op, tool, _action(op), _normal_path(segments), resource, needs))
    by_path: dict[str, list[_Served]] = {}
    by_resource: dict[str, list[_Served]] = {}
    by_list: dict[str, list[_Served]] = {}
    for entry in served:
        if entry.action not in _SUPPLYING:
            continue
        by_path.setdefault(entry.path, []).append(entry)
        if entry.resource:
            by_resource.setdefault(entry.resource, []).append(entry)
        entry.shape = schemas.shape(entry.op)
        for key in entry.shape.arrays:
            if key:
                by_list.setdefault(key, []).append(entry)
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for entry in served:
        chains: dict[str, tuple[str, ...]] = {}
        for name, need in entry.needs.items():
            found = _suppliers(entry, need, by_path, by_resource, by_list)
            if found:
                chains[name] = found
        if chains:
            out[entry.op.id] = chains
    return out


def _suppliers(
    consumer: _Served,
    need: _Need,
    by_path: dict[str, list[_Served]],
    by_resource: dict[str, list[_Served]],
    by_list: dict[str, list[_Served]],
) -> tuple[str, ...]:
    """The tools that supply ``need`` to ``consumer``, best first."""
    ranked: dict[str, tuple[int, int, str]] = {}

    def consider(candidates: Iterable[_Served], evidence: int) -> None:
        for candidate in candidates:
            if candidate is consumer or (candidate.tool in ranked and ranked[candidate.tool][1] <= evidence):
                continue
            if not _supplies(candidate, need, evidence):
                continue
            group = 0 if candidate.action in _LISTING else 1 if candidate.action == "create" else 2
            ranked[candidate.tool] = (group, evidence, candidate.tool)

    if need.collection is not None:
        consider(by_path.get(need.collection, ()), 0)
    consider(by_resource.get(need.resource, ()), 1)
    consider(by_list.get(need.resource, ()), 2)
    order = sorted(ranked.values())
    return tuple(tool for _, _, tool in order[:MAX_SUPPLIERS])


def _supplies(candidate: _Served, need: _Need, evidence: int) -> bool:
    """True when ``candidate`` can answer with ``need``'s id: the evidence holds, its answer (when it
    declares one) shows the id, and it does not itself need an id of the same resource."""
    if any(own.resource == need.resource for own in candidate.needs.values()):
        return False
    shape = candidate.shape
    if shape is None:
        return False
    if evidence == 2:  # a list named for the resource: only the schema says so, and only a listing that
        # needs no id of its own (Jira's issue search) is trusted on that alone
        listing = candidate.action in _LISTING and not candidate.needs
        return listing and shape.carries(need.fields, listed_as=need.resource)
    if evidence == 1 and candidate.action not in _LISTING | {"create"}:
        return False
    return not shape.known or shape.carries(need.fields)
