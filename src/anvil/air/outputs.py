"""The output schemas of one document's operations (MCP ``outputSchema``), projected once per named schema.

A published output schema is self-contained: named components (``#/components/schemas/X``) become
``$defs`` so recursion survives, any other reference is dropped to the empty schema, OpenAPI-only
keywords are dropped, ``nullable`` is folded into ``type``, and compositions are stated so that an
answer in any shape the spec names is accepted (:func:`anvil.air.answer_schema.answer_node`: ``oneOf``
as ``anyOf``; no ``additionalProperties: false`` beside ``allOf``/``oneOf``/``anyOf``). In a large
API whose schemas refer to one another in cycles, the schemas reachable from one answer are most of
the API, for every operation; so :class:`OutputSchemas` projects each named schema once per document (its JSON Schema
copy, the components it names, whether it is well formed, its size as compact JSON) and an
operation's schema is assembled from those shared pieces: the work per operation is a walk of its
own response schema and a traversal of the names it reaches, never a copy of the graph.

:meth:`OutputSchemas.full` is the whole schema (what the gateway checks ``structuredContent``
against); :meth:`OutputSchemas.candidates` are the same schema cut deeper and deeper (what the tool
surface publishes when the whole does not fit its budget, see :mod:`anvil.air.surface`). A cut
schema only ever accepts more than the whole: a named schema beyond the cut becomes
``{"type": <its type>, "description": "<Name> (summarised)"}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.answer_schema import answer_node
from anvil.air.model import Operation
from anvil.air.schema_check import is_well_formed_schema

__all__ = [
    "DRY_RUN_PLAN_DEF",
    "DRY_RUN_PLAN_SCHEMA",
    "DRY_RUN_PLAN_SUMMARY",
    "PROJECTION_VIEW_DEF",
    "PROJECTION_VIEW_SCHEMA",
    "PROJECTION_VIEW_SUMMARY",
    "SUMMARISED",
    "OutputPlan",
    "OutputProjection",
    "OutputSchemas",
    "compact_size",
]

#: The ``$defs`` name of the dry-run plan in a published output schema (no component name has a colon).
DRY_RUN_PLAN_DEF = "anvil:dry_run_plan"
#: What a dry run answers (original-core §5.8): the request it would send, credentials redacted.
DRY_RUN_PLAN_SCHEMA: JSONObject = {
    "type": "object",
    "description": "The request plan a dry run (anvil_dry_run: true) returns instead of calling the upstream.",
    "required": ["operation", "method", "url", "headers", "idempotencyKeyPresent", "retryPlan"],
    "properties": {
        "operation": {"type": "string"},
        "method": {"type": "string"},
        "url": {"type": "string"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "body": {},
        "idempotencyKeyPresent": {"type": "boolean"},
        "retryPlan": {"type": "object"},
        "confirmationRequired": {"type": "boolean"},
    },
}
#: How a summarised schema says what it stands for: ``"<Name> (summarised)"``.
SUMMARISED: Final = "{} (summarised)"
#: The dry-run plan in a cut schema: only its required keys (the whole plan is documented once, above).
DRY_RUN_PLAN_SUMMARY: JSONObject = {"required": ["operation", "method", "url", "retryPlan"]}
#: The ``$defs`` name of a projected answer in a published output schema.
PROJECTION_VIEW_DEF = "anvil:projection"
#: What a call with ``anvil_projection`` answers on a tool that publishes an output schema: the view is
#: any JSON the expression selects, so it travels under ``result`` beside the expression that chose it
#: (a stock client validates ``structuredContent`` against the schema and refuses a missing one).
PROJECTION_VIEW_SCHEMA: JSONObject = {
    "type": "object",
    "description": "What a call with anvil_projection returns: the expression, and under result the view it selected.",
    "required": ["anvil_projection", "result"],
    "properties": {"anvil_projection": {"type": "string"}, "result": {}},
}
#: The projected answer in a cut schema: its required keys.
PROJECTION_VIEW_SUMMARY: JSONObject = {"required": ["anvil_projection", "result"]}

_COMPONENT_REF: Final = re.compile(r"^#/components/schemas/([^/]+)$")
#: Keywords a published schema must not carry: OpenAPI-only ones, and identifiers and dynamic references
#: that would resolve against a document the caller does not have.
_DROPPED_KEYWORDS: Final = frozenset(
    {"nullable", "discriminator", "xml", "externalDocs", "$schema", "$id", "$anchor"}
    | {"$recursiveRef", "$recursiveAnchor", "$dynamicRef", "$dynamicAnchor"}
)
#: Keywords whose value maps names to schemas (the names are not keywords).
_NAME_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_DEFS_PREFIX: Final = "#/$defs/"


def compact_size(value: JSONValue) -> int:
    """The length of ``value`` as compact JSON (non-ASCII kept), the disclosure estimator's input."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


@dataclass(frozen=True, slots=True)
class OutputProjection:
    """An operation's output schema and how its answer becomes ``structuredContent``.

    Attributes:
        schema: the self-contained JSON Schema (``$defs`` for named components, no outside ``$ref``);
            for a tool that offers ``anvil_dry_run`` or ``anvil_projection``, the response schema or
            the dry-run plan or the projected answer (``anyOf``).
        wrap: True when the success response is not an object, so the answer is ``{"result": data}``.
    """

    schema: JSONObject
    wrap: bool


@dataclass(frozen=True, slots=True)
class _Component:
    """One named schema, projected: its copy, the components it names (first use first), its health."""

    def_name: str
    schema: JSONValue
    refs: tuple[str, ...]
    ok: bool


@dataclass(frozen=True, slots=True)
class OutputPlan:
    """What one operation's output schema is made of, before it is assembled.

    Attributes:
        body: the projected response schema (its own ``$defs`` taken out).
        own_defs: the ``$defs`` the source response schema carried itself, if any.
        roots: the components the body names, first use first.
        order: every component reachable from the body, in the order its ``$defs`` lists them.
        depth: each reachable component's distance in references from the body (1: named by the body).
        wrap: True when the answer is not an object (published as ``{"result": ...}``).
        dry_run: True when the tool offers ``anvil_dry_run``, so the schema also admits the request plan.
        projection: True when the tool offers ``anvil_projection``, so the schema also admits a view.
    """

    body: JSONObject
    own_defs: JSONObject | None
    roots: tuple[str, ...]
    order: tuple[str, ...]
    depth: dict[str, int]
    wrap: bool
    dry_run: bool
    projection: bool = False


class OutputSchemas:
    """The output schemas of one document, every named schema projected at most once.

    Args:
        components: The document's ``schemas`` (treated as immutable while this object lives).
    """

    def __init__(self, components: JSONObject) -> None:
        self._raw = components
        self._def_names: dict[str, str] | None = None
        self._by_def: dict[str, str] = {}
        self._projected: dict[str, _Component] = {}
        self._sizes: dict[str, int] = {}
        # Many operations answer with the same named schema: what it reaches and its cuts, once.
        self._reached: dict[tuple[str, ...], tuple[tuple[str, ...], dict[str, int]]] = {}
        self._cuts: dict[tuple[tuple[str, ...], int], JSONObject] = {}
        self._wholes: dict[tuple[tuple[str, ...], bool, bool], JSONObject] = {}

    # --- one named schema, once ------------------------------------------------------------------------

    def _names(self) -> dict[str, str]:
        """Component name -> its ``$defs`` name, unique in the document (first come keeps the plain one)."""
        if self._def_names is None:
            taken: set[str] = set()
            names: dict[str, str] = {}
            for name in self._raw:
                base = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"
                chosen, n = base, 2
                while chosen in taken:
                    chosen, n = f"{base}_{n}", n + 1
                taken.add(chosen)
                names[name] = chosen
            self._def_names = names
            self._by_def = {chosen: name for name, chosen in names.items()}
        return self._def_names

    def _target(self, ref: str) -> str | None:
        match = _COMPONENT_REF.match(ref)
        if match is None:
            return None
        name = match.group(1).replace("~1", "/").replace("~0", "~")
        return name if name in self._names() else None

    def _walk(self, node: JSONValue, refs: list[str], seen: set[str]) -> JSONValue:
        """A JSON Schema 2020-12 copy of a source node; component references renamed, others dropped."""
        if isinstance(node, list):
            return [self._walk(item, refs, seen) for item in node]
        if not isinstance(node, dict):
            return node
        out: JSONObject = {}
        for key, value in node.items():
            if key in _DROPPED_KEYWORDS:
                continue
            if key == "$ref" and (isinstance(value, str) or value is None):
                target = self._target(value) if isinstance(value, str) else None
                if target is None:
                    continue  # names nothing publishable: the empty schema (anything)
                out[key] = _DEFS_PREFIX + self._names()[target]
                if target not in seen:
                    seen.add(target)
                    refs.append(target)
            elif key in _NAME_MAPS and isinstance(value, dict):
                out[key] = {name: self._walk(item, refs, seen) for name, item in value.items()}
            elif key == "items" and isinstance(value, list):
                out["prefixItems"] = [self._walk(item, refs, seen) for item in value]  # the draft-4 tuple form
            else:
                out[key] = self._walk(value, refs, seen)
        if node.get("nullable") is True:  # the OpenAPI 3.0 spelling of "or null"
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
            elif isinstance(kind, list) and "null" not in kind:
                out["type"] = [*kind, "null"]
        return answer_node(out)  # a composition an answer can meet: oneOf as anyOf, no closed composition

    def _component(self, name: str) -> _Component:
        found = self._projected.get(name)
        if found is None:
            refs: list[str] = []
            try:
                schema = self._walk(self._raw[name], refs, set())
                ok = is_well_formed_schema(schema)
            except RecursionError:  # nesting too deep to copy: never published
                schema, ok = {}, False
            found = self._projected[name] = _Component(self._names()[name], schema, tuple(refs), ok)
        return found

    def entry_size(self, name: str) -> int:
        """The characters ``"<def name>":<schema>,`` adds to a ``$defs`` object (compact JSON)."""
        size = self._sizes.get(name)
        if size is None:
            component = self._component(name)
            size = self._sizes[name] = compact_size(component.def_name) + compact_size(component.schema) + 2
        return size

    # --- one operation ---------------------------------------------------------------------------------

    def plan(self, op: Operation, *, dry_run: bool, projection: bool = False) -> OutputPlan | None:
        """What ``op``'s output schema is made of, or None when it publishes none.

        None when the success response declares no schema, or when it or a schema it reaches is not
        well-formed JSON Schema (a broken schema would make a stock client refuse every answer).
        """
        raw = op.output.schema
        if not isinstance(raw, dict) or not raw:
            return None
        roots: list[str] = []
        try:
            body = self._walk(raw, roots, set())
        except RecursionError:
            return None
        if not isinstance(body, dict):
            return None
        own = body.pop("$defs", None)
        own_defs = own if isinstance(own, dict) else None
        key = tuple(roots)
        reached = self._reached.get(key)
        if reached is None:
            reached = self._reached[key] = self._reach(roots)
        order, depth = reached
        if not all(self._component(name).ok for name in order):
            return None
        wrap = not self._is_object(body, own_defs)
        if not is_well_formed_schema(_assemble(body, {}, wrap, dry_run, projection)):  # never enters $defs
            return None
        return OutputPlan(
            body=body,
            own_defs=own_defs,
            roots=key,
            order=order,
            depth=depth,
            wrap=wrap,
            dry_run=dry_run,
            projection=projection,
        )

    def _reach(self, roots: list[str]) -> tuple[tuple[str, ...], dict[str, int]]:
        """The components reachable from ``roots``: depth-first preorder (the ``$defs`` order) and depths."""
        order: list[str] = []
        seen: set[str] = set()
        stack: list[Iterator[str]] = [iter(roots)]
        while stack:
            for name in stack[-1]:
                if name not in seen:
                    seen.add(name)
                    order.append(name)
                    stack.append(iter(self._component(name).refs))
                    break
            else:
                stack.pop()
        depth = dict.fromkeys(roots, 1)
        layer = list(depth)
        while layer:
            following: list[str] = []
            for name in layer:
                for ref in self._component(name).refs:
                    if ref not in depth:
                        depth[ref] = depth[name] + 1
                        following.append(ref)
            layer = following
        return tuple(order), depth

    def _resolve(self, ref: str, own_defs: JSONObject | None) -> JSONValue:
        name = ref.rsplit("/", 1)[-1]
        component = self._by_def.get(name)
        if component is not None:
            return self._component(component).schema
        return own_defs.get(name) if own_defs is not None else None

    def _is_object(self, schema: JSONValue, own_defs: JSONObject | None) -> bool:
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 16:
            schema = self._resolve(str(schema["$ref"]), own_defs)
            seen += 1
        if not isinstance(schema, dict):
            return False
        kind = schema.get("type")
        if kind == "object" or kind == ["object"]:
            return True
        compositors = any(k in schema for k in ("oneOf", "anyOf", "allOf", "not", "enum", "const"))
        return kind is None and not compositors and ("properties" in schema or "additionalProperties" in schema)

    # --- assembling ------------------------------------------------------------------------------------

    def full(self, plan: OutputPlan) -> OutputProjection:
        """The whole output schema: every reachable component in ``$defs`` (shared, never copied)."""
        key = (plan.roots, plan.dry_run, plan.projection)
        defs = self._wholes.get(key)
        if defs is None:
            defs = {self._component(name).def_name: self._component(name).schema for name in plan.order}
            if plan.dry_run:
                defs[DRY_RUN_PLAN_DEF] = DRY_RUN_PLAN_SCHEMA
            if plan.projection:
                defs[PROJECTION_VIEW_DEF] = PROJECTION_VIEW_SCHEMA
            self._wholes[key] = defs  # one mapping for every tool whose answer names the same schemas
        if plan.own_defs:  # a schema already self-contained keeps its definitions at the root
            defs = {**plan.own_defs, **defs}
        schema = _assemble(plan.body, defs, plan.wrap, plan.dry_run, plan.projection)
        return OutputProjection(schema=schema, wrap=plan.wrap)

    def full_size_at_least(self, plan: OutputPlan) -> int:
        """A lower bound of the whole schema's compact size, from its parts' sizes (nothing is built)."""
        return compact_size(plan.body) + sum(self.entry_size(name) for name in plan.order)

    def candidates(self, plan: OutputPlan) -> Iterator[tuple[int, Callable[[], JSONObject]]]:
        """Cut schemas, the deepest first: ``(estimated size, builder)`` per depth.

        At depth ``d`` the components at most ``d`` references from the body keep their definitions and
        the ones beyond become summaries; depth 0 keeps the body alone (unless it only names a schema);
        the last candidate summarises the whole answer as one object. The estimate (the kept parts'
        sizes, summaries not counted) lets a caller skip a depth that cannot fit without building it.
        """
        deepest = max(plan.depth.values(), default=0)
        layers = [0] * (deepest + 1)
        for name, level in plan.depth.items():
            layers[level] += self.entry_size(name)
        body_size = compact_size(plan.body)
        # A body that only names a schema says nothing more at depth 0 than the one-object summary.
        last = 1 if set(plan.body) == {"$ref"} else 0
        for level in range(deepest - 1, last - 1, -1):
            yield body_size + sum(layers[: level + 1]), partial(self._cut, plan, level)
        yield 0, partial(self.summary, plan)

    def _cut(self, plan: OutputPlan, level: int) -> JSONObject:
        if level == 0:
            return _assemble(
                self._stubbed(plan.body, set()), {}, plan.wrap, plan.dry_run, plan.projection, compact=True
            )
        defs = self._cuts.get((plan.roots, level))
        if defs is None:
            kept = {name for name in plan.order if plan.depth[name] <= level}
            defs = {}
            for name in plan.order:
                if name not in kept:
                    continue
                component = self._component(name)
                edge = plan.depth[name] == level and any(ref not in kept for ref in component.refs)
                defs[component.def_name] = self._stubbed(component.schema, kept) if edge else component.schema
            self._cuts[(plan.roots, level)] = defs
        return _assemble(plan.body, defs, plan.wrap, plan.dry_run, plan.projection, compact=True)

    def summary(self, plan: OutputPlan) -> JSONObject:
        """The whole answer as one summarised object (accepts every object, the dry-run plan and a view included).

        Its description names the answer: ``"Customer (summarised)"``, ``"Comment array (summarised)"``,
        ``"{\"result\": Comment array} (summarised)"`` for an answer published under ``result``.
        """
        label = _label(plan.body)
        if plan.wrap:
            label = f'{{"result": {label}}}'
        return {"type": "object", "description": SUMMARISED.format(label)}

    def _stubbed(self, node: JSONValue, kept: set[str]) -> JSONValue:
        """A copy of a projected node whose references to components outside ``kept`` are summaries."""
        if isinstance(node, list):
            return [self._stubbed(item, kept) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
            name = self._by_def.get(ref[len(_DEFS_PREFIX) :])
            if name is not None and name not in kept:
                return self._stub(node, name, kept)
        out: JSONObject = {}
        for key, value in node.items():
            stubbed = self._stubbed(value, kept)
            # (no oneOf is left to cut: projected nodes state it as anyOf, so overlapping summaries still match)
            if stubbed == value or key != "not":
                out[key] = stubbed
            # a summarised ``not`` is dropped: refusing a summary would refuse more than the whole
        return out

    def _stub(self, node: JSONObject, name: str, kept: set[str]) -> JSONObject:
        """``{"type": <the component's type>, "description": "<Name> (summarised)"}`` plus ``node``'s siblings."""
        component = self._component(name)
        out: JSONObject = {}
        kind = component.schema.get("type") if isinstance(component.schema, dict) else None
        if kind is not None and "type" not in node:
            out["type"] = kind
        if "description" not in node:
            out["description"] = SUMMARISED.format(component.def_name)
        for key, value in node.items():
            if key != "$ref":
                out[key] = self._stubbed(value, kept)
        return out


def _label(body: JSONObject) -> str:
    """What a body is, in a few words: the schema it names, an array of it, else ``Response``."""
    ref = body.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
        return ref[len(_DEFS_PREFIX) :]
    items = body.get("items")
    if body.get("type") == "array" and isinstance(items, dict) and isinstance(items.get("$ref"), str):
        named = str(items["$ref"])
        if named.startswith(_DEFS_PREFIX):
            return f"{named[len(_DEFS_PREFIX) :]} array"
    return "Response"


def _assemble(
    body: JSONObject, defs: JSONObject, wrap: bool, dry_run: bool, projection: bool = False, *, compact: bool = False
) -> JSONObject:
    """The published shape: an object (a non-object answer as ``{"result": ...}``), ``$defs`` at the root.

    ``defs`` are the root's ``$defs``; for a whole schema that offers a dry run or a projection they
    already hold the plan and the view (:meth:`OutputSchemas.full`). With ``compact`` (a cut schema)
    the plan and the view are their short summaries (:data:`DRY_RUN_PLAN_SUMMARY`,
    :data:`PROJECTION_VIEW_SUMMARY`), inline.
    """
    schema: JSONObject
    if wrap:
        schema = {"type": "object", "properties": {"result": body}, "required": ["result"]}
    elif "$ref" in body:
        schema = {"type": "object", "allOf": [body]}
    else:
        schema = dict(body) if "type" in body else {"type": "object", **body}
    # ``anvil_dry_run`` answers with the request plan and ``anvil_projection`` with a view instead of
    # the response: say so, or a stock client would refuse every such answer of a tool that publishes
    # an output schema.
    others: list[JSONValue] = []
    if dry_run:
        others.append(DRY_RUN_PLAN_SUMMARY if compact else {"$ref": f"{_DEFS_PREFIX}{DRY_RUN_PLAN_DEF}"})
    if projection:
        others.append(PROJECTION_VIEW_SUMMARY if compact else {"$ref": f"{_DEFS_PREFIX}{PROJECTION_VIEW_DEF}"})
    if not others:
        if defs:
            schema["$defs"] = defs
        return schema
    out: JSONObject = {"type": "object", "anyOf": [schema, *others]}
    if defs or not compact:
        out["$defs"] = defs
    return out
