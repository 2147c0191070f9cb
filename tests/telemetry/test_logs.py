"""JSON log lines in Cloud Logging's shape, joined to the call's trace."""

from __future__ import annotations

import io
import json
import logging

from anvil.runtime.tracing import bind_span
from anvil.telemetry.logs import JsonLines, JsonLogFormatter, configure_logging, log_line
from anvil.telemetry.spans import Recorder


def test_a_line_inside_a_traced_call_names_its_trace_and_span() -> None:
    recorder = Recorder(lambda span: None)
    call = recorder.start_call("tools/call t", "server", {}, None)
    with bind_span(call):
        entry = json.loads(log_line("audit write failed", severity="WARNING", project="acme-prod-1"))
    assert entry["severity"] == "WARNING" and entry["message"] == "audit write failed"
    assert entry["logging.googleapis.com/trace"] == f"projects/acme-prod-1/traces/{call.trace:032x}"
    assert entry["logging.googleapis.com/spanId"] == f"{call.span_id:016x}"
    assert entry["logging.googleapis.com/trace_sampled"] is True
    assert f"trace_{entry['logging.googleapis.com/trace'].rsplit('/', 1)[1]}" == call.trace_id  # the audit's id
    outside = json.loads(log_line("started"))
    assert "logging.googleapis.com/trace" not in outside and outside["time"].endswith("Z")


def test_records_and_printed_lines_become_json_and_a_traceback_only_names_its_type() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    kept = list(root.handlers)
    configure_logging("json", stream=stream)
    try:
        try:
            raise ValueError("secret-value-in-message")
        except ValueError:
            logging.getLogger("anvil.test").warning("it failed", exc_info=True)
    finally:
        for handler in [h for h in root.handlers if isinstance(h.formatter, JsonLogFormatter)]:
            root.removeHandler(handler)
        for handler in kept:
            root.addHandler(handler)
    [entry] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert entry["message"] == "it failed (ValueError)" and entry["logger"] == "anvil.test"
    assert "secret-value-in-message" not in stream.getvalue()
    printed = io.StringIO()
    lines = JsonLines(printed)
    lines.write("anvil: created a new ledger\nanvil: par")
    lines.write("tial\n")
    assert [json.loads(line)["message"] for line in printed.getvalue().splitlines()] == [
        "anvil: created a new ledger",
        "anvil: partial",
    ]
    before = list(root.handlers)
    configure_logging("text")
    assert root.handlers == before
