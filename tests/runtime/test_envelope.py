"""Upstream answers map to the envelope and code table of original-core §5.7."""

from __future__ import annotations

import dataclasses
import json

import httpx
import pytest
from runtime_support import read_op, unkeyed_write

from anvil.air.model import ErrorSpec, ErrorUpstream, Recovery
from anvil.codes import CODES
from anvil.runtime.context import RuntimeContext
from anvil.runtime.envelope import CODE_TABLE, ErrorEnvelope, code_for_status, observed_domain_code
from anvil.runtime.executor import execute

pytestmark = pytest.mark.anyio


def context_answering(response: httpx.Response) -> RuntimeContext:
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda _request: response))
    return RuntimeContext(service_id="payments", base_url="https://payments.example.com", client=client, env="dev")


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (400, "validation_error", False),
        (422, "validation_error", False),
        (418, "validation_error", False),
        (401, "auth_required", False),
        (403, "permission_denied", False),
        (404, "not_found", False),
        (410, "not_found", False),
        (408, "upstream_timeout", True),
        (504, "upstream_timeout", True),
        (409, "conflict", False),
        (429, "rate_limited", True),
        (502, "upstream_unavailable", True),
        (503, "upstream_unavailable", True),
        (500, "unknown_upstream_error", False),
        (599, "unknown_upstream_error", False),
    ],
)
async def test_an_upstream_status_maps_to_its_envelope_code(status: int, code: str, retryable: bool) -> None:
    response = httpx.Response(
        status, json={"message": "internal detail at db-7.corp"}, headers={"x-request-id": "rq-9"}
    )
    outcome = await execute(unkeyed_write(), {"payment_id": "p", "amount": 1}, context_answering(response))
    assert outcome.envelope is not None
    error = outcome.envelope.to_json()["error"]
    assert (error["code"], error["retryable"], error["safe_to_retry"]) == (code, retryable, False)
    assert error["upstream"] == {"status": status, "request_id": "rq-9"}
    if status in (408, 500, 502, 504, 599):  # the write may have committed before the upstream failed
        assert error["details"]["upstream_outcome"] == "possibly_committed"
    else:
        assert error["message"] == f"Upstream returned {status} for payments.note.create."
    assert error["trace_id"].startswith("trace_") and error["operation"] == "payments.note.create"
    assert "db-7.corp" not in json.dumps(error)


async def test_safe_to_retry_is_true_only_for_a_retry_safe_operation_and_a_retryable_code() -> None:
    outcome = await execute(read_op(), {"payment_id": "p"}, context_answering(httpx.Response(429)))
    assert outcome.envelope is not None and outcome.envelope.safe_to_retry is True


async def test_a_declared_error_spec_names_the_code_message_and_recovery() -> None:
    declared = (
        ErrorSpec(
            code="conflict",
            upstream=ErrorUpstream(http_status=400, code="refund_exceeds_payment"),
            message="The refund is larger than the payment.",
            recovery=Recovery(action="lower_amount", field_path="amount"),
        ),
        ErrorSpec(code="policy_denied", upstream=ErrorUpstream(http_status=400)),
    )
    op = dataclasses.replace(unkeyed_write(), errors=declared)
    body = {"error": {"code": "refund_exceeds_payment", "message": "customer Jane Doe over limit"}}
    outcome = await execute(op, {"payment_id": "p", "amount": 1}, context_answering(httpx.Response(400, json=body)))
    assert outcome.envelope is not None
    error = outcome.envelope.to_json()["error"]
    assert error["code"] == "conflict" and error["message"] == "The refund is larger than the payment."
    assert error["upstream"] == {"status": 400, "code": "refund_exceeds_payment"}
    assert error["details"] == {"recovery_action": "lower_amount", "field_path": "amount"}
    other = await execute(
        op, {"payment_id": "p", "amount": 1}, context_answering(httpx.Response(400, json={"code": "x"}))
    )
    assert other.code == "policy_denied"
    assert other.envelope is not None and other.envelope.upstream == {"status": 400}


def test_the_domain_code_is_read_from_code_error_code_or_the_first_errors_entry() -> None:
    assert observed_domain_code(b'{"code": "a"}') == "a"
    assert observed_domain_code(b'{"error": {"code": "b"}}') == "b"
    assert observed_domain_code(b'{"errors": [{"code": "c"}, {"code": "d"}]}') == "c"
    assert observed_domain_code(b"not json") is None
    assert observed_domain_code(b'{"code": 7}') is None


async def test_an_error_answer_nested_too_deeply_to_parse_is_mapped_by_its_status_not_a_fault() -> None:
    assert observed_domain_code(b"[" * 100_000 + b"]" * 100_000) is None
    response = httpx.Response(404, content=b"[" * 100_000 + b"]" * 100_000)
    outcome = await execute(read_op(), {"payment_id": "p"}, context_answering(response))
    assert outcome.code == "not_found"


def test_status_codes_outside_the_table_fall_back_by_class() -> None:
    assert [code_for_status(s) for s in (302, 451, 507)] == [
        "unknown_upstream_error",
        "validation_error",
        "unknown_upstream_error",
    ]


def test_the_code_table_covers_the_sixteen_codes_with_exit_codes_and_rest_statuses() -> None:
    expected = {
        "validation_error": (2, 400),
        "schema_mismatch": (2, 502),
        "confirmation_required": (3, 428),
        "idempotency_required": (3, 428),
        "auth_required": (4, 401),
        "permission_denied": (4, 403),
        "policy_denied": (5, 403),
        "unsafe_retry_blocked": (5, 409),
        "idempotency_ledger_unavailable": (5, 503),
        "unsupported_operation": (5, 422),
        "not_found": (6, 404),
        "conflict": (6, 409),
        "rate_limited": (7, 429),
        "upstream_timeout": (7, 504),
        "upstream_unavailable": (7, 502),
        "unknown_upstream_error": (7, 502),
    }
    assert {code: (info.exit_code, info.http_status) for code, info in CODE_TABLE.items()} == expected
    assert all(CODES[code].kind == "error" for code in CODE_TABLE)


def test_an_envelope_omits_absent_parts() -> None:
    envelope = ErrorEnvelope(
        code="not_found", message="m", retryable=False, safe_to_retry=False, operation="o", trace_id="trace_1"
    )
    assert envelope.to_json() == {
        "error": {
            "code": "not_found",
            "message": "m",
            "retryable": False,
            "safe_to_retry": False,
            "operation": "o",
            "trace_id": "trace_1",
        }
    }
    assert (envelope.exit_code, envelope.http_status) == (6, 404)
