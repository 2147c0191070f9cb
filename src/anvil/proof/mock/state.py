"""What the mock remembers: items per kind, idempotency keys, pending faults and the request log.

Everything is bounded: items per kind, remembered keys, pending faults and logged requests each have
a ceiling (the oldest key and the oldest log entry make room; a full kind refuses new items).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import field
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue

__all__ = [
    "MAX_FAULTS",
    "MAX_ITEMS_PER_KIND",
    "MAX_ITEM_BYTES",
    "MAX_KEYS",
    "MAX_KEY_BYTES",
    "MAX_LOG",
    "Fault",
    "Item",
    "KeyedAnswer",
    "MockState",
    "parse_fault",
]

MAX_ITEMS_PER_KIND: Final = 10_000
MAX_KEYS: Final = 10_000
#: The most bytes (JSON-encoded) all stored items may hold together; a create beyond it is refused.
MAX_ITEM_BYTES: Final = 128 * 1024 * 1024
#: The most bytes remembered answers may hold together (the oldest keys make room).
MAX_KEY_BYTES: Final = 64 * 1024 * 1024
MAX_FAULTS: Final = 100
MAX_LOG: Final = 1_000
_MAX_DELAY_MS: Final = 30_000
_MAX_TIMES: Final = 1_000


@dataclass(slots=True)
class Item:
    """One stored item: its data, the collection path it was created under, its size in bytes, and
    the fields its create was sent (an RPC remove finds the item by them: ``pins.remove`` names the
    pin by the ``channel`` and ``timestamp`` that ``pins.add`` took, which the pin's answer lacks),
    and the idempotency key its create carried."""

    data: JSONObject
    scope: str
    size: int = 0
    sent: JSONObject = field(default_factory=dict)
    #: The idempotency key its create carried (a list filtered by the key finds the item by it).
    key: str | None = None


@dataclass(frozen=True, slots=True)
class KeyedAnswer:
    """The first answer given for an idempotency key, and the request it answered."""

    fingerprint: str
    status: int
    body: bytes


@dataclass(slots=True, kw_only=True)
class Fault:
    """A fault waiting for matching requests (``/__anvil/fault``).

    Attributes:
        status: answer this status instead (None: answer normally).
        delay_ms: wait this long before answering.
        reset: drop the connection without a complete answer.
        after_commit: apply the fault after the request took effect (its answer is what is lost).
        times: how many matching requests it applies to.
        method / path / operation: what it matches (None matches anything); ``path`` is a concrete
            path or a template.
        body: the answer body with ``status`` (default ``{"message": "Injected fault."}``).
    """

    status: int | None = None
    delay_ms: int = 0
    reset: bool = False
    after_commit: bool = False
    times: int = 1
    method: str | None = None
    path: str | None = None
    operation: str | None = None
    body: JSONValue = None

    def to_json(self) -> JSONObject:
        """The fault as ``GET /__anvil/fault`` lists it."""
        return {
            "status": self.status,
            "delay_ms": self.delay_ms,
            "reset": self.reset,
            "after_commit": self.after_commit,
            "times": self.times,
            "method": self.method,
            "path": self.path,
            "operation": self.operation,
        }


def _int_in(value: JSONValue, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def parse_fault(data: JSONValue) -> Fault | str:
    """A :class:`Fault` from a ``POST /__anvil/fault`` body, or a sentence saying what is wrong."""
    if not isinstance(data, dict):
        return "A fault is a JSON object."
    known = {"status", "delay_ms", "reset", "after_commit", "times", "method", "path", "operation", "body"}
    unknown = sorted(set(data) - known)
    if unknown:
        return f"Unknown fault field '{unknown[0]}'."
    status = data.get("status")
    if status is not None and not _int_in(status, 100, 599):
        return "status is an HTTP status from 100 to 599."
    delay = data.get("delay_ms", 0)
    if not _int_in(delay, 0, _MAX_DELAY_MS):
        return f"delay_ms is a whole number from 0 to {_MAX_DELAY_MS}."
    times = data.get("times", 1)
    if not _int_in(times, 1, _MAX_TIMES):
        return f"times is a whole number from 1 to {_MAX_TIMES}."
    for flag in ("reset", "after_commit"):
        if not isinstance(data.get(flag, False), bool):
            return f"{flag} is a boolean."
    for name in ("method", "path", "operation"):
        value = data.get(name)
        if value is not None and (not isinstance(value, str) or not value or len(value) > 2048):
            return f"{name} is a non-empty string."
    if status is None and not delay and not data.get("reset"):
        return "A fault needs a status, a delay_ms or reset."
    return Fault(
        status=status,
        delay_ms=delay,
        reset=bool(data.get("reset", False)),
        after_commit=bool(data.get("after_commit", False)),
        times=times,
        method=data["method"].upper() if isinstance(data.get("method"), str) else None,
        path=data.get("path"),
        operation=data.get("operation"),
        body=data.get("body"),
    )


@dataclass(slots=True)
class MockState:
    """The mock's memory; :meth:`reset` empties it."""

    items: dict[str, OrderedDict[str, Item]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    keys: OrderedDict[str, KeyedAnswer] = field(default_factory=OrderedDict)
    faults: list[Fault] = field(default_factory=list)
    log: list[JSONObject] = field(default_factory=list)
    #: (kind, key) of deleted items, oldest first (bounded like a kind's items).
    deleted: OrderedDict[tuple[str, str], None] = field(default_factory=OrderedDict)
    seen: int = 0
    item_bytes: int = 0
    key_bytes: int = 0

    def reset(self) -> None:
        """Forget every item, key, fault and logged request."""
        self.items.clear()
        self.deleted.clear()
        self.counters.clear()
        self.keys.clear()
        self.faults.clear()
        self.log.clear()
        self.seen = 0
        self.item_bytes = 0
        self.key_bytes = 0

    def kind(self, name: str) -> OrderedDict[str, Item]:
        """The items of kind ``name`` (created empty on first use)."""
        return self.items.setdefault(name, OrderedDict())

    def next_number(self, kind: str) -> int:
        """The next fresh sequence number of ``kind`` (1, 2, ...)."""
        self.counters[kind] = self.counters.get(kind, 0) + 1
        return self.counters[kind]

    def remember_key(self, key: str, answer: KeyedAnswer) -> None:
        """Keep the first answer for ``key``, evicting the oldest key at the ceiling."""
        self.keys[key] = answer
        self.key_bytes += len(answer.body)
        while len(self.keys) > MAX_KEYS or (self.key_bytes > MAX_KEY_BYTES and len(self.keys) > 1):
            _, dropped = self.keys.popitem(last=False)
            self.key_bytes -= len(dropped.body)

    def resize(self, item: Item, size: int) -> None:
        """Account for ``item`` now taking ``size`` bytes."""
        self.item_bytes += size - item.size
        item.size = size

    def forget(self, kind: str, key: str, addressed: str | None = None) -> None:
        """Remove one stored item, remembering it was deleted (by its key and by the path value
        that addressed it) so a kind filled in on first use does not fill it in again."""
        item = self.kind(kind).pop(key)
        self.item_bytes -= item.size
        for name in {key, addressed} - {None}:
            self.deleted[(kind, str(name))] = None
        while len(self.deleted) > MAX_ITEMS_PER_KIND:
            self.deleted.popitem(last=False)

    def was_deleted(self, kind: str, key: str) -> bool:
        """True when an item of ``kind`` addressed as ``key`` was deleted."""
        return (kind, key) in self.deleted

    def record(self, entry: JSONObject) -> JSONObject:
        """Append a request to the log (numbered from 1; the oldest entries make room)."""
        self.seen += 1
        entry["seq"] = self.seen
        self.log.append(entry)
        if len(self.log) > MAX_LOG:
            del self.log[: len(self.log) - MAX_LOG]
        return entry

    def take_fault(self, method: str, path: str, template: str | None, operation: str | None) -> Fault | None:
        """The first pending fault matching this request, with one use consumed."""
        for fault in self.faults:
            if fault.method is not None and fault.method != method:
                continue
            if fault.path is not None and (fault.path.rstrip("/") or "/") not in (path, template):
                continue  # a path is compared without its trailing slash, as requests are matched
            if fault.operation is not None and fault.operation != operation:
                continue
            fault.times -= 1
            if fault.times <= 0:
                self.faults.remove(fault)
            return fault
        return None
