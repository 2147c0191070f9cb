"""A hand-built AIR document shaped like compiled payments (original-core §2.11), for emitter tests."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anvil.air.model import (
    Auth,
    BodyField,
    Capability,
    Cli,
    Confirmation,
    Document,
    Effect,
    Idempotency,
    Input,
    Mcp,
    Operation,
    Param,
    RequestBody,
    RetryPolicy,
    Server,
    Service,
    Source,
    SourceRef,
    Workflow,
    WorkflowStep,
)

TRANSIENT = (
    "timeout", "connection_reset", "dns_failure",
    "http_408", "http_429", "http_500", "http_502", "http_503", "http_504",
)  # fmt: skip
READ_AUTH = Auth(type="oauth2_client_credentials", scopes=("payments.read",))
WRITE_AUTH = Auth(type="oauth2_client_credentials", scopes=("payments.write",))


def _read(op_id: str, canonical: str, display: str, path: str, param: str) -> Operation:
    resource = op_id.split(".")[1]
    return Operation(
        id=op_id,
        canonical_name=canonical,
        display_name=display,
        source_ref=SourceRef(path=path, method="get", operation_id=canonical),
        effect=Effect(kind="read", action="get", resource=resource.rstrip("s"), risk="none"),
        input=Input(params=(Param(name=param, in_="path", required=True),)),
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(
            mode="safe", basis="read_safe", max_attempts=3, backoff="exponential_jitter", retry_on=TRANSIENT
        ),  # type: ignore[arg-type]
        auth=READ_AUTH,
        cli=Cli(command=f"payments {resource} get"),
        mcp=Mcp(tool_name=f"payments_{canonical}"),
        state="approved",
        capability_id=f"payments.{resource}",
    )


def make_payments_document() -> Document:
    """Four approved operations, one workflow, as the payments example compiles."""
    refund = Operation(
        id="payments.refunds.create",
        canonical_name="create_refund",
        display_name="Create a refund",
        description="Creates a refund for a captured payment. Irreversible.",
        source_ref=SourceRef(path="/payments/{payment_id}/refunds", method="post", operation_id="createRefund"),
        effect=Effect(kind="mutation", action="create", resource="refund", risk="financial", reversible=False),
        input=Input(
            params=(Param(name="payment_id", in_="path", required=True),),
            body=RequestBody(
                required=True,
                projection="fields",
                fields=(
                    BodyField(name="amount", required=True, schema={"type": "integer"}),
                    BodyField(name="currency", required=True, schema={"type": "string"}),
                    BodyField(name="reason", schema={"type": "string"}),
                ),
            ),
        ),
        idempotency=Idempotency(
            mode="required", mechanism="header", key="Idempotency-Key", key_derivation="client_supplied"
        ),
        retries=RetryPolicy(
            mode="safe",
            basis="idempotency_key",
            max_attempts=3,
            backoff="exponential_jitter",
            retry_on=("timeout", "http_429", "http_503"),
        ),
        confirmation=Confirmation(
            required=True, risk="financial", reason="This operation creates an irreversible financial mutation."
        ),
        auth=WRITE_AUTH,
        cli=Cli(command="payments refunds create"),
        mcp=Mcp(tool_name="payments_create_refund"),
        state="approved",
        capability_id="payments.refunds",
    )
    capture = replace(
        refund,
        id="payments.capture.create",
        canonical_name="capture_payment",
        display_name="Capture a payment",
        description="",
        source_ref=SourceRef(path="/payments/{payment_id}/capture", method="post", operation_id="capturePayment"),
        effect=Effect(kind="mutation", action="create", resource="capture", risk="financial", reversible=False),
        input=Input(params=(Param(name="payment_id", in_="path", required=True),)),
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(
            mode="safe",
            basis="natural_idempotent",
            max_attempts=3,
            backoff="exponential_jitter",
            retry_on=TRANSIENT,  # type: ignore[arg-type]
        ),
        confirmation=Confirmation(
            required=True, risk="financial", reason="This operation is an irreversible financial mutation."
        ),
        cli=Cli(command="payments capture create"),
        mcp=Mcp(tool_name="payments_capture_payment"),
        capability_id="payments.payments",
    )
    customer = _read(
        "payments.customers.get", "get_customer", "Get a customer", "/customers/{customer_id}", "customer_id"
    )
    payment = _read("payments.payments.get", "get_payment", "Get a payment", "/payments/{payment_id}", "payment_id")
    return Document(
        service=Service(
            id="payments",
            version="2026-07-09-prod",
            display_name="Payments API",
            environment="prod",
            source=Source(kind="openapi", uri="examples/payments/openapi.yaml"),
            auth=READ_AUTH,
            servers=(Server(url="https://payments.internal.example.com"),),
        ),
        operations=(customer, payment, refund, capture),
        capabilities=(
            Capability(id="payments.customers", display_name="Customers", operation_ids=("payments.customers.get",)),
            Capability(
                id="payments.payments",
                display_name="Payments",
                operation_ids=("payments.capture.create", "payments.payments.get"),
            ),
            Capability(
                id="payments.refunds",
                display_name="Refunds",
                operation_ids=("payments.refunds.create",),
                workflow_ids=("payments.refunds.refund_customer",),
            ),
        ),
        workflows=(
            Workflow(
                id="payments.refunds.refund_customer",
                capability_id="payments.refunds",
                display_name="Refund a customer",
                steps=(
                    WorkflowStep(operation_id="payments.payments.get"),
                    WorkflowStep(operation_id="payments.refunds.create", bindings={"payment_id": "$.output.id"}),
                ),
                human_approval=True,
            ),
        ),
    )


@pytest.fixture
def payments_doc() -> Document:
    return make_payments_document()
