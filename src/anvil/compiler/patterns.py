"""Schema patterns the gateway cannot check exactly: ``schema/pattern_loosened`` findings.

The gateway, the mock and the value generator match every schema ``pattern`` in linear time
(:mod:`anvil.air.patterns`). A pattern using what that matcher lacks (a lookaround inside it, a
backreference), or one too large for it, is checked loosely (only texts the pattern refuses are refused)
or not at all; the author learns which here, once per operation and pattern, and the upstream still
judges what it receives.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from anvil._types import JSONValue
from anvil.air.model import Operation
from anvil.air.patterns import schema_pattern
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = ["pattern_findings"]

_SCHEMA: Final = frozenset(
    {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"}
    | {"unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema"}
)
_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_SHOWN: Final = 80


def _patterns(schema: JSONValue) -> Iterator[str]:
    """Every ``pattern`` and ``patternProperties`` name in ``schema`` (schema keywords only, no refs followed)."""
    pending: deque[JSONValue] = deque([schema])  # breadth first: findings in the order the schema declares them
    while pending:
        node = pending.popleft()
        if not isinstance(node, dict):
            continue
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            yield pattern
        named = node.get("patternProperties")
        if isinstance(named, dict):
            yield from named
        for key, value in node.items():
            if key in _SCHEMA and isinstance(value, dict):
                pending.append(value)
            elif key in _LISTS and isinstance(value, list):
                pending.extend(value)
            elif key in _MAPS and isinstance(value, dict):
                pending.extend(value.values())


def _finding(pattern: str, operation: str | None) -> Diagnostic | None:
    matcher = schema_pattern(pattern)
    if matcher.exact:
        return None
    shown = repr(pattern if len(pattern) <= _SHOWN else pattern[:_SHOWN] + "...")
    where = f"Operation '{operation}'" if operation is not None else "A shared schema"
    if matcher.enforced:
        what = "a lookaround or a backreference a linear-time matcher cannot check: a looser pattern is checked"
    else:
        what = "more than the linear-time matcher holds (length, counts or size): it is not checked"
    return diagnostic(
        "schema/pattern_loosened",
        f"{where}: pattern {shown} uses {what}; the upstream judges the rest.",
        operation=operation,
        hint="anchored lookaheads after ^ and lookbehinds before $ are checked exactly",
    )


def pattern_findings(
    operations: Sequence[Operation], shared: Mapping[str, JSONValue] | None = None
) -> list[Diagnostic]:
    """``schema/pattern_loosened`` for each pattern of each operation's schemas (and of the ``shared``
    component schemas) the gateway checks only loosely or not at all, once per operation and pattern."""
    found: list[Diagnostic] = []
    for op in operations:
        seen: set[str] = set()
        for schema in (op.input.schema, op.output.schema):
            for pattern in _patterns(schema):
                if pattern not in seen:
                    seen.add(pattern)
                    item = _finding(pattern, op.id)
                    if item is not None:
                        found.append(item)
    if shared:
        seen = set()
        for pattern in _patterns({"$defs": dict(shared)}):
            if pattern not in seen:
                seen.add(pattern)
                item = _finding(pattern, None)
                if item is not None:
                    found.append(item)
    return found
