"""The surface signature: every safety and contract fact a caller relies on, per approved operation.

Certification attests its digest and simulation compares a mutant's against the original's: a
mutant that weakens a control changes the signature, and :func:`classify_change` says whether the
change is ``safety-sensitive`` (a control was weakened) or ``breaking`` (a caller's contract changed).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from anvil.air.canonical import hash_canonical
from anvil.air.codec import to_json
from anvil.air.effects import effect_class_of
from anvil.air.model import Document, Operation
from anvil.air.tools import operation_input_schema

__all__ = ["SAFETY_FIELDS", "classify_change", "operation_signature", "signature_digest", "surface_signature"]

#: Signature fields whose change weakens or strengthens a safety control.
SAFETY_FIELDS: Final[frozenset[str]] = frozenset(
    {
        "effect",
        "risk",
        "reversible",
        "effectClass",
        "effectContract",
        "confirmation",
        "idempotency",
        "retries",
        "auth",
    }
)


def operation_signature(op: Operation) -> dict[str, Any]:
    """The signature of one operation (JSON-shaped, deterministic)."""
    effect = op.effect
    contract = {
        key: to_json(value)
        for key, value in (
            ("inverse", effect.inverse),
            ("compensate", effect.compensate),
            ("lookup", effect.lookup),
            ("draft", effect.draft),
        )
        if value is not None
    }
    return {
        "id": op.id,
        "tool": op.mcp.tool_name,
        "cli": op.cli.command,
        "effect": effect.kind,
        "risk": effect.risk,
        "reversible": effect.reversible,
        "effectClass": effect_class_of(op),
        "effectContract": contract,
        "confirmation": op.confirmation.required,
        "idempotency": {
            "mode": op.idempotency.mode,
            "key": op.idempotency.key,
            "derivation": op.idempotency.key_derivation,
        },
        "retries": {
            "mode": op.retries.mode,
            "basis": op.retries.basis,
            "maxAttempts": op.retries.max_attempts,
            "on": list(op.retries.retry_on),
        },
        "auth": _auth(op),
        "input": hash_canonical(operation_input_schema(op)),
        "output": hash_canonical(op.output.schema or {}),
    }


def _auth(op: Operation) -> dict[str, Any]:
    """The auth facts of the signature; a composite's factors too (dropping one weakens what is sent)."""
    auth = op.auth
    out: dict[str, Any] = {"type": auth.type, "scopes": sorted(auth.scopes), "secretSource": auth.secret_source}
    if auth.factors is not None:
        out["factors"] = [to_json(factor) for factor in auth.factors]
    return out


def surface_signature(doc: Document) -> dict[str, dict[str, Any]]:
    """AIR id -> :func:`operation_signature` for every approved operation, in AIR order."""
    return {op.id: operation_signature(op) for op in doc.operations if op.is_approved}


def signature_digest(doc: Document) -> str:
    """sha256 hex of the canonical surface signature."""
    return hash_canonical({"service": doc.service.id, "operations": surface_signature(doc)})


def classify_change(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> Literal["safety-sensitive", "breaking", "unchanged"]:
    """How ``after`` differs from ``before``: any safety field -> ``safety-sensitive``; anything else ->
    ``breaking``; equal -> ``unchanged``."""
    if before == after:
        return "unchanged"
    for op_id in before.keys() | after.keys():
        left, right = before.get(op_id), after.get(op_id)
        if left is None or right is None:
            return "breaking"
        if any(left.get(name) != right.get(name) for name in SAFETY_FIELDS):
            return "safety-sensitive"
    return "breaking"
