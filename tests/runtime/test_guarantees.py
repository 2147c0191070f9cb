"""Seed 001's guarantee table, row by row, through the executor against a counting loopback upstream.

Each test runs once per ledger backend (``memory:`` and ``sqlite:``; see ``LEDGER_URIS``).
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import anyio
import pytest
from runtime_support import ContextFactory, FakeClock, Scripted, UpstreamState, fingerprint_write, keyed_write

from anvil.ledger.base import DEFAULT_BINDING_TTL_SECONDS, MAX_RESULT_BYTES, Ledger, LedgerOptions
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import CallOptions
from anvil.runtime.executor import execute

pytestmark = pytest.mark.anyio

REFERENCE = re.compile(r"^(memory|sqlite)/[a-z0-9_]+/[0-9a-f]{64}$")
REFUND = {"payment_id": "pay_1", "amount": 2500}


def keyed(key: str) -> CallOptions:
    return CallOptions(idempotency_key=key)


async def test_first_call_reserves_then_completes_and_sends_the_key_upstream(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    upstream.answer(Scripted(status=201, body={"id": "re_1"}))
    outcome = await execute(keyed_write(), REFUND, make_context(ledger=ledger), keyed("key-first"))
    assert (outcome.kind, outcome.status, outcome.data) == ("success", 201, {"id": "re_1"})
    assert outcome.record.ledger == "reserved" and outcome.idempotency_key == "key-first"
    assert upstream.count == 1 and upstream.calls[0].headers["idempotency-key"] == "key-first"
    replay = await execute(keyed_write(), REFUND, make_context(ledger=ledger), keyed("key-first"))
    assert replay.replayed


async def test_same_key_and_same_request_replays_the_stored_result_without_a_second_call(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    upstream.answer(Scripted(status=201, body={"id": "re_1", "amount": 2500}))
    context = make_context(ledger=ledger)
    first = await execute(keyed_write(), REFUND, context, keyed("key-dup"))
    second = await execute(keyed_write(), dict(reversed(REFUND.items())), context, keyed("key-dup"))
    assert upstream.count == 1
    assert (second.kind, second.status, second.data) == ("success", 201, first.data)
    assert second.replayed and second.record.ledger == "replay" and second.attempts == 0


async def test_a_replay_keeps_an_empty_204_answer(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    upstream.answer(Scripted(status=204))
    context = make_context(ledger=ledger)
    await execute(keyed_write(), REFUND, context, keyed("key-204"))
    replay = await execute(keyed_write(), REFUND, context, keyed("key-204"))
    assert (replay.status, replay.data, replay.replayed, upstream.count) == (204, None, True, 1)


async def test_same_key_with_a_different_request_is_a_conflict(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    context = make_context(ledger=ledger)
    await execute(keyed_write(), REFUND, context, keyed("key-reused"))
    other = await execute(keyed_write(), {**REFUND, "amount": 9999}, context, keyed("key-reused"))
    assert other.code == "conflict" and other.record.ledger == "conflict"
    assert upstream.count == 1


async def test_a_concurrent_same_key_call_is_refused_as_in_progress_without_a_second_call(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    upstream.hold = threading.Event()
    context = make_context(ledger=ledger)
    results = {}

    async def first() -> None:
        results["first"] = await execute(keyed_write(), REFUND, context, keyed("key-busy"))

    async with anyio.create_task_group() as group:
        group.start_soon(first)
        with anyio.fail_after(5):
            await anyio.to_thread.run_sync(upstream.arrived.wait, 5)
        second = await execute(keyed_write(), REFUND, context, keyed("key-busy"))
        upstream.hold.set()
    assert second.code == "conflict" and second.record.ledger == "in_progress"
    assert second.envelope is not None and second.envelope.details is not None
    assert REFERENCE.match(str(second.envelope.details["ledger_reference"]))
    assert results["first"].kind == "success" and upstream.count == 1


async def test_a_result_over_the_replay_ceiling_is_answered_once_and_leaves_the_row_in_progress(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    big = {"blob": "x" * MAX_RESULT_BYTES}
    upstream.answer(Scripted(status=200, body=big))
    context = make_context(ledger=ledger)
    outcome = await execute(keyed_write(), REFUND, context, keyed("key-huge"))
    # The write happened: this caller gets the upstream's answer, told it cannot be replayed.
    assert outcome.kind == "success" and outcome.data == big and outcome.record.ledger == "in_progress"
    assert outcome.replay_unavailable is not None and not outcome.replayed
    again = await execute(keyed_write(), REFUND, context, keyed("key-huge"))
    assert again.code == "conflict" and again.record.ledger == "in_progress" and upstream.count == 1
    assert again.envelope is not None and again.envelope.details is not None
    assert REFERENCE.match(str(again.envelope.details["ledger_reference"]))


async def test_a_retry_tells_a_quarantined_row_from_a_call_still_in_flight(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState, clock: FakeClock
) -> None:
    upstream.answer(Scripted(status=200, body={"blob": "x" * MAX_RESULT_BYTES}))  # completes never
    context = make_context(ledger=ledger)
    clock.now = time.time() - 3600  # the reservation was made an hour ago
    await execute(keyed_write(), REFUND, context, keyed("key-stuck"))
    old = await execute(keyed_write(), REFUND, context, keyed("key-stuck"))
    clock.now = time.time()
    upstream.answer(Scripted(status=200, body={"blob": "x" * MAX_RESULT_BYTES}))
    await execute(keyed_write(), REFUND, context, keyed("key-fresh"))
    fresh = await execute(keyed_write(), REFUND, context, keyed("key-fresh"))
    for outcome in (old, fresh):
        assert outcome.code == "conflict" and outcome.envelope is not None and outcome.envelope.details is not None
        assert "anvil ledger inspect" in str(outcome.envelope.details["hint"])
    assert old.envelope is not None and old.envelope.details is not None
    assert old.envelope.details["quarantined"] is True and float(str(old.envelope.details["reservation_age_s"])) > 3500
    assert fresh.envelope is not None and fresh.envelope.details is not None
    assert fresh.envelope.details["quarantined"] is False
    assert float(str(fresh.envelope.details["reservation_age_s"])) < 60


async def test_a_result_of_exactly_the_ceiling_completes_and_replays(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    text = "q" * (MAX_RESULT_BYTES - 2)  # the serialized JSON string adds two quotes
    upstream.answer(Scripted(status=201, body=text))
    context = make_context(ledger=ledger)
    first = await execute(keyed_write(), REFUND, context, keyed("key-edge"))
    replay = await execute(keyed_write(), REFUND, context, keyed("key-edge"))
    assert first.kind == "success" and replay.replayed and replay.data == text and replay.status == 201


async def test_an_expired_completed_row_is_not_replayed(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState, clock: FakeClock
) -> None:
    context = make_context(ledger=ledger)
    await execute(keyed_write(), REFUND, context, keyed("key-old"))
    clock.advance(3600)  # the fixture's TTL: expiry is logical, checked before any replay
    again = await execute(keyed_write(), REFUND, context, keyed("key-old"))
    assert again.kind == "success" and not again.replayed and again.record.ledger == "reserved"
    assert upstream.count == 2


async def test_an_expired_result_still_binds_its_key_and_only_an_expired_binding_frees_it_for_another_request(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState, clock: FakeClock
) -> None:
    context = make_context(ledger=ledger)
    await execute(keyed_write(), REFUND, context, keyed("key-recycled"))
    clock.advance(7200)  # past the result TTL: the upstream may still honour the raw key
    refused = await execute(keyed_write(), {**REFUND, "amount": 1}, context, keyed("key-recycled"))
    assert refused.code == "conflict" and upstream.count == 1  # refused before the upstream
    clock.advance(DEFAULT_BINDING_TTL_SECONDS)
    other = await execute(keyed_write(), {**REFUND, "amount": 1}, context, keyed("key-recycled"))
    assert other.kind == "success" and upstream.count == 2


async def test_a_terminal_non_2xx_answer_releases_the_reservation(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    upstream.answer(Scripted(status=400, body={"message": "bad amount"}))
    context = make_context(ledger=ledger)
    refused = await execute(keyed_write(), REFUND, context, keyed("key-released"))
    assert refused.code == "validation_error"
    retried = await execute(keyed_write(), REFUND, context, keyed("key-released"))
    assert retried.kind == "success" and upstream.count == 2


async def test_a_completion_failure_in_the_hook_keeps_the_row_for_reconciliation(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    async def crash(_answer: object) -> None:
        raise RuntimeError("process lost between answer and completion")

    outcome = await execute(
        keyed_write(), REFUND, make_context(ledger=ledger, on_upstream_answered=crash), keyed("key-x")
    )
    assert outcome.code == "idempotency_ledger_unavailable" and outcome.record.ledger == "in_progress"
    again = await execute(keyed_write(), REFUND, make_context(ledger=ledger), keyed("key-x"))
    assert again.code == "conflict" and upstream.count == 1


DERIVED = re.compile(r"^anvil-[0-9a-f]{32}$")


async def test_a_deliberate_repeat_of_a_derived_key_write_after_the_window_sends_a_new_key_upstream(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState, clock: FakeClock
) -> None:
    context = make_context(ledger=ledger, derived_key_window_seconds=300)
    upstream.answer(Scripted(status=201, body={"id": "re_1"}), Scripted(status=201, body={"id": "re_2"}))
    first = await execute(fingerprint_write(), REFUND, context)
    sent = upstream.calls[0].headers["idempotency-key"]
    assert DERIVED.match(sent) and first.idempotency_key == sent
    clock.advance(299)  # inside the window: the recorded answer, and the key its call sent
    replay = await execute(fingerprint_write(), REFUND, context)
    assert replay.replayed and replay.data == {"id": "re_1"} and replay.idempotency_key == sent
    assert upstream.count == 1
    clock.advance(2)  # past it: the same payment made on purpose is a new reservation, under a new key
    again = await execute(fingerprint_write(), REFUND, context)
    assert again.kind == "success" and not again.replayed and again.data == {"id": "re_2"}
    repeat = upstream.calls[1].headers["idempotency-key"]
    assert upstream.count == 2 and DERIVED.match(repeat) and repeat != sent and again.idempotency_key == repeat


async def test_every_attempt_of_one_derived_reservation_sends_the_same_key(
    ledger: Ledger, make_context: ContextFactory, upstream: UpstreamState
) -> None:
    upstream.answer(Scripted(status=503), Scripted(status=503), Scripted(status=201, body={"id": "re_1"}))
    outcome = await execute(fingerprint_write(), REFUND, make_context(ledger=ledger))
    keys = {call.headers["idempotency-key"] for call in upstream.calls}
    assert outcome.kind == "success" and outcome.attempts == 3 and keys == {outcome.idempotency_key}


async def test_another_instance_replays_a_derived_write_with_the_key_its_first_call_sent(
    make_context: ContextFactory, upstream: UpstreamState, clock: FakeClock, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path}/shared.db"
    first_ledger, second_ledger = (open_ledger(uri, options=LedgerOptions(clock=clock)) for _ in range(2))
    try:
        first = await execute(fingerprint_write(), REFUND, make_context(ledger=first_ledger))
        clock.advance(1)
        replay = await execute(fingerprint_write(), REFUND, make_context(ledger=second_ledger))
    finally:
        await first_ledger.close()
        await second_ledger.close()
    assert replay.replayed and upstream.count == 1
    assert replay.idempotency_key == first.idempotency_key == upstream.calls[0].headers["idempotency-key"]
