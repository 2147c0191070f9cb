"""What ``tools/list`` publishes for one operation: the plain tool plus its effect class and contract.

The plain projection is :meth:`anvil.air.surface.ToolSurface.definition` (shared with the bundle's catalog).
The ``_meta`` of a tool whose operation declares an effect contract gains, after the ``anvil/*`` keys
(ADR-0030 §4):

* ``anvil/effect_class``: the effective class: the declared one, else ``read`` for a read and
  ``irreversible`` for a write (so an effect-ledger proxy never has to guess);
* ``anvil/effect_contract``: the declaration in its AIR shape (mappings unresolved), only for an
  operation that declares a contract;
* ``effect``: a classification an effect-ledger client reads before calling, in this key order:

  - ``class``: the effective class (``read``, ``reversible``, ``compensable``, ``irreversible``);
  - ``deletion``: true when the operation removes something: its action is ``delete`` or its risk is
    ``destructive``;
  - ``draft``: the tool (on this server) that performs the declared draft form, or null when none is
    declared or the draft's operation is not served here;
  - ``lookup``: the tool that finds the effect when its answer was lost, or null likewise;
  - ``operation``: the operation's AIR id.

An operation that declares nothing lists exactly as it would without effect contracts (ADR-0030 §4):
its listing costs an agent nothing more. A service compiled with ``service.list_effect_class: all``
(AIR ``service.listEffectClass``) lists ``anvil/effect_class`` and ``effect`` (with null ``draft`` and
``lookup``) on those tools too, and still no ``anvil/effect_contract``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anvil._types import JSONObject
from anvil.air.effects import ToolOf, effect_classification, effect_listing_meta
from anvil.air.model import Operation
from anvil.air.surface import ToolSurface, surface_for

__all__ = [
    "ToolOf",
    "effect_classification",
    "effect_listing_meta",
    "lists_effect_class",
    "rewrite_listing_tools",
    "served_tool_definition",
]


def lists_effect_class(op: Operation, *, every: bool) -> bool:
    """True when ``op``'s listed tool carries its effect class: it declares a contract, or ``every``."""
    return every or op.effect.declares_contract


def served_tool_definition(
    op: Operation,
    tool_of: ToolOf,
    *,
    name: str | None = None,
    components: JSONObject | None = None,
    surface: ToolSurface | None = None,
    every_effect_class: bool = False,
) -> JSONObject:
    """The ``tools/list`` entry for ``op`` on this server.

    Args:
        op: The operation.
        tool_of: How this server names the tools it serves (for ``effect.draft``/``effect.lookup``).
        name: The name the tool is served under, when it differs from ``op.mcp.tool_name`` (a fleet's
            prefixed name; a summarised input schema's stubs name ``anvil://schema/<name>``);
            ``anvil/operation_id`` and the rest of ``_meta`` never change.
        components: The document's ``schemas`` (the named schemas ``outputSchema`` inlines as ``$defs``),
            when no ``surface`` is given.
        surface: The document's tool surface (:func:`anvil.air.surface.surface_of`): what it publishes
            for ``op``, its ``outputSchema`` within the tool budget.
        every_effect_class: List the effect class on a tool that declares no contract too (the
            service's ``listEffectClass: all``); by default such a tool lists as without contracts.

    Returns:
        The wire-shaped tool (``name``, ``title``, ``description``, ``inputSchema``, ``outputSchema``
        when the success response has a schema that is published, ``annotations``, ``_meta``).
    """
    chosen = surface if surface is not None else surface_for(components or {})
    definition = chosen.definition(op, name=name)  # a summarised input schema names the tool as served
    if name is not None:
        definition["name"] = name
    if lists_effect_class(op, every=every_effect_class):
        definition["_meta"] = {**definition["_meta"], **effect_listing_meta(op, tool_of)}
    return definition


def rewrite_listing_tools(definition: JSONObject, rename: Callable[[str], str]) -> JSONObject:
    """A copy of a listed tool with its name and ``_meta.effect`` draft/lookup tools renamed.

    For a front end that re-registers another server's tools under new names (a prefixing fleet
    proxying over MCP); ``anvil/*`` keys, the declared contract and everything else are unchanged.
    """
    out = {**definition, "name": rename(definition["name"])}
    meta: Any = definition.get("_meta")
    effect = meta.get("effect") if isinstance(meta, dict) else None
    if isinstance(effect, dict):
        renamed = {
            key: rename(value) if key in ("draft", "lookup") and isinstance(value, str) else value
            for key, value in effect.items()
        }
        out["_meta"] = {**meta, "effect": renamed}
    return out
