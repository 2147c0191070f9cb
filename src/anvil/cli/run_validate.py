"""``anvil run ... --validate-input``: check a call's arguments without calling anything (seed 001 §5).

The check is the runtime's own, in its order: the tool's argument schema (what the gateway validates
against, safety controls left to the gates), then the executor's gates that need no network, ledger
or credential: approval, required inputs, confirmation, the idempotency key (portable, sent somewhere,
one key, present when the operation requires one and cannot derive it, within the carrier's schema)
and whether every input can be placed on the wire. A clean check answers ``{"valid": true, ...}``;
otherwise the envelope the call itself would have been refused with.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import safety_keys
from anvil.air.model import Operation
from anvil.air.tools import published_input_schema
from anvil.runtime import gates
from anvil.runtime.envelope import CODE_TABLE, ErrorEnvelope
from anvil.runtime.gates import Refusal
from anvil.runtime.request import BuildError, build_request, prepare
from anvil.serve.mcp.validation import MAX_ARGUMENT_DEPTH, ArgumentCheck, call_schema, too_deep

__all__ = ["argument_refusal", "validate_arguments"]

#: Request building needs a base URL; nothing is ever sent to it.
_NOWHERE = "https://validate-input.invalid"


def _envelope(op: Operation, refusal: Refusal) -> JSONObject:
    info = CODE_TABLE.get(refusal.code)
    return ErrorEnvelope(
        code=refusal.code,
        message=refusal.message,
        retryable=refusal.retryable if refusal.retryable is not None else bool(info and info.retryable),
        safe_to_retry=bool(refusal.safe_to_retry),
        operation=op.id,
        trace_id=f"trace_{uuid.uuid4()}",
        required_flags=refusal.required_flags,
        details=refusal.details,
    ).to_json()


def _schema_check(op: Operation, arguments: Mapping[str, JSONValue]) -> None:
    """The gateway's argument check (depth, then the tool's schema): what MCP and REST refuse."""
    if too_deep(dict(arguments)):
        raise Refusal(
            "validation_error",
            f"The arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels.",
            details={"field": "arguments", "max_depth": MAX_ARGUMENT_DEPTH},
        )
    keys = safety_keys(op)
    relaxed = [key for key in (keys.idempotency, keys.confirm) if key is not None]
    violation = ArgumentCheck(call_schema(published_input_schema(op), relaxed)).check(dict(arguments))
    if violation is not None:
        raise Refusal("validation_error", violation.message, details=violation.details)


def argument_refusal(op: Operation, arguments: Mapping[str, JSONValue]) -> JSONObject | None:
    """The envelope MCP and REST would refuse ``arguments`` with before the wire, or None.

    ``anvil run`` checks every call with it, direct or through ``--mcp``, so the CLI never sends what
    the gateway refuses. An unapproved operation is left to the executor's approval gate.
    """
    if not op.is_approved:
        return None
    try:
        _schema_check(op, arguments)
    except Refusal as refusal:
        return _envelope(op, refusal)
    return None


def validate_arguments(
    op: Operation, arguments: Mapping[str, JSONValue], *, confirm: bool, idempotency_key: str | None
) -> tuple[JSONObject, bool]:
    """Validate one call of ``op`` as the runtime would, without calling anything.

    Args:
        op: the operation.
        arguments: the call's arguments (business inputs and any safety inputs).
        confirm: ``--confirm`` was given.
        idempotency_key: ``--idempotency-key``, if given.

    Returns:
        ``({"valid": true, "operation": id, "idempotency_key_derived": bool}, True)`` when the call
        would pass every input check, else ``(envelope, False)``.
    """
    try:
        gates.check_operation(op)
        keys = safety_keys(op)
        _schema_check(op, arguments)
        plan = prepare(op)
        checked = gates.check_required(plan, dict(arguments))
        _business, candidates = gates.split_key_inputs(plan, checked, idempotency_key)
        gates.check_confirmation(plan, checked, confirm, candidates)
        explicit = gates.explicit_key(plan, candidates)
        derives = plan.carrier is not None and op.idempotency.key_derivation == "request_fingerprint"
        if explicit is not None and plan.key_check is not None and not plan.key_check(explicit):
            raise Refusal(
                "validation_error",
                "The idempotency key does not satisfy the modeled upstream carrier constraints.",
                details={"field": keys.idempotency or "idempotency_key"},
            )
        if op.idempotency.mode == "required" and explicit is None and not derives:
            raise Refusal(
                "idempotency_required",
                f"Operation '{op.id}' requires an idempotency key.",
                required_flags=("--idempotency-key",),
            )
        try:
            build_request(plan, checked, _NOWHERE, explicit)
        except BuildError as exc:
            raise Refusal(
                "validation_error", f"Input '{exc.field}' cannot be sent upstream.", details={"field": exc.field}
            ) from None
    except Refusal as refusal:
        return _envelope(op, refusal), False
    return {"valid": True, "operation": op.id, "idempotency_key_derived": explicit is None and derives}, True
