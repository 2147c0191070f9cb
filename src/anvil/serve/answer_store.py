"""Whole answers kept for a while after the gateway cut them to the response budget.

When an answer's text is cut to fit the response budget, the whole answer is kept, bounded in size and
time, and the cut answer carries a ``resource_link`` to it: ``anvil://answer/<id>``, readable with
``resources/read`` only by the principal that made the call (:func:`answer_owner`). Nothing is kept
for answers that were not cut.

:class:`AnswerKeeper` is the seam: :class:`MemoryAnswers` keeps answers in this process (bounded by
count, bytes and age); a ledger-backed keeper keeps them in the gateway's ledger store so any worker or
instance can serve them (:class:`~anvil.ledger.answers.LedgerAnswers`); :func:`keeper_for` picks
one for a gateway. Answers are never listed in ``resources/list``; a read of a foreign, expired or
unknown answer is ``Resource not found`` alike.

The data types and bounds (:class:`KeptAnswer`, :data:`ANSWER_URI_PREFIX`, :data:`ANSWER_TTL_SECONDS`,
:data:`MAX_ANSWER_BYTES`, :func:`answer_id`, :func:`answer_uri`) live in :mod:`anvil.ledger.answers`
(the ledger may not import the serving layer) and are re-exported here.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Protocol

from anvil._types import JSONValue
from anvil.ledger.answers import (
    ANSWER_TTL_SECONDS,
    ANSWER_URI_PREFIX,
    MAX_ANSWER_BYTES,
    KeptAnswer,
    LedgerAnswers,
    answer_id,
    answer_identifier,
    answer_uri,
)

if TYPE_CHECKING:
    from anvil.ledger.base import Ledger

__all__ = [
    "ANSWER_TTL_SECONDS",
    "ANSWER_URI_PREFIX",
    "MAX_ANSWER_BYTES",
    "PROCESS_ANSWER_BYTES",
    "AnswerKeeper",
    "KeptAnswer",
    "MemoryAnswers",
    "answer_id",
    "answer_identifier",
    "answer_owner",
    "answer_uri",
    "keeper_for",
]

_ANONYMOUS: Final = "anonymous"
#: How many body bytes a keeper over a per-process (``memory:``) ledger holds at once.
PROCESS_ANSWER_BYTES: Final = 64 * 1024 * 1024


def answer_owner(identity: Mapping[str, JSONValue] | None) -> str:
    """Who may read an answer kept for a call made under ``identity`` (the caller's ledger identity).

    A digest, never the identity itself: the store holds no principal's raw identity. Every anonymous
    caller is one owner (the answer's id is unguessable).
    """
    if not identity:
        return _ANONYMOUS
    text = json.dumps(dict(identity), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class AnswerKeeper(Protocol):
    """Where cut answers are kept (an in-process store, or the gateway's ledger store)."""

    async def keep(self, owner: str, body: bytes, media_type: str = "application/json") -> str | None:
        """Keep ``body`` for ``owner``; its resource URI, or None when it cannot be kept (too large, store down)."""

    async def read(self, uri: str, owner: str) -> KeptAnswer | None:
        """The answer at ``uri`` if ``owner`` kept it and it has not expired, else None (unknown or foreign).

        Raises:
            LedgerError: ``ledger/unavailable`` when the store cannot be read now (a keeper over a ledger
                only): the answer may still be there, so the caller is told to try again, not "not found".
        """


class MemoryAnswers:
    """Answers kept in this process: bounded by count, total bytes and age; oldest dropped first.

    Args:
        ttl_seconds: How long an answer can be read.
        max_answers: How many answers are kept at once.
        max_bytes: How many bytes all kept answers may hold together.
        clock: Monotonic seconds (injected for tests).
    """

    def __init__(
        self,
        *,
        ttl_seconds: float = ANSWER_TTL_SECONDS,
        max_answers: int = 256,
        max_bytes: int = 64 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl_seconds
        self._max_answers = max(1, max_answers)
        self._max_bytes = max(1, max_bytes)
        self._clock = clock
        self._kept: OrderedDict[str, tuple[str, float, KeptAnswer]] = OrderedDict()
        self._bytes = 0

    def _expire(self) -> None:
        now = self._clock()
        while self._kept:
            key, (_, expires, kept) = next(iter(self._kept.items()))
            if expires > now and len(self._kept) <= self._max_answers and self._bytes <= self._max_bytes:
                return
            del self._kept[key]
            self._bytes -= len(kept.body)

    async def keep(self, owner: str, body: bytes, media_type: str = "application/json") -> str | None:
        """Keep ``body`` for ``owner`` (see :class:`AnswerKeeper`)."""
        if len(body) > min(MAX_ANSWER_BYTES, self._max_bytes):
            return None
        identifier = answer_id()
        self._kept[identifier] = (owner, self._clock() + self._ttl, KeptAnswer(body, media_type))
        self._bytes += len(body)
        self._expire()
        return answer_uri(identifier) if identifier in self._kept else None

    async def read(self, uri: str, owner: str) -> KeptAnswer | None:
        """The answer at ``uri`` for ``owner`` (see :class:`AnswerKeeper`)."""
        self._expire()
        identifier = answer_identifier(uri)
        if identifier is None:
            return None
        found = self._kept.get(identifier)
        if found is None or not secrets.compare_digest(found[0], owner):
            return None
        return found[2]


def keeper_for(ledger: Ledger | None) -> AnswerKeeper:
    """Where a gateway keeps cut answers: in its ledger's store when it has a ledger (durable or
    ``memory:``; a per-process one holds at most :data:`PROCESS_ANSWER_BYTES`), else in this process."""
    if ledger is None:
        return MemoryAnswers()
    if ledger.sharing == "process":
        return LedgerAnswers(ledger, max_bytes=PROCESS_ANSWER_BYTES)
    return LedgerAnswers(ledger)
