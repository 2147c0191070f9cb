"""Machine surfaces: ``tools.json``, ``schemas/<op.id>.schema.json`` and ``runtime/operations.manifest.json``.

``tools.json`` is exactly what ``tools/list`` serves for the bundle (approved operations only; each
``outputSchema`` within the tool budget, see :mod:`anvil.air.surface`; the server adds its effect keys
to ``_meta``), so a client or reviewer can diff the tool surface without starting a server.
``schemas/`` holds the assembled input schema of every operation whatever its state; the runtime
manifest lists approved operations only (original-core §4.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anvil.air.codec import to_json
from anvil.air.model import Document, Operation
from anvil.air.surface import surface_of
from anvil.air.tools import operation_input_schema
from anvil.bundle.encoding import json_file

__all__ = ["emit_runtime", "runtime_entry", "runtime_manifest", "tools_catalog"]


def tools_catalog(doc: Document) -> dict[str, Any]:
    """``{"tools": [...]}``: the ``tools/list`` projection of the approved operations, in AIR order."""
    surface = surface_of(doc)
    return {"tools": [surface.definition(op) for op in doc.operations if op.state == "approved"]}


def runtime_entry(op: Operation, tool_name: str | None = None) -> dict[str, Any]:
    """One operation's runtime manifest entry; ``tool_name`` replaces ``op.mcp.tool_name`` (a fleet's
    prefixed name, so the entry names what a caller dials)."""
    entry: dict[str, Any] = {
        "id": op.id,
        "toolName": op.mcp.tool_name if tool_name is None else tool_name,
        "cli": op.cli.command,
        "sourceRef": to_json(op.source_ref),
        "effect": to_json(op.effect),
        "params": [{"name": p.name, "in": p.in_, "required": p.required} for p in op.input.params],
    }
    if op.input.body is not None:
        entry["body"] = {"contentType": op.input.body.content_type, "required": op.input.body.required}
    entry.update(
        {
            "idempotency": to_json(op.idempotency),
            "retries": to_json(op.retries),
            "confirmation": to_json(op.confirmation),
            "auth": to_json(op.auth),
        }
    )
    return entry


def runtime_manifest(doc: Document, served: Sequence[tuple[Operation, str]] | None = None) -> dict[str, Any]:
    """The runtime manifest: service identity, base URL and every approved operation's wire posture.

    ``served`` narrows and names the operations: (operation, tool name) pairs in listing order, as a
    server that prefixes or hides tools shows them (default: every approved operation, its own name).
    """
    servers = doc.service.servers
    if served is None:
        served = [(op, op.mcp.tool_name) for op in doc.operations if op.state == "approved"]
    return {
        "service": doc.service.id,
        "version": doc.service.version,
        "baseUrl": servers[0].url if servers else None,
        "operations": [runtime_entry(op, name) for op, name in served],
    }


def emit_runtime(doc: Document) -> dict[str, bytes]:
    """``tools.json``, one ``schemas/<op.id>.schema.json`` per operation and the runtime manifest."""
    files = {"tools.json": json_file(tools_catalog(doc))}
    for op in doc.operations:
        files[f"schemas/{op.id}.schema.json"] = json_file(operation_input_schema(op))
    files["runtime/operations.manifest.json"] = json_file(runtime_manifest(doc))
    return files
