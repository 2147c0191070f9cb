"""``harness.json``: what each callable operation does to the world, for a harness (ADR-0030 §9).

The bundle form of the harness package index (original-gateway §1.10): the connector is the service
id, and each approved operation lists its tool and CLI command, its effect kind and class, the undo
its contract declares and whether it has a draft form. A ledger or an agent harness reads this to
decide which calls it can take back, without loading the AIR.
"""

from __future__ import annotations

from typing import Final

from anvil._types import JSONObject
from anvil.air.effects import declared_undo, effect_class_of
from anvil.air.model import Document, Operation
from anvil.bundle.encoding import json_file

__all__ = ["HARNESS_FILE", "HARNESS_SCHEMA_VERSION", "emit_harness", "harness_index", "harness_operation"]

HARNESS_FILE: Final = "harness.json"
HARNESS_SCHEMA_VERSION: Final = 1


def harness_operation(op: Operation) -> JSONObject:
    """One ``operations[]`` entry: ``{id, tool, cli, effect, effect_class, undo?, draft?, confirm}``.

    ``undo`` is ``{kind: "inverse"|"compensate", operation: <AIR id>}`` only for a reversible effect
    with an inverse or a compensable one with a compensation; ``draft`` is present (``true``) only
    when a draft form is declared.
    """
    entry: JSONObject = {
        "id": op.id,
        "tool": op.mcp.tool_name,
        "cli": op.cli.command,
        "effect": op.effect.kind,
        "effect_class": effect_class_of(op),
    }
    undo = declared_undo(op)
    if undo is not None:
        entry["undo"] = {"kind": undo.kind, "operation": undo.operation}
    if op.effect.draft is not None:
        entry["draft"] = True
    entry["confirm"] = op.confirmation.required
    return entry


def harness_index(doc: Document) -> JSONObject:
    """The ``harness.json`` document: approved operations in AIR order (only they are callable)."""
    return {
        "schemaVersion": HARNESS_SCHEMA_VERSION,
        "connector": doc.service.id,
        "service": {"id": doc.service.id, "version": doc.service.version},
        "operations": [harness_operation(op) for op in doc.operations if op.state == "approved"],
    }


def emit_harness(doc: Document) -> dict[str, bytes]:
    """``{"harness.json": bytes}`` (pretty JSON, 2-space indent, trailing newline)."""
    return {HARNESS_FILE: json_file(harness_index(doc))}
