"""The agent skill package: ``skill/SKILL.md`` plus per-approved-operation schemas and examples.

SKILL.md tells an agent what it can do (capabilities, operations with their effect labels, workflows),
the ladder it must climb before changing anything, how to call operations, and the safety rules the
gateway enforces anyway. Only approved operations are described as callable (original-core §1.12).
Every text the compiler does not author is written through :mod:`anvil.bundle.markdown`, so a spec's
title or summary reads as words and never as a heading, a list, a code span or HTML.
"""

from __future__ import annotations

from typing import Any

from anvil.air.model import Document, Operation, Workflow
from anvil.air.tools import operation_input_schema, pagination_sentence, tool_description
from anvil.bundle.encoding import json_file, text_file, yaml_scalar
from anvil.bundle.example import example_input
from anvil.bundle.markdown import code, inline
from anvil.bundle.reference import effect_label

__all__ = ["emit_skill", "skill_markdown"]

_LADDER = (
    "1. **Discover.** Read `reference/operations.md` (or `../catalog.json`) and pick an approved operation.",
    "2. **Prefer a workflow** when one below fits the task.",
    "3. **Explain.** Tell the user what the call will change and whether it can be undone, before calling.",
    "4. **Dry-run.** Call with `anvil_dry_run: true` (MCP) or `--dry-run` (CLI) and check the plan.",
    "5. **Stop** if the operation is not approved, or if it needs human approval you do not have.",
)
_RULES = (
    "- Never set `confirm: true` unless the user asked for this exact change; the gateway refuses "
    "confirming operations without it.",
    "- Operations marked *human approval required* need a human's explicit go-ahead: ask, never self-confirm.",
    "- For an operation that takes an idempotency key, make one key per intended change and reuse it on "
    "every retry of that change; the gateway replays the first answer instead of repeating the write.",
    "- Do not retry an operation marked not retry-safe yourself; report the error instead.",
    "- Operations under *Pending approval* in `reference/operations.md` are refused; do not try them.",
)


def _operation_line(op: Operation) -> str:
    flags = [effect_label(op)]
    if op.confirmation.human_approval:
        flags.append("human approval required")
    elif op.confirmation.required:
        flags.append("confirm required")
    if op.idempotency.mode == "required":
        flags.append("idempotency key required")
    line = f"- {code(op.mcp.tool_name)} ({code(op.cli.command)}) — {inline(op.display_name)} ({'; '.join(flags)})"
    paging = pagination_sentence(op)  # how to page, in the words tools/list uses
    return f"{line} {inline(paging)}" if paging else line


def _cell_code(text: str) -> str:
    # GitHub tables split cells on a pipe before reading code spans, so it is escaped even inside one.
    return code(text).replace("|", "\\|")


def _effects_table(approved: list[Operation]) -> list[str]:
    """One row per approved operation: what calling it does to the world (ADR-0030 §9)."""
    lines = [
        "What each operation changes, and whether it can be taken back:",
        "",
        "| CLI | Tool | Effect | What it does |",
        "|---|---|---|---|",
    ]
    for op in approved:
        label = effect_label(op) + (", needs confirm" if op.confirmation.required else "")
        lines.append(
            f"| {_cell_code(op.cli.command)} | {_cell_code(op.mcp.tool_name)} | {label} | {inline(op.display_name)} |"
        )
    return lines


def _workflow_line(workflow: Workflow) -> str:
    steps = " → ".join(code(step.operation_id) for step in workflow.steps) or "no steps"
    notes: list[str] = [workflow.state]
    if workflow.human_approval:
        notes.append("human approval required")
    served = "" if workflow.state == "approved" else " Not callable until approved."
    return f"- {code(workflow.id)} — {inline(workflow.display_name)} [{', '.join(notes)}]. Steps: {steps}.{served}"


def _capability_sections(doc: Document, approved: list[Operation]) -> list[str]:
    lines: list[str] = []
    listed: set[str] = set()
    for capability in sorted(doc.capabilities, key=lambda c: c.id):
        members = [op for op in approved if op.capability_id == capability.id]
        if not members:
            continue
        lines += ["", f"### {inline(capability.display_name)} ({code(capability.id)})", ""]
        if capability.description:
            lines += [inline(capability.description), ""]
        lines += [_operation_line(op) for op in members]
        listed.update(op.id for op in members)
    rest = [op for op in approved if op.id not in listed]
    if rest:
        lines += ["", "### Other operations", ""]
        lines += [_operation_line(op) for op in rest]
    return lines


def skill_markdown(doc: Document) -> str:
    """The text of ``skill/SKILL.md``."""
    service = doc.service
    approved = [op for op in doc.operations if op.state == "approved"]
    description = (
        f"Use {inline(service.display_name)} ({service.id}) safely through Anvil: {len(approved)} approved "
        "operation(s) with enforced confirmation, idempotency and bounded retries."
    )
    lines = [
        "---",
        f"name: {yaml_scalar(service.id.replace('_', '-'))}",
        f"description: {yaml_scalar(description)}",
        "---",
        "",
        f"# {inline(service.display_name)}",
        "",
        f"Service {code(service.id)} version {code(service.version)}. "
        f"{len(approved)} approved operation(s) out of {len(doc.operations)} compiled; "
        "only approved operations are callable.",
        "",
        "## Capabilities",
    ]
    if approved:
        lines += _capability_sections(doc, approved)
    else:
        lines += ["", "No operation is approved yet. Ask an operator to review the manifest (`anvil.yaml`)."]
    if approved:
        lines += ["", "## Effects", "", *_effects_table(approved)]
    lines += ["", "## Workflows", ""]
    if doc.workflows:
        lines += [_workflow_line(workflow) for workflow in doc.workflows]
    else:
        lines.append("None declared.")
    lines += ["", "## The ladder", "", *_LADDER]
    lines += [
        "",
        "## Calling operations",
        "",
        "- **MCP:** each approved operation is a tool (names above); pass inputs as arguments, "
        "`anvil_dry_run: true` for a plan.",
        "- **CLI:** `anvil run <bundle> <resource> <action> --<input> <value>` with `--dry-run`, `--confirm`, "
        "`--idempotency-key KEY` and `--json`; `--mcp URL` routes the call through an MCP server.",
        "- Errors come back as one envelope `{error: {code, message, retryable, safe_to_retry, ...}}`; "
        "see `reference/operations.md` for each operation's inputs and posture.",
        "",
        "## Safety rules",
        "",
        *_RULES,
    ]
    return "\n".join(lines)


def _schema_document(op: Operation) -> dict[str, Any]:
    return {
        "title": op.display_name,
        "description": tool_description(op),
        "operation": op.id,
        "tool": op.mcp.tool_name,
        "inputSchema": operation_input_schema(op),
    }


def _example_document(op: Operation) -> dict[str, Any]:
    return {
        "description": op.display_name,
        "operation": op.id,
        "cli": op.cli.command,
        "tool": op.mcp.tool_name,
        "input": example_input(op),
    }


def emit_skill(doc: Document) -> dict[str, bytes]:
    """``skill/SKILL.md`` plus ``skill/schemas/<canonical>.schema.json`` and ``skill/examples/<canonical>.json``
    for every approved operation."""
    files = {"skill/SKILL.md": text_file(skill_markdown(doc))}
    for op in doc.operations:
        if op.state != "approved":
            continue
        files[f"skill/schemas/{op.canonical_name}.schema.json"] = json_file(_schema_document(op))
        files[f"skill/examples/{op.canonical_name}.json"] = json_file(_example_document(op))
    return files
