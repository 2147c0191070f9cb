"""Compile corpus specs (every operation approved) with two source trees and compare the bundles byte for byte.

Usage: ``python bench/identical.py OTHER_SRC [SPEC_FILTER]``: this checkout's ``src`` against
``OTHER_SRC`` (another checkout's ``src``, say main's). The corpus is ``ANVIL_CORPUS`` (default
``../shared/corpus``); manifests are written as ``bench/compile.py`` writes them. The runtime wheel
under ``deploy/image/`` and its pinned hash in ``runtime.txt`` are the compiler's own source, so they
differ whenever the source does; every other file must be identical. Exit 1 when one differs.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from compile import REPO, corpus_dir, service_id
from scale import write_manifest

CHILD = r"""
import sys
from pathlib import Path
from anvil.cli.compile import compile_bundle
spec, out, service, spec_root, manifest = (Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]),
                                           Path(sys.argv[5]))
compile_bundle(spec, out=out, manifest=manifest, service_id=service, root=spec.parent, spec_root=spec_root)
"""
#: The compiler's own bytes: they follow its source.
OWN = frozenset({"deploy/image/anvil_python-0.1.0-py3-none-any.whl", "deploy/image/runtime.txt"})


def _compile(src: Path, spec: Path, out: Path, service: str, spec_root: Path, manifest: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-c", CHILD, str(spec), str(out), service, str(spec_root), str(manifest)]
    subprocess.run(command, check=True, env=env, capture_output=True)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def main(argv: list[str]) -> int:
    """Print one line per spec; exit 1 when a bundle differs outside the compiler's own files."""
    other, wanted = Path(argv[0]), (argv[1] if len(argv) > 1 else "")
    corpus = corpus_dir()
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle, delimiter="\t") if wanted in row["file"]]
    differing = 0
    for row in rows:
        spec, parts = corpus / row["file"], Path(row["file"]).parts
        spec_root = corpus / parts[0] if len(parts) > 1 else spec.parent
        service = service_id(row["file"])
        with tempfile.TemporaryDirectory(prefix="anvil-identical-") as tmp:
            manifest = Path(tmp) / "anvil.yaml"
            write_manifest(spec, spec_root, REPO / "src", manifest, 600, service=service)
            ours, theirs = Path(tmp) / "ours", Path(tmp) / "theirs"
            _compile(REPO / "src", spec, ours, service, spec_root, manifest)
            _compile(other, spec, theirs, service, spec_root, manifest)
            a, b = _files(ours), _files(theirs)
        bad = sorted(p for p in a.keys() | b.keys() if p not in OWN and a.get(p) != b.get(p))
        differing += bool(bad)
        print(f"{row['file']:<42} {len(a):>5} files  {'identical' if not bad else 'DIFFER: ' + ', '.join(bad[:5])}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
