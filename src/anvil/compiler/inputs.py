"""Public input names that do not collide: the deterministic disambiguation rule.

Every wire input (a parameter or a projected body field) is published under ``prop_key`` of its wire
name. Real specs fold several wire inputs to one key: ``StartTime``, ``StartTime<`` and ``StartTime>``
are all ``start_time``; a path parameter and a body field share ``id``. Such an operation used to be
blocked (``duplicate_agent_input_name``). The rule, applied to every group of inputs that share a key
and that no manifest renamed:

1. The input that keeps the key is one the manifest named (``inputs:``), else the first by location
   (path, query, header, cookie, body field), then by its order in the spec. Names the manifest
   chose are never changed here (two inputs it gave one name stay blocked).
2. Each other input is named from its wire name with comparison operators spelled out (``<`` ->
   ``_lt``, ``<=`` -> ``_lte``, ``>`` -> ``_gt``, ``>=`` -> ``_gte``, ``!=`` -> ``_ne``, ``[]`` ->
   ``_list``), when that gives a key still free;
3. else the key followed by its location (``id_body``, ``id_query``);
4. else that followed by ``_2``, ``_3``, ... until free.

The wire name never changes (``x-anvil-wire-name`` in the schema); the new name is the input's
``agentName``, reported with an ``input_renamed`` info diagnostic. Names depend only on the
operation's own inputs, so they are stable across recompiles and unaffected by other operations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from anvil.air.model import BodyField, Operation, Param
from anvil.air.naming import prop_key
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = ["disambiguate_inputs", "spelled_key"]

_LOCATION_ORDER: Final = {"path": 0, "query": 1, "header": 2, "cookie": 3, "body": 4}
_OPERATORS: Final = (("<=", "_lte"), (">=", "_gte"), ("!=", "_ne"), ("<", "_lt"), (">", "_gt"), ("[]", "_list"))


def spelled_key(wire_name: str) -> str:
    """``prop_key`` of ``wire_name`` with its comparison operators spelled out (``StartTime<`` -> ``start_time_lt``)."""
    text = wire_name
    for operator, word in _OPERATORS:
        text = text.replace(operator, word)
    return prop_key(text)


def _inputs(op: Operation) -> list[tuple[str, int, str, str, bool]]:
    """(location, index, wire name, public key, named by the manifest) of every param and body field."""
    found: list[tuple[str, int, str, str, bool]] = [
        (str(param.in_), index, param.name, prop_key(param.agent_name or param.name), param.agent_name is not None)
        for index, param in enumerate(op.input.params)
    ]
    body = op.input.body
    if body is not None and body.projection == "fields":
        for index, item in enumerate(body.fields):
            named = item.agent_name is not None
            found.append(("field", index, item.name, prop_key(item.agent_name or item.name), named))
    return found


def _rename(op: Operation, renames: dict[tuple[str, int], str]) -> Operation:
    params: list[Param] = [
        replace(param, agent_name=renames[("param", index)]) if ("param", index) in renames else param
        for index, param in enumerate(op.input.params)
    ]
    body = op.input.body
    if body is not None and any(kind == "field" for kind, _ in renames):
        fields: list[BodyField] = [
            replace(item, agent_name=renames[("field", index)]) if ("field", index) in renames else item
            for index, item in enumerate(body.fields)
        ]
        body = replace(body, fields=tuple(fields))
    return replace(op, input=replace(op.input, params=tuple(params), body=body))


def _one(op: Operation) -> tuple[Operation, list[Diagnostic]]:
    inputs = _inputs(op)
    groups: dict[str, list[tuple[str, int, str, str, bool]]] = defaultdict(list)
    for item in inputs:
        groups[item[3]].append(item)
    if all(len(group) == 1 for group in groups.values()):
        return op, []
    taken = set(groups)
    renames: dict[tuple[str, int], str] = {}
    found: list[Diagnostic] = []
    for key, group in groups.items():
        if len(group) == 1:
            continue
        ordered = sorted(
            group, key=lambda item: (not item[4], _LOCATION_ORDER.get(item[0], 4), item[0] == "field", item[1])
        )
        for location, index, wire, _key, named in ordered[1:]:
            if named:
                continue  # the manifest chose it: a clash between two chosen names stays blocked
            where = "body" if location == "field" else location
            candidates = [spelled_key(wire), f"{key}_{where}"]
            name = next((c for c in candidates if c not in taken), None)
            if name is None:
                number = 2
                while f"{key}_{where}_{number}" in taken:
                    number += 1
                name = f"{key}_{where}_{number}"
            taken.add(name)
            renames[("field" if location == "field" else "param", index)] = name
            found.append(
                diagnostic(
                    "input_renamed",
                    f"Operation '{op.id}': the {where} input {wire!r} is published as {name!r} "
                    f"({key!r} is taken by {ordered[0][2]!r}).",
                    operation=op.id,
                    hint="Choose another name with the manifest's `inputs:` key if this one reads badly.",
                )
            )
    return _rename(op, renames), found


def disambiguate_inputs(operations: Sequence[Operation]) -> tuple[tuple[Operation, ...], list[Diagnostic]]:
    """Give every colliding public input of every operation a free name by the module's rule."""
    out: list[Operation] = []
    found: list[Diagnostic] = []
    for op in operations:
        renamed, diagnostics = _one(op)
        out.append(renamed)
        found.extend(diagnostics)
    return tuple(out), found
