"""Bounded retries: only when the operation is retry-safe, never for mode none, within the hard limits."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from runtime_support import SAFE_RETRIES, fingerprint_write, keyed_write, query_carrier_write, read_op, unkeyed_write

from anvil.air.model import Operation, RetryPolicy
from anvil.ledger.memory import MemoryLedger
from anvil.runtime.context import CallOptions, RuntimeContext
from anvil.runtime.executor import execute
from anvil.runtime.retry import backoff_ms, parse_retry_after

pytestmark = pytest.mark.anyio

REFUND = {"payment_id": "pay_1", "amount": 2500}
BASE = "https://payments.example.com"


class BrokenStream(httpx.AsyncByteStream):
    """A body that fails after the first chunk: the upstream began answering, then the connection died."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"partial":'
        raise httpx.ReadError("connection reset by peer 10.0.0.7")


class Script:
    """A MockTransport handler answering from a list of responses or exceptions, recording requests."""

    def __init__(self, *steps: httpx.Response | Exception | Callable[[], httpx.Response]) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []
        self.sleeps: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, Exception):
            raise step
        return step() if callable(step) else step

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def context(self, **overrides: Any) -> RuntimeContext:
        values: dict[str, Any] = {
            "service_id": "payments",
            "base_url": BASE,
            "client": httpx.AsyncClient(transport=httpx.MockTransport(self)),
            "env": "dev",
            "sleep": self.sleep,
            "rng": lambda: 0.5,
        }
        values.update(overrides)
        return RuntimeContext(**values)


def status(code: int, headers: dict[str, str] | None = None, body: Any = None) -> httpx.Response:
    return httpx.Response(code, headers=headers, json=body if body is not None else {"error": {"message": "x"}})


def retrying(op: Operation, **changes: Any) -> Operation:
    return dataclasses.replace(op, retries=dataclasses.replace(SAFE_RETRIES, **changes))


async def test_a_keyed_write_retries_503_twice_then_succeeds_with_jittered_backoff() -> None:
    script = Script(status(503), status(503), httpx.Response(201, json={"id": "re_1"}))
    outcome = await execute(keyed_write(), REFUND, script.context(), CallOptions(idempotency_key="r-1"))
    assert (outcome.kind, outcome.status, outcome.attempts) == ("success", 201, 3)
    assert script.sleeps == [0.1, 0.2]  # floor(0.5 * 200), floor(0.5 * 400) ms
    assert {r.headers["idempotency-key"] for r in script.requests} == {"r-1"}


async def test_a_read_is_retried_on_a_transport_timeout() -> None:
    script = Script(httpx.ConnectTimeout("slow"), httpx.Response(200, json={"ok": True}))
    outcome = await execute(read_op(), {"payment_id": "p"}, script.context())
    assert outcome.kind == "success" and outcome.attempts == 2


async def test_a_write_with_mode_none_is_attempted_exactly_once_even_with_a_safe_policy() -> None:
    script = Script(httpx.ReadTimeout("upstream at 10.0.0.7 timed out"))
    outcome = await execute(retrying(unkeyed_write()), REFUND, script.context())
    assert outcome.code == "upstream_timeout" and outcome.attempts == 1 and len(script.requests) == 1
    assert outcome.envelope is not None
    assert outcome.envelope.retryable is True and outcome.envelope.safe_to_retry is False
    assert "10.0.0.7" not in outcome.envelope.message


async def test_a_key_supported_write_without_a_key_is_not_retried() -> None:
    script = Script(status(503))
    outcome = await execute(retrying(query_carrier_write()), {"payment_id": "p"}, script.context())
    assert outcome.code == "upstream_unavailable" and len(script.requests) == 1
    keyed = await execute(
        retrying(query_carrier_write()), {"payment_id": "p"}, script.context(), CallOptions(idempotency_key="q")
    )
    assert keyed.attempts == 3 and keyed.envelope is not None and keyed.envelope.safe_to_retry is True


async def test_retries_stop_at_five_attempts() -> None:
    script = Script(status(503))
    op = retrying(read_op(), max_attempts=5, backoff="none")
    outcome = await execute(op, {"payment_id": "p"}, script.context())
    assert outcome.code == "upstream_unavailable" and outcome.attempts == 5 and len(script.requests) == 5


async def test_total_backoff_never_exceeds_twenty_seconds() -> None:
    script = Script(status(503))
    op = retrying(read_op(), max_attempts=5, backoff="exponential", base_delay_ms=15000)
    outcome = await execute(op, {"payment_id": "p"}, script.context())
    assert script.sleeps == [15.0] and outcome.attempts == 2
    assert outcome.envelope is not None and outcome.envelope.details is not None
    assert outcome.envelope.details["retry_stopped"] == "backoff_budget_exhausted"


async def test_retries_can_be_switched_off_by_the_context() -> None:
    script = Script(status(503))
    outcome = await execute(read_op(), {"payment_id": "p"}, script.context(retries=False))
    assert outcome.attempts == 1 and outcome.envelope is not None and outcome.envelope.safe_to_retry is False


async def test_a_terminal_status_is_not_retried() -> None:
    script = Script(status(500))
    outcome = await execute(read_op(), {"payment_id": "p"}, script.context())
    assert outcome.code == "unknown_upstream_error" and outcome.attempts == 1


async def test_retry_after_lengthens_the_wait_and_is_reported() -> None:
    script = Script(status(429, {"retry-after": "2"}), httpx.Response(200, json={}))
    outcome = await execute(read_op(), {"payment_id": "p"}, script.context())
    assert outcome.kind == "success" and script.sleeps == [2.0]


async def test_retry_after_beyond_the_ceiling_stops_retrying_with_details() -> None:
    script = Script(status(429, {"retry-after": "21"}))
    outcome = await execute(read_op(), {"payment_id": "p"}, script.context())
    assert outcome.code == "rate_limited" and outcome.attempts == 1 and script.sleeps == []
    assert outcome.envelope is not None
    assert outcome.envelope.details == {
        "retry_after_ms": 21000,
        "retry_stopped": "retry_after_exceeds_ceiling",
        "max_delay_ms": 20000,
    }


async def test_retry_after_is_reported_when_no_retry_happens() -> None:
    script = Script(status(429, {"retry-after": "3"}))
    outcome = await execute(unkeyed_write(), REFUND, script.context())
    assert outcome.envelope is not None and outcome.envelope.details == {"retry_after_ms": 3000}


async def test_an_answer_that_broke_off_keeps_the_reservation_as_possibly_committed() -> None:
    ledger = MemoryLedger()
    broken = Script(lambda: httpx.Response(200, stream=BrokenStream()), httpx.ConnectTimeout("t"))
    outcome = await execute(fingerprint_write(), REFUND, broken.context(ledger=ledger, timeout_ms=1234))
    assert outcome.code == "upstream_timeout" and outcome.attempts == 3
    assert outcome.record.ledger == "in_progress"
    assert outcome.envelope is not None and outcome.envelope.details is not None
    assert outcome.envelope.safe_to_retry is False and outcome.envelope.retryable is True
    details = outcome.envelope.details
    assert details["upstream_outcome"] == "possibly_committed" and details["operator_action_required"] is True
    assert str(details["ledger_reference"]).startswith("memory/")
    assert all(r.extensions["timeout"]["read"] == 1.234 for r in broken.requests)
    again = await execute(fingerprint_write(), REFUND, Script(httpx.Response(200)).context(ledger=ledger))
    assert again.code == "conflict" and again.record.ledger == "in_progress"


async def test_a_pre_response_failure_on_every_attempt_releases_the_reservation() -> None:
    ledger = MemoryLedger()
    failing = Script(httpx.ConnectTimeout("t"))
    outcome = await execute(fingerprint_write(), REFUND, failing.context(ledger=ledger))
    assert outcome.code == "upstream_timeout" and outcome.attempts == 3
    assert outcome.envelope is not None and outcome.envelope.safe_to_retry is True
    ok = await execute(fingerprint_write(), REFUND, Script(httpx.Response(201)).context(ledger=ledger))
    assert ok.kind == "success" and ok.record.ledger == "reserved"


async def test_a_redirect_is_never_followed_and_a_write_is_then_uncertain() -> None:
    script = Script(httpx.Response(302, headers={"location": "https://elsewhere.example.com/"}))
    outcome = await execute(
        keyed_write(), REFUND, script.context(ledger=MemoryLedger()), CallOptions(idempotency_key="rd")
    )
    assert outcome.code == "unknown_upstream_error" and len(script.requests) == 1
    assert outcome.envelope is not None and outcome.envelope.details is not None
    assert outcome.envelope.details["upstream_outcome"] == "possibly_committed"


async def test_an_oversized_answer_is_refused() -> None:
    script = Script(httpx.Response(200, content=b"x" * 2048))
    outcome = await execute(read_op(), {"payment_id": "p"}, script.context(max_response_bytes=1024))
    assert outcome.code == "unknown_upstream_error"


@pytest.mark.parametrize(
    ("policy", "attempt", "expected"),
    [
        (RetryPolicy(mode="safe", backoff="none"), 3, 0),
        (RetryPolicy(mode="safe", backoff="fixed", base_delay_ms=300, max_delay_ms=250), 2, 250),
        (RetryPolicy(mode="safe", backoff="exponential", base_delay_ms=200), 3, 800),
        (RetryPolicy(mode="safe", backoff="exponential", base_delay_ms=200, max_delay_ms=500), 4, 500),
        (RetryPolicy(mode="safe", backoff="exponential_jitter", base_delay_ms=200), 2, 200),
    ],
)
def test_backoff_follows_the_policy(policy: RetryPolicy, attempt: int, expected: int) -> None:
    assert backoff_ms(policy, attempt, lambda: 0.5 if policy.backoff == "exponential_jitter" else 0.0) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5", 5000),
        ("Sun, 06 Nov 1994 08:49:47 GMT", 7000),
        ("Sunday, 06-Nov-94 08:49:47 GMT", 7000),
        ("Sun Nov  6 08:49:47 1994", 7000),
        ("Sun, 06 Nov 1994 08:49:30 GMT", None),
        ("-3", None),
        ("soon", None),
        (None, None),
    ],
)
def test_retry_after_accepts_delta_seconds_and_the_three_http_date_forms(
    value: str | None, expected: int | None
) -> None:
    now = 784111780.0  # 1994-11-06 08:49:40 UTC
    assert parse_retry_after(value, now) == expected


async def test_a_keyed_write_whose_answer_was_lost_keeps_its_reservation_and_is_never_sent_again() -> None:
    # The request left (a read timeout): the upstream may have committed, so the key stays in progress.
    script = Script(httpx.ReadTimeout("no answer"))
    ledger = MemoryLedger()
    context = script.context(ledger=ledger)
    lost = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="lost-1"))
    assert lost.code == "upstream_timeout" and lost.envelope is not None
    assert lost.envelope.safe_to_retry is False
    assert lost.envelope.details is not None and lost.envelope.details["upstream_outcome"] == "possibly_committed"
    sent = len(script.requests)
    again = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="lost-1"))
    assert again.code == "conflict" and len(script.requests) == sent
    assert again.envelope is not None and again.envelope.details is not None
    assert again.envelope.details["operator_action_required"] is True


async def test_a_keyed_write_that_never_connected_releases_its_reservation_for_a_retry() -> None:
    # No connection was made: nothing can have committed, so the same key may be retried at once.
    script = Script(httpx.ConnectError("refused"), httpx.Response(201, json={"id": "re_1"}))
    ledger = MemoryLedger()
    context = script.context(ledger=ledger, retries=False)
    refused = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="conn-1"))
    assert refused.code == "upstream_unavailable" and refused.envelope is not None
    assert "upstream_outcome" not in (refused.envelope.details or {})
    retried = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="conn-1"))
    assert retried.kind == "success" and retried.status == 201 and len(script.requests) == 2


#: The statuses that prove the upstream applied nothing (README, "How a failed write is classified").
RELEASING = (set(range(400, 500)) - {408}) | {503}


@pytest.mark.parametrize("code", [*range(400, 600), 600, 799, 999])
async def test_only_a_status_that_proves_nothing_was_applied_releases_a_keyed_writes_reservation(code: int) -> None:
    script = Script(status(code), httpx.Response(201, json={"id": "re_1"}))
    context = script.context(ledger=MemoryLedger(), retries=False)
    failed = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key=f"status-{code}"))
    assert failed.kind == "error" and failed.envelope is not None and len(script.requests) == 1
    details = failed.envelope.details or {}
    again = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key=f"status-{code}"))
    if code in RELEASING:
        assert "upstream_outcome" not in details and failed.record.ledger == "reserved"
        assert again.kind == "success" and len(script.requests) == 2  # the same key ran again, as it may
    else:
        assert details["upstream_outcome"] == "possibly_committed" and failed.envelope.safe_to_retry is False
        assert failed.record.ledger == "in_progress"
        assert again.code == "conflict" and len(script.requests) == 1  # never sent twice
