"""One answer read and judged, whichever client received it: bounded decoding, strict JSON, which statuses
prove nothing was applied."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import httpx
import pytest
from runtime_support import FakeClock, keyed_write

from anvil.ledger.base import LedgerOptions
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.registry import open_ledger
from anvil.runtime.connections import PooledUpstream
from anvil.runtime.context import CallOptions, RuntimeContext
from anvil.runtime.executor import execute
from anvil.runtime.upstream import Answer, BrokenBody, parse_data, proves_nothing_applied, read_answer

pytestmark = pytest.mark.anyio

REFUND = {"payment_id": "pay_1", "amount": 2500}


async def _chunks(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _read(parts: Iterable[bytes], encoding: str, *, max_bytes: int = 1024) -> Answer:
    headers = {"content-encoding": encoding}
    return await read_answer(200, headers.get, _chunks(parts), max_bytes=max_bytes, encoded=True)


@pytest.mark.parametrize(
    "packed",
    [gzip.compress(b'{"id": 1}', mtime=0), zlib.compress(b'{"id": 1}'), zlib.compress(b'{"id": 1}')[2:-4]],
    ids=["gzip", "deflate", "raw-deflate"],
)
async def test_bytes_after_a_compressed_stream_ends_are_a_broken_body_in_the_same_chunk_or_a_later_one(
    packed: bytes,
) -> None:
    encoding = "gzip" if packed[:2] == b"\x1f\x8b" else "deflate"
    assert (await _read([packed], encoding)).body == b'{"id": 1}'
    with pytest.raises(BrokenBody):
        await _read([packed + b"x"], encoding)
    with pytest.raises(BrokenBody):
        await _read([packed, b"x" * 10], encoding)


async def test_the_bytes_received_count_against_the_limit_even_when_they_decode_to_nothing() -> None:
    opening = bytes.fromhex("1f8b0800000000000003000000ffff")  # a gzip header and an empty deflate block
    empty_blocks = [b"\x00\x00\x00\xff\xff" * 100] * 10  # 5,000 bytes that decode to nothing
    answer = await _read([opening, *empty_blocks], "gzip", max_bytes=4096)
    assert (answer.oversized, answer.after_response, answer.body) == (True, True, b"")


async def test_chunks_already_decoded_by_their_client_are_not_decoded_again() -> None:
    packed = gzip.compress(b"{}", mtime=0)
    headers = {"content-encoding": "gzip"}
    answer = await read_answer(200, headers.get, _chunks([packed]), max_bytes=1024)
    assert answer.body == packed


@pytest.mark.parametrize(
    "body",
    [
        b'{"amount": NaN}',
        b'{"amount": Infinity}',
        b"[-Infinity]",
        b'{"amount": 1e999}',
        b'{"amount": -1e400}',
        b'{"note": "\\ud800"}',
        b'{"note": "\xed\xa0\x80"}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["nan", "infinity", "minus-infinity", "overflow", "minus-overflow", "lone-escape", "lone-utf8", "deep"],
)
def test_an_answer_that_is_not_strict_json_is_kept_as_its_text(body: bytes) -> None:
    assert parse_data(body) == body.decode("utf-8", errors="replace")


def test_strict_json_still_reads_every_ordinary_answer() -> None:
    assert parse_data(b'{"a": 1.5e300, "b": "\\ud83d\\ude00", "c": [null, true]}') == {
        "a": 1.5e300,
        "b": "\U0001f600",
        "c": [None, True],
    }
    assert parse_data(b"") is None and parse_data(b"plain text") == "plain text"


@pytest.mark.parametrize("uri", ["memory:", "sqlite:///{tmp}/ledger.db"], ids=["memory", "sqlite"])
@pytest.mark.parametrize("body", [b'{"id": "re_1", "fee": NaN}', b'{"id": "re_1", "fee": 1e999}'], ids=["nan", "1e999"])
async def test_a_write_answered_with_non_finite_numbers_completes_and_replays_instead_of_quarantining_its_key(
    uri: str, body: bytes, tmp_path: Path
) -> None:
    calls: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(201, content=body, headers={"content-type": "application/json"})

    ledger = open_ledger(uri.format(tmp=tmp_path), options=LedgerOptions(result_ttl_seconds=3600, clock=FakeClock()))
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        context = RuntimeContext(
            service_id="payments", base_url="https://payments.example.com", client=client, env="dev", ledger=ledger
        )
        first = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="odd-1"))
        again = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="odd-1"))
    await ledger.close()
    assert (first.kind, first.status, first.data, first.record.ledger) == ("success", 201, body.decode(), "reserved")
    assert (again.kind, again.replayed, again.data, len(calls)) == ("success", True, body.decode(), 1)


PROVING = (400, 404, 409, 422, 429, 499, 503)
NOT_PROVING = (408, 500, 501, 502, 504, 505, 507, 520, 530, 598, 599, 200, 302, 600)


@pytest.mark.parametrize(("status", "proves"), [*((s, True) for s in PROVING), *((s, False) for s in NOT_PROVING)])
def test_only_a_closed_list_of_statuses_proves_nothing_was_applied(status: int, proves: bool) -> None:
    assert proves_nothing_applied(status) is proves


async def test_a_keyed_write_whose_compressed_answer_has_bytes_after_its_end_keeps_its_reservation() -> None:
    packed = gzip.compress(b'{"id": "re_1"}', mtime=0) + b"and then more bytes"
    requests: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:  # the client's spare for a next write, closed unused
            writer.close()
            return
        length = next(int(line[15:]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:"))
        requests.append(head + await reader.readexactly(length))
        writer.write(b"HTTP/1.1 201 Created\r\ncontent-encoding: gzip\r\n")
        writer.write(f"content-length: {len(packed)}\r\n\r\n".encode() + packed)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    client = PooledUpstream()
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    ledger = MemoryLedger()
    context = RuntimeContext(
        service_id="payments", base_url=url, client=client, env="dev", ledger=ledger, retries=False
    )
    async with server:
        first = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="tail-1"))
        again = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key="tail-1"))
        await client.aclose()
        await asyncio.sleep(0.05)  # the spare's handler sees the close
    assert first.kind == "error" and first.envelope is not None and first.envelope.details is not None
    assert first.envelope.details["upstream_outcome"] == "possibly_committed" and first.record.ledger == "in_progress"
    assert again.code == "conflict" and len(requests) == 1  # the write may have happened: never sent again
