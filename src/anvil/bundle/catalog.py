"""``catalog.json``: every compiled operation with its state and posture (original-core §4.2).

The catalog is what harness hooks read to decide allow/ask/deny before a tool call, so it carries
every operation (not only approved ones) with the facts a hook needs, plus the capability index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from anvil.air.inputs import idempotency_key_required, input_bindings, safety_keys
from anvil.air.model import Capability, Claim, Document, Evidence, Operation
from anvil.bundle.encoding import json_file

__all__ = [
    "EVIDENCE_RELIABILITY",
    "catalog_json",
    "emit_catalog",
    "evidence_confidence",
    "input_signature",
    "short_description",
]

#: Default reliability per evidence kind (original-core §1.13).
EVIDENCE_RELIABILITY: dict[str, float] = {
    "recorded_traffic": 0.95,
    "source_impl": 0.9,
    "test_fixture": 0.85,
    "spec": 0.7,
    "postman": 0.6,
    "incident": 0.6,
    "doc_example": 0.5,
    "inferred": 0.4,
    "generated_mock": 0.3,
}
_INACTIVE_REVIEWS = frozenset({"rejected", "superseded"})
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
_MAX_DESCRIPTION = 160
_MAX_SIGNATURE = 8


def evidence_confidence(evidence: Evidence) -> float:
    """Node confidence for display: the weakest predicate's leading support (original-core §1.13).

    Per predicate, claims are grouped by value; a group's support is the noisy-OR of confidence times
    the evidence kind's reliability, capped at 0.99; the leader is the best-supported group. No active
    claim means no confidence (0).
    """
    groups: dict[str, dict[str, list[Claim]]] = {}
    for claim in evidence.claims:
        if claim.review in _INACTIVE_REVIEWS:
            continue
        groups.setdefault(claim.predicate, {}).setdefault(repr(claim.value), []).append(claim)
    if not groups:
        return 0.0
    leaders = []
    for by_value in groups.values():
        supports = []
        for claims in by_value.values():
            miss = 1.0
            for claim in claims:
                miss *= 1.0 - claim.confidence * EVIDENCE_RELIABILITY.get(claim.source, 0.4)
            supports.append(min(0.99, 1.0 - miss))
        leaders.append(max(supports))
    return round(min(leaders), 2)


def short_description(text: str) -> str | None:
    """The description with HTML stripped, cut at a word to at most 160 characters ("…" when cut)."""
    plain = _SPACE.sub(" ", _TAG.sub(" ", text)).strip()
    if not plain:
        return None
    if len(plain) <= _MAX_DESCRIPTION:
        return plain
    cut = plain[: _MAX_DESCRIPTION - 1]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:.") + "…"


def input_signature(op: Operation) -> str | None:
    """A one-line input signature: required params (``*``), optional params, then ``body.<field>``.

    At most eight entries, then "…"; None when the operation takes no business input.
    """
    bindings = input_bindings(op)
    params = [b for b in bindings if b.location not in ("body_field", "body")]
    bodies = [b for b in bindings if b.location in ("body_field", "body")]
    items = [f"{b.property}*" for b in params if b.required]
    items += [b.property for b in params if not b.required]
    for b in sorted(bodies, key=lambda b: not b.required):
        name = f"body.{b.property}" if b.location == "body_field" else "body"
        items.append(f"{name}*" if b.required else name)
    if not items:
        return None
    if len(items) > _MAX_SIGNATURE:
        items = [*items[:_MAX_SIGNATURE], "…"]
    return ", ".join(items)


def _operation_entry(op: Operation) -> dict[str, Any]:
    keys = safety_keys(op)
    entry: dict[str, Any] = {
        "id": op.id,
        "canonicalName": op.canonical_name,
        "displayName": op.display_name,
        "capability": op.capability_id,
        "effect": op.effect.kind,
        "action": op.effect.action,
        "principal": op.auth.principal,
        "risk": op.effect.risk,
        "reversible": op.effect.reversible,
        "idempotency": op.idempotency.mode,
        "idempotencyKeyRequired": keys.idempotency is not None and idempotency_key_required(op),
        "idempotencyKeyInput": keys.idempotency,
        "retrySafe": op.retries.mode == "safe",
        "confirmationRequired": op.confirmation.required,
        "confirmationInput": keys.confirm,
    }
    if op.confirmation.reason:
        entry["confirmationReason"] = op.confirmation.reason
    entry.update(
        {
            "humanApproval": bool(op.confirmation.human_approval),
            "auth": {"type": op.auth.type, "scopes": list(op.auth.scopes)},
            "cli": op.cli.command,
            "mcpTool": op.mcp.tool_name,
            "state": op.state,
            "intentExamples": list(op.skill.intent_examples),
            "confidence": evidence_confidence(op.evidence),
        }
    )
    description = short_description(op.description)
    if description:
        entry["description"] = description
    signature = input_signature(op)
    if signature:
        entry["inputs"] = signature
    if op.source_ref.path and op.source_ref.method:
        entry["path"] = f"{op.source_ref.method.upper()} {op.source_ref.path}"
    if op.long_running:
        entry["longRunning"] = True
    if op.archetype:
        entry["archetype"] = op.archetype
    return entry


def _capability_entry(capability: Capability) -> dict[str, Any]:
    return {
        "id": capability.id,
        "displayName": capability.display_name,
        "description": capability.description,
        "source": capability.source,
        "operations": list(capability.operation_ids),
        "workflows": list(capability.workflow_ids),
        "state": capability.state,
        "confidence": evidence_confidence(capability.evidence),
    }


def catalog_json(doc: Document) -> dict[str, Any]:
    """The catalog object: service identity, capabilities (sorted by id) and every operation."""
    capabilities: Iterable[Capability] = sorted(doc.capabilities, key=lambda c: c.id)
    return {
        "service": {"id": doc.service.id, "version": doc.service.version, "displayName": doc.service.display_name},
        "capabilities": [_capability_entry(c) for c in capabilities],
        "operations": [_operation_entry(op) for op in doc.operations],
    }


def emit_catalog(doc: Document) -> dict[str, bytes]:
    """``{"catalog.json": bytes}``."""
    return {"catalog.json": json_file(catalog_json(doc))}
