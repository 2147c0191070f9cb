"""Authored workflows (original-core §2.7) and capability reviews (§2.8) from the manifest.

Anvil never guesses multi-step business logic: a workflow exists only when the manifest declares it.
Each step's operation reference (AIR id, canonical name or operationId) is pinned to an AIR id. A
workflow is only as trustworthy as the operations it names, so an unresolved step
(``workflow_step_unresolved``) or a mutation step that is not approved
(``workflow_mutation_unapproved``) blocks it; a workflow with no capability to live in
(``workflow_capability_unresolved``) is skipped. Capability reviews set a discovered capability's
lifecycle; the tool-budget gate of the original is not modelled (no disclosure measurement here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from anvil.air.enums import OperationState
from anvil.air.model import Capability, Claim, Document, Evidence, Operation, Workflow, WorkflowStep
from anvil.air.naming import snake, title_case
from anvil.compiler.manifest.apply import OperationIndex
from anvil.compiler.manifest.model import Location, Manifest, WorkflowManifest
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = ["apply_capability_reviews", "build_workflows", "resolve_capability"]


def _at(
    code: str, message: str, where: Location, *, operation: str | None = None, hint: str | None = None
) -> Diagnostic:
    return diagnostic(
        code, message, file=where.file, line=where.line, column=where.column, operation=operation, hint=hint
    )


def resolve_capability(reference: str, capabilities: Sequence[Capability]) -> str | None:
    """The capability id ``reference`` names: its exact id, an id ending ``.<reference>``, or its display name.

    A reference matching several capabilities (and not one exactly) names none.
    """
    exact = [c.id for c in capabilities if c.id == reference]
    if exact:
        return exact[0]
    hits = sorted(
        {c.id for c in capabilities if c.id.endswith(f".{reference}") or c.id.endswith(f".{snake(reference)}")}
        | {c.id for c in capabilities if c.display_name == reference}
    )
    return hits[0] if len(hits) == 1 else None


def _claims(workflow_id: str, blockers: Sequence[str]) -> Evidence:
    claims = [
        Claim(
            subject=workflow_id,
            predicate="authored",
            value=True,
            source="spec",
            method="anvil-manifest",
            confidence=0.95,
            review="accepted",
        )
    ]
    if blockers:
        claims.append(
            Claim(
                subject=workflow_id,
                predicate="workflow.executable",
                value=False,
                source="inferred",
                method="workflow_dependency_gate",
                confidence=1.0,
                review="accepted",
                note=f"Blocked: {'; '.join(blockers)}.",
            )
        )
    return Evidence(claims=tuple(claims))


def _steps(
    authored: WorkflowManifest, document: Document, index: OperationIndex, found: list[Diagnostic]
) -> tuple[list[WorkflowStep], list[str], list[Operation]]:
    steps: list[WorkflowStep] = []
    blockers: list[str] = []
    resolved: list[Operation] = []
    for step in authored.steps:
        matches = index.match(step.operation)
        op = document.operation(matches[0]) if len(matches) == 1 else None
        if op is None:
            why = "names several operations" if matches else "names no operation"
            blockers.append(f"step '{step.operation}' {why}")
            found.append(
                _at(
                    "workflow_step_unresolved",
                    f"Workflow '{authored.key}': step '{step.operation}' {why}; the workflow is blocked until "
                    "the reference is repaired.",
                    step.location,
                    hint="Name the step's operation by its AIR id, canonical name or operationId.",
                )
            )
            continue
        resolved.append(op)
        steps.append(
            WorkflowStep(
                operation_id=op.id,
                description=step.description if step.description is not None else op.display_name,
                optional=step.optional,
                bindings=dict(step.bindings),
            )
        )
        if op.effect.kind == "mutation" and op.state != "approved":
            blockers.append(f"mutation '{step.operation}' ({op.id}) is {op.state}")
            found.append(
                _at(
                    "workflow_mutation_unapproved",
                    f"Workflow '{authored.key}': mutation step '{step.operation}' resolves to {op.id} in state "
                    f"'{op.state}'; the workflow is blocked until it is approved.",
                    step.location,
                    operation=op.id,
                )
            )
    return steps, blockers, resolved


def build_workflows(document: Document, manifest: Manifest | None) -> tuple[Document, list[Diagnostic]]:
    """Build the manifest's workflows into ``document`` (replacing its workflows) and apply capability reviews.

    Workflow ids are ``<capabilityId>.<snake(key)>``; each workflow's id is appended to its
    capability's ``workflow_ids``. Workflows keep manifest order.

    Returns:
        The document and the diagnostics (workflow ones first, then capability reviews).
    """
    if manifest is None:
        return document, []
    found: list[Diagnostic] = []
    capabilities = list(document.capabilities)
    workflows: list[Workflow] = []
    index = OperationIndex(document.operations)
    for authored in manifest.workflows:
        steps, blockers, resolved = _steps(authored, document, index, found)
        if authored.capability is not None:
            capability_id = resolve_capability(authored.capability, capabilities)
        else:
            first = resolved[0].capability_id if resolved and authored.steps else None
            capability_id = first if any(c.id == first for c in capabilities) else None
        if capability_id is None:
            why = (
                f"capability '{authored.capability}' names no capability"
                if authored.capability
                else "names no capability and its first step's operation has none"
            )
            found.append(
                _at(
                    "workflow_capability_unresolved",
                    f"Workflow '{authored.key}': {why}; skipped.",
                    authored.location,
                    hint="Set capability: to a capability id (or name), or start with a step whose operation has one.",
                )
            )
            continue
        workflow_id = f"{capability_id}.{snake(authored.key)}"
        taken = {w.id for w in workflows}
        suffix = 2
        while workflow_id in taken:  # two keys that snake-case alike still get distinct ids
            workflow_id = f"{capability_id}.{snake(authored.key)}_{suffix}"
            suffix += 1
        state = cast(OperationState, "blocked" if blockers else (authored.state or "generated"))
        workflows.append(
            Workflow(
                id=workflow_id,
                capability_id=capability_id,
                display_name=authored.display_name or title_case(authored.key),
                description=authored.description or "",
                intent_examples=authored.intent_examples,
                steps=tuple(steps),
                human_approval=bool(authored.human_approval),
                rollback_strategy=authored.rollback,
                state=state,
                evidence=_claims(workflow_id, blockers),
            )
        )
        capabilities = [
            replace(c, workflow_ids=(*c.workflow_ids, workflow_id))
            if c.id == capability_id and workflow_id not in c.workflow_ids
            else c
            for c in capabilities
        ]
    document = replace(document, workflows=tuple(workflows), capabilities=tuple(capabilities))
    document, reviewed = apply_capability_reviews(document, manifest)
    return document, [*found, *reviewed]


def apply_capability_reviews(document: Document, manifest: Manifest | None) -> tuple[Document, list[Diagnostic]]:
    """Apply ``capabilities.<id>`` reviews (§2.8) in key order; an id naming no capability is an error.

    ``approved`` sets the lifecycle to approved, ``rejected`` to rejected; the note becomes the
    capability's review note, and an approval's ``allow_large: true`` becomes ``allowLarge``: the
    capability's tools may exceed the per-tool disclosure budget (:mod:`anvil.air.budget_waiver`).
    Idempotent, so calling it after :func:`build_workflows` is harmless.
    """
    if manifest is None or not manifest.capabilities:
        return document, []
    found: list[Diagnostic] = []
    by_id = {c.id: c for c in document.capabilities}
    for review in sorted(manifest.capabilities, key=lambda r: r.capability_id):
        current = by_id.get(review.capability_id)
        if current is None:
            found.append(
                _at(
                    "manifest/unknown_capability",
                    f"The capability review '{review.capability_id}' names no discovered capability.",
                    review.location,
                    hint="Capability reviews use the exact capability id (for example <service>.<resource>).",
                )
            )
            continue
        by_id[review.capability_id] = replace(
            current,
            lifecycle=review.state,
            review_note=review.note if review.note is not None else current.review_note,
            # The manifest admits allow_large only on an approval with a note; absent, AIR stays as it was.
            allow_large=True if review.allow_large is True and review.state == "approved" else None,
        )
    capabilities = tuple(by_id[c.id] for c in document.capabilities)
    return replace(document, capabilities=capabilities), found
