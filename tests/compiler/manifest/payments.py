"""The payments example compiled with one more line under ``service:`` in its manifest."""

from __future__ import annotations

from pathlib import Path

from anvil.air.codec import to_json
from anvil.compiler import build

PAYMENTS = Path(__file__).resolve().parents[3] / "examples" / "payments"


def compile_with_service_line(tmp_path: Path, line: str | None) -> dict[str, object]:
    """The AIR JSON of the payments example, its manifest's ``service:`` block given ``line`` first (None: as is)."""
    text = (PAYMENTS / "anvil.yaml").read_text(encoding="utf-8")
    if line is not None:
        text = text.replace("service:\n", f"service:\n  {line}\n", 1)
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(text, encoding="utf-8")
    result = build(PAYMENTS / "openapi.yaml", manifest=manifest, service_id="payments", source_uri="openapi.yaml")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    data: dict[str, object] = to_json(result.document)
    return data
