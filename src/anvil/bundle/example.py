"""Example inputs for an operation (original-core §4.2 ``exampleInput``), from the one value generator.

The values come from :mod:`anvil.air.values`: a declared example, default or enum value when it
validates, else a value made from the schema (plain strings read ``"example"``, numbers ``1``,
booleans ``true``; formats, patterns and bounds are honoured). Only required inputs (and required
fields below them) are filled. Safety inputs get ``"<canonical>-example-key"`` and ``true``.
Deterministic.

:func:`example_input_or_reason` says why no valid example exists (a required input no value can
satisfy), so a lane can skip the operation with that reason; :func:`example_input` always answers,
leaving out what cannot be made (the skill's examples are documentation).
"""

from __future__ import annotations

from typing import Any

from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import safety_keys
from anvil.air.model import Operation
from anvil.air.tools import operation_input_schema
from anvil.air.value_inputs import example_arguments
from anvil.air.values import CannotMake, Style, ValueGenerator

__all__ = ["EXAMPLE_STYLE", "example_input", "example_input_or_reason", "example_value"]

#: How example inputs look: ``"example"``, ``1``, ``true``.
EXAMPLE_STYLE = Style(label="example", boolean=True)


def _generator() -> ValueGenerator:
    return ValueGenerator(style=EXAMPLE_STYLE)


def example_value(schema: JSONValue) -> JSONValue:
    """A deterministic example for a self-contained JSON Schema (required object properties only).

    ``"example"`` when no valid value can be made.
    """
    return _generator().attempt(schema, name="example") if schema is not None else "example"


def _with_safety(op: Operation, out: JSONObject) -> JSONObject:
    keys = safety_keys(op)
    if keys.idempotency is not None:
        out[keys.idempotency] = f"{op.canonical_name}-example-key"
    if keys.confirm is not None:
        out[keys.confirm] = True
    return out


def example_input_or_reason(op: Operation) -> tuple[JSONObject | None, str | None]:
    """``(arguments, None)`` for ``op``, or ``(None, reason)`` when no valid arguments can be made."""
    try:
        return _with_safety(op, example_arguments(op, _generator(), every_input=False)), None
    except CannotMake as refused:
        return None, f"no valid example input can be made: {refused.reason}"


def example_input(op: Operation) -> JSONObject:
    """Example arguments for ``op``: its required inputs, then its safety inputs where it has them."""
    found, _ = example_input_or_reason(op)
    if found is not None:
        return found
    schema = operation_input_schema(op)
    properties: dict[str, Any] = schema.get("properties") or {}
    keys = safety_keys(op)
    controls = {keys.idempotency, keys.confirm} - {None}
    generator = _generator()
    out: JSONObject = {}
    for name in schema.get("required") or []:
        if name in properties and name not in controls:
            value = generator.attempt({**properties[name], "$defs": schema.get("$defs") or {}}, name=name)
            if value is not None:
                out[name] = value
    return _with_safety(op, out)
