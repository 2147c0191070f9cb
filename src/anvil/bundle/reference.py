"""``skill/reference/operations.md`` and ``skill/reference/idempotency.md`` (original-core §4.2).

The operations reference is parsed by conformance tooling, so its shape is a contract: the
``### `<cli command>`  (id: ..., tool: ...)`` heading, the ``- Semantics:`` line and the
"Pending approval (not callable)" section. The ADR-0030 ``- Undo:`` line is written only for operations
that declare an effect contract, and never starts with ``- Semantics``. Every text the compiler does
not author (a description, a scope, a reason) is folded onto one line and escaped
(:mod:`anvil.bundle.markdown`), so it can neither imitate those lines nor open a heading, a fence or HTML.
"""

from __future__ import annotations

from anvil.air.effects import undo_sentence
from anvil.air.inputs import input_bindings
from anvil.air.model import Document, Operation, auth_label
from anvil.air.tools import operation_input_schema
from anvil.bundle.catalog import input_signature
from anvil.bundle.encoding import text_file, yaml_scalar
from anvil.bundle.markdown import code, inline

__all__ = [
    "DRAFT_FORM_LABEL",
    "EFFECT_LABELS",
    "effect_class",
    "effect_label",
    "emit_reference",
    "idempotency_markdown",
    "operations_markdown",
    "semantics_line",
]

#: Agent-facing label per effect class (ADR-0030 §9).
EFFECT_LABELS: dict[str, str] = {
    "read": "read",
    "reversible": "write, can be undone",
    "compensable": "write, can be compensated (not undone)",
    "irreversible": "write, cannot be undone",
}
#: The label of an irreversible write that declares a draft form (original-gateway §2.9).
DRAFT_FORM_LABEL = "write, cannot be undone (has a draft form)"


def effect_class(op: Operation) -> str:
    """The declared effect class, else ``read`` for reads and ``irreversible`` for mutations."""
    if op.effect.class_ is not None:
        return op.effect.class_
    return "read" if op.effect.kind == "read" else "irreversible"


def effect_label(op: Operation) -> str:
    """The SKILL.md label of ``op``'s effect ("read", "write, cannot be undone", ...)."""
    klass = effect_class(op)
    if klass == "irreversible" and op.effect.draft is not None:
        return DRAFT_FORM_LABEL
    return EFFECT_LABELS[klass]


def semantics_line(op: Operation) -> str:
    """The ``- Semantics:`` line conformance parses."""
    parts: list[str] = [op.effect.kind]
    if op.effect.kind == "mutation":
        parts.append(op.effect.risk)
    if op.confirmation.required:
        parts.append("confirm-required")
    if op.idempotency.mode == "required":
        parts.append("idempotency-key-required")
    parts.append("retry-safe" if op.retries.mode == "safe" else "not-retry-safe")
    return "- Semantics: " + ", ".join(parts)


def _inputs_line(op: Operation) -> str:
    schema = operation_input_schema(op)
    required = set(schema.get("required") or ())
    whole_body = {b.property for b in input_bindings(op) if b.location == "body"}
    items = []
    for name in schema.get("properties") or {}:
        mark = "*" if name in required else ""
        items.append(f"{code(name)}{mark} (JSON)" if name in whole_body else f"{code(name)}{mark}")
    return "- Inputs: " + (", ".join(items) if items else "none")


def _undo_line(doc: Document, op: Operation) -> str | None:
    """``- Undo: <sentence>`` for a mutation that declares an effect contract (ADR-0030 §9), else None."""
    if op.effect.kind != "mutation" or not op.effect.declares_contract:
        return None

    def command_of(op_id: str) -> str:
        target = doc.operation(op_id)
        return target.cli.command if target is not None else op_id

    return "- Undo: " + undo_sentence(op, command_of)


def _confirmation_block(op: Operation) -> str | None:
    confirmation = op.confirmation
    if not confirmation.required:
        return None
    risk = confirmation.risk or op.effect.risk
    reason = inline(confirmation.reason or "This operation needs explicit confirmation.")
    if confirmation.human_approval:
        return (
            f"> ⛔ **Human approval required** — {risk}-risk {op.effect.kind}: {reason} "
            "Do not self-confirm; ask the human to approve this exact call before passing confirm."
        )
    return f"> ⚠ **Confirmation required** — {risk}-risk {op.effect.kind}: {reason}"


def _approved_section(doc: Document, op: Operation) -> list[str]:
    lines = [f"### {code(op.cli.command)}  (id: {code(op.id)}, tool: {code(op.mcp.tool_name)})"]
    lines.append(inline(op.description) or inline(op.display_name))
    block = _confirmation_block(op)
    if block:
        lines += ["", block, ""]
    lines.append(semantics_line(op))
    scopes = f" ({', '.join(inline(scope) for scope in op.auth.scopes)})" if op.auth.scopes else ""
    auth = auth_label(op.auth) + scopes
    lines.append(f"- Auth: {auth}")
    lines.append(_inputs_line(op))
    undo = _undo_line(doc, op)
    if undo:
        lines.append(undo)
    name = op.canonical_name
    lines.append(f"- Schema: `../schemas/{name}.schema.json` · Example: `../examples/{name}.json`")
    if op.long_running:
        lines.append("- Long-running: returns before completion; poll for status")
    if op.archetype == "search":
        lines.append("- Narrow with filters before paging")
    if op.skill.intent_examples:
        lines.append("- Example intents: " + "; ".join(inline(intent) for intent in op.skill.intent_examples))
    return lines


def operations_markdown(doc: Document) -> str:
    """The text of ``skill/reference/operations.md``."""
    service = doc.service
    approved = [op for op in doc.operations if op.state == "approved"]
    pending = [op for op in doc.operations if op.state != "approved"]
    lines = [
        "---",
        f"name: {yaml_scalar(service.id.replace('_', '-') + '-operations')}",
        "description: "
        + yaml_scalar(f"Every {inline(service.display_name)} operation: semantics, auth, inputs and approval state."),
        "---",
        "",
        "# Operations",
        "",
        "`*` marks a required input.",
        "",
        "## Approved operations",
        "",
    ]
    if not approved:
        lines += ["None: no operation is approved yet, so nothing is callable.", ""]
    for op in approved:
        lines += [*_approved_section(doc, op), ""]
    lines += ["## Pending approval (not callable)", ""]
    if not pending:
        lines.append("None.")
    else:
        lines += ["These operations were compiled but are refused until approved (`anvil approve`).", ""]
        for op in pending:
            signature = input_signature(op) or "no inputs"
            lines.append(f"- {code(op.cli.command)} — {inline(op.display_name)} [{op.state}] ({inline(signature)})")
    return "\n".join(lines)


def idempotency_markdown(doc: Document) -> str:
    """The text of ``skill/reference/idempotency.md``: one line per approved mutation."""
    lines = [
        "# Idempotency and retries",
        "",
        "How each approved write is made safe to repeat, and whether Anvil retries it on its own.",
        "Reuse one idempotency key per intended change, including on retries; a new key means a new change.",
        "",
    ]
    mutations = [op for op in doc.operations if op.state == "approved" and op.effect.kind == "mutation"]
    if not mutations:
        lines.append("No approved mutations.")
    for op in mutations:
        idem = op.idempotency
        mode = idem.mode + (f" (key via {idem.mechanism} {inline(idem.key)})" if idem.key else "")
        retry = "retry-safe" if op.retries.mode == "safe" else "not retry-safe"
        if op.confirmation.required:
            reason = inline(op.confirmation.reason or "explicit confirmation").rstrip(".")
            confirm = f"confirmation required — {reason}"
        else:
            confirm = "no confirmation"
        lines.append(f"- {code(op.cli.command)}: {mode}; {retry}; {confirm}.")
    return "\n".join(lines)


def emit_reference(doc: Document) -> dict[str, bytes]:
    """``skill/reference/operations.md`` and ``skill/reference/idempotency.md``."""
    return {
        "skill/reference/operations.md": text_file(operations_markdown(doc)),
        "skill/reference/idempotency.md": text_file(idempotency_markdown(doc)),
    }
