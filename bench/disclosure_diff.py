"""Which ``disclosureCost`` rows differ from the original's, and by how much, per corpus spec.

Usage: ``python bench/disclosure_diff.py [SPEC_FILTER] [--rows] [--dump DIR]`` (the corpus is
``ANVIL_CORPUS``, default ``../shared/corpus`` beside the repository; the goldens are
``spec/golden/disclosure`` beside it). Each spec's AIR is compiled once and cached under
``$TMPDIR/anvil-disclosure-diff`` by a digest of the sources (any change to them compiles again).

Per spec it prints the rows equal to the original's and the differing ones by component: ``tool``
(the token count differs) or ``ratio`` (same tokens, another ``charsPerToken``, so another length).
``--rows`` lists each differing row with the token difference and the character difference implied
by the original's ratio (its length is ``charsPerToken × toolTokens``, exact to a character or two);
``--dump DIR`` writes each measured surface (the operation as the original compiles it:
:mod:`anvil.compiler.original_view`) as ``DIR/<spec>/<operation id>.json`` to read beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from anvil.air.codec import document_json, load_document  # noqa: E402
from anvil.air.disclosure_surface import measured_surface_json  # noqa: E402
from anvil.air.model import Document  # noqa: E402
from anvil.compiler import build  # noqa: E402
from anvil.compiler.original_view import OriginalSchemas, original_view  # noqa: E402
from anvil.load.spec import load_spec  # noqa: E402


def _source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((REPO / "src" / "anvil").rglob("*.py")):
        digest.update(path.relative_to(REPO).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _golden(path: Path) -> tuple[str, dict[str, dict[str, object]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    spec = lines[0].split("corpus file ", 1)[1].split(",", 1)[0]
    return spec, {line.split("\t")[2]: json.loads(line.split("\t")[3]) for line in lines[2:]}


def _document(corpus: Path, spec: str, name: str, cache: Path) -> Document:
    cached = cache / f"{name}.json"
    if cached.is_file():
        return load_document(json.loads(cached.read_text(encoding="utf-8")))
    doc = build(corpus / spec, service_id=name, source_uri=spec).document
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(document_json(doc)), encoding="utf-8")
    return doc


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    wanted = args[0] if args else ""
    rows = "--rows" in sys.argv
    dump = Path(sys.argv[sys.argv.index("--dump") + 1]) if "--dump" in sys.argv else None
    if dump is not None and str(dump) == wanted:
        wanted = ""
    corpus = Path(os.environ.get("ANVIL_CORPUS", str(REPO.parent / "shared" / "corpus")))
    goldens = corpus.parent / "spec" / "golden" / "disclosure"
    cache = Path(tempfile.gettempdir()) / "anvil-disclosure-diff" / (_source_digest())
    total_equal = total = 0
    for path in sorted(goldens.glob("*.tsv")):
        name = path.stem
        if wanted not in name:
            continue
        spec, golden = _golden(path)
        doc = _document(corpus, spec, name, cache)
        equal, kinds, lines = 0, {"tool": 0, "ratio": 0, "missing": 0}, []
        ops = {op.id: op for op in doc.operations}
        spec_doc = load_spec(corpus / spec).document if dump is not None else None
        schemas = OriginalSchemas(spec_doc) if isinstance(spec_doc, dict) else None
        for op_id, theirs in golden.items():
            op = ops.get(op_id)
            if op is None:
                kinds["missing"] += 1
                lines.append(f"  {op_id}: not compiled")
                continue
            if dump is not None and isinstance(spec_doc, dict) and schemas is not None:
                (dump / name).mkdir(parents=True, exist_ok=True)
                text = measured_surface_json(original_view(op, spec_doc, schemas))
                (dump / name / f"{op_id}.json").write_text(text, encoding="utf-8")
            cost = op.disclosure_cost
            assert cost is not None
            their_tokens = int(theirs["toolTokens"])  # type: ignore[call-overload]
            their_chars = round(float(theirs["charsPerToken"]) * their_tokens)  # type: ignore[arg-type]
            if (cost.tool_tokens, cost.chars_per_token) == (their_tokens, theirs["charsPerToken"]):
                equal += 1
                continue
            kind = "tool" if cost.tool_tokens != their_tokens else "ratio"
            kinds[kind] += 1
            chars = round(cost.chars_per_token * cost.tool_tokens)
            lines.append(
                f"  {kind:<5} {op_id}: tokens {cost.tool_tokens - their_tokens:+d} chars ~{chars - their_chars:+d}"
                f" (ours {cost.tool_tokens}/{chars}, theirs {their_tokens}/~{their_chars})"
            )
        total_equal += equal
        total += len(golden)
        print(f"{name:<20}{equal:>5} / {len(golden):<5} tool {kinds['tool']:<4} ratio {kinds['ratio']:<4}", end="")
        print(f" missing {kinds['missing']}")
        if rows:
            print("\n".join(lines))
    print(f"{'all':<20}{total_equal:>5} / {total}")


if __name__ == "__main__":
    main()
