"""Shared helper: the original's naming goldens (``spec/golden/naming``) and a comparison with our compiler."""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Golden", "SpecReport", "compare_spec", "compile_names", "golden_specs", "triples_digest"]


@dataclass(frozen=True, slots=True)
class Golden:
    """One golden file: the corpus spec it names, the service id used, and its rows."""

    service: str
    spec: str
    rows: dict[tuple[str, str], tuple[str, str, str]]


@dataclass(slots=True)
class SpecReport:
    """Differences between our names and the original's for one spec."""

    golden_count: int = 0
    ours_count: int = 0
    id_diffs: int = 0
    tool_diffs: int = 0
    cli_diffs: int = 0
    rows: list[str] = field(default_factory=list)


def golden_specs(folder: Path) -> list[Golden]:
    """Every golden TSV in ``folder``, sorted by service id."""
    out: list[Golden] = []
    for path in sorted(folder.glob("*.tsv")):
        lines = path.read_text(encoding="utf-8").splitlines()
        header = lines[0]
        spec = header.split("corpus file ", 1)[1].split(",", 1)[0].strip()
        service = header.split("--service ", 1)[1].split()[0]
        rows: dict[tuple[str, str], tuple[str, str, str]] = {}
        for row in csv.DictReader(lines[1:], delimiter="\t"):
            rows[(row["method"].upper(), row["path"])] = (row["id"], row["tool"], row["cli"])
        out.append(Golden(service=service, spec=spec, rows=rows))
    return out


def compile_names(corpus: Path, spec: str, service: str) -> dict[tuple[str, str], tuple[str, str, str]]:
    """Compile one corpus spec (no manifest) and return ``(METHOD, path) -> (id, tool, cli)``."""
    from anvil.compiler import build

    top = Path(spec).parts[0]
    spec_root = corpus / top if len(Path(spec).parts) > 1 else None
    result = build(corpus / spec, manifest=None, service_id=service, source_uri=spec, spec_root=spec_root)
    names: dict[tuple[str, str], tuple[str, str, str]] = {}
    if result.document is None:
        return names
    for op in result.document.operations:
        key = ((op.source_ref.method or "").upper(), op.source_ref.path or "")
        names[key] = (op.id, op.mcp.tool_name, op.cli.command)
    return names


def triples_digest(names: dict[tuple[str, str], tuple[str, str, str]]) -> str:
    """sha256 of the sorted ``(id, tool name, CLI command)`` triples, as compact JSON."""
    triples = sorted(list(t) for t in names.values())
    return hashlib.sha256(json.dumps(triples, separators=(",", ":")).encode("utf-8")).hexdigest()


def compare_spec(corpus: Path, golden: Golden) -> SpecReport:
    """Compile ``golden.spec`` and count the rows whose id, tool name or CLI command differ."""
    ours = compile_names(corpus, golden.spec, golden.service)
    report = SpecReport(golden_count=len(golden.rows), ours_count=len(ours))
    for key in sorted(set(golden.rows) | set(ours)):
        want = golden.rows.get(key)
        got = ours.get(key)
        if want == got:
            continue
        if want is None or got is None:
            report.id_diffs += 1
            report.tool_diffs += 1
            report.cli_diffs += 1
        else:
            report.id_diffs += want[0] != got[0]
            report.tool_diffs += want[1] != got[1]
            report.cli_diffs += want[2] != got[2]
        report.rows.append(f"{key[0]} {key[1]}: want {want} got {got}")
    return report
