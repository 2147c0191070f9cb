"""The read-only views of ``anvil run`` (original-core §7): ``--help``, ``--policy`` and ``--errors``.

Pure functions of one operation: they never touch the network, the ledger or the environment.
``--schema`` and ``--examples`` reuse :func:`anvil.air.tools.operation_input_schema` and
:func:`anvil.bundle.example.example_input` directly.
"""

from __future__ import annotations

import json
import shlex
from typing import Final

from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import idempotency_key_required, input_bindings, safety_keys
from anvil.air.model import Operation
from anvil.runtime.envelope import CODE_TABLE

__all__ = ["EXIT_CODES", "errors_view", "example_command", "help_text", "policy", "required_flags"]

#: Every envelope code and the CLI's exit status for it (original-core §5.7), in taxonomy order.
EXIT_CODES: Final[dict[str, int]] = {code: info.exit_code for code, info in CODE_TABLE.items()}


def required_flags(op: Operation) -> list[str]:
    """The safety flags a call of ``op`` must carry: ``--confirm`` and/or ``--idempotency-key``."""
    flags = []
    if op.confirmation.required:
        flags.append("--confirm")
    if idempotency_key_required(op):
        flags.append("--idempotency-key")
    return flags


def policy(op: Operation) -> JSONObject:
    """The ``--policy`` view: the operation's safety posture and exactly which safety flags it requires."""
    idem = op.idempotency
    retries = op.retries
    return {
        "operation": op.id,
        "state": op.state,
        "deprecated": op.deprecated,
        "effect": {
            "kind": op.effect.kind,
            "action": op.effect.action,
            "risk": op.effect.risk,
            "reversible": op.effect.reversible,
        },
        "idempotency": {
            "mode": idem.mode,
            "mechanism": idem.mechanism,
            "key": idem.key,
            "key_derivation": idem.key_derivation,
            "explicit_key_required": idempotency_key_required(op),
            "explicit_key_recommended": idem.mode in ("required", "key_supported"),
        },
        "retries": {"mode": retries.mode, "basis": retries.basis, "max_attempts": retries.max_attempts},
        "confirmation": {"required": op.confirmation.required, "reason": op.confirmation.reason},
        "auth": {"type": op.auth.type, "scopes": list(op.auth.scopes), "principal": op.auth.principal},
        "required_flags": required_flags(op),
    }


def errors_view(op: Operation) -> JSONObject:
    """The ``--errors`` view: the declared errors with their exit status, and the whole exit-code table."""
    errors: list[JSONValue] = [
        {
            "code": spec.code,
            "upstream_status": spec.upstream.http_status if spec.upstream is not None else None,
            "message": spec.message,
            "exit_code": EXIT_CODES.get(spec.code, 7),
        }
        for spec in op.errors
    ]
    return {"operation": op.id, "errors": errors, "exit_codes": dict(EXIT_CODES)}


def _type_of(schema: JSONValue) -> str:
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, str):
            return kind
        if isinstance(kind, list):
            return "|".join(str(k) for k in kind)
    return "value"


def _shell_value(value: JSONValue) -> str:
    if isinstance(value, str):
        return shlex.quote(value)
    return shlex.quote(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def example_command(op: Operation, flags: dict[str, str], usage: str) -> str:
    """One complete invocation of ``op`` from its example input (flags in schema order)."""
    from anvil.bundle.example import example_input

    keys = safety_keys(op)
    parts = [usage]
    for name, value in example_input(op).items():
        if name == keys.confirm:
            parts.append("--confirm")
        elif name == keys.idempotency:
            parts += ["--idempotency-key", _shell_value(value)]
        elif name in flags:
            parts += [flags[name], _shell_value(value)]
    return " ".join(parts)


def help_text(op: Operation, flags: dict[str, str], usage: str) -> str:
    """The ``--help``/``--explain`` text: identity, usage, inputs, safety, errors and an example."""
    from anvil.air.tools import operation_input_schema

    properties = operation_input_schema(op).get("properties") or {}
    lines = [f"{op.display_name} — {op.id}"]
    if op.description:
        lines.append(op.description)
    lines += ["", f"Usage: {usage} [flags]", "", "Inputs:"]
    seen: set[str] = set()
    content_type = op.input.body.content_type if op.input.body is not None else "application/json"
    for binding in input_bindings(op):
        if binding.property in seen or binding.property not in flags:
            continue
        seen.add(binding.property)
        flag = flags[binding.property]
        need = " (required)" if binding.required else ""
        schema = properties.get(binding.property)
        described = schema.get("description") if isinstance(schema, dict) else None
        if binding.location == "body":
            text = "JSON body — " + (described or "provide the full object")
            lines.append(f"  {flag}{need}  [body:{content_type}]  {text}")
        else:
            where = "body" if binding.location == "body_field" else binding.location
            lines.append(f"  {flag}{need}  [{where}]  {described or _type_of(schema)}")
    keys = safety_keys(op)
    if keys.idempotency is not None:
        if idempotency_key_required(op):
            lines.append("  --idempotency-key (required)")
        elif op.idempotency.key_derivation == "request_fingerprint":
            lines.append("  --idempotency-key (recommended; deterministic request-fingerprint fallback)")
        else:
            lines.append("  --idempotency-key (optional)")
    if keys.confirm is not None:
        lines.append("  --confirm (required)")
    safety = []
    if op.confirmation.required:
        safety.append("Requires --confirm.")
    if idempotency_key_required(op):
        safety.append("Requires --idempotency-key.")
    retried = op.retries.mode == "safe" and op.retries.max_attempts > 1
    safety.append("Transient failures are retried automatically." if retried else "Not retried automatically.")
    lines += ["", "Safety: " + " ".join(safety)]
    if op.errors:
        lines += ["", "Errors:"]
        for spec in op.errors:
            status = spec.upstream.http_status if spec.upstream is not None else None
            lines.append(f"  {spec.code}" + (f" ({status})" if status is not None else ""))
    lines += ["", "Examples:", "  " + example_command(op, flags, usage)]
    return "\n".join(lines)
