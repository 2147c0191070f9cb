"""Where a gateway keeps cut answers, and how an in-process keeper bounds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.ledger.answers import LedgerAnswers
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.registry import open_ledger
from anvil.serve.answer_store import (
    ANSWER_URI_PREFIX,
    PROCESS_ANSWER_BYTES,
    KeptAnswer,
    MemoryAnswers,
    answer_owner,
    keeper_for,
)
from anvil.serve.mcp.resources import answer_contents

pytestmark = pytest.mark.anyio


def test_a_gateway_with_a_ledger_keeps_answers_in_its_store_and_one_without_in_this_process(tmp_path: Path) -> None:
    durable = open_ledger(f"sqlite:///{tmp_path}/ledger.db")
    memory = MemoryLedger()
    assert isinstance(keeper_for(None), MemoryAnswers)
    chosen = keeper_for(durable)
    assert isinstance(chosen, LedgerAnswers) and chosen.ledger is durable
    per_process = keeper_for(memory)
    assert isinstance(per_process, LedgerAnswers) and per_process.ledger is memory
    assert per_process.max_bytes == PROCESS_ANSWER_BYTES


def test_an_owner_is_a_digest_of_the_identity_whatever_its_key_order_and_anonymous_without_one() -> None:
    one = answer_owner({"iss": "static", "sub": "alice"})
    assert one == answer_owner({"sub": "alice", "iss": "static"}) and one.startswith("sha256:")
    assert "alice" not in one and one != answer_owner({"iss": "static", "sub": "bob"})
    assert answer_owner(None) == answer_owner({}) == "anonymous"


def test_a_kept_answer_reads_as_text_when_it_is_utf8_and_as_a_blob_otherwise() -> None:
    uri = ANSWER_URI_PREFIX + "0" * 32
    assert answer_contents(uri, KeptAnswer("é".encode())) == {
        "contents": [{"uri": uri, "mimeType": "application/json", "text": "é"}]
    }
    assert answer_contents(uri, KeptAnswer(b"\xff", "application/octet-stream")) == {
        "contents": [{"uri": uri, "mimeType": "application/octet-stream", "blob": "/w=="}]
    }


async def test_memory_answers_read_for_their_owner_until_they_expire() -> None:
    now = [0.0]
    keeper = MemoryAnswers(ttl_seconds=10, clock=lambda: now[0])
    uri = await keeper.keep("owner", b"[1]")
    assert uri is not None
    assert await keeper.read(uri, "other") is None
    assert await keeper.read(uri + "\n", "owner") is None
    assert await keeper.read(uri, "owner") == KeptAnswer(b"[1]")
    now[0] = 10.0
    assert await keeper.read(uri, "owner") is None


async def test_memory_answers_drop_the_oldest_beyond_their_count() -> None:
    keeper = MemoryAnswers(max_answers=1)
    first = await keeper.keep("owner", b"[1]")
    second = await keeper.keep("owner", b"[2]")
    assert first is not None and second is not None
    assert await keeper.read(first, "owner") is None
    assert await keeper.read(second, "owner") == KeptAnswer(b"[2]")
