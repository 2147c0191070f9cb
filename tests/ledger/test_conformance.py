"""The ledger contract every backend must pass (one parametrized suite; see ``BACKENDS`` in conftest)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import replace

import anyio
import pytest
from ledger_support import TTL_SECONDS, FakeClock

from anvil.errors import LedgerError
from anvil.ledger.base import (
    DEFAULT_BINDING_TTL_SECONDS,
    MAX_RESULT_BYTES,
    Ledger,
    LedgerOptions,
    LedgerRow,
    ReserveContext,
    document_id,
)
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.registry import open_ledger

pytestmark = pytest.mark.anyio

REFERENCE = re.compile(r"^[a-z]+/[a-z0-9_]+/[0-9a-f]{64}$")


async def test_a_fresh_key_is_reserved_with_a_sanitized_reference_of_the_hashed_document(ledger: Ledger) -> None:
    found = await ledger.reserve("ledger-key-1", "fp-a", ReserveContext(operation_id="svc.op", trace_id="trace_1"))
    assert found.outcome == "reserved" and ledger.owns("ledger-key-1")
    assert found.reference == f"{ledger.scheme}/{ledger.table}/{hashlib.sha256(b'ledger-key-1').hexdigest()}"
    assert found.reference is not None and REFERENCE.match(found.reference)
    assert "ledger-key-1" not in found.reference


async def test_a_held_key_is_in_progress_for_the_same_request_and_a_conflict_for_another(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp-a")
    same = await ledger.reserve("k", "fp-a")
    other = await ledger.reserve("k", "fp-b")
    assert same.outcome == "in_progress" and same.reference is not None
    assert other.outcome == "conflict" and other.reference is None


async def test_a_completed_key_replays_its_result_and_status(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp-a")
    await ledger.complete("k", {"id": "result-1", "nested": [1, "é"]}, 201)
    assert not ledger.owns("k")
    replay = await ledger.reserve("k", "fp-a")
    assert (replay.outcome, replay.result, replay.status) == ("replay", {"id": "result-1", "nested": [1, "é"]}, 201)


async def test_a_completed_key_is_a_conflict_for_another_request(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp-a")
    await ledger.complete("k", {"id": 1})
    conflict = await ledger.reserve("k", "fp-b")
    assert (conflict.outcome, conflict.result, conflict.reference) == ("conflict", None, None)


async def test_an_empty_result_replays_as_none_with_its_status(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp-a")
    await ledger.complete("k", None, 204)
    replay = await ledger.reserve("k", "fp-a")
    assert (replay.outcome, replay.result, replay.status) == ("replay", None, 204)


async def test_a_result_of_exactly_the_ceiling_is_stored_and_one_byte_more_is_refused(ledger: Ledger) -> None:
    edge = '"' * (MAX_RESULT_BYTES // 2 - 1)  # each quote serializes as two bytes, plus the enclosing pair
    await ledger.reserve("edge", "fp")
    await ledger.complete("edge", edge, 201)
    assert (await ledger.reserve("edge", "fp")).result == edge
    await ledger.reserve("over", "fp")
    with pytest.raises(LedgerError) as refused:
        await ledger.complete("over", "x" * (MAX_RESULT_BYTES - 1))
    assert refused.value.code == "ledger/result_too_large"
    assert (await ledger.reserve("over", "fp")).outcome == "in_progress"


async def test_a_completed_row_expires_logically_and_the_same_request_is_reserved_anew(
    ledger: Ledger, clock: FakeClock
) -> None:
    await ledger.reserve("k", "fp-a")
    await ledger.complete("k", {"old": True})
    clock.advance(TTL_SECONDS - 1)
    assert (await ledger.reserve("k", "fp-a")).outcome == "replay"
    clock.advance(1)
    fresh = await ledger.reserve("k", "fp-a")
    assert fresh.outcome == "reserved"


async def test_after_the_result_expires_the_binding_still_refuses_another_request_until_it_expires(
    ledger: Ledger, clock: FakeClock
) -> None:
    await ledger.reserve("order-42", "fp-bob")
    await ledger.complete("order-42", {"refund": "bob's private note"})
    clock.advance(TTL_SECONDS)
    other = await ledger.reserve("order-42", "fp-alice")
    assert (other.outcome, other.result) == ("conflict", None)
    stored = await ledger._read(document_id("order-42"))
    assert stored is not None and stored.fingerprint == "fp-bob" and stored.result_json is None  # no result kept
    clock.advance(DEFAULT_BINDING_TTL_SECONDS - TTL_SECONDS - 1)
    assert (await ledger.reserve("order-42", "fp-alice")).outcome == "conflict"
    clock.advance(1)
    assert (await ledger.reserve("order-42", "fp-alice")).outcome == "reserved"


async def test_a_per_row_result_ttl_shortens_only_the_replay_window(ledger: Ledger, clock: FakeClock) -> None:
    await ledger.reserve("derived", "fp-a")
    await ledger.complete("derived", {"id": 7}, 201, result_ttl_seconds=120)
    clock.advance(119)
    assert (await ledger.reserve("derived", "fp-a")).result == {"id": 7}
    clock.advance(1)
    assert (await ledger.reserve("derived", "fp-b")).outcome == "conflict"  # the binding lives on
    assert (await ledger.reserve("derived", "fp-a")).outcome == "reserved"
    await ledger.complete("derived", {"id": 8}, result_ttl_seconds=60)
    stored = await ledger._read(document_id("derived"))
    assert stored is not None and stored.expires_at is not None and stored.retain_until is not None
    assert abs(stored.expires_at - (clock.now + 60)) < 0.01
    assert abs(stored.retain_until - (clock.now + DEFAULT_BINDING_TTL_SECONDS)) < 0.01


async def test_a_per_row_result_ttl_must_be_a_positive_whole_number(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp-a")
    with pytest.raises(LedgerError) as refused:
        await ledger.complete("k", {"x": 1}, result_ttl_seconds=0)
    assert refused.value.code == "ledger/corrupt_row"
    assert ledger.owns("k")


async def test_an_in_progress_row_never_expires_and_tells_when_it_was_reserved(
    ledger: Ledger, clock: FakeClock
) -> None:
    await ledger.reserve("k", "fp-a")
    started = clock.now
    clock.advance(10 * 365 * 86400)
    held = await ledger.reserve("k", "fp-a")
    assert held.outcome == "in_progress"
    assert held.started_at is not None and abs(held.started_at - started) < 0.01


async def test_release_frees_the_key_and_is_a_no_op_when_not_owned(ledger: Ledger) -> None:
    await ledger.release("never-reserved")
    await ledger.reserve("k", "fp-a")
    await ledger.release("k")
    assert not ledger.owns("k")
    assert (await ledger.reserve("k", "fp-b")).outcome == "reserved"


async def test_completing_a_key_this_process_does_not_own_is_refused(ledger: Ledger) -> None:
    with pytest.raises(LedgerError) as refused:
        await ledger.complete("k", {"x": 1})
    assert refused.value.code == "ledger/not_owner"


async def test_a_completion_status_must_be_2xx(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp-a")
    with pytest.raises(LedgerError) as refused:
        await ledger.complete("k", {"x": 1}, 503)
    assert refused.value.code == "ledger/corrupt_row"
    assert (await ledger.reserve("k", "fp-a")).outcome == "in_progress"


async def test_thirty_two_concurrent_reservations_of_one_key_give_exactly_one_owner(ledger: Ledger) -> None:
    outcomes: list[str] = []

    async def reserve() -> None:
        outcomes.append((await ledger.reserve("hot", "fp")).outcome)

    async with anyio.create_task_group() as group:
        for _ in range(32):
            group.start_soon(reserve)
    assert sorted(outcomes) == ["in_progress"] * 31 + ["reserved"]


async def test_another_instance_sees_the_row_but_cannot_complete_it(
    ledger: Ledger, open_backend: Callable[[], Ledger]
) -> None:
    other = open_backend()
    if ledger.sharing == "process":
        # A per-process backend shares nothing: the second instance reserves the same key afresh,
        # which is exactly why memory: is dev-only and never called horizontally safe.
        try:
            await ledger.reserve("k", "fp-a")
            assert (await other.reserve("k", "fp-a")).outcome == "reserved"
        finally:
            await other.close()
        return
    try:
        await ledger.reserve("k", "fp-a")
        assert (await other.reserve("k", "fp-a")).outcome == "in_progress"
        with pytest.raises(LedgerError) as refused:
            await other.complete("k", {"stolen": True})
        assert refused.value.code == "ledger/not_owner"
        await ledger.complete("k", {"mine": True})
        assert (await other.reserve("k", "fp-a")).result == {"mine": True}
    finally:
        await other.close()


async def test_readiness_is_a_live_ok(ledger: Ledger) -> None:
    ready = await ledger.check_readiness()
    assert (ready.ready, ready.code) == (True, "ok")


async def test_durability_and_sharing_are_declared_honestly(ledger: Ledger) -> None:
    assert (ledger.durable, ledger.sharing) in {(False, "process"), (True, "host"), (True, "cluster")}


# --- the primitives' atomicity contract -------------------------------------------------------------


def row(status: str = "in_progress", fingerprint: str = "fp") -> LedgerRow:
    return LedgerRow(status=status, fingerprint=fingerprint, reservation_id="r-1", started_at=1.0)  # type: ignore[arg-type]


async def test_create_if_absent_admits_one_creator(ledger: Ledger) -> None:
    doc = document_id("primitive")
    first = await ledger._create_if_absent(doc, row())
    second = await ledger._create_if_absent(doc, row(fingerprint="other"))
    stored = await ledger._read(doc)
    assert first is not None and second is None
    assert stored is not None and stored.fingerprint == "fp" and stored.version == first


async def test_update_and_delete_apply_only_at_the_version_read(ledger: Ledger) -> None:
    doc = document_id("primitive")
    version = await ledger._create_if_absent(doc, row())
    assert version is not None
    newer = await ledger._update_if_version(doc, version, row(status="completed"))
    assert newer is not None and newer != version
    assert await ledger._update_if_version(doc, version, row()) is None  # stale
    assert await ledger._delete_if_version(doc, version) is False  # stale
    assert await ledger._delete_if_version(doc, newer) is True
    assert await ledger._read(doc) is None
    recreated = await ledger._create_if_absent(doc, row())
    assert recreated is not None and await ledger._delete_if_version(doc, version) is False  # no ABA


# --- lost answers -----------------------------------------------------------------------------------


async def test_a_create_whose_answer_was_lost_is_recognised_as_our_own_reservation(
    ledger_uri: str, clock: FakeClock, ledger: Ledger
) -> None:
    # The first create committed but its answer never came back: the row holds our reservation id.
    committed = LedgerRow(status="in_progress", fingerprint="fp", reservation_id="r-lost", started_at=clock.now)
    assert await ledger._create_if_absent(document_id("k"), committed) is not None
    if ledger.sharing == "process":
        return  # one process, one dict: nothing else can see the row
    retrying = open_ledger(ledger_uri, options=LedgerOptions(clock=clock, reservation_ids=lambda: "r-lost"))
    stranger = open_ledger(ledger_uri, options=LedgerOptions(clock=clock, reservation_ids=lambda: "r-other"))
    try:
        assert (await stranger.reserve("k", "fp")).outcome == "in_progress"
        assert (await retrying.reserve("k", "fp")).outcome == "reserved" and retrying.owns("k")
        await retrying.complete("k", {"ok": True})
        assert (await stranger.reserve("k", "fp")).result == {"ok": True}
    finally:
        await retrying.close()
        await stranger.close()


async def test_a_completion_whose_answer_was_lost_is_confirmed_by_reading_the_row_back(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp")
    owned = ledger._owned["k"]
    # The completion committed but its answer was lost: the row already holds exactly the intended state.
    intended = ledger._completed(owned.row, {"id": 1}, 201, None)
    assert await ledger._update_if_version(owned.document, owned.row.version, intended) is not None
    await ledger.complete("k", {"id": 1}, 201)
    assert not ledger.owns("k")
    assert (await ledger.reserve("k", "fp")).result == {"id": 1}


async def test_a_completion_over_a_row_someone_else_changed_is_refused(ledger: Ledger) -> None:
    await ledger.reserve("k", "fp")
    owned = ledger._owned["k"]
    other = ledger._completed(owned.row, {"id": "someone else's"}, 200, None)
    assert await ledger._update_if_version(owned.document, owned.row.version, other) is not None
    with pytest.raises(LedgerError) as refused:
        await ledger.complete("k", {"id": 1}, 201)
    assert refused.value.code == "ledger/not_owner"
    assert (await ledger.reserve("k", "fp")).result == {"id": "someone else's"}


# --- operator reconciliation ------------------------------------------------------------------------


async def test_inspect_shows_a_reservation_by_its_reference_and_resolve_not_committed_frees_it(
    ledger: Ledger,
) -> None:
    reference = (await ledger.reserve("k", "fp", ReserveContext(operation_id="svc.op", trace_id="t-1"))).reference
    assert reference is not None
    row = await ledger.inspect(reference)
    assert row is not None and (row.status, row.fingerprint, row.operation_id, row.trace_id) == (
        "in_progress",
        "fp",
        "svc.op",
        "t-1",
    )
    before = await ledger.resolve(reference, fingerprint="fp", committed=False)
    assert before is not None and before.status == "in_progress"
    assert await ledger.inspect(reference) is None


async def test_resolve_committed_stores_the_result_so_a_retry_replays_it(ledger: Ledger) -> None:
    reference = (await ledger.reserve("k", "fp")).reference
    assert reference is not None
    await ledger.resolve(reference, fingerprint="fp", committed=True, result={"refund": "re_1"}, status=201)
    replay = await ledger.reserve("k", "fp")
    assert (replay.outcome, replay.result, replay.status) == ("replay", {"refund": "re_1"}, 201)


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("missing", "ledger/row_missing"),
        ("completed", "ledger/row_not_in_progress"),
        ("other-fingerprint", "ledger/fingerprint_mismatch"),
    ],
)
async def test_resolve_refuses_a_row_that_is_not_the_expected_reservation_and_changes_nothing(
    ledger: Ledger, setup: str, code: str
) -> None:
    reference = ledger.reference(document_id("k"))
    if setup != "missing":
        await ledger.reserve("k", "fp")
    if setup == "completed":
        await ledger.complete("k", {"done": True})
    before = await ledger._read(document_id("k"))
    with pytest.raises(LedgerError) as refused:
        await ledger.resolve(reference, fingerprint="fp" if setup != "other-fingerprint" else "fp-x", committed=False)
    assert refused.value.code == code
    assert await ledger._read(document_id("k")) == before


@pytest.mark.parametrize(
    ("reference", "code"),
    [
        ("not-a-reference", "ledger/reference_invalid"),
        ("sqlite/anvil_idempotency/" + "A" * 64, "ledger/reference_invalid"),
        ("othertype/anvil_idempotency_0000000000000000/" + "0" * 64, "ledger/wrong_collection"),
    ],
)
async def test_a_malformed_or_foreign_reference_is_refused_before_the_store_is_touched(
    ledger: Ledger, reference: str, code: str
) -> None:
    with pytest.raises(LedgerError) as refused:
        await ledger.inspect(reference)
    assert refused.value.code == code
    foreign_table = f"{ledger.scheme}/anvil_idempotency_ffffffffffffffff/{'0' * 64}"
    with pytest.raises(LedgerError) as wrong:
        await ledger.resolve(foreign_table, fingerprint="fp", committed=False)
    assert wrong.value.code == "ledger/wrong_collection"


async def test_two_namespaces_on_one_store_never_share_rows(ledger_uri: str, clock: FakeClock) -> None:
    if ledger_uri.startswith("memory:"):
        return  # the memory ledger has no store to share
    base = ledger_uri.rsplit("namespace=", 1)[0] if "namespace=" in ledger_uri else ledger_uri.rsplit("/", 1)[0] + "/"
    first_uri = base + ("namespace=" if "namespace=" in ledger_uri else "") + "ns-one"
    second_uri = base + ("namespace=" if "namespace=" in ledger_uri else "") + "ns-two"
    first = open_ledger(first_uri, options=LedgerOptions(clock=clock))
    second = open_ledger(second_uri, options=LedgerOptions(clock=clock))
    try:
        await first.initialize()
        await second.initialize()
        assert first.table != second.table
        key = f"shared-{clock.now}-{id(first)}"
        assert (await first.reserve(key, "fp")).outcome == "reserved"
        assert (await second.reserve(key, "fp")).outcome == "reserved"
        await first.release(key)
        await second.release(key)
    finally:
        await first.close()
        await second.close()


class _RacedStore(MemoryLedger):
    """A store where another operator completes the row right after every read (a concurrent writer)."""

    async def _read(self, document: str) -> LedgerRow | None:
        row = await super()._read(document)
        if row is not None and row.status == "in_progress":
            await super()._update_if_version(document, row.version, replace(row, reservation_id="someone-else"))
        return row


async def test_resolve_loses_to_a_concurrent_writer_and_changes_nothing() -> None:
    store = _RacedStore()
    reference = (await store.reserve("k", "fp")).reference
    assert reference is not None
    with pytest.raises(LedgerError) as refused:
        await store.resolve(reference, fingerprint="fp", committed=False)
    assert refused.value.code == "ledger/row_changed"
    with pytest.raises(LedgerError) as again:
        await store.resolve(reference, fingerprint="fp", committed=True, result={"x": 1})
    assert again.value.code == "ledger/row_changed"
    row = await MemoryLedger._read(store, document_id("k"))
    assert row is not None and row.status == "in_progress"


async def test_a_reservation_and_its_replay_name_the_instant_it_was_reserved(ledger: Ledger, clock: FakeClock) -> None:
    reserved = await ledger.reserve("k", "fp-a")
    assert reserved.outcome == "reserved" and reserved.started_at is not None
    assert abs(reserved.started_at - clock.now) < 0.002
    await ledger.complete("k", {"id": 1}, 201)
    clock.advance(5)
    replay = await ledger.reserve("k", "fp-a")  # read back from the store: the same instant, to the millisecond
    assert replay.outcome == "replay" and replay.started_at is not None
    assert round(replay.started_at * 1000) == round(reserved.started_at * 1000)
