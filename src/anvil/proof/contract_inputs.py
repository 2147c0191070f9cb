"""The inputs an effect contract reads: made for every lane that calls the operation.

An undo, a compensation, a lookup or a draft maps its arguments from the call (ADR-0030 §2): a path
such as ``request.body.shopperReference`` needs the call to have sent that value. A lane that calls
with required inputs only (simulate) would leave out an optional body, and then report ``undo=none``
where selftest, sending every input, and a live call resolve the undo. So each lane completes its
arguments with :func:`complete_for_contract`: every required (no ``?``) ``request`` path the contract
reads is made from the input schema when the arguments lack it, and when no value can be made the
lane skips the operation with the reason it returns rather than failing it.
"""

from __future__ import annotations

from typing import Any

from anvil._types import JSONObject, JSONValue
from anvil.air.model import Operation
from anvil.air.paths import NOTHING, Path, format_path, parse_source, resolve_path
from anvil.air.tools import operation_input_schema
from anvil.air.values import CannotMake, ValueGenerator

__all__ = ["complete_for_contract", "contract_request_paths"]


def contract_request_paths(op: Operation) -> list[Path]:
    """Every required ``request`` path ``op``'s effect contract reads (inverse, compensation, lookup,
    draft and its promote and discard), in declaration order, each once."""
    effect = op.effect
    mappings: list[JSONObject] = [
        step.arguments for step in (effect.inverse, effect.compensate, effect.lookup, effect.draft) if step is not None
    ]
    if effect.draft is not None:
        mappings += [step.arguments for step in (effect.draft.promote, effect.draft.discard) if step is not None]
    found: list[Path] = []
    for mapping in mappings:
        for source in mapping.values():
            parsed = parse_source(source)
            if isinstance(parsed, Path) and parsed.root == "request" and not parsed.optional and parsed not in found:
                found.append(parsed)
    return found


def _merged(held: JSONValue, made: JSONValue) -> JSONValue:
    """``made`` under what the arguments already hold: held values win, missing fields are added."""
    if isinstance(held, dict) and isinstance(made, dict):
        out = dict(made)
        out.update({key: _merged(value, made.get(key)) for key, value in held.items()})
        return out
    return made if held is None else held


def complete_for_contract(op: Operation, arguments: JSONObject, generator: ValueGenerator) -> str | None:
    """Add to ``arguments`` (in place) every value ``op``'s effect contract reads that they lack.

    Returns:
        None when every required ``request`` path the contract reads now names a value, else why not
        (``its effect contract reads request.body.x, which ...``): the lane skips the operation with it.
    """
    paths = [path for path in contract_request_paths(op) if resolve_path(path, request=arguments) is NOTHING]
    if not paths:
        return None
    schema = operation_input_schema(op)
    properties: dict[str, Any] = schema.get("properties") or {}
    for path in paths:
        if resolve_path(path, request=arguments) is not NOTHING:
            continue
        top = path.segments[0]
        shown = format_path(path)
        if not isinstance(top, str) or top not in properties:
            return f"its effect contract reads {shown}, which is not an input of the operation"
        try:
            made = generator.make(
                {**properties[top], "$defs": schema.get("$defs") or {}},
                name=top,
                optional_level=len(path.segments),
                direction="request",
            )
        except CannotMake as refused:
            return f"its effect contract reads {shown}, and no value of it can be made: {refused.reason}"
        arguments[top] = _merged(arguments.get(top), made)
        if resolve_path(path, request=arguments) is NOTHING:
            return f"its effect contract reads {shown}, which no value the input schema allows holds"
    return None
