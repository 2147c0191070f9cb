"""A span record as the runtime writes one, for the encoder and export tests."""

from __future__ import annotations

from anvil.telemetry.spans import SpanRecord


def record(**overrides: object) -> SpanRecord:
    values: dict[str, object] = {
        "finished": lambda span: None,
        "name": "POST",
        "kind": 3,
        "trace": 0x4BF92F3577B34DA6A3CE929D0E0E4736,
        "span_id": 0x00F067AA0BA902B7,
        "parent_id": 0x1234,
        "sampled": True,
        "remote": False,
        "attributes": {"http.request.method": "POST", "http.response.status_code": 201, "ok": True, "ratio": 0.5},
    }
    values.update(overrides)
    span = SpanRecord(**values)  # type: ignore[arg-type]
    span.start_ns, span.end_ns = 1_700_000_000_000_000_000, 1_700_000_000_002_000_000
    return span
