"""Cut answers kept in the ledger store: the keeper's contract on every backend (see ``BACKENDS`` in conftest)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from ledger_support import FakeClock
from services import postgres_uri

from anvil.errors import LedgerError
from anvil.ledger.answers import (
    ANSWER_TTL_SECONDS,
    ANSWER_URI_PREFIX,
    MAX_ANSWER_BYTES,
    ROW_CHARS,
    KeptAnswer,
    LedgerAnswers,
    answer_reference,
)
from anvil.ledger.base import Ledger, LedgerOptions, document_id
from anvil.ledger.registry import open_ledger

pytestmark = pytest.mark.anyio

OWNER = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64
NEEDLE = b"needle-kept-answer-7f3a"


def _answer(size: int) -> bytes:
    """A JSON answer of about ``size`` bytes carrying :data:`NEEDLE` (deterministic, not compressible)."""
    noise = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(size // 64 + 1))
    return b'{"marker":"' + NEEDLE + b'","rows":"' + noise.encode()[:size] + b'"}'


FIVE_MB = _answer(5 * 1024 * 1024)


async def test_a_five_megabyte_answer_is_kept_and_read_back_whole_by_its_owner(ledger: Ledger) -> None:
    keeper = LedgerAnswers(ledger)
    uri = await keeper.keep(OWNER, FIVE_MB)
    assert uri is not None and re.fullmatch(r"anvil://answer/[0-9a-f]{32}", uri)
    assert await keeper.read(uri, OWNER) == KeptAnswer(FIVE_MB, "application/json")
    assert await keeper.read(uri, OWNER) == KeptAnswer(FIVE_MB, "application/json")  # reads do not consume


async def test_another_owner_reads_nothing_and_the_owner_still_reads_the_answer(ledger: Ledger) -> None:
    keeper = LedgerAnswers(ledger)
    uri = await keeper.keep(OWNER, b'{"a":1}', "application/json")
    assert uri is not None
    assert await keeper.read(uri, OTHER) is None
    assert await keeper.read(uri, "anonymous") is None
    assert await keeper.read(uri, OWNER) == KeptAnswer(b'{"a":1}')


async def test_an_answer_reads_until_its_expiry_and_is_deleted_by_the_first_read_after_it(
    ledger: Ledger, clock: FakeClock
) -> None:
    keeper = LedgerAnswers(ledger)
    uri = await keeper.keep(OWNER, _answer(2 * ROW_CHARS))  # three rows
    assert uri is not None
    reference = answer_reference(ledger, uri)
    assert reference is not None
    clock.advance(ANSWER_TTL_SECONDS - 1)
    assert await keeper.read(uri, OWNER) is not None
    clock.advance(1)
    assert await keeper.read(uri, OWNER) is None
    assert await ledger.inspect(reference) is None  # deleted, not only hidden
    clock.advance(-ANSWER_TTL_SECONDS)
    assert await keeper.read(uri, OWNER) is None  # and never back, whatever the clock says


async def test_two_keepers_on_one_store_read_each_others_answers(
    ledger: Ledger, open_backend: Callable[[], Ledger]
) -> None:
    other = ledger if ledger.sharing == "process" else open_backend()  # memory: one store per object
    try:
        first, second = LedgerAnswers(ledger), LedgerAnswers(other)
        one = await first.keep(OWNER, FIVE_MB)
        two = await second.keep(OTHER, b"[2]")
        assert one is not None and two is not None
        assert await second.read(one, OWNER) == KeptAnswer(FIVE_MB)
        assert await first.read(two, OTHER) == KeptAnswer(b"[2]")
        assert await first.read(two, OWNER) is None
    finally:
        if other is not ledger:
            await other.close()


async def test_answer_rows_never_meet_idempotency_rows_and_the_operator_tools_refuse_them(ledger: Ledger) -> None:
    await ledger.reserve("k", "f" * 64)
    await ledger.complete("k", {"id": "result-1"}, 201)
    keeper = LedgerAnswers(ledger)
    uri = await keeper.keep(OWNER, b'{"secret":"' + NEEDLE + b'"}')
    assert uri is not None
    replay = await ledger.reserve("k", "f" * 64)
    assert (replay.outcome, replay.result, replay.status) == ("replay", {"id": "result-1"}, 201)
    assert (await ledger.reserve("fresh", "e" * 64)).outcome == "reserved"

    reference = answer_reference(ledger, uri)
    assert reference is not None and reference != ledger.reference(document_id("k"))
    row = await ledger.inspect(reference)
    assert row is not None and row.status == "completed" and row.operation_id == "anvil.answer"
    # a request fingerprint is 64 hex: a reservation that met this row would be a conflict, never a replay
    assert not re.fullmatch(r"[0-9a-f]{64}", row.fingerprint)
    assert row.expires_at == row.retain_until and row.response_status is None
    assert row.result_json is not None and NEEDLE.decode() not in row.result_json
    assert isinstance(json.loads(row.result_json), dict)  # `inspect --show-result` shows JSON, never the answer
    with pytest.raises(LedgerError) as refused:
        await ledger.resolve(reference, fingerprint=row.fingerprint, committed=False)
    assert refused.value.code == "ledger/row_not_in_progress"
    assert (await ledger.check_readiness()).ready
    assert await keeper.read(uri, OWNER) == KeptAnswer(b'{"secret":"' + NEEDLE + b'"}')


async def test_a_keeper_deletes_its_expired_answers_when_it_keeps_the_next(ledger: Ledger, clock: FakeClock) -> None:
    keeper = LedgerAnswers(ledger)
    old = await keeper.keep(OWNER, _answer(ROW_CHARS))
    assert old is not None
    reference = answer_reference(ledger, old)
    assert reference is not None
    clock.advance(ANSWER_TTL_SECONDS)
    assert await keeper.keep(OWNER, b"[]") is not None
    assert await ledger.inspect(reference) is None
    assert keeper.kept == 1


async def test_a_keeper_holds_at_most_its_bounds_and_drops_the_oldest_answer_first(ledger: Ledger) -> None:
    keeper = LedgerAnswers(ledger, max_answers=2)
    first, second, third = [await keeper.keep(OWNER, f"[{n}]".encode()) for n in range(3)]
    assert first is not None and second is not None and third is not None
    assert await keeper.read(first, OWNER) is None
    assert [await keeper.read(uri, OWNER) for uri in (second, third)] == [KeptAnswer(b"[1]"), KeptAnswer(b"[2]")]
    by_size = LedgerAnswers(ledger, max_bytes=10)
    assert await by_size.keep(OWNER, b"x" * 11) is None
    kept = [await by_size.keep(OWNER, b"12345") for _ in range(3)]
    assert kept[0] is not None and await by_size.read(kept[0], OWNER) is None
    assert by_size.kept == 2


async def test_what_cannot_be_kept_is_refused_before_the_store_is_touched(ledger: Ledger) -> None:
    keeper = LedgerAnswers(ledger, max_bytes=2 * MAX_ANSWER_BYTES)
    assert await keeper.keep(OWNER, b"x" * (MAX_ANSWER_BYTES + 1)) is None
    assert await keeper.keep(OWNER, b"[]", "text/plain\n") is None
    assert keeper.kept == 0


@pytest.mark.parametrize(
    "uri",
    [
        ANSWER_URI_PREFIX + "0" * 32,
        ANSWER_URI_PREFIX + "A" * 32,
        ANSWER_URI_PREFIX + "0" * 31,
        ANSWER_URI_PREFIX + "0" * 32 + "/x",
        ANSWER_URI_PREFIX + "0" * 32 + "\n",
        "anvil://skill/github/SKILL.md",
    ],
)
async def test_an_unknown_or_malformed_answer_uri_reads_nothing(uri: str, ledger: Ledger) -> None:
    assert await LedgerAnswers(ledger).read(uri, OWNER) is None


async def test_the_store_holds_the_answer_sealed_never_its_text(tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/answers.db")
    try:
        await ledger.initialize()
        uri = await LedgerAnswers(ledger).keep(OWNER, FIVE_MB)
        assert uri is not None
        stored = b"".join(path.read_bytes() for path in tmp_path.iterdir())
        assert len(stored) > len(FIVE_MB) and NEEDLE not in stored
        assert uri.removeprefix(ANSWER_URI_PREFIX).encode() not in stored
    finally:
        await ledger.close()


async def test_a_store_that_fails_keeps_nothing_and_a_read_says_the_store_is_unavailable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/answers.db", options=LedgerOptions(lock_timeout_seconds=0.5))
    try:
        await ledger.initialize()
        keeper = LedgerAnswers(ledger)
        uri = await keeper.keep(OWNER, b'{"' + NEEDLE + b'":1}')
        assert uri is not None
        (tmp_path / "answers.db").unlink()  # the file the instance opened is gone: every call fails closed
        assert await keeper.keep(OWNER, b'{"' + NEEDLE + b'":2}') is None
        with pytest.raises(LedgerError) as unreadable:
            await keeper.read(uri, OWNER)
    finally:
        await ledger.close()
    assert unreadable.value.code == "ledger/unavailable"
    assert "could not be kept" in caplog.text and NEEDLE.decode() not in caplog.text


async def test_an_unreachable_database_keeps_nothing_and_the_call_goes_on() -> None:
    options = LedgerOptions(lock_timeout_seconds=0.5)
    ledger = open_ledger(postgres_uri("postgresql://anvil@127.0.0.1:1/anvil", "t-unreachable"), options=options)
    try:
        assert await LedgerAnswers(ledger).keep(OWNER, FIVE_MB) is None
    finally:
        await ledger.close()
