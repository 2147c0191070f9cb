"""Compile every corpus spec in a fresh process, every operation approved, and print time, memory and sizes.

Usage: ``python bench/compile.py [SPEC_FILTER] [--no-manifest]`` (the corpus is ``ANVIL_CORPUS``,
default ``../shared/corpus`` beside the repository). For each spec a manifest approving every
operation is written on the fly (as ``bench/scale.py`` writes it: an operation whose source auth the
compiler cannot execute gets ``auth: {type: basic}``); ``--no-manifest`` compiles without one (the
conservative classifier decides, few operations are approved). Each spec is compiled by ``anvil
compile``'s library entry (load, compile, emit, transactional install, bundle hash) into a temporary
directory. "compile s" is measured inside the child around the compile; "process s" adds interpreter
start and imports; "peak MB" is the child's peak resident set size; "bundle MB" the bytes written and
"tools MB" those of ``tools.json``. Aim: the largest spec, all approved, in under 5 s and 300 MB.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale import write_manifest

REPO = Path(__file__).resolve().parent.parent
CHILD = r"""
import json, sys, time
from pathlib import Path
from anvil.cli.compile import compile_bundle
spec, out, service, spec_root = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
manifest = Path(sys.argv[5]) if sys.argv[5] else None
start = time.perf_counter()
outcome = compile_bundle(spec, out=out, manifest=manifest, service_id=service, root=spec.parent, spec_root=spec_root)
wall = time.perf_counter() - start
# VmHWM is this program's own peak (ru_maxrss would count the pages of the parent it was forked from).
status = Path("/proc/self/status").read_text().splitlines()
rss = int(next(line for line in status if line.startswith("VmHWM:")).split()[1])
errors = sorted({d.code for d in outcome.diagnostics if d.severity == "error"})
size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) if out.is_dir() else 0
tools = (out / "tools.json").stat().st_size if (out / "tools.json").is_file() else 0
print(json.dumps({"wall": wall, "rss_kb": rss, "operations": outcome.operations, "approved": outcome.approved,
                  "written": outcome.bundle_hash is not None, "errors": errors, "bytes": size, "tools": tools}))
"""


def corpus_dir() -> Path:
    """``ANVIL_CORPUS`` or ``../shared/corpus`` beside the repository."""
    return Path(os.environ.get("ANVIL_CORPUS", str(REPO.parent / "shared" / "corpus")))


def service_id(name: str) -> str:
    """A valid service id from a corpus file name (``oai-petstore.yaml`` -> ``oai-petstore``)."""
    stem = re.sub(r"[^a-z0-9_-]+", "-", Path(name.split("/")[0]).stem.lower()).strip("-_")
    return ("s-" + stem if not stem[:1].isalpha() else stem)[:64].rstrip("-_") or "service"


def measure(spec: Path, service: str, spec_root: Path, manifest: Path | None) -> dict[str, object]:
    """Compile ``spec`` in a fresh interpreter; the child's report plus the whole process time.

    ``spec_root`` is the folder its ``$ref``s may reach (a multi-file spec's top folder in the corpus).
    """
    with tempfile.TemporaryDirectory(prefix="anvil-bench-") as tmp:
        command = [sys.executable, "-c", CHILD, str(spec), str(Path(tmp) / "bundle"), service, str(spec_root)]
        start = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}  # this checkout's sources, whatever is installed
        done = subprocess.run([*command, str(manifest or "")], capture_output=True, text=True, check=False, env=env)
        elapsed = time.perf_counter() - start
    if done.returncode != 0 or not done.stdout.strip():
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"failed": tail[:60], "process": elapsed}
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    report["process"] = elapsed
    return report


def main(argv: list[str]) -> int:
    """Print the table; exit 1 when a spec crashed the compiler."""
    approve = "--no-manifest" not in argv
    args = [arg for arg in argv if arg != "--no-manifest"]
    corpus = corpus_dir()
    index = corpus / "INDEX.tsv"
    if not index.is_file():
        print(f"corpus not found at {corpus} (set ANVIL_CORPUS)", file=sys.stderr)
        return 2
    wanted = args[0] if args else ""
    with index.open(encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle, delimiter="\t") if wanted in row["file"]]
    header = (
        f"{'spec':<42} {'MB':>6} {'ops':>5} {'approved':>8} {'compile s':>10} {'process s':>10} {'peak MB':>8} "
        f"{'bundle MB':>9} {'tools MB':>8}  status"
    )
    print(header)
    print("-" * len(header))
    crashed = 0
    for row in sorted(rows, key=lambda r: int(r["bytes"])):
        spec = corpus / row["file"]
        parts = Path(row["file"]).parts
        spec_root = corpus / parts[0] if len(parts) > 1 else spec.parent
        service = service_id(row["file"])
        with tempfile.TemporaryDirectory(prefix="anvil-bench-manifest-") as tmp:
            manifest = Path(tmp) / "anvil.yaml" if approve else None
            if manifest is not None:
                write_manifest(spec, spec_root, REPO / "src", manifest, 600, service=service)
            result = measure(spec, service, spec_root, manifest)
        size = int(row["bytes"]) / 1_000_000
        if "failed" in result:
            crashed += 1
            print(
                f"{row['file']:<42} {size:>6.2f} {'-':>5} {'-':>8} {'-':>10} {result['process']:>10.2f} {'-':>8} "
                f"{'-':>9} {'-':>8}  CRASH {result['failed']}"
            )
            continue
        errors = result["errors"]
        status = "ok" if not errors else ("errors: " if result["written"] else "not written: ") + ", ".join(errors)  # type: ignore[arg-type]
        print(
            f"{row['file']:<42} {size:>6.2f} {result['operations']:>5} {result['approved']:>8} {result['wall']:>10.2f} "
            f"{result['process']:>10.2f} {int(result['rss_kb']) / 1024:>8.0f} "  # type: ignore[call-overload]
            f"{int(result['bytes']) / 1e6:>9.1f} {int(result['tools']) / 1e6:>8.2f}  {status}"  # type: ignore[call-overload]
        )
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
