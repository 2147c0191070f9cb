"""Every real-world corpus spec compiles without a traceback, and tool names are unique per bundle."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from anvil.bundle.emit import emit_bundle
from anvil.bundle.hash import hash_files
from anvil.diagnostics import has_errors


def _specs(corpus: Path) -> list[str]:
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        return [row["file"] for row in csv.DictReader(handle, delimiter="\t")]


@pytest.mark.corpus
@pytest.mark.slow
def test_every_corpus_spec_compiles_and_emits_a_bundle_with_unique_tool_names(corpus: Path) -> None:
    from anvil.compiler import build

    problems: dict[str, str] = {}
    for name in _specs(corpus):
        # A spec in a sub-folder (multi-file) may reach sibling folders of its top folder.
        top = Path(name).parts[0]
        spec_root = corpus / top if len(Path(name).parts) > 1 else None
        result = build(corpus / name, manifest=None, service_id="corpus", source_uri=name, spec_root=spec_root)
        source_errors = [d.code for d in result.diagnostics if d.severity == "error" and d.code.startswith("source/")]
        if source_errors:
            problems[name] = f"source errors: {source_errors[:3]}"
            continue
        doc = result.document
        if doc is None:
            if not has_errors(result.diagnostics):
                problems[name] = "no document and no error diagnostic"
            continue
        tools = [op.mcp.tool_name for op in doc.operations]
        if len(tools) != len(set(tools)):
            problems[name] = f"duplicate tool names: {sorted({t for t in tools if tools.count(t) > 1})[:5]}"
            continue
        ids = [op.id for op in doc.operations]
        if len(ids) != len(set(ids)):
            problems[name] = "duplicate operation ids"
            continue
        files = emit_bundle(doc)
        assert emit_bundle(doc) == files, name
        assert len(hash_files(files)) == 64
        tools_json = files["tools.json"].decode("utf-8")
        if "#/components" in "".join(  # an outputSchema never points outside itself
            json.dumps(t.get("outputSchema", {})) for t in json.loads(tools_json)["tools"]
        ):
            problems[name] = "an outputSchema refers to #/components"
    assert problems == {}
