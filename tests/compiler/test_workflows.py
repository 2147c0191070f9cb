"""Authored workflows (original-core §2.7, §9.2.10) and capability reviews (§2.8)."""

from __future__ import annotations

import textwrap
from dataclasses import replace

from anvil.air.model import (
    Capability,
    Cli,
    Document,
    Effect,
    Idempotency,
    Mcp,
    Operation,
    RetryPolicy,
    Service,
    SourceRef,
)
from anvil.compiler.manifest.parse import Manifest, parse_manifest
from anvil.compiler.workflows import apply_capability_reviews, build_workflows, resolve_capability


def _op(op_id: str, operation_id: str, kind: str, capability: str, state: str = "approved") -> Operation:
    service, resource, action = op_id.split(".")
    canonical = f"{action}_{resource.rstrip('s')}"
    return Operation(
        id=op_id,
        canonical_name=canonical,
        display_name=canonical.replace("_", " ").capitalize(),
        source_ref=SourceRef(operation_id=operation_id),
        effect=Effect(kind=kind),  # type: ignore[arg-type]
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(mode="none"),
        cli=Cli(command=f"{service} {resource} {action}"),
        mcp=Mcp(tool_name=f"{service}_{canonical}"),
        state=state,  # type: ignore[arg-type]
        capability_id=capability,
    )


def _document(refund_state: str = "approved") -> Document:
    return Document(
        service=Service(id="payments", version="1", display_name="Payments API"),
        operations=(
            _op("payments.payments.get", "getPayment", "read", "payments.payments", state="generated"),
            _op("payments.refunds.create", "createRefund", "mutation", "payments.refunds", state=refund_state),
        ),
        capabilities=(
            Capability(id="payments.payments", display_name="Payments", operation_ids=("payments.payments.get",)),
            Capability(id="payments.refunds", display_name="Refunds", operation_ids=("payments.refunds.create",)),
        ),
    )


def _manifest(text: str) -> Manifest:
    manifest, found = parse_manifest(textwrap.dedent(text).lstrip("\n"), "anvil.yaml")
    assert found == []
    assert manifest is not None
    return manifest


REFUND_CUSTOMER = """
workflows:
  refund_customer:
    display_name: Refund a customer
    description: Find the payment, then issue an idempotent refund.
    capability: refunds
    intent_examples: [refund a customer]
    human_approval: true
    rollback: Refunds are irreversible.
    steps:
      - operation: getPayment
        description: Look up the payment.
      - operation: create_refund
        bindings: {payment_id: $.steps.getPayment.id}
"""


def test_the_payments_workflow_is_pinned_to_air_ids_under_its_capability() -> None:
    document, found = build_workflows(_document(), _manifest(REFUND_CUSTOMER))

    assert found == []
    (workflow,) = document.workflows
    assert (workflow.id, workflow.capability_id) == ("payments.refunds.refund_customer", "payments.refunds")
    assert (workflow.display_name, workflow.human_approval, workflow.state) == ("Refund a customer", True, "generated")
    assert workflow.rollback_strategy == "Refunds are irreversible."
    assert [step.operation_id for step in workflow.steps] == ["payments.payments.get", "payments.refunds.create"]
    assert workflow.steps[0].description == "Look up the payment."
    assert workflow.steps[1].description == "Create refund"
    assert workflow.steps[1].bindings == {"payment_id": "$.steps.getPayment.id"}
    assert [c.predicate for c in workflow.evidence.claims] == ["authored"]
    refunds = next(c for c in document.capabilities if c.id == "payments.refunds")
    assert refunds.workflow_ids == ("payments.refunds.refund_customer",)


def test_an_unresolved_step_is_an_error_that_blocks_the_workflow_but_keeps_the_resolved_steps() -> None:
    manifest = _manifest(
        """
        workflows:
          refund_customer:
            capability: payments.refunds
            steps:
              - operation: getPayment
              - operation: findPayment
        """
    )

    document, found = build_workflows(_document(), manifest)

    assert [(d.code, d.severity, d.file, d.line, d.column) for d in found] == [
        ("workflow_step_unresolved", "error", "anvil.yaml", 6, 9)
    ]
    (workflow,) = document.workflows
    assert workflow.state == "blocked"
    assert [step.operation_id for step in workflow.steps] == ["payments.payments.get"]
    assert [c.predicate for c in workflow.evidence.claims] == ["authored", "workflow.executable"]


def test_an_unapproved_mutation_step_is_a_warning_that_blocks_the_workflow() -> None:
    document, found = build_workflows(_document(refund_state="review_required"), _manifest(REFUND_CUSTOMER))

    assert [(d.code, d.severity, d.operation, d.line) for d in found] == [
        ("workflow_mutation_unapproved", "warning", "payments.refunds.create", 12)
    ]
    assert document.workflows[0].state == "blocked"


def test_the_capability_comes_from_the_first_step_when_omitted() -> None:
    manifest = _manifest("workflows:\n  check_payment:\n    state: approved\n    steps: [{operation: getPayment}]\n")

    document, found = build_workflows(_document(), manifest)

    assert found == []
    (workflow,) = document.workflows
    assert (workflow.id, workflow.state, workflow.display_name) == (
        "payments.payments.check_payment",
        "approved",
        "Check Payment",
    )


def test_a_workflow_without_a_capability_is_skipped_with_a_warning() -> None:
    manifest = _manifest(
        """
        workflows:
          a: {capability: shipping, steps: [{operation: getPayment}]}
          b: {steps: [{operation: nothing}]}
        """
    )

    document, found = build_workflows(_document(), manifest)

    assert document.workflows == ()
    assert [(d.code, d.line) for d in found] == [
        ("workflow_capability_unresolved", 2),
        ("workflow_step_unresolved", 3),
        ("workflow_capability_unresolved", 3),
    ]


def test_workflow_keys_that_snake_case_alike_still_get_distinct_ids() -> None:
    manifest = _manifest(
        "workflows:\n  checkPayment: {steps: [{operation: getPayment}]}\n"
        "  check_payment: {steps: [{operation: getPayment}]}\n"
    )

    document, _ = build_workflows(_document(), manifest)

    assert [w.id for w in document.workflows] == [
        "payments.payments.check_payment",
        "payments.payments.check_payment_2",
    ]


def test_no_manifest_leaves_the_document_alone() -> None:
    document = _document()

    assert build_workflows(document, None) == (document, [])


def test_capability_references_resolve_by_id_suffix_or_display_name() -> None:
    capabilities = _document().capabilities

    assert resolve_capability("payments.refunds", capabilities) == "payments.refunds"
    assert resolve_capability("refunds", capabilities) == "payments.refunds"
    assert resolve_capability("Refunds", capabilities) == "payments.refunds"
    assert resolve_capability("shipping", capabilities) is None


def test_capability_reviews_set_the_lifecycle_and_an_unknown_id_is_an_error() -> None:
    manifest = _manifest(
        """
        capabilities:
          payments.refunds: {state: approved, note: Reviewed.}
          payments.payments: {state: rejected}
          refunds: {state: approved}
        """
    )

    document, found = apply_capability_reviews(_document(), manifest)

    lifecycles = {c.id: (c.lifecycle, c.review_note) for c in document.capabilities}
    assert lifecycles == {"payments.payments": ("rejected", None), "payments.refunds": ("approved", "Reviewed.")}
    assert [(d.code, d.file, d.line, d.column) for d in found] == [("manifest/unknown_capability", "anvil.yaml", 4, 3)]


def test_build_workflows_also_applies_capability_reviews() -> None:
    manifest = _manifest(REFUND_CUSTOMER + "capabilities:\n  payments.refunds: {state: approved}\n")

    document, _ = build_workflows(replace(_document()), manifest)

    assert next(c for c in document.capabilities if c.id == "payments.refunds").lifecycle == "approved"
