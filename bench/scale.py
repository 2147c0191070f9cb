"""Real APIs at full size: compile, bundle, tools/list and serve start-up, per corpus spec, all approved.

    .venv/bin/python bench/scale.py [FILTER] [--against REV | --baseline-src DIR] [--synthetic-only]
                                    [--corpus-only] [--timeout S] [--lists N]

For every corpus spec (``ANVIL_CORPUS``, default ``../shared/corpus`` beside the repository) whose
name contains FILTER, a manifest that approves every operation is written on the fly (an operation
whose source auth the compiler cannot execute, such as a choice between alternatives, is given
``auth: {type: basic}`` so it can be approved too), then, each in a fresh process:

* ``anvil compile``: wall time and peak RSS of the process, the bundle's bytes, approved operations;
* ``anvil serve BUNDLE --http 127.0.0.1:0`` (env ``dev``, ``memory:`` ledger): start-up is the time
  from spawning the process to the end of the first ``tools/list`` answer; then N more ``tools/list``
  (the median and the slowest), the answer's bytes and its ratio to the same listing without any
  ``outputSchema`` (both compact JSON), the tools over the 1200-token budget that do not say in
  ``_meta`` (``anvil/output_schema``) that their output schema was cut, and the server's RSS (now and peak).

Then the synthetic linearity bench: specs of 100, 200, 400 and 800 operations over one shared cyclic
schema graph (every schema reaches every other, as in a large payments API), compile time (the
fastest of ``--repeat`` compiles, default 3) and ``tools/list`` bytes; the 800-operation figures must
stay within 2.4x the 400-operation ones.

``--against REV`` measures the same table with the sources of git revision REV (``git archive``
into a temporary folder, nothing in the repository changes) and prints both, before and after, in
one table; ``--baseline-src DIR`` does the same with a source folder. A step that takes longer than
``--timeout`` seconds (default 300) is shown as ``timeout``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BUDGET_CHARS = 1200 * 4
SYNTHETIC_SIZES = (100, 200, 400, 800)
LIST_BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
LIST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

#: Lists the operations of a spec compiled without a manifest, and which ones the compiler flagged for auth.
OPERATIONS_CHILD = r"""
import json, sys
from pathlib import Path
from anvil.compiler import build
spec = Path(sys.argv[1])
root = Path(sys.argv[2]) if sys.argv[2] else None
result = build(spec, manifest=None, service_id=sys.argv[3], source_uri=spec.name, spec_root=root)
auth = {d.operation for d in result.diagnostics if d.code.startswith("auth/") and d.operation}
ops = result.document.operations if result.document is not None else ()
print(json.dumps([[op.id, op.id in auth] for op in ops]))
"""


#: Runs ``anvil ARGS...`` and writes the process's peak RSS to the file named by ``argv[1]``. The peak is
#: ``VmHWM`` (this program's own, reset at exec): ``ru_maxrss`` would count the pages of the (large)
#: parent this child was forked from.
ANVIL_CHILD = r"""
import sys
from pathlib import Path
from anvil.cli import main
target = Path(sys.argv[1])
try:
    code = main(sys.argv[2:])
finally:
    peak = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:"))
    target.write_text(peak.split()[1])
raise SystemExit(code)
"""


@dataclass
class Figures:
    """One spec's measurements under one source tree (missing figures stay None)."""

    operations: int | None = None
    approved: int | None = None
    compile_s: float | None = None
    compile_mb: float | None = None
    bundle_mb: float | None = None
    list_mb: float | None = None
    ratio: float | None = None
    over: int | None = None
    unmarked: int | None = None
    first_s: float | None = None
    list_ms: float | None = None
    list_max_ms: float | None = None
    rss_mb: float | None = None
    peak_mb: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def corpus_dir() -> Path:
    """``ANVIL_CORPUS`` or ``../shared/corpus`` beside the repository."""
    return Path(os.environ.get("ANVIL_CORPUS", str(REPO.parent / "shared" / "corpus")))


def _env(src: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    # A base URL nothing listens on: a spec without servers still serves, and nothing is ever called.
    env.update({"PYTHONPATH": str(src), "ANVIL_ENV": "dev", "ANVIL_LEDGER": "memory:"})
    env["ANVIL_BASE_URL"] = "http://127.0.0.1:9"
    return env


def _run(command: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, float]:
    """Run ``command``; (exit status, stdout, wall seconds), -9 on timeout."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, env=env)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return -9, "", time.perf_counter() - start
        wall = time.perf_counter() - start
        out.seek(0)
        return process.returncode, out.read().decode("utf-8", "replace"), wall


def run_anvil(arguments: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, float, float]:
    """Run ``anvil ARGUMENTS``: (exit status, stdout, wall seconds, peak RSS MB), -9 on timeout."""
    with tempfile.TemporaryDirectory(prefix="anvil-peak-") as tmp:
        peak_file = Path(tmp) / "peak"
        code, out, wall = _run([sys.executable, "-c", ANVIL_CHILD, str(peak_file), *arguments], env, timeout)
        peak = int(peak_file.read_text()) / 1024 if peak_file.is_file() else float("nan")
    return code, out, wall, peak


def write_manifest(
    spec: Path, spec_root: Path | None, src: Path, target: Path, timeout: float, *, service: str = "corpus"
) -> int:
    """Write a manifest approving every operation of ``spec`` (compiled as ``service``); the operation count."""
    command = [sys.executable, "-c", OPERATIONS_CHILD, str(spec), str(spec_root or ""), service]
    code, out, _ = _run(command, _env(src), timeout)
    if code != 0 or not out.strip():
        raise RuntimeError("could not list the operations" if code != -9 else "timeout listing operations")
    ops = json.loads(out.strip().splitlines()[-1])
    lines = ["operations:"]
    for op_id, auth in ops:
        lines.append(f"  {json.dumps(op_id)}:")
        lines.append("    state: approved")
        if auth:
            lines += ["    auth:", "      type: basic"]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(ops)


def _bundle_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _post(url: str) -> bytes:
    request = urllib.request.Request(url, data=LIST_BODY, headers=LIST_HEADERS, method="POST")
    with urllib.request.urlopen(request, timeout=120) as answer:
        body: bytes = answer.read()
        return body


def _proc_mb(pid: int, key: str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _listing_figures(body: bytes, figures: Figures) -> None:
    tools = json.loads(body)["result"]["tools"]
    compact = lambda value: len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())  # noqa: E731
    bare = [{key: value for key, value in tool.items() if key != "outputSchema"} for tool in tools]
    figures.list_mb = len(body) / 1e6
    figures.ratio = compact(tools) / max(1, compact(bare))
    over = [tool for tool in tools if len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False)) > BUDGET_CHARS]
    figures.over = len(over)
    figures.unmarked = sum(
        1 for tool in over if "outputSchema" in tool and not (tool.get("_meta") or {}).get("anvil/output_schema")
    )


def measure_serve(bundle: Path, src: Path, figures: Figures, lists: int, timeout: float) -> None:
    """Start ``anvil serve`` on ``bundle`` and time its first and following ``tools/list`` answers."""
    command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", "127.0.0.1:0"]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env(src))
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        line = process.stdout.readline() if ready else b""
        if not line:
            figures.note = "serve did not start"
            return
        url = json.loads(line)["url"]
        body = _post(url)
        figures.first_s = time.perf_counter() - start
        times = []
        for _ in range(lists):
            began = time.perf_counter()
            body = _post(url)
            times.append((time.perf_counter() - began) * 1000)
        figures.list_ms = statistics.median(times) if times else None
        figures.list_max_ms = max(times) if times else None
        figures.rss_mb = _proc_mb(process.pid, "VmRSS")
        figures.peak_mb = _proc_mb(process.pid, "VmHWM")
        _listing_figures(body, figures)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def measure_spec(
    spec: Path, spec_root: Path | None, src: Path, *, serve: bool, lists: int, timeout: float, repeat: int = 1
) -> Figures:
    """Every figure of one spec under the sources ``src``; the compile is run ``repeat`` times (the fastest
    counts: the machine is shared, and a linearity ratio must not be one unlucky run)."""
    figures = Figures()
    with tempfile.TemporaryDirectory(prefix="anvil-scale-") as tmp:
        work = Path(tmp)
        manifest = work / "anvil.yaml"
        try:
            figures.operations = write_manifest(spec, spec_root, src, manifest, timeout)
        except RuntimeError as exc:
            figures.note = str(exc)
            return figures
        out = work / "bundle"
        arguments = ["compile", str(spec), "--manifest", str(manifest)]
        arguments += ["--service", "corpus", "--out", str(out), "--root", str(work), "--json"]
        if spec_root is not None:
            arguments += ["--spec-root", str(spec_root)]
        for _ in range(max(1, repeat)):
            if out.exists():
                shutil.rmtree(out)
            code, stdout, wall, peak = run_anvil(arguments, _env(src), timeout)
            if code == -9:
                figures.note = f"compile timeout after {timeout:.0f} s ({peak:.0f} MB)"
                return figures
            figures.compile_s = wall if figures.compile_s is None else min(figures.compile_s, wall)
            figures.compile_mb = peak if figures.compile_mb is None else max(figures.compile_mb, peak)
        try:
            summary = json.loads(stdout)
            figures.approved = int(summary.get("approved") or 0)
        except ValueError:
            figures.note = "compile printed no summary"
        if not (out / "air.json").is_file():
            figures.note = figures.note or "no bundle written"
            return figures
        figures.bundle_mb = _bundle_bytes(out) / 1e6
        if serve and figures.approved:
            measure_serve(out, src, figures, lists, timeout)
    return figures


# --- the synthetic spec ------------------------------------------------------------------------------


def synthetic_spec(operations: int, schemas: int = 90) -> dict[str, Any]:
    """An OpenAPI 3.0 document of ``operations`` operations over one cyclic graph of ``schemas`` schemas.

    Schema ``S<i>`` refers to ``S<i+1>`` (so every schema reaches every other), to two more further on
    (one as an "expandable" ``anyOf`` of an id string and the object, as payments APIs write it) and
    holds a list of a fourth. Operations cycle through read, list, create (a form-encoded body) and
    delete, each answering one schema of the graph.
    """
    components: dict[str, Any] = {}
    for i in range(schemas):

        def ref(k: int, i: int = i) -> dict[str, str]:
            return {"$ref": f"#/components/schemas/S{(i + k) % schemas}"}

        components[f"S{i}"] = {
            "type": "object",
            "description": f"Schema {i} of the shared graph.",
            "required": ["id", "object"],
            "properties": {
                "id": {"type": "string", "description": "Unique identifier."},
                "object": {"type": "string", "enum": [f"s{i}"]},
                "amount": {"type": "integer", "nullable": True},
                "created": {"type": "integer", "format": "unix-time"},
                "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                "next": ref(1),
                "related": {"anyOf": [{"type": "string", "maxLength": 5000}, ref(7)], "nullable": True},
                "parent": {"anyOf": [{"type": "string"}, ref(31)]},
                "items": {"type": "array", "items": ref(13)},
            },
        }
    paths: dict[str, Any] = {}
    for n in range(operations):
        target = f"#/components/schemas/S{n % schemas}"
        answer = {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": target}}}}}
        kind, group = n % 4, n // 4
        if kind == 0:
            paths.setdefault(f"/v1/r{group}/{{id}}", {})["get"] = {
                "operationId": f"GetR{group}",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": answer,
            }
        elif kind == 1:
            listing = {
                "type": "object",
                "properties": {"data": {"type": "array", "items": {"$ref": target}}, "has_more": {"type": "boolean"}},
            }
            paths.setdefault(f"/v1/r{group}", {})["get"] = {
                "operationId": f"ListR{group}",
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": listing}}}},
            }
        elif kind == 2:
            form = {
                "type": "object",
                "properties": {"name": {"type": "string"}, "amount": {"type": "integer"}},
                "required": ["name"],
            }
            paths.setdefault(f"/v1/r{group}", {})["post"] = {
                "operationId": f"CreateR{group}",
                "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": form}}},
                "responses": answer,
            }
        else:
            paths.setdefault(f"/v1/r{group}/{{id}}", {})["delete"] = {
                "operationId": f"DeleteR{group}",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": answer,
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Synthetic", "version": "1"},
        "servers": [{"url": "https://api.example.test"}],
        "paths": paths,
        "components": {"schemas": components},
    }


def measure_synthetic(size: int, src: Path, *, lists: int, timeout: float, repeat: int) -> Figures:
    """The figures of the synthetic spec of ``size`` operations (the compile the fastest of ``repeat``)."""
    with tempfile.TemporaryDirectory(prefix="anvil-synthetic-") as tmp:
        spec = Path(tmp) / f"synthetic-{size}.json"
        spec.write_text(json.dumps(synthetic_spec(size)), encoding="utf-8")
        return measure_spec(spec, None, src, serve=True, lists=lists, timeout=timeout, repeat=repeat)


# --- the table ----------------------------------------------------------------------------------------


def _f(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


COLUMNS = (
    ("approved", "ops", 0),
    ("compile_s", "compile s", 2),
    ("compile_mb", "MB", 0),
    ("bundle_mb", "bundle MB", 1),
    ("list_mb", "list MB", 2),
    ("ratio", "x bare", 2),
    ("unmarked", "unmarked", 0),
    ("over", "over", 0),
    ("first_s", "first s", 2),
    ("list_ms", "list ms", 0),
    ("list_max_ms", "max ms", 0),
    ("rss_mb", "RSS MB", 0),
    ("peak_mb", "peak MB", 0),
)


def print_table(rows: list[tuple[str, dict[str, Figures]]], labels: list[str]) -> None:
    """One line per spec and source tree."""
    head = f"{'spec':<34} {'tree':<7}" + "".join(f" {title:>9}" for _, title, _ in COLUMNS) + "  note"
    print(head)
    print("-" * len(head))
    for name, by_tree in rows:
        for label in labels:
            figures = by_tree.get(label)
            if figures is None:
                continue
            cells = "".join(f" {_f(getattr(figures, attr), digits):>9}" for attr, _, digits in COLUMNS)
            print(f"{name[:34]:<34} {label:<7}{cells}  {figures.note}")
    print()
    print(
        "ops: approved operations; compile s / MB: `anvil compile` wall time and peak RSS; list MB: one "
        "tools/list answer; x bare: its ratio to the same listing without outputSchema; over: tools over "
        "1200 tokens; unmarked: of those, the ones publishing an outputSchema without _meta "
        "anvil/output_schema; first s: serve start to the first tools/list answer; list ms: median (max) of "
        "the following tools/list; RSS / peak MB: the server after them."
    )


def _linearity(rows: list[tuple[str, dict[str, Figures]]], label: str) -> list[str]:
    by_size = {name: tree.get(label) for name, tree in rows}
    small, large = by_size.get("synthetic-400"), by_size.get("synthetic-800")
    if small is None or large is None:
        return []
    lines = []
    for attr, title in (("compile_s", "compile time"), ("list_mb", "tools/list bytes")):
        a, b = getattr(small, attr), getattr(large, attr)
        if a and b:
            verdict = "ok" if b <= 2.4 * a else "SUPER-LINEAR"
            lines.append(f"{label}: {title} 800/400 = {b / a:.2f} (target <= 2.4): {verdict}")
    return lines


def _archive(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into / "src"


def main(argv: list[str]) -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("filter", nargs="?", default="")
    parser.add_argument("--against", metavar="REV", help="also measure the sources of git revision REV")
    parser.add_argument("--baseline-src", metavar="DIR", type=Path, help="also measure the sources in DIR")
    parser.add_argument("--synthetic-only", action="store_true")
    parser.add_argument("--corpus-only", action="store_true")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--lists", type=int, default=10, help="tools/list answers timed after the first")
    parser.add_argument("--repeat", type=int, default=3, help="compiles of each synthetic spec (the fastest counts)")
    args = parser.parse_args(argv)
    corpus = corpus_dir()
    specs: list[tuple[str, Path, Path | None]] = []
    if not args.synthetic_only:
        index = corpus / "INDEX.tsv"
        if not index.is_file():
            print(f"corpus not found at {corpus} (set ANVIL_CORPUS)", file=sys.stderr)
            return 2
        with index.open(encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                if args.filter in row["file"]:
                    parts = Path(row["file"]).parts
                    specs.append((row["file"], corpus / row["file"], corpus / parts[0] if len(parts) > 1 else None))
        specs.sort(key=lambda item: item[1].stat().st_size)
    with tempfile.TemporaryDirectory(prefix="anvil-scale-src-") as tmp:
        trees: list[tuple[str, Path]] = []
        if args.against:
            trees.append(("before", _archive(args.against, Path(tmp))))
        elif args.baseline_src:
            trees.append(("before", args.baseline_src.resolve()))
        trees.append(("now", REPO / "src"))
        labels = [label for label, _ in trees]
        rows: list[tuple[str, dict[str, Figures]]] = []
        for name, spec, root in specs:
            by_tree = {
                label: measure_spec(spec, root, src, serve=True, lists=args.lists, timeout=args.timeout)
                for label, src in trees
            }
            rows.append((name, by_tree))
        if not args.corpus_only:
            for size in SYNTHETIC_SIZES:
                by_tree = {
                    label: measure_synthetic(size, src, lists=args.lists, timeout=args.timeout, repeat=args.repeat)
                    for label, src in trees
                }
                rows.append((f"synthetic-{size}", by_tree))
    print_table(rows, labels)
    for label in labels:
        for line in _linearity(rows, label):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
