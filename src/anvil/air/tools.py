"""The MCP tool projection of an operation (original-core §5.2–§5.5).

The elements of a tool (name, description, published input schema, annotations, ``anvil/*`` ``_meta``
keys: :mod:`anvil.air.tool_elements`), its output schema (:mod:`anvil.air.outputs`) and the whole
definition within the tool budget (:mod:`anvil.air.surface`), in one place. The bundle's
``tools.json`` and the gateway's ``tools/list`` are both built by the surface, so the two never
drift. Definitions are wire-shaped (``inputSchema``, ``_meta``) and built once: the gateway builds its
tool table at start-up.
"""

from __future__ import annotations

from anvil._types import JSONObject
from anvil.air.model import Operation
from anvil.air.outputs import DRY_RUN_PLAN_DEF, DRY_RUN_PLAN_SCHEMA, OutputProjection
from anvil.air.surface import surface_for
from anvil.air.tool_elements import (
    DRY_RUN_ARGUMENT,
    MAX_PROJECTION_CHARS,
    PROJECTION_ARGUMENT,
    PROJECTION_DESCRIPTION,
    RESERVED_ARGUMENTS,
    operation_input_schema,
    pagination_sentence,
    published_input_schema,
    tool_annotations,
    tool_description,
    tool_meta,
)

__all__ = [
    "DRY_RUN_ARGUMENT",
    "DRY_RUN_PLAN_DEF",
    "DRY_RUN_PLAN_SCHEMA",
    "MAX_PROJECTION_CHARS",
    "PROJECTION_ARGUMENT",
    "PROJECTION_DESCRIPTION",
    "RESERVED_ARGUMENTS",
    "OutputProjection",
    "operation_input_schema",
    "output_projection",
    "pagination_sentence",
    "published_input_schema",
    "tool_annotations",
    "tool_definition",
    "tool_description",
    "tool_meta",
]


def output_projection(op: Operation, components: JSONObject | None = None) -> OutputProjection | None:
    """The whole ``outputSchema`` of ``op``'s success response, or None when it declares no schema.

    Named components (``#/components/schemas/X``, resolved against the document's ``schemas``) become
    ``$defs`` so recursion survives; any other reference is dropped to the empty schema, so the
    schema never points outside itself. An object response is published as is; anything else is
    wrapped as ``{"result": <schema>}`` (MCP requires ``structuredContent`` to be an object). This is
    the schema answers are checked against; what a tool lists may be cut to its budget
    (:class:`anvil.air.surface.ToolSurface`).
    """
    return surface_for(components or {}).output(op)


def tool_definition(op: Operation, components: JSONObject | None = None) -> JSONObject:
    """The ``tools/list`` entry for ``op``: name, title, description, inputSchema, outputSchema, annotations, _meta.

    ``outputSchema`` is present when the success response declares a schema (see
    :func:`output_projection`; ``components`` are the document's ``schemas``), whole or cut to the
    default tool budget (then ``_meta`` says ``anvil/output_schema``). Pure and deterministic;
    approval is the caller's business (only approved operations are tools). Inside a document, use
    :func:`anvil.air.surface.surface_of` (the document's budget, follow-ups named by their tools).
    """
    return surface_for(components or {}).definition(op)
