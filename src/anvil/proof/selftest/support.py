"""What the selftest checks share: check results, the upstream's wire log, example arguments, state diffs.

The wire log is read from the upstream's own request log: ``/__anvil/requests`` on ``anvil mock``
(every coordinate: path, query, headers, body, answer), else a ``/__requests`` list such as the
examples' hand-written mocks keep (method, path and what else they record). Faults go to
``/__anvil/fault``, else to a ``/__fault`` route that takes ``{path, status, times}``. An upstream
without either simply offers fewer checks (they are skipped, saying why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Final, Literal

import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.canonical import js_number
from anvil.air.enums import KEYED_MODES
from anvil.air.inputs import idempotency_key_schema, safety_keys
from anvil.air.model import Document, Operation
from anvil.air.value_inputs import example_arguments
from anvil.air.values import CannotMake, Style, ValueGenerator

__all__ = [
    "ABSENT",
    "SELFTEST_STYLE",
    "Check",
    "CheckStatus",
    "Difference",
    "Example",
    "LogEntry",
    "Wire",
    "confirm_added",
    "first_difference",
    "show",
    "wire_text",
]

CheckStatus = Literal["pass", "fail", "skipped"]
#: How the selftest's values look: ``selftest-<name>-<n>`` strings, ``false`` booleans.
SELFTEST_STYLE: Final = Style(label="selftest", numbered=True)
_CONTROL_TIMEOUT_S: Final = 10.0
_MAX_SHOWN: Final = 160


class _Absent:
    """Marks a value that is not there at all (distinct from JSON null)."""

    def __repr__(self) -> str:
        return "absent"


#: A field or item that does not exist on one side of a comparison.
ABSENT: Final = _Absent()


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """Where two observations of a state first differ."""

    operation: str
    field: str
    before: JSONValue
    after: JSONValue

    def to_json(self) -> JSONObject:
        """The record shape: absent values are written as the string ``"<absent>"``."""
        return {
            "operation": self.operation,
            "field": self.field,
            "before": "<absent>" if self.before is ABSENT else self.before,
            "after": "<absent>" if self.after is ABSENT else self.after,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One selftest check result (record shape: ``{id, operationId?, status, detail, basis?, difference?}``)."""

    id: str
    status: CheckStatus
    detail: str
    operation: str | None = None
    difference: Difference | None = None
    #: What an effect proof read the state through: ``api-read`` (an approved read of the API) or
    #: ``mock-state`` (the generated mock's own state); None for a check that reads no state.
    basis: str | None = None

    def to_json(self) -> JSONObject:
        """The check as the report lists it."""
        out: JSONObject = {"id": self.id}
        if self.operation is not None:
            out["operationId"] = self.operation
        out["status"] = self.status
        out["detail"] = self.detail
        if self.basis is not None:
            out["basis"] = self.basis
        if self.difference is not None:
            out["difference"] = self.difference.to_json()
        return out


def show(value: JSONValue) -> str:
    """A short, stable rendering of a value for a detail sentence."""
    import json

    if value is ABSENT:
        return "absent"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def wire_text(value: JSONValue) -> str:
    """How a value travels in a path, query or header, as the executor writes it: a list joined by
    commas, an object as compact JSON."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, list):
        return ",".join(wire_text(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _identity(item: JSONValue) -> str | None:
    if isinstance(item, dict):
        for name in ("id", "gid", "number", "uuid", "key", "name"):
            if name in item and isinstance(item[name], str | int):
                return f"{name}={item[name]}"
    return None


def first_difference(before: JSONValue, after: JSONValue, path: str = "") -> tuple[str, Any, Any] | None:
    """``(field, before, after)`` where two JSON values first differ, or None when they are equal.

    Lists whose items all carry an identity (``id``, ``number``...) are compared item by item by that
    identity (``[id=7].state``), so a reordered list is not a difference and a left-over item is named.
    """
    if before == after:
        return None
    if isinstance(before, dict) and isinstance(after, dict):
        for key in list(before) + [k for k in after if k not in before]:
            found = first_difference(before.get(key, ABSENT), after.get(key, ABSENT), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(before, list) and isinstance(after, list):
        ids_before = [_identity(item) for item in before]
        ids_after = [_identity(item) for item in after]
        if all(ids_before) and all(ids_after):
            left = dict(zip(ids_before, before, strict=True))
            right = dict(zip(ids_after, after, strict=True))
            for key in [k for k in ids_before if k] + [k for k in ids_after if k and k not in left]:
                found = first_difference(left.get(key, ABSENT), right.get(key, ABSENT), f"{path}[{key}]")
                if found is not None:
                    return found
            return None
        for index in range(max(len(before), len(after))):
            found = first_difference(
                before[index] if index < len(before) else ABSENT,
                after[index] if index < len(after) else ABSENT,
                f"{path}[{index}]",
            )
            if found is not None:
                return found
        return None
    return (path.lstrip(".") or "(whole state)", before, after)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One request as the upstream logged it; None means the log does not record that coordinate."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] | None = None
    headers: Mapping[str, str] | None = None
    body: JSONValue = ABSENT
    status: int | None = None
    response: JSONValue = ABSENT

    def header(self, name: str) -> str | None:
        """A logged header's value (case-insensitive), or None."""
        if self.headers is None:
            return None
        return self.headers.get(name.lower())


def _entry(raw: JSONValue) -> LogEntry | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("method"), str) or not isinstance(raw.get("path"), str):
        return None
    query = raw.get("query")
    headers = raw.get("headers")
    parsed_headers: dict[str, str] | None = None
    if isinstance(headers, dict):
        parsed_headers = {str(k).lower(): str(v) for k, v in headers.items()}
    elif isinstance(raw.get("idempotency_key"), str):
        parsed_headers = {"idempotency-key": raw["idempotency_key"]}
    return LogEntry(
        method=raw["method"].upper(),
        path=raw["path"],
        query=tuple((str(k), str(v)) for k, v in query)
        if isinstance(query, list) and not raw.get("query_truncated")
        else None,
        headers=parsed_headers,
        body=raw["body"] if "body" in raw and not raw.get("body_truncated") else ABSENT,
        status=raw["status"] if isinstance(raw.get("status"), int) else None,
        response=raw["response"] if "response" in raw else ABSENT,
    )


LogKind = Literal["anvil", "foreign", "none"]


@dataclass(slots=True)
class Wire:
    """The upstream's request log and fault injection, as far as the upstream offers them."""

    http: httpx.AsyncClient
    log: LogKind = "none"
    faults: Literal["anvil", "foreign", "none"] = "none"

    async def detect(self) -> None:
        """Find out which log and fault routes the upstream serves (GETs only; nothing is changed)."""
        if await self._get("/__anvil/requests") is not None:
            self.log, self.faults = "anvil", "anvil"
            return
        if await self._get("/__requests") is not None:
            self.log = "foreign"
            self.faults = "foreign"  # confirmed by the first fault it accepts

    async def _get(self, path: str, params: Mapping[str, str] | None = None) -> tuple[int, list[JSONValue]] | None:
        """``(count, entries)`` of a log route, or None when there is none."""
        try:
            answer = await self.http.get(path, params=params, timeout=_CONTROL_TIMEOUT_S)
            data = answer.json() if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        if isinstance(data, dict) and isinstance(data.get("requests"), list):
            count = data.get("count")
            entries = list(data["requests"])
            return (count if isinstance(count, int) else len(entries)), entries
        return (len(data), list(data)) if isinstance(data, list) else None

    async def mark(self) -> int | None:
        """How many requests have been logged so far (pass it to :meth:`since`); None without a log."""
        if self.log == "anvil":
            found = await self._get("/__anvil/requests", {"since": str(2**62)})
        elif self.log == "foreign":
            found = await self._get("/__requests")
        else:
            return None
        return None if found is None else found[0]

    async def since(self, mark: int | None) -> list[LogEntry] | None:
        """The requests logged after ``mark`` (the anvil mock numbers them, so its bounded log is enough)."""
        if mark is None or self.log == "none":
            return None
        if self.log == "anvil":
            found = await self._get("/__anvil/requests", {"since": str(mark)})
            raw = found[1] if found is not None else None
        else:
            found = await self._get("/__requests")
            raw = found[1][mark:] if found is not None else None
        if raw is None:
            return None
        return [entry for entry in (_entry(item) for item in raw) if entry is not None]

    async def fault(self, *, status: int, method: str, path: str, operation: str, body: JSONValue = None) -> bool:
        """Make the next matching request answer ``status``; False when the upstream cannot."""
        try:
            if self.faults == "anvil":
                spec: JSONObject = {"status": status, "method": method, "path": path, "operation": operation}
                if body is not None:
                    spec["body"] = body
                answer = await self.http.post("/__anvil/fault", json=spec, timeout=_CONTROL_TIMEOUT_S)
                return answer.status_code in (200, 201)
            if self.faults == "foreign":
                answer = await self.http.post(
                    "/__fault", json={"path": path, "status": status, "times": 1}, timeout=_CONTROL_TIMEOUT_S
                )
                if answer.status_code not in (200, 201, 204):
                    self.faults = "none"
                    return False
                return True
        except httpx.HTTPError:
            return False
        return False

    async def clear_faults(self) -> None:
        """Drop pending faults (the anvil mock only; a foreign fault is used up by its one request)."""
        if self.faults == "anvil":
            try:
                await self.http.delete("/__anvil/fault", timeout=_CONTROL_TIMEOUT_S)
            except httpx.HTTPError:
                return


@dataclass(slots=True)
class Example:
    """Example arguments for operations, deterministic and distinct per call (:mod:`anvil.air.values`).

    Values come from the input schema: a declared example, enum or default first when it validates (an
    upstream's seed data is usually named by its examples), else a value made from the schema (formats,
    patterns and bounds honoured); plain strings are numbered per call (``selftest-title-3``) so two
    calls never send the same request by accident. Idempotency keys are always fresh. An operation
    whose required inputs no value can satisfy raises :class:`~anvil.air.values.CannotMake`;
    :meth:`problem` says so beforehand, without using up a number.
    """

    document: Document
    generator: ValueGenerator = field(init=False)
    _problems: dict[str, str | None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.generator = ValueGenerator(self.document.schemas, style=SELFTEST_STYLE)

    @property
    def counter(self) -> int:
        """How many values and keys were made so far."""
        return self.generator.counter

    def problem(self, op: Operation) -> str | None:
        """Why no valid example arguments can be made for ``op`` (None: they can)."""
        if op.id not in self._problems:
            try:
                example_arguments(op, ValueGenerator(self.document.schemas, style=SELFTEST_STYLE))
                self._problems[op.id] = None
            except CannotMake as refused:
                self._problems[op.id] = f"no valid example input can be made: {refused.reason}"
        return self._problems[op.id]

    def arguments(self, op: Operation, *, confirm: bool = True, key: str | None = None) -> JSONObject:
        """Business arguments for ``op`` (every input property), plus confirm and the idempotency key.

        Raises:
            CannotMake: a required input cannot be made (see :meth:`problem`).
        """
        keys = safety_keys(op)
        out = example_arguments(op, self.generator)
        if confirm and keys.confirm is not None:
            out[keys.confirm] = True
        if key is not None and keys.idempotency is not None:
            out[keys.idempotency] = key
        return out

    def fresh_key(self, label: str, op: Operation | None = None) -> str:
        """A new idempotency key, distinct per call (``selftest-<label>-<n>``; made to fit ``op``'s carrier)."""
        schema = idempotency_key_schema(op) if op is not None and op.idempotency.mode in KEYED_MODES else None
        return self.generator.fresh_key(f"selftest-{label}", schema)


def confirm_added(op: Operation | None, arguments: Mapping[str, JSONValue]) -> JSONObject:
    """``arguments`` with the operation's confirm input set to true when it needs one."""
    out = dict(arguments)
    if op is not None:
        keys = safety_keys(op)
        if keys.confirm is not None:
            out[keys.confirm] = True
    return out
