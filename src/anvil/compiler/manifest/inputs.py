"""The manifest's ``inputs:`` key: a reviewer names an operation's public inputs.

``inputs: {"StartTime<": start_time_before, "body:id": call_id}`` publishes the wire input on the left
under the name on the right (its ``agentName``); the wire name never changes. A wire name that two
locations share is picked by a ``<location>:`` prefix (``path``, ``query``, ``header``, ``cookie``,
``body``). A name that matches no input, or several, is ``manifest/unknown_input``, an input error:
the manifest must be fixed before anything is written. Names chosen here are kept by the compiler's
own disambiguation (:mod:`anvil.compiler.inputs`); two inputs given one name still block the operation
(``duplicate_agent_input_name``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from anvil.air.model import Operation
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = ["rename_inputs"]

_LOCATIONS: Final = ("path", "query", "header", "cookie", "body")


def _targets(op: Operation, written: str) -> list[tuple[str, int]]:
    """The (kind, index) of every input ``written`` names: ``("param", i)`` or ``("field", i)``."""
    location, _, rest = written.partition(":")
    qualified = location in _LOCATIONS and bool(rest)
    found: list[tuple[str, int]] = []
    for index, param in enumerate(op.input.params):
        if param.name == written or (qualified and param.name == rest and param.in_ == location):
            found.append(("param", index))
    body = op.input.body
    if body is not None and body.projection == "fields":
        for index, item in enumerate(body.fields):
            if item.name == written or (qualified and location == "body" and item.name == rest):
                found.append(("field", index))
    return found


def rename_inputs(op: Operation, names: Mapping[str, str]) -> tuple[Operation, list[Diagnostic]]:
    """Publish ``op``'s inputs under the names ``names`` gives (wire input -> public name)."""
    params = list(op.input.params)
    body = op.input.body
    fields = list(body.fields) if body is not None else []
    found: list[Diagnostic] = []
    for written, name in names.items():
        targets = _targets(op, written)
        if len(targets) != 1:
            what = "no input" if not targets else "several inputs"
            found.append(
                diagnostic(
                    "manifest/unknown_input",
                    f"Operation '{op.id}': inputs.{written} names {what}; nothing was renamed.",
                    operation=op.id,
                    hint="Use a parameter or body-field name as the spec writes it; "
                    "prefix a location (body:id, path:id) when two inputs share it.",
                )
            )
            continue
        kind, index = targets[0]
        if kind == "param":
            params[index] = replace(params[index], agent_name=name)
        else:
            fields[index] = replace(fields[index], agent_name=name)
    new_body = replace(body, fields=tuple(fields)) if body is not None else None
    return replace(op, input=replace(op.input, params=tuple(params), body=new_body)), found
