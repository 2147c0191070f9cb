"""The ledger contract every backend must pass (one parametrized suite; see ``BACKENDS`` in conftest)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import anyio
import pytest
from ledger_support import TTL_SECONDS, FakeClock

from anvil.errors import LedgerError
from anvil.ledger.base import MAX_RESULT_BYTES, Ledger, LedgerRow, ReserveContext, document_id

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


async def test_a_completed_row_expires_logically_and_is_reserved_anew(ledger: Ledger, clock: FakeClock) -> None:
    await ledger.reserve("k", "fp-a")
    await ledger.complete("k", {"old": True})
    clock.advance(TTL_SECONDS - 1)
    assert (await ledger.reserve("k", "fp-a")).outcome == "replay"
    clock.advance(1)
    fresh = await ledger.reserve("k", "fp-b")
    assert fresh.outcome == "reserved"


async def test_an_in_progress_row_never_expires(ledger: Ledger, clock: FakeClock) -> None:
    await ledger.reserve("k", "fp-a")
    clock.advance(10 * 365 * 86400)
    assert (await ledger.reserve("k", "fp-a")).outcome == "in_progress"


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
