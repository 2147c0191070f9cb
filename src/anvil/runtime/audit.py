"""One JSON audit line per call, to a configurable sink (original-core §5.13, original-gateway §1.9).

The line says who (a pseudonymous principal digest), what (operation, effect class, staged_for),
how it went (outcome, error code, upstream status, attempts, duration, ledger state) and whether a
key travelled upstream. It never holds a secret, a request body, the raw idempotency key (``ledger_id``
is its sha256) or the principal's claims. A sink that fails is logged and never fails the call.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Protocol, TextIO, runtime_checkable

from anvil._types import JSONObject

__all__ = ["AuditSink", "FileAuditSink", "MemoryAuditSink", "StreamAuditSink", "write_audit"]

_log = logging.getLogger("anvil.audit")


@runtime_checkable
class AuditSink(Protocol):
    """Receives one compact JSON line (without the newline) per call."""

    def write(self, line: str) -> None:
        """Persist ``line``; may raise (the executor logs and carries on)."""


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


def write_audit(sink: AuditSink | None, record: JSONObject) -> None:
    """Write ``record`` as one compact JSON line; a failing sink is logged, never raised."""
    if sink is None:
        return
    try:
        sink.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    except Exception as exc:  # an audit outage must not fail the call it describes
        _log.warning("anvil: audit write failed: %s", type(exc).__name__)
