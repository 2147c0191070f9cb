"""Whole answers kept in the gateway's ledger store after a budget cut.

A cut answer's whole text is kept for :data:`ANSWER_TTL_SECONDS` under ``anvil://answer/<32 hex>`` so
any worker or instance sharing the ledger store can serve ``resources/read`` of it.
:class:`LedgerAnswers` builds only on the four storage primitives every backend implements
(:class:`~anvil.ledger.base.Ledger`; called directly, past the idempotency policy, which these rows
are no part of), so no backend needs a new table, collection or statement.

How an answer is stored. The answer id (128 random bits, the URI's only secret) derives everything:

* the rows' document ids, ``sha256("anvil.answer\\0row\\0" + id + "\\0" + index)``: nothing else names
  them, so nobody finds an answer by listing the store, and an idempotency row (whose document id is
  the sha256 of a 64-hex ledger key) can only share one through a SHA-256 collision;
* an AES-256-GCM key that seals the body (the media type is authenticated with it), so the store
  holds ciphertext: an operator reading rows, or a row left behind by a crashed instance, shows no
  answer, and a chunk changed, lost or swapped fails the whole read;
* the owner tag, an HMAC of the caller's owner digest (:func:`anvil.serve.answer_store.answer_owner`),
  compared in constant time.

The sealed body is cut into parts, each stored as base64 of at most :data:`ROW_CHARS` characters in
its own row (one Firestore document holds at most 1 MiB). Rows ``1..n-1`` are written first, then
the head row (row 0), which holds the first part and names the size, the media type, the owner tag
and each other part's version (so an expired answer is deleted without reading its parts). A reader that finds the
head finds every part. Every row is ``completed`` with ``expires_at = retain_until`` = the answer's
expiry (a Firestore TTL policy on ``expires_at`` removes them), a ``fingerprint`` of ``anvil-answer``
(never the 64 hex of a request fingerprint, so a reservation that met one would answer ``conflict``,
never replay it) and an ``operation_id`` of ``anvil.answer`` (what ``anvil ledger inspect`` shows; its
result is valid JSON, never the answer). ``anvil ledger resolve`` refuses the rows (not in progress)
and readiness probes never read them.

Expiry, on the ledger's clock: a read at or after it answers None and deletes the rows. Each keeper
also deletes the answers it kept once they expire, and keeps at most ``max_answers`` answers and
``max_bytes`` of them at once (the oldest are deleted early), so a store without a TTL policy
(SQLite, PostgreSQL) does not grow without bound while the instance lives; rows of an instance that
died are left, sealed, until an operator clears them.

Failures: :meth:`LedgerAnswers.keep` never raises (None: the cut answer says the whole one could not
be kept; the rows it wrote are deleted, though a write whose answer was lost may leave one sealed row
behind) and stops at the first failed write; :meth:`LedgerAnswers.read` raises only
``LedgerError("ledger/unavailable")`` when the store cannot be read, so a caller can tell "try again"
from "gone"; a malformed or tampered answer is None. Neither the body nor the owner reaches a log or
an error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import math
import re
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

import anyio

from anvil._dataclass import dataclass
from anvil.errors import LedgerError
from anvil.ledger.base import Ledger, LedgerRow

__all__ = [
    "ANSWER_TTL_SECONDS",
    "ANSWER_URI_PREFIX",
    "MAX_ANSWER_BYTES",
    "ROW_CHARS",
    "KeptAnswer",
    "LedgerAnswers",
    "answer_id",
    "answer_identifier",
    "answer_reference",
    "answer_uri",
]

logger = logging.getLogger(__name__)

#: The URI scheme of a kept answer: ``anvil://answer/<32 hex>``.
ANSWER_URI_PREFIX: Final = "anvil://answer/"
#: How long a kept answer can be read (15 minutes).
ANSWER_TTL_SECONDS: Final = 900
#: The largest answer kept (bytes of its compact JSON); a larger one is cut without a link.
MAX_ANSWER_BYTES: Final = 16 * 1024 * 1024
#: The most characters of sealed base64 one row holds (a Firestore document holds at most 1 MiB).
ROW_CHARS: Final = 699_000
_RAW_PART: Final = ROW_CHARS // 4 * 3  # sealed bytes whose base64 is one row's characters
#: Rows written or read at once for one answer.
PARALLEL_ROWS: Final = 4
_URI: Final = re.compile(r"anvil://answer/([0-9a-f]{32})")
_MEDIA_TYPE: Final = re.compile(r"[\x20-\x7e]{1,200}")
_FINGERPRINT: Final = "anvil-answer"
_OPERATION: Final = "anvil.answer"
_NONCE: Final = bytes(12)  # every answer has its own key, used for one message
_OFF_LOOP_BYTES: Final = 1024 * 1024  # larger bodies are sealed and opened on a worker thread
_SWEEP_PER_KEEP: Final = 4  # expired answers deleted by one keep, beyond those the bounds require
_HEAD_FIELDS: Final = frozenset({"answer", "owner", "media_type", "size", "parts", "data"})

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class KeptAnswer:
    """A kept answer as ``resources/read`` returns it: its bytes and media type."""

    body: bytes
    media_type: str = "application/json"


def answer_id() -> str:
    """A fresh unguessable answer id (128 random bits, hex)."""
    return secrets.token_hex(16)


def answer_uri(identifier: str) -> str:
    """The resource URI of kept answer ``identifier``."""
    return ANSWER_URI_PREFIX + identifier


def answer_identifier(uri: str) -> str | None:
    """The answer id a well-formed ``anvil://answer/<32 lowercase hex>`` URI names, else None."""
    found = _URI.fullmatch(uri)
    return found.group(1) if found else None


def answer_reference(ledger: Ledger, uri: str) -> str | None:
    """The sanitized reference (``<backend>/<table>/<64 hex>``) of the head row of the answer at ``uri``
    in ``ledger``, for ``anvil ledger inspect``; None for a malformed URI. Only the URI leads to it."""
    identifier = answer_identifier(uri)
    return None if identifier is None else ledger.reference(_document(bytes.fromhex(identifier), 0))


def _derived(secret: bytes, label: bytes) -> bytes:
    return hashlib.sha256(b"anvil.answer\x00" + label + b"\x00" + secret).digest()


def _document(secret: bytes, index: int) -> str:
    return hashlib.sha256(b"anvil.answer\x00row\x00" + secret + b"\x00" + str(index).encode()).hexdigest()


def _owner_tag(secret: bytes, owner: str) -> str:
    return hmac.new(_derived(secret, b"owner"), owner.encode("utf-8"), hashlib.sha256).hexdigest()


def _instant(seconds: float) -> float:
    """Epoch seconds cut to whole milliseconds (every store keeps at least that precision)."""
    return math.floor(seconds * 1000) / 1000


def _seal(secret: bytes, body: bytes, media_type: str) -> list[str]:
    """``body`` sealed and cut into base64 parts of at most :data:`ROW_CHARS` characters, each encoded
    on its own (no single call holds the interpreter for long: the event loop runs between them)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    sealed = memoryview(AESGCM(_derived(secret, b"key")).encrypt(_NONCE, body, media_type.encode("ascii")))
    return [
        base64.b64encode(sealed[start : start + _RAW_PART]).decode("ascii")
        for start in range(0, len(sealed), _RAW_PART)
    ]


def _open(secret: bytes, parts: Sequence[str], media_type: str) -> bytes | None:
    """The body sealed in ``parts``, or None when they are not exactly what was sealed."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        sealed = b"".join([base64.b64decode(part, validate=True) for part in parts])
        return AESGCM(_derived(secret, b"key")).decrypt(_NONCE, sealed, media_type.encode("ascii"))
    except (InvalidTag, binascii.Error, ValueError):
        return None


async def _off_loop(size: int, work: Callable[[], T]) -> T:
    """``work`` on a worker thread when ``size`` is large (a 16 MiB body takes tens of ms), else here."""
    if size <= _OFF_LOOP_BYTES:
        return work()
    return await anyio.to_thread.run_sync(work)


async def _each(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Await the calls, :data:`PARALLEL_ROWS` at a time, in order; after a failure no further call starts
    (a store that is down costs one wait, not one per row) and the first failure is raised."""
    if len(calls) <= 1:
        return [await call() for call in calls]
    results: list[Any] = [None] * len(calls)
    failures: list[Exception] = []
    limiter = anyio.CapacityLimiter(PARALLEL_ROWS)

    async def one(index: int) -> None:
        async with limiter:
            if failures:
                return
            try:
                results[index] = await calls[index]()
            except Exception as exc:  # collected, so the caller sees the error itself, not a group
                failures.append(exc)

    async with anyio.create_task_group() as group:
        for index in range(len(calls)):
            group.start_soon(one, index)
    if failures:
        raise failures[0]
    return results


@dataclass(frozen=True, slots=True)
class _Head:
    """What the first part of a kept answer says about the whole."""

    owner: str
    media_type: str
    size: int
    versions: tuple[str, ...]  # of parts 1..n-1
    data: str


def _head(row: LedgerRow) -> _Head | None:
    """The head an answer's row 0 holds, or None when the row is not one (malformed, or another kind)."""
    if row.fingerprint != _FINGERPRINT or row.result_json is None or row.expires_at is None:
        return None
    try:
        value = json.loads(row.result_json)
    except ValueError:
        return None
    if not isinstance(value, dict) or set(value) != _HEAD_FIELDS or value["answer"] != 1:
        return None
    owner, media_type, size, versions, data = (value[name] for name in ("owner", "media_type", "size", "parts", "data"))
    if not (
        isinstance(owner, str)
        and isinstance(media_type, str)
        and _MEDIA_TYPE.fullmatch(media_type)
        and isinstance(size, int)
        and 0 <= size <= MAX_ANSWER_BYTES
        and isinstance(versions, list)
        and all(isinstance(version, str) for version in versions)
        and isinstance(data, str)
    ):
        return None
    return _Head(owner, media_type, size, tuple(versions), data)


def _part(row: LedgerRow | None) -> str | None:
    """The sealed text a part row holds (a JSON string of base64), or None."""
    if row is None or row.fingerprint != _FINGERPRINT or row.result_json is None:
        return None
    text = row.result_json
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    return text[1:-1]  # base64 only: anything else fails the strict decode


@dataclass(frozen=True, slots=True)
class _Kept:
    """An answer this keeper stored: when it expires, its size, and its rows as written (head first)."""

    expires_at: float
    size: int
    rows: tuple[tuple[str, str], ...]


class LedgerAnswers:
    """Cut answers kept in a ledger's store (see the module docstring); an ``AnswerKeeper``.

    Args:
        ledger: The gateway's ledger (any backend); its clock decides expiry.
        ttl_seconds: How long an answer can be read.
        max_answers: How many answers this keeper holds in the store at once (oldest deleted first).
        max_bytes: How many body bytes those answers may hold together.
    """

    def __init__(
        self,
        ledger: Ledger,
        *,
        ttl_seconds: float = ANSWER_TTL_SECONDS,
        max_answers: int = 1024,
        max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.ledger = ledger
        self._ttl = ttl_seconds
        self._max_answers = max(1, max_answers)
        self._max_bytes = max(1, max_bytes)
        self._kept: deque[_Kept] = deque()
        self._kept_bytes = 0

    async def keep(self, owner: str, body: bytes, media_type: str = "application/json") -> str | None:
        """Keep ``body`` for ``owner``: its ``anvil://answer/`` URI, or None when it cannot be kept (too
        large, a malformed media type, the store failed). Never raises (a failure is logged by its code)."""
        if len(body) > min(MAX_ANSWER_BYTES, self._max_bytes) or not _MEDIA_TYPE.fullmatch(media_type):
            return None
        try:
            await self._sweep(len(body))
            return await self._keep(owner, body, media_type)
        except Exception as exc:  # the call that was cut must never fail because its answer was not kept
            code = exc.code if isinstance(exc, LedgerError) else type(exc).__name__
            logger.warning("anvil: a cut answer could not be kept in the ledger store (%s)", code)
            return None

    async def _keep(self, owner: str, body: bytes, media_type: str) -> str | None:
        identifier = answer_id()
        secret = bytes.fromhex(identifier)
        parts = await _off_loop(len(body), lambda: _seal(secret, body, media_type))
        expires = _instant(self.ledger.options.clock() + self._ttl)
        written: list[tuple[str, str]] = []

        def create(index: int) -> Callable[[], Awaitable[str]]:
            async def call() -> str:
                document = _document(secret, index)
                row = self._row('"' + parts[index] + '"', expires)
                version = await self.ledger._create_if_absent(document, row)
                if version is None:  # 128 random bits met a row: never overwrite it
                    raise LedgerError("ledger/unavailable", "A kept-answer row already exists.")
                written.append((document, version))
                return version

            return call

        try:
            versions = await _each([create(index) for index in range(1, len(parts))])
            head = {
                "answer": 1,
                "owner": _owner_tag(secret, owner),
                "media_type": media_type,
                "size": len(body),
                "parts": versions,
                "data": parts[0],
            }
            document = _document(secret, 0)
            version = await self.ledger._create_if_absent(document, self._row(json.dumps(head), expires))
            if version is None:
                raise LedgerError("ledger/unavailable", "A kept-answer row already exists.")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._delete(written)
            raise
        rows = ((document, version), *((_document(secret, i + 1), v) for i, v in enumerate(versions)))
        self._kept.append(_Kept(expires, len(body), rows))
        self._kept_bytes += len(body)
        return answer_uri(identifier)

    @staticmethod
    def _row(result_json: str, expires: float) -> LedgerRow:
        return LedgerRow(
            status="completed",
            fingerprint=_FINGERPRINT,
            operation_id=_OPERATION,
            result_json=result_json,
            expires_at=expires,
            retain_until=expires,
        )

    async def read(self, uri: str, owner: str) -> KeptAnswer | None:
        """The answer at ``uri`` when ``owner`` kept it and it has not expired, else None (unknown,
        foreign, expired or malformed alike). An expired answer's rows are deleted.

        Raises:
            LedgerError: ``ledger/unavailable`` when the store cannot be read.
        """
        identifier = answer_identifier(uri)
        if identifier is None:
            return None
        secret = bytes.fromhex(identifier)
        try:
            row = await self.ledger._read(_document(secret, 0))
        except LedgerError as exc:
            if exc.code == "ledger/corrupt_row":
                return None
            raise
        head = None if row is None else _head(row)
        if row is None or head is None:
            return None
        if row.expires_at is not None and row.expires_at <= self.ledger.options.clock():
            rows = ((_document(secret, index + 1), version) for index, version in enumerate(head.versions))
            await self._delete(((_document(secret, 0), row.version), *rows))
            return None
        if not hmac.compare_digest(head.owner, _owner_tag(secret, owner)):
            return None
        try:
            found = await _each([self._reader(_document(secret, index + 1)) for index in range(len(head.versions))])
        except LedgerError as exc:
            if exc.code == "ledger/corrupt_row":
                return None
            raise
        if any(part is None for part in found):
            return None  # a part was deleted under us (an expiry elsewhere) or changed
        sealed = [head.data, *(part for part in found if part is not None)]
        media_type, size = head.media_type, head.size
        body = await _off_loop(size, lambda: _open(secret, sealed, media_type))
        if body is None or len(body) != size:
            return None
        return KeptAnswer(body, media_type)

    def _reader(self, document: str) -> Callable[[], Awaitable[str | None]]:
        async def call() -> str | None:
            return _part(await self.ledger._read(document))

        return call

    async def _delete(self, rows: Sequence[tuple[str, str]]) -> None:
        """Delete ``rows`` (document, version as written) if unchanged; best effort, never raises."""

        def delete(document: str, version: str) -> Callable[[], Awaitable[bool]]:
            async def call() -> bool:
                try:
                    return await self.ledger._delete_if_version(document, version)
                except LedgerError:
                    return False

            return call

        await _each([delete(document, version) for document, version in rows])

    async def _sweep(self, incoming: int) -> None:
        """Delete this keeper's expired answers (a few per keep) and the oldest ones the bounds require."""
        now = self.ledger.options.clock()
        expired = 0
        while self._kept:
            oldest = self._kept[0]
            over = len(self._kept) >= self._max_answers or self._kept_bytes + incoming > self._max_bytes
            if not over and (oldest.expires_at > now or expired >= _SWEEP_PER_KEEP):
                return
            expired += not over
            self._kept.popleft()
            self._kept_bytes -= oldest.size
            await self._delete(oldest.rows)

    @property
    def max_bytes(self) -> int:
        """How many body bytes this keeper's answers may hold together."""
        return self._max_bytes

    @property
    def kept(self) -> int:
        """How many answers this keeper holds in the store now (for tests and doctors)."""
        return len(self._kept)
