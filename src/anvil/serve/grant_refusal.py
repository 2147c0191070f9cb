"""A fleet's grant refusal: the structured refusal, a failure report and one audit line (original-gateway §1.7).

The grant gate runs before ``_meta`` checks, argument validation, credentials and any upstream byte, so
the refusal is written here, not by the executor: an envelope (``policy_denied`` or
``confirmation_required`` with the ``policy/grant…`` sub-code), a ``_meta.effect`` failure report for an
unstaged call, and one audit line carrying the decision and its rule. A staged call is judged on the
draft operation it performs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from anvil._types import JSONObject, JSONValue
from anvil.air.effects import effect_class_of
from anvil.air.model import Operation
from anvil.air.tools import DRY_RUN_ARGUMENT
from anvil.runtime.audit import AuditScope, audit_input, audit_scope, write_audit
from anvil.runtime.context import RuntimeContext
from anvil.runtime.tracing import current_trace_id
from anvil.serve.auth.grants import GrantDecision, refusal_envelope
from anvil.serve.controls import IDEMPOTENCY_KEY_META, STAGE_META
from anvil.serve.gateway import ServedTool
from anvil.serve.mcp.results import CallResult
from anvil.serve.report import call_report

__all__ = ["grant_refusal"]


def grant_refusal(
    tool: ServedTool,
    draft: Operation | None,
    context: RuntimeContext,
    scope: AuditScope,
    decision: GrantDecision,
    principal: str,
    connector: str,
    arguments: Mapping[str, JSONValue] | None,
    controls: Mapping[str, Any] | None,
    started: float,
) -> CallResult:
    """The refusal of a call the caller's grant does not allow.

    Args:
        tool: The tool called.
        draft: The operation its staged form performs, when it declares one served here.
        context: The bundle's runtime context (its audit sink and clock).
        scope: The caller's audit scope for this tool.
        decision: The grant's refusing decision.
        principal: The caller's principal id.
        connector: The bundle's connector.
        arguments: The call's arguments.
        controls: The forwarded ``_meta`` controls.
        started: When the call started (``time.perf_counter``).
    """
    staged = controls is not None and controls.get(STAGE_META) is True
    executed: Operation = draft if staged and draft is not None else tool.op
    trace_id = current_trace_id()  # the call span's, when traced
    envelope = refusal_envelope(decision, principal, connector, executed.id, trace_id)
    args: JSONObject = dict(arguments) if arguments else {}
    report = None
    if not staged:
        report = call_report(
            tool.plan,
            succeeded=False,
            request=args,
            response=None,
            idempotency_key=None,
            answered_at_ms=int(context.clock() * 1000),
        )
    key = controls.get(IDEMPOTENCY_KEY_META) if controls else None
    record: JSONObject = {
        "trace_id": trace_id,
        "operation": executed.id,
        "principal": principal,
        "outcome": "error",
        "error_code": envelope.code,
        "status": None,
        "attempts": 0,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        "effect_class": effect_class_of(executed),
        "ledger": "none",
        "ledger_id": key if isinstance(key, str) and key else None,  # the caller's key (ADR-0030 §5)
        "idempotency_key_forwarded": False,
        "staged_for": tool.op.id if staged else None,
        "dry_run": bool(args.get(DRY_RUN_ARGUMENT)) if tool.dry_run else False,
    }
    refused = replace(
        scope, account=decision.account, grant=decision.rule, decision=decision.verdict, rule=decision.code
    )
    with audit_scope(refused), audit_input(args):
        write_audit(context.audit, record)
    return CallResult(kind="error", envelope=envelope, report=report)
