"""``ANVIL_LOG_FORMAT=json``: the gateway's own log lines as one JSON object each on stderr (Cloud Logging's shape).

Each line: ``time`` (ISO-8601 UTC), ``severity`` (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``,
``CRITICAL``), ``message``, ``logger``, and, for a line written during a traced call, Cloud Logging's
``logging.googleapis.com/trace`` (``projects/<project>/traces/<32 hex>`` when the project is known, else
the 32 hex digits), ``logging.googleapis.com/spanId`` (16 hex) and ``logging.googleapis.com/trace_sampled``,
so a log line, the call's audit line (its ``trace_id`` is ``trace_`` + the same 32 hex) and its trace join.
An exception is named by its type only (``error``): a traceback can quote values.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Final, TextIO

from anvil.runtime.tracing import current_span
from anvil.telemetry.spans import SpanRecord

__all__ = ["LOG_FORMATS", "JsonLines", "JsonLogFormatter", "configure_logging", "log_line"]

LOG_FORMATS: Final = ("text", "json")
_TRACE: Final = "logging.googleapis.com/trace"
_SPAN: Final = "logging.googleapis.com/spanId"
_SAMPLED: Final = "logging.googleapis.com/trace_sampled"


def log_line(message: str, *, severity: str = "INFO", project: str | None = None, logger: str = "anvil") -> str:
    """One JSON log line (without the newline) for ``message``, with the bound call's trace if any."""
    entry: dict[str, object] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "severity": severity,
        "message": message,
        "logger": logger,
    }
    span = current_span()
    if isinstance(span, SpanRecord):
        trace = f"{span.trace:032x}"
        entry[_TRACE] = f"projects/{project}/traces/{trace}" if project else trace
        entry[_SPAN] = f"{span.span_id:016x}"
        entry[_SAMPLED] = span.sampled
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


class JsonLogFormatter(logging.Formatter):
    """Formats a record as :func:`log_line` does (the project names the trace for Cloud Logging)."""

    def __init__(self, project: str | None = None) -> None:
        super().__init__()
        self.project = project

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line."""
        message = record.getMessage()
        if record.exc_info and record.exc_info[0] is not None:
            message = f"{message} ({record.exc_info[0].__name__})"
        severity = "WARNING" if record.levelname == "WARN" else record.levelname
        return log_line(message, severity=severity, project=self.project, logger=record.name)


class JsonLines(io.TextIOBase):
    """A text stream that writes each complete line given to it as a JSON log line on ``target`` (for code
    that prints its lines, such as the start-up checks)."""

    def __init__(self, target: TextIO, *, severity: str = "INFO") -> None:
        super().__init__()
        self._target = target
        self._severity = severity
        self._pending = ""

    def write(self, text: str) -> int:
        """Buffer ``text``; write every line it completes."""
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if line:
                self._target.write(log_line(line, severity=self._severity) + "\n")
        return len(text)

    def flush(self) -> None:
        """Flush the target (a partial line waits for its end)."""
        self._target.flush()


def configure_logging(log_format: str, *, project: str | None = None, stream: TextIO | None = None) -> None:
    """Send every log record to ``stream`` (stderr) as JSON when ``log_format`` is ``json``; else leave logging
    as it is. Existing root handlers are replaced, so no line is written twice."""
    if log_format != "json":
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLogFormatter(project))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)  # levels stay as they are: warnings and errors (an INFO line can quote a URL)
