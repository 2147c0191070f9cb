"""The payments example compiles to the facts of original-core §2.11."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.air.model import Document, Operation
from anvil.air.tools import tool_definition

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "payments"
TRANSIENT = (
    "timeout", "connection_reset", "dns_failure",
    "http_408", "http_429", "http_500", "http_502", "http_503", "http_504",
)  # fmt: skip


def _compile(manifest: bool = True) -> tuple[Document, list[str]]:
    from anvil.compiler import build

    result = build(
        EXAMPLE / "openapi.yaml",
        manifest=EXAMPLE / "anvil.yaml" if manifest else None,
        service_id="payments",
        source_uri="examples/payments/openapi.yaml",
    )
    assert result.document is not None
    return result.document, [f"{d.severity}:{d.code}" for d in result.diagnostics]


@pytest.fixture(scope="module")
def payments() -> Document:
    doc, diagnostics = _compile()
    assert not [d for d in diagnostics if d.startswith("error:")], diagnostics
    return doc


def _op(doc: Document, op_id: str) -> Operation:
    op = doc.operation(op_id)
    assert op is not None, op_id
    return op


def test_ids_tool_names_and_commands_follow_the_naming_rules(payments: Document) -> None:
    assert [(op.id, op.canonical_name, op.cli.command, op.mcp.tool_name) for op in payments.operations] == [
        ("payments.customers.get", "get_customer", "payments customers get", "payments_get_customer"),
        ("payments.payments.get", "get_payment", "payments payments get", "payments_get_payment"),
        ("payments.refunds.create", "create_refund", "payments refunds create", "payments_create_refund"),
        ("payments.capture.create", "capture_payment", "payments capture create", "payments_capture_payment"),
    ]


def test_the_service_identity_and_credential_profile(payments: Document) -> None:
    service = payments.service
    assert (service.id, service.version, service.environment) == ("payments", "2026-07-09-prod", "prod")
    assert service.source.uri == "examples/payments/openapi.yaml"
    assert [server.url for server in service.servers] == ["https://payments.internal.example.com"]
    assert service.auth.type == "oauth2_client_credentials"
    assert service.auth.credential_profile == "oauth2_d8ad572d2fb1b3f6c47061c8a5b64a62"


def test_refunds_need_a_header_key_confirmation_and_bounded_retries(payments: Document) -> None:
    refund = _op(payments, "payments.refunds.create")
    effect = refund.effect
    assert (effect.kind, effect.action, effect.risk, effect.reversible) == ("mutation", "create", "financial", False)
    idem = refund.idempotency
    assert (idem.mode, idem.mechanism, idem.key, idem.key_derivation) == (
        "required",
        "header",
        "Idempotency-Key",
        "client_supplied",
    )
    r = refund.retries
    assert (r.mode, r.basis, r.max_attempts, r.backoff, r.base_delay_ms, r.max_delay_ms, r.retry_on) == (
        "safe",
        "idempotency_key",
        3,
        "exponential_jitter",
        200,
        20000,
        ("timeout", "http_429", "http_503"),
    )
    c = refund.confirmation
    assert (c.required, c.risk, c.reason) == (
        True,
        "financial",
        "This operation creates an irreversible financial mutation.",
    )
    assert (refund.auth.type, refund.auth.scopes) == ("oauth2_client_credentials", ("payments.write",))
    assert refund.state == "approved"
    schema = refund.input.schema or {}
    assert schema["required"] == ["payment_id", "amount", "currency", "idempotency_key", "confirm"]


def test_capture_is_naturally_idempotent_but_still_confirmed(payments: Document) -> None:
    capture = _op(payments, "payments.capture.create")
    assert (capture.effect.kind, capture.effect.risk, capture.effect.reversible) == ("mutation", "financial", False)
    assert capture.idempotency.mode == "natural"
    r = capture.retries
    assert (r.mode, r.basis, r.max_attempts, r.retry_on) == ("safe", "natural_idempotent", 3, TRANSIENT)
    assert capture.confirmation.required is True
    assert capture.confirmation.reason == "This operation is an irreversible financial mutation."
    assert capture.auth.scopes == ("payments.write",)
    assert capture.state == "approved"


def test_reads_are_natural_retry_safe_unconfirmed_and_read_scoped(payments: Document) -> None:
    for op_id in ("payments.customers.get", "payments.payments.get"):
        read = _op(payments, op_id)
        assert read.effect.kind == "read" and read.idempotency.mode == "natural"
        assert (read.retries.mode, read.retries.basis) == ("safe", "read_safe")
        assert read.confirmation.required is False
        assert read.auth.scopes == ("payments.read",)
        assert read.state == "approved"


def test_annotations_match_the_observed_tool_surface(payments: Document) -> None:
    hints = {
        op.id: tuple(
            tool_definition(op)["annotations"][k]
            for k in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
        )
        for op in payments.operations
    }
    assert hints == {
        "payments.refunds.create": (False, True, True, False),
        "payments.capture.create": (False, True, True, False),
        "payments.customers.get": (True, False, True, False),
        "payments.payments.get": (True, False, True, False),
    }
    refund = tool_definition(_op(payments, "payments.refunds.create"))
    assert refund["description"] == (
        "Creates a refund for a captured payment. Irreversible. This is a irreversible financial mutation. "
        "Requires an idempotency key. Requires confirm=true. Retry-safe."
    )


def test_the_refund_workflow_is_pinned_gated_and_not_yet_approved(payments: Document) -> None:
    [workflow] = payments.workflows
    assert workflow.id == "payments.refunds.refund_customer"
    assert workflow.capability_id == "payments.refunds"
    assert workflow.human_approval is True
    assert [step.operation_id for step in workflow.steps] == ["payments.payments.get", "payments.refunds.create"]
    assert workflow.state == "generated"


def test_without_the_manifest_nothing_is_approved_and_mutations_await_review() -> None:
    doc, diagnostics = _compile(manifest=False)
    states = {op.id: op.state for op in doc.operations}
    assert states["payments.refunds.create"] == "review_required"
    assert states["payments.capture.create"] == "review_required"
    assert states["payments.customers.get"] == "generated"
    assert "warning:unproven_idempotency" in diagnostics
