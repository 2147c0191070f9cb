"""Example arguments and idempotency keys for an operation, made by :mod:`anvil.air.values`."""

from __future__ import annotations

from anvil._types import JSONObject
from anvil.air.inputs import idempotency_key_schema, safety_keys
from anvil.air.model import Operation
from anvil.air.tools import operation_input_schema
from anvil.air.values import ValueGenerator

__all__ = ["example_arguments", "idempotency_key"]


def example_arguments(
    op: Operation, generator: ValueGenerator, *, every_input: bool = True, fresh: bool = False
) -> JSONObject:
    """Business arguments for ``op`` made from its input schema (the safety inputs are left to the caller).

    Args:
        op: the operation.
        generator: the lane's generator.
        every_input: fill every optional input (and one level of optional fields below); False fills
            required inputs and fields only.
        fresh: make every value anew (no declared example).

    Raises:
        CannotMake: a required input cannot be made (the reason names it).
    """
    schema = operation_input_schema(op)
    keys = safety_keys(op)
    controls = {keys.confirm, keys.idempotency} - {None}
    properties = schema.get("properties")
    business: JSONObject = {
        **schema,
        "properties": {k: v for k, v in (properties or {}).items() if k not in controls},
        "required": [k for k in schema.get("required") or () if k not in controls],
    }
    made = generator.make(
        business,
        name=op.canonical_name or "input",
        fresh=fresh,
        optional_level=1 if every_input else -1,
        direction="request",
    )
    return made if isinstance(made, dict) else {}


def idempotency_key(op: Operation, generator: ValueGenerator, label: str) -> str:
    """A fresh idempotency key for ``op`` that fits its carrier's schema (never a spec example)."""
    return generator.fresh_key(label, idempotency_key_schema(op))
