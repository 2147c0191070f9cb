"""The tool surface of one document: what each operation publishes as a tool, within its budget.

A tool's definition (name, title, description, ``inputSchema``, ``outputSchema``, annotations,
``_meta``) is what an agent reads before it calls anything, so what ``tools/list`` publishes per tool
stays within a budget (AIR ``disclosure``, the manifest's ``disclosure:``), measured on the tool as
``anvil serve`` lists it for its own bundle (the definition plus the effect keys the server adds to
``_meta``, follow-ups named by their tools), as compact JSON:

* the whole tool: ``tool_budget_tokens`` (default :data:`TOOL_BUDGET_TOKENS`, the certify check's,
  original-core §3.7) counted with the compiler's estimator (``chars/4``: characters over four,
  rounded up);
* its ``outputSchema``: it may add at most ``output_schema_percent`` (default
  :data:`OUTPUT_SCHEMA_PERCENT`) to the bytes of the rest of the tool, so a listing is at most that
  much larger than the same listing without any output schema.

The name, description, input schema, annotations and ``_meta`` are always published: an agent needs
every argument. The ``outputSchema`` is published whole when it fits both; otherwise it is cut
deterministically, the deepest cut that fits first (:meth:`anvil.air.outputs.OutputSchemas.candidates`:
named schemas beyond a depth become ``{"type": ..., "description": "<Name> (summarised)"}``, the
dry-run plan and the projected answer their required keys, and at last the whole answer one such
object), and ``_meta`` says so: ``anvil/output_schema`` is ``summarised``; when not even the
one-object summary fits (the rest of the tool is over the budget on its own), the ``outputSchema`` is
left out and ``anvil/output_schema`` is ``omitted``. A cut schema only accepts more than the whole,
so a stock client never refuses an answer the gateway accepts; the gateway checks
``structuredContent`` against the whole schema (:meth:`ToolSurface.output`).

An ``inputSchema`` is published whole unless it alone is over the input budget
(:data:`~anvil.air.input_summary.INPUT_SCHEMA_BUDGET_TOKENS`, or the tool budget when that is
larger): then it is summarised (:mod:`anvil.air.input_summary`: required properties whole, optional
structure past a depth one stub naming its type and ``anvil://schema/<tool>``), ``_meta`` says
``anvil/input_schema``: ``summarised``, and the output schema is fitted to the rest of the tool as
it is listed. The summary is made here, not at serve time, so ``tools.json``, ``anvil certify`` and
every server list the same bytes; the stubs name the tool as it is served (``name``, a fleet's
prefixed name). The gateway still validates every call against the whole schema, which it serves
as that resource.

Everything is deterministic: the same document gives the same bytes.
"""

from __future__ import annotations

import json
import math
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.effects import ToolOf, effect_listing_meta
from anvil.air.input_summary import INPUT_SCHEMA_BUDGET_TOKENS, INPUT_SCHEMA_META, summarise_input_schema
from anvil.air.inputs import safety_keys
from anvil.air.model import DisclosureBudget, Document, Operation
from anvil.air.outputs import OutputPlan, OutputProjection, OutputSchemas, compact_size
from anvil.air.tool_elements import (
    DRY_RUN_ARGUMENT,
    PROJECTION_ARGUMENT,
    RESERVED_ARGUMENTS,
    operation_input_schema,
    published_input_schema,
    tool_annotations,
    tool_description,
    tool_meta,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "ESTIMATOR",
    "INPUT_SCHEMA_BUDGET_TOKENS",
    "INPUT_SCHEMA_META",
    "OUTPUT_SCHEMA_META",
    "OUTPUT_SCHEMA_PERCENT",
    "TOOL_BUDGET_TOKENS",
    "OutputState",
    "Published",
    "ToolSurface",
    "estimate_tokens",
    "surface_for",
    "surface_measured",
    "surface_of",
]

#: The estimator id recorded in AIR.
ESTIMATOR: Final = "chars/4"
#: Characters per token the estimator assumes.
CHARS_PER_TOKEN: Final = 4
#: The default budget of one listed tool (original-core §3.7).
TOOL_BUDGET_TOKENS: Final = DisclosureBudget().tool_budget_tokens
#: The default share an ``outputSchema`` may add to the rest of its tool, in percent of its bytes.
OUTPUT_SCHEMA_PERCENT: Final = DisclosureBudget().output_schema_percent
#: The ``_meta`` key saying a tool's ``outputSchema`` is not the whole one: ``summarised`` or ``omitted``.
OUTPUT_SCHEMA_META: Final = "anvil/output_schema"

OutputState = Literal["summarised", "omitted"]
_OUTPUT_KEY: Final = len(',"outputSchema":')


def estimate_tokens(text: str) -> int:
    """The estimator's token count for ``text``: one token per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _marker_size(state: OutputState) -> int:
    return compact_size({OUTPUT_SCHEMA_META: state}) - 1  # its `,"key":"value"` inside _meta


def _dumps(value: JSONObject) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


@dataclass(frozen=True, slots=True)
class Published:
    """What one operation publishes as a tool, and what it costs.

    Attributes:
        definition: the tool definition (``tools.json`` and, with the server's effect keys, ``tools/list``).
        served_chars: the listed tool's compact JSON characters (effect keys included), what the budget counts.
        rest_chars: the same without any ``outputSchema``: over the budget, the rest of the tool alone is.
        output_state: None when the output schema is whole (or there is none), else how it was cut.
        input_summarised: True when the ``inputSchema`` is a summary (``_meta["anvil/input_schema"]``).
    """

    definition: JSONObject
    served_chars: int
    rest_chars: int
    output_state: OutputState | None
    input_summarised: bool = False


class ToolSurface:
    """What every operation of one document publishes as a tool (module docstring).

    Args:
        components: The document's named schemas (``Document.schemas``).
        budget: The disclosure budget (default: :class:`~anvil.air.model.DisclosureBudget`'s defaults).
        tool_of: How the server names the tools follow-ups are served as (default: their operation ids).
        every_effect_class: The server lists the effect keys of tools that declare no contract too (the
            service's ``listEffectClass: all``); by default only declared ones carry them (ADR-0030 §4).
        input_budget_tokens: The input budget (default: :data:`INPUT_SCHEMA_BUDGET_TOKENS`, or the
            tool budget when that is larger).
    """

    def __init__(
        self,
        components: JSONObject,
        *,
        budget: DisclosureBudget | None = None,
        tool_of: ToolOf | None = None,
        every_effect_class: bool = False,
        input_budget_tokens: int | None = None,
    ) -> None:
        self.outputs = OutputSchemas(components)
        self.budget = budget or DisclosureBudget()
        self._tool_of: ToolOf = tool_of or _op_id
        self._every_effect_class = every_effect_class
        self._input_budget = input_budget_tokens or max(INPUT_SCHEMA_BUDGET_TOKENS, self.budget.tool_budget_tokens)
        # (id(op), name) -> (op, what it publishes): the op is kept, so its id is not reused.
        self._published: dict[tuple[int, str | None], tuple[Operation, Published]] = {}

    @property
    def budget_tokens(self) -> int:
        """The tool budget in estimated tokens."""
        return self.budget.tool_budget_tokens

    @property
    def budget_chars(self) -> int:
        """The tool budget in characters of compact JSON."""
        return self.budget.tool_budget_tokens * CHARS_PER_TOKEN

    @property
    def input_budget_tokens(self) -> int:
        """The input budget in estimated tokens: an ``inputSchema`` over it is summarised."""
        return self._input_budget

    def _plan(self, op: Operation) -> OutputPlan | None:
        business = operation_input_schema(op).get("properties") or {}
        return self.outputs.plan(
            op, dry_run=DRY_RUN_ARGUMENT not in business, projection=PROJECTION_ARGUMENT not in business
        )

    def output(self, op: Operation) -> OutputProjection | None:
        """``op``'s whole output schema (what ``structuredContent`` is checked against), or None when it has none."""
        plan = self._plan(op)
        return self.outputs.full(plan) if plan is not None else None

    def definition(self, op: Operation, *, name: str | None = None) -> JSONObject:
        """``op``'s tool definition as published (a new dict each call); ``name``: as :meth:`published`."""
        return dict(self.published(op, name=name).definition)

    def listed(self, op: Operation) -> JSONObject:
        """``op``'s tool as ``anvil serve`` lists it for its own bundle: the published definition with the
        effect keys the server adds to ``_meta`` (what ``anvil certify`` counts)."""
        definition = self.definition(op)
        if self._every_effect_class or op.effect.declares_contract:
            definition["_meta"] = {**definition["_meta"], **effect_listing_meta(op, self._tool_of)}
        return definition

    def published(self, op: Operation, *, name: str | None = None) -> Published:
        """``op``'s tool definition, its ``outputSchema`` whole or cut to the budget, and its measures.

        Worked out once per operation object (operations are immutable): a compile checks the budget
        of the tools it then writes to ``tools.json``. The definition is shared: copy it to change it.

        Args:
            op: The operation.
            name: The name the tool is served under when it is not ``op.mcp.tool_name`` (a fleet's
                prefixed name): a summarised input schema names its resource by it. The definition's
                ``name`` stays ``op.mcp.tool_name`` (the server renames it).
        """
        known = self._published.get((id(op), name))
        if known is not None and known[0] is op:
            return known[1]
        published = self._publish(op, name)
        self._published[(id(op), name)] = (op, published)
        return published

    def _publish(self, op: Operation, name: str | None) -> Published:
        whole = published_input_schema(op)
        head: JSONObject = {
            "name": op.mcp.tool_name,
            "title": op.display_name,
            "description": tool_description(op),
            "inputSchema": whole,
        }
        annotations, meta = tool_annotations(op), tool_meta(op)
        listed = self._every_effect_class or op.effect.declares_contract  # what the server adds to _meta
        effect_keys = effect_listing_meta(op, self._tool_of) if listed else {}
        served = {**head, "annotations": annotations, "_meta": {**meta, **effect_keys}}
        text = _dumps(served)
        budget = self._input_budget * CHARS_PER_TOKEN
        summary = None
        if len(text) > budget:  # the whole tool within the budget: its input schema alone is
            keys = safety_keys(op)
            keep = [*RESERVED_ARGUMENTS, *(key for key in (keys.confirm, keys.idempotency) if key is not None)]
            summary = summarise_input_schema(whole, budget, tool=name or op.mcp.tool_name, keep=keep)
        if summary is not None:
            head["inputSchema"] = summary.schema
            meta = {**meta, INPUT_SCHEMA_META: "summarised"}
            served = {**head, "annotations": annotations, "_meta": {**meta, **effect_keys}}
            text = _dumps(served)
        rest = len(text)
        plan = self._plan(op)
        schema, state = self._choose(plan, rest, _bytes(text)) if plan is not None else (None, None)
        definition = dict(head)
        size = rest
        if schema is not None:
            definition["outputSchema"] = schema
            size += _OUTPUT_KEY + compact_size(schema)
        definition["annotations"] = annotations
        definition["_meta"] = meta
        if state is not None:
            definition["_meta"] = {**meta, OUTPUT_SCHEMA_META: state}
            size += _marker_size(state)
        return Published(
            definition=definition,
            served_chars=size,
            rest_chars=rest,
            output_state=state,
            input_summarised=summary is not None,
        )

    def _rooms(self, rest_chars: int, rest_bytes: int, marker: int) -> tuple[int, int]:
        """What an ``outputSchema`` value may take: (characters within the tool budget, bytes within the share)."""
        chars = self.budget_chars - rest_chars - marker - _OUTPUT_KEY
        share = (rest_bytes + marker) * self.budget.output_schema_percent // 100 - _OUTPUT_KEY
        return chars, share

    def _choose(
        self, plan: OutputPlan, rest_chars: int, rest_bytes: int
    ) -> tuple[JSONObject | None, OutputState | None]:
        """The whole schema when it fits, else the deepest cut that fits, else none (``omitted``)."""
        chars, share = self._rooms(rest_chars, rest_bytes, 0)
        if self.outputs.full_size_at_least(plan) <= min(chars, share):
            whole = self.outputs.full(plan).schema
            text = _dumps(whole)
            if len(text) <= chars and _bytes(text) <= share:
                return whole, None
        chars, share = self._rooms(rest_chars, rest_bytes, _marker_size("summarised"))
        for estimate, build in self.outputs.candidates(plan):
            if estimate > min(chars, share):
                continue  # the kept parts alone are too large (a character is at least a byte)
            schema = build()
            text = _dumps(schema)
            if len(text) <= chars and _bytes(text) <= share:
                return schema, "summarised"
        return None, "omitted"


def _op_id(op_id: str) -> str:
    return op_id


_LAST_DOCUMENT: list[tuple[Document, ToolSurface]] = []
_LAST_COMPONENTS: list[tuple[JSONObject, ToolSurface]] = []


def surface_of(document: Document) -> ToolSurface:
    """The tool surface of ``document``: its budgets, follow-ups named by their approved tools.

    The last document's surface is kept (documents are immutable), so callers asking again for the
    same document, or for one that only differs outside its tools (its diagnostics), share its
    projected schemas and published tools.
    """
    last = _LAST_DOCUMENT[0] if _LAST_DOCUMENT else None
    if last is not None and (last[0] is document or _same_surface(last[0], document)):
        _LAST_DOCUMENT[:] = [(document, last[1])]
        return last[1]
    names = {op.id: op.mcp.tool_name for op in document.operations if op.is_approved}
    every = document.service.list_effect_class == "all"
    surface = ToolSurface(document.schemas, budget=document.disclosure, tool_of=names.get, every_effect_class=every)
    _LAST_DOCUMENT[:] = [(document, surface)]
    return surface


def surface_measured(before: Document, after: Document) -> ToolSurface:
    """The tool surface of ``after``: ``before`` with its operations' disclosure figures measured (each
    operation a copy of ``before``'s that differs only in ``disclosure_cost``, which no tool shows).

    It is ``before``'s surface, whose published tools stand for ``after``'s operations too: a compile
    works them out while its tools are counted, then writes them to ``tools.json`` without doing it again.
    """
    surface = surface_of(before)
    for old, new in zip(before.operations, after.operations, strict=True):
        known = surface._published.get((id(old), None))
        if known is not None and known[0] is old:
            surface._published[(id(new), None)] = (new, known[1])
    _LAST_DOCUMENT[:] = [(after, surface)]
    return surface


def _same_surface(before: Document, document: Document) -> bool:
    """Whether ``document`` publishes what ``before`` does: the same operation and schema objects (only,
    say, its diagnostics differ), the same budgets and effect-class listing."""
    return (
        before.operations is document.operations
        and before.schemas is document.schemas
        and before.disclosure == document.disclosure
        and before.service.list_effect_class == document.service.list_effect_class
    )


def surface_for(components: JSONObject) -> ToolSurface:
    """A surface over ``components`` alone (the default budgets, follow-ups named by operation id).

    For one operation outside a document (:func:`anvil.air.tools.tool_definition`); the last
    components' surface is kept, so a loop over one document's operations projects each schema once.
    """
    if _LAST_COMPONENTS and _LAST_COMPONENTS[0][0] is components:
        return _LAST_COMPONENTS[0][1]
    surface = ToolSurface(components)
    _LAST_COMPONENTS[:] = [(components, surface)]
    return surface
