"""Validation (original-core §3.6): per-operation rules, each with its code and its consequence.

Validation runs after every overlay, so no manifest can talk its way past it: an operation whose
idempotency key cannot reach the wire is blocked with retries off, an operation whose own server has
no URL is blocked (never sent to the service's server instead), a form body whose schema names no
fields is blocked (no request could be encoded from it), a mutation without proven idempotency never
retries, and a financial or destructive mutation always asks for confirmation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from anvil.air.carrier import CARRIER_SCHEMA_ISSUE, auth_carrier_conflict, resolve_carrier
from anvil.air.forms import is_form_media_type
from anvil.air.inputs import input_bindings
from anvil.air.model import Operation, RetryPolicy, Server
from anvil.air.servers import operation_server, resolve_server, server_hosts
from anvil.compiler.classify import passthrough_inputs
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = ["RETRIES_OFF", "block", "critique_names", "service_host", "validate_operations"]

#: The retry policy of an operation whose retries were forced off.
RETRIES_OFF: Final = RetryPolicy(mode="none", basis="unproven", max_attempts=1, backoff="none", retry_on=())
_WEAK_NAME: Final = 0.5


def block(op: Operation, note: str) -> Operation:
    """``op`` blocked, with ``note`` appended to its review notes (once)."""
    notes = op.review_notes if note in op.review_notes else (*op.review_notes, note)
    return replace(op, state="blocked", review_notes=notes)


def _note(op: Operation, note: str) -> Operation:
    return op if note in op.review_notes else replace(op, review_notes=(*op.review_notes, note))


def _duplicates(ops: Sequence[Operation]) -> tuple[list[Operation], list[Diagnostic]]:
    out = list(ops)
    found: list[Diagnostic] = []
    surfaces: tuple[tuple[str, str, Callable[[Operation], str]], ...] = (
        ("duplicate_operation_id", "id", lambda op: op.id),
        ("duplicate_tool_name", "tool name", lambda op: op.mcp.tool_name),
        ("duplicate_cli_command", "CLI command", lambda op: op.cli.command),
    )
    for code, label, surface in surfaces:
        counts = Counter(surface(op) for op in out)
        for index, op in enumerate(out):
            value = surface(op)
            if counts[value] > 1:
                found.append(
                    diagnostic(code, f"{counts[value]} operations share the {label} {value!r}.", operation=op.id)
                )
                out[index] = block(op, f"Blocked: the {label} {value!r} is not unique.")
    return out, found


def _carrier_rules(op: Operation, found: list[Diagnostic]) -> Operation:
    resolution = resolve_carrier(op)
    if resolution.issue is not None:
        code = resolution.code or "unsupported_idempotency_carrier"
        if code == CARRIER_SCHEMA_ISSUE:
            note = f"Blocked: the idempotency key schema cannot be enforced ({resolution.issue})."
        else:
            note = (
                "Blocked: the declared idempotency key cannot be injected into an exact modeled request "
                f"coordinate ({resolution.issue})."
            )
        found.append(diagnostic(code, f"Operation '{op.id}': {resolution.issue}.", operation=op.id))
        return replace(block(op, note), retries=replace(RETRIES_OFF, max_delay_ms=op.retries.max_delay_ms))
    binding = resolution.binding
    if binding is not None and auth_carrier_conflict(op, binding):
        found.append(
            diagnostic(
                "idempotency_auth_carrier_conflict",
                f"Operation '{op.id}': the idempotency {binding.mechanism} {binding.key!r} is the credential carrier.",
                operation=op.id,
            )
        )
        note = f"Blocked: the idempotency {binding.mechanism} {binding.key!r} is also the credential carrier."
        return replace(block(op, note), retries=replace(RETRIES_OFF, max_delay_ms=op.retries.max_delay_ms))
    return op


def service_host(servers: Sequence[Server]) -> str | None:
    """The host of the service's first server (variables at their defaults), or None when it has none."""
    url = resolve_server(servers[0]).url if servers else None
    hosts = server_hosts([url]) if url else ()
    return hosts[0] if hosts else None


def _service_server_rules(servers: Sequence[Server], found: list[Diagnostic]) -> None:
    """A service server whose host is no host name (``https://status.example.net,com,net,io``) is refused:
    it is never a base URL nor an allowlisted host."""
    for server in servers:
        resolved = resolve_server(server)
        if resolved.bad_host:
            found.append(diagnostic("server/invalid_host", f"The service's {resolved.issue}; it is never called."))


def _server_rules(op: Operation, found: list[Diagnostic], home: str | None) -> Operation:
    """An operation with its own server is sent there (an info says where; a warning when that is another
    host than the service's ``home``, whose credential it then gets only with consent), or blocked when
    that server has no URL to send to: never silently to the service's server instead."""
    server = operation_server(op)
    if server is None:
        return op
    resolved = resolve_server(server)
    if resolved.url is None:
        code = "server/invalid_host" if resolved.bad_host else "server/unresolved"
        found.append(diagnostic(code, f"Operation '{op.id}': {resolved.issue}.", operation=op.id))
        return block(op, f"Blocked: the operation's own server has no URL to send to ({resolved.issue}).")
    host = server_hosts([resolved.url])[0]
    if home is None or host == home:
        message = f"Operation '{op.id}' is sent to its own server {resolved.url}, not the service's."
        found.append(diagnostic("server/operation_server", message, operation=op.id))
        return op
    message = f"Operation '{op.id}' is sent to its own server {resolved.url}, on {host}, not the service's {home}"
    if op.auth.type == "none":
        message += "."
    elif host in (op.credential_hosts or ()):
        message += f"; its credential goes there (credential_hosts names {host})."
    else:
        message += f"; its credential is withheld there unless ANVIL_CREDENTIAL_HOSTS names {host}."
    hint = (
        None
        if op.auth.type == "none" or host in (op.credential_hosts or ())
        else f"If {host} should receive the service's credential, add credential_hosts: [{host}] to its entry."
    )
    found.append(diagnostic("server/operation_server", message, severity="warning", operation=op.id, hint=hint))
    return op


def _form_rules(op: Operation, found: list[Diagnostic]) -> Operation:
    """A form body (``multipart/form-data``, urlencoded) is named parts; a schema that is not an object
    (Jira's attachment upload: one ``string``/``binary``, the part's name only in prose) names none,
    so no call could be encoded: blocked, saying so."""
    body = op.input.body
    if body is None or not is_form_media_type(body.content_type):
        return op
    declared = body.schema.get("type")
    kinds = declared if isinstance(declared, list) else [declared]
    if declared is None or "object" in kinds:
        return op
    found.append(
        diagnostic(
            "form_body_not_object",
            f"Operation '{op.id}' sends a {body.content_type} body whose schema is a {declared}, not an object "
            "of named parts; no request can be encoded from it.",
            operation=op.id,
            hint="Describe the parts as an object's properties (a manifest cannot); until then it is not served.",
        )
    )
    return block(op, f"Blocked: its {body.content_type} body is a {declared}, not named parts.")


def _one(op: Operation, found: list[Diagnostic], home: str | None) -> Operation:
    names = Counter(binding.property for binding in input_bindings(op))
    clashing = sorted(name for name, count in names.items() if count > 1)
    if clashing:
        found.append(
            diagnostic(
                "duplicate_agent_input_name",
                f"Operation '{op.id}': several wire inputs map to {', '.join(map(repr, clashing))}.",
                operation=op.id,
            )
        )
        op = block(op, f"Blocked: several wire inputs map to the public input(s) {', '.join(clashing)}.")
    op = _carrier_rules(op, found)
    op = _server_rules(op, found, home)
    op = _form_rules(op, found)
    mutation = op.effect.kind == "mutation"
    unproven = mutation and op.idempotency.mode == "none"
    if unproven and op.retries.mode == "safe":
        found.append(
            diagnostic(
                "unsafe_retry",
                f"Operation '{op.id}' is a mutation without idempotency marked retry-safe; retries disabled.",
                operation=op.id,
            )
        )
        op = replace(op, retries=replace(RETRIES_OFF, max_delay_ms=op.retries.max_delay_ms))
    if unproven:
        found.append(
            diagnostic(
                "unproven_idempotency",
                f"Operation '{op.id}' is a mutation with no proven idempotency; auto-retry disabled and "
                "confirmation required.",
                operation=op.id,
            )
        )
        op = _note(op, "Mutation with no proven idempotency: review before approval; auto-retry is disabled.")
        if op.state == "generated":
            op = replace(op, state="review_required")
    if mutation and op.effect.risk in ("financial", "destructive") and not op.confirmation.required:
        found.append(
            diagnostic(
                "missing_confirmation",
                f"Operation '{op.id}' is a {op.effect.risk} mutation without confirmation; confirmation required.",
                operation=op.id,
            )
        )
        kind = "irreversible" if not op.effect.reversible else "unsafe"
        reason = op.confirmation.reason or f"This operation is an {kind} {op.effect.risk} mutation."
        op = replace(op, confirmation=replace(op.confirmation, required=True, risk=op.effect.risk, reason=reason))
    if op.retries.mode == "safe" and not op.retries.retry_on:
        found.append(
            diagnostic(
                "empty_retry_conditions",
                f"Operation '{op.id}' enables retries with no conditions; retries disabled.",
                operation=op.id,
            )
        )
        op = replace(op, retries=replace(op.retries, mode="none", max_attempts=1, backoff="none"))
    if mutation and op.auth.type != "none" and not op.auth.scopes:
        found.append(
            diagnostic(
                "no_declared_scopes",
                f"Operation '{op.id}' is an authenticated mutation without declared scopes.",
                operation=op.id,
            )
        )
    if unproven and op.confirmation.required:
        op = _note(op, "Confirmation required: the upstream does not prove a repeated call is harmless.")
    return _passthrough(op, found)


def _passthrough(op: Operation, found: list[Diagnostic]) -> Operation:
    inputs = passthrough_inputs(op)
    if not inputs or op.archetype != "query_passthrough":
        return op
    # An error only where the manifest approved it (refused as asked): a blocked operation nobody approved
    # is not served either way, so it must not fail the compile of everything else.
    found.append(
        diagnostic(
            "query_language_passthrough",
            f"Operation '{op.id}' passes a query language through {', '.join(map(repr, inputs))} without a "
            "query policy.",
            severity="error" if op.state == "approved" else "warning",
            operation=op.id,
            hint="No manifest key accepts it (query_policy is not supported): leave it unapproved, or constrain "
            "the input in the spec (an enum or pattern).",
        )
    )
    return block(op, f"Blocked: query-language passthrough input(s) {', '.join(inputs)} without a query policy.")


def validate_operations(
    ops: Sequence[Operation], *, service_servers: Sequence[Server] = ()
) -> tuple[tuple[Operation, ...], list[Diagnostic]]:
    """Apply every §3.6 rule to every operation (``service_servers``: the service's, which an operation's
    own server is compared with, and whose hosts are checked too).

    Returns:
        The operations (same order) with their consequences applied, and the diagnostics in operation
        order (the service's servers, then name-uniqueness findings first).
    """
    found: list[Diagnostic] = []
    _service_server_rules(service_servers, found)
    out, unique = _duplicates(ops)
    found += unique
    home = service_host(service_servers)
    for index, op in enumerate(out):
        out[index] = _one(op, found, home)
    return tuple(out), found


def critique_names(ops: Sequence[Operation]) -> list[Diagnostic]:
    """``weak_operation_name`` for every operation whose latest ``name.quality`` claim is below 0.5."""
    found: list[Diagnostic] = []
    for op in ops:
        quality = [claim for claim in op.evidence.claims if claim.predicate == "name.quality"]
        if quality and quality[-1].confidence < _WEAK_NAME:
            reasons = f" ({quality[-1].note})" if quality[-1].note else ""
            found.append(
                diagnostic(
                    "weak_operation_name",
                    f"Operation '{op.id}' has a weak derived name{reasons}; consider a manifest name override.",
                    operation=op.id,
                )
            )
    return found
