"""One JSON audit line per call, to a configurable sink (original-core §5.13, original-gateway §1.9).

The executor hands :func:`write_audit` its :class:`~anvil.runtime.outcome.ExecutionRecord` as a dict
at the end of every ``execute`` (success, any gate's refusal, dry run, upstream failure). A plain
:class:`AuditSink` receives that record as one compact JSON line: who (a pseudonymous principal
digest), what (operation, effect class, staged_for), how it went (outcome, error code, upstream status,
attempts, duration, ledger state) and whether a key travelled upstream.

A :class:`RecordSink` receives the record as a dict instead (no JSON encoding per call). The serving
layer uses two of them:

* :class:`GatewayAuditSink` writes the gateway's line (original-gateway §1.9) to any plain sink, in
  this field order: ``time`` (ISO-8601 UTC, ms), ``sub``, ``by_tenant``, ``by_branch``, ``by_turn``,
  ``connector``, ``account``, ``operation``, ``decision``, ``grant``, ``upstream_status``,
  ``latency_ms``, ``input_sha256``, ``error_code``, ``rule``, ``dry_run``, ``trace_id``,
  ``effect_class``, ``ledger_id``, ``staged_for``, then the executor's ``outcome``, ``attempts``,
  ``ledger`` and ``idempotency_key_forwarded``;
* a metrics observer (``anvil.serve.metrics``).

Who the caller is and under which grant it runs is not the executor's to know: the serving layer binds
an :class:`AuditScope` (:func:`audit_scope`) and the executed input (:func:`audit_input`) in context
variables around ``execute``; :class:`GatewayAuditSink` reads them when the executor writes.

What a line never holds: a secret, a request body (``input_sha256`` is ``sha256:`` + hex of the
canonical JSON of the input after :func:`redact`) or the principal's claims. ``ledger_id`` is the
caller's idempotency key itself (forwarded or not; ADR-0030 §5): it is the ledger's id, which
Branchyard and auditors join on, not a secret (a key alone replays nothing: replay is bound to the
request and the verified principal). The audit file is the operator's record: keep it like the
ledger, mode 0600. A sink that fails is logged and never fails the call.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Final, Protocol, TextIO, runtime_checkable

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.canonical import canonical_json, sha256_hex

__all__ = [
    "REDACTED",
    "AuditScope",
    "AuditSink",
    "FileAuditSink",
    "GatewayAuditSink",
    "MemoryAuditSink",
    "RecordSink",
    "StreamAuditSink",
    "audit_input",
    "audit_scope",
    "gateway_line",
    "input_digest",
    "redact",
    "write_audit",
]

_log = logging.getLogger("anvil.audit")

#: What a redacted value becomes.
REDACTED: Final = "***"
#: Keys whose values never reach a hash or a line (original-gateway §1.9; ``pass`` needs no suffix).
_SECRET_KEY: Final = re.compile(
    r"pass|secret|token|authori[sz]ation|api[_-]?key|cookie|credential|private[_-]?key|session", re.IGNORECASE
)


@runtime_checkable
class AuditSink(Protocol):
    """Receives one compact JSON line (without the newline) per call."""

    def write(self, line: str) -> None:
        """Persist ``line``; may raise (the executor logs and carries on)."""


@runtime_checkable
class RecordSink(Protocol):
    """A sink that takes the record itself (a dict in the record's field order) instead of a line."""

    def write_record(self, record: JSONObject) -> None:
        """Handle one call's record; may raise (logged, never fails the call)."""


class MemoryAuditSink:
    """Keeps lines in a list (tests, development)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        """Append ``line``."""
        self.lines.append(line)

    def records(self) -> list[JSONObject]:
        """Every line parsed back into a dict."""
        return [json.loads(line) for line in self.lines]


class StreamAuditSink:
    """Writes lines to a text stream (stderr, a pipe), flushing each one."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        """Write ``line`` and a newline, then flush."""
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


class FileAuditSink:
    """Appends lines to a file created with mode 0600; each line is one ``write`` on an ``O_APPEND`` fd."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        """Append ``line`` and a newline (opening the file on first use)."""
        data = (line + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.chmod(self._path, 0o600)
            os.write(self._fd, data)

    def close(self) -> None:
        """Close the file (a later write reopens it)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


# --- who the call runs as: bound by the serving layer -----------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditScope:
    """The caller and grant a call runs under, as the gateway's audit line names them.

    Attributes:
        sub: the principal id (``anonymous`` without inbound auth).
        tenant, branch, turn: the token's attribution (``by_tenant``, ``by_branch``, ``by_turn``).
        connector: the bundle's connector (its folded fleet id), or None.
        account: the grant decision's account (allowed: the entry's or ``default``; refused with an entry:
            that entry's, or None); None without a grant.
        grant: the entry the decision names (``{index, connector, operations, mode, ...}``), or None.
        decision: set only for a call refused before ``execute`` (``denied``/``confirmation_required``);
            None derives it from the error code.
        rule: the refusal's ``policy/grant_*`` detail code, or None.
    """

    sub: str = "anonymous"
    tenant: str | None = None
    branch: str | None = None
    turn: str | None = None
    connector: str | None = None
    account: str | None = None
    grant: JSONObject | None = None
    decision: str | None = None
    rule: str | None = None


_SCOPE: ContextVar[AuditScope | None] = ContextVar("anvil_audit_scope", default=None)
_INPUT: ContextVar[Mapping[str, JSONValue] | None] = ContextVar("anvil_audit_input", default=None)


class _Binding:
    """``with`` binds a context variable and restores it on exit (cheaper than a generator manager)."""

    __slots__ = ("_token", "_value", "_var")

    def __init__(self, var: ContextVar[object], value: object) -> None:
        self._var = var
        self._value = value
        self._token: Token[object] | None = None

    def __enter__(self) -> None:
        self._token = self._var.set(self._value)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._token is not None:
            self._var.reset(self._token)


def audit_scope(scope: AuditScope | None) -> _Binding:
    """``with audit_scope(scope):`` - lines written inside name this caller, connector and grant."""
    return _Binding(_SCOPE, scope)  # type: ignore[arg-type]


def audit_input(arguments: Mapping[str, JSONValue] | None) -> _Binding:
    """``with audit_input(arguments):`` - lines written inside hash these (the executed input)."""
    return _Binding(_INPUT, arguments)  # type: ignore[arg-type]


# --- the gateway's line ----------------------------------------------------------------------------


def redact(value: JSONValue) -> JSONValue:
    """A copy of ``value`` with the value of every credential-looking key replaced by ``***``, at any depth."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED if isinstance(key, str) and _SECRET_KEY.search(key) else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


def input_digest(arguments: Mapping[str, JSONValue] | None) -> str:
    """``sha256:`` + hex of the canonical JSON (keys sorted, compact) of the redacted input (``{}`` if None)."""
    return "sha256:" + sha256_hex(canonical_json(redact(dict(arguments or {}))))


def _decision(error_code: JSONValue) -> str:
    if error_code == "policy_denied":
        return "denied"
    if error_code == "confirmation_required":
        return "confirmation_required"
    return "allowed"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def gateway_line(
    record: Mapping[str, JSONValue],
    scope: AuditScope | None,
    arguments: Mapping[str, JSONValue] | None,
    *,
    time: str | None = None,
) -> JSONObject:
    """The gateway's audit line (original-gateway §1.9 order) for an executor record.

    Args:
        record: the executor's record (:meth:`~anvil.runtime.outcome.ExecutionRecord.to_json`).
        scope: the bound caller and grant, or None (then ``sub`` is the record's principal label).
        arguments: the executed input (hashed after redaction, never written).
        time: the timestamp to write (default: now, UTC).
    """
    error_code = record.get("error_code")
    if scope is None:
        scope = AuditScope(sub=str(record.get("principal") or "anonymous"))
    return {
        "time": time or _now(),
        "sub": scope.sub,
        "by_tenant": scope.tenant,
        "by_branch": scope.branch,
        "by_turn": scope.turn,
        "connector": scope.connector,
        "account": scope.account,
        "operation": record.get("operation"),
        "decision": scope.decision or _decision(error_code),
        "grant": scope.grant,
        "upstream_status": record.get("status"),
        "latency_ms": record.get("duration_ms"),
        "input_sha256": input_digest(arguments),
        "error_code": error_code,
        "rule": scope.rule,
        "dry_run": bool(record.get("dry_run")),
        "trace_id": record.get("trace_id"),
        "effect_class": record.get("effect_class"),
        "ledger_id": record.get("ledger_id"),
        "staged_for": record.get("staged_for"),
        "outcome": record.get("outcome"),
        "attempts": record.get("attempts", 0),
        "ledger": record.get("ledger", "none"),
        "idempotency_key_forwarded": bool(record.get("idempotency_key_forwarded")),
    }


class GatewayAuditSink:
    """Writes the gateway's audit line (see the module docstring) for every record to ``target``.

    Args:
        target: where the lines go (:class:`FileAuditSink` for ``ANVIL_AUDIT_FILE``, a stream, memory).
    """

    def __init__(self, target: AuditSink) -> None:
        self.target = target

    def write_record(self, record: JSONObject) -> None:
        """Format ``record`` with the bound scope and input, and write it as one compact line."""
        line = gateway_line(record, _SCOPE.get(), _INPUT.get())
        self.target.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")))

    def write(self, line: str) -> None:
        """Pass an already formatted line through unchanged."""
        self.target.write(line)

    def close(self) -> None:
        """Close the target when it can be closed."""
        close = getattr(self.target, "close", None)
        if callable(close):
            close()


def write_audit(sink: AuditSink | RecordSink | None, record: JSONObject) -> None:
    """Hand ``record`` to ``sink``: as a dict to a :class:`RecordSink`, else as one compact JSON line.

    A failing sink is logged, never raised.
    """
    if sink is None:
        return
    try:
        write_record = getattr(sink, "write_record", None)
        if write_record is not None:
            write_record(record)
        else:
            sink.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))  # type: ignore[union-attr]
    except Exception as exc:  # an audit outage must not fail the call it describes
        _log.warning("anvil: audit write failed: %s", type(exc).__name__)
