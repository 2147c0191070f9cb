"""Tool search at scale: index build, memory, latency, self-retrieval and recall, per corpus spec and fleet.

    .venv/bin/python bench/discovery.py [--bundles DIR] [--queries FILE] [--recall-only] [FILTER]

Rows, every operation approved:

* each corpus spec (``ANVIL_CORPUS``, default ``../shared/corpus``), compiled the way ``bench/compile.py``
  compiles it (a manifest approving every operation, from ``bench/scale.py``'s ``write_manifest``), or,
  with ``--bundles DIR``, the bundles already compiled under ``DIR/<service>/`` (``/tmp/corpus-bundles``);
* ``fleet``: every corpus bundle served together, each tool under its prefixed wire name
  (``fleet_tool_name(<service>, <tool>)``);
* ``synthetic-800``: ``bench/scale.py``'s 800-operation spec; ``fleet+synthetic``: both (over 3,000 tools,
  the size the latency targets are set for).

Each row is measured in a fresh interpreter (its own memory, its own caches). Columns:

* ``tools``: the approved tools indexed;
* ``flat tok``, ``auto``, ``search tok``, ``ladder tok``: what ``tools/list`` shows at rest, in o200k tokens,
  when the row is served as one fleet: every tool (flat), the mode ``--disclosure auto`` picks, the three
  meta-tools (search), the lane cards and proxies (laddered; ``-`` when a ladder would not help and the
  surface falls back);
* ``build ms``: the index entries and the index, built as a gateway builds them at start-up;
  ``chains ms``: ``inputs_from`` over the row's documents;
* ``RSS MB``: the process's resident set after the build less before it (documents already loaded);
* ``p50``/``p99 ms``: ``search(query, 5)`` over 1,000 queries drawn deterministically, a quarter from the
  query set's tasks, the rest from the tools' own titles and descriptions (2 to 6 consecutive words);
* ``self %``: searches for each tool's exact name, operation id and ``METHOD /path`` that find it first
  (in a fleet, a ``METHOD /path`` several bundles share counts when the tool is among as many first);
* ``dev``/``held``/``all`` and ``p.dev``/``p.held``/``p.all``: recall@5 on the query set
  (``bench/discovery_queries.yaml``: a YAML list of ``{spec, task, gold}``), ours and plain BM25
  (``SearchIndex.build(..., plain=True)``): a task is a hit when a gold operation is among the first 5 of
  its spec's own index; in the fleet rows every task searches the whole fleet. The tasks are split once
  into a DEV half (the only tasks whose misses the ranking was tuned on) and a HELD-OUT half (never
  looked at while tuning: its figure is the honest one) by ``discovery_split.split_of``; ``all`` is both.
  ``tasks``: the tasks scored. Without the file these columns are left out.

``--recall-only`` measures only the build and recall, of the specs the query set names and their fleet (no
synthetic spec, no latency, no surfaces): a quick figure while working on the ranking.

A column is a :class:`Column` (header, width, how it reads the row's figures) and a measure is a
function of :class:`Row` returning figures: add both to :data:`COLUMNS` and :data:`MEASURES`.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from compile import corpus_dir, service_id
from discovery_split import DEV, HELD_OUT, split_of
from scale import synthetic_spec, write_manifest

REPO = Path(__file__).resolve().parent.parent
QUERIES = REPO / "bench" / "discovery_queries.yaml"
LATENCY_QUERIES = 1000
SYNTHETIC = "synthetic-800"
COMPILE_CHILD = r"""
import sys
from pathlib import Path
from anvil.cli.compile import compile_bundle
spec, out, service, manifest = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
spec_root = Path(sys.argv[5]) if sys.argv[5] else None
outcome = compile_bundle(spec, out=out, manifest=manifest, service_id=service, root=spec.parent, spec_root=spec_root)
sys.exit(0 if outcome.bundle_hash is not None else 1)
"""


# --- one row, in its own interpreter ------------------------------------------------------------------


@dataclass
class Row:
    """What a row's measures read: its bundles (id, document), whether names are prefixed, the tasks."""

    name: str
    bundles: list[tuple[str, Any]]
    prefixed: bool
    tasks: list[dict[str, Any]]
    fleet: bool
    all_tasks: list[dict[str, Any]] = field(default_factory=list)
    entries: list[Any] = field(default_factory=list)
    index: Any = None


def _rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _tool_names(row: Row) -> list[tuple[str, Any, str]]:
    """(bundle id, operation, wire name) of every approved operation of the row."""
    return [(bundle_id, op, name) for bundle_id, op, name, _ in _tools(row)]


def _tools(row: Row) -> list[tuple[str, Any, str, Any]]:
    """(bundle id, operation, wire name, document) of every approved operation of the row."""
    from anvil.serve.auth.naming import fleet_tool_name

    out = []
    for bundle_id, document in row.bundles:
        for op in document.operations:
            if op.is_approved:
                name = fleet_tool_name(bundle_id, op.mcp.tool_name) if row.prefixed else op.mcp.tool_name
                out.append((bundle_id, op, name, document))
    return out


def measure_build(row: Row) -> dict[str, Any]:
    """Entries and index as start-up builds them: time and resident memory added."""
    from anvil.serve.discovery.index import IndexEntry, SearchIndex

    gc.collect()
    before = _rss_mb()
    start = time.perf_counter()
    row.entries = [IndexEntry.of(op, name, document.schemas) for _, op, name, document in _tools(row)]
    row.index = SearchIndex.build(row.entries)
    build_ms = (time.perf_counter() - start) * 1000
    gc.collect()
    return {"tools": len(row.index), "build_ms": build_ms, "rss_mb": _rss_mb() - before}


def measure_chains(row: Row) -> dict[str, Any]:
    """``inputs_from`` over every document of the row."""
    from anvil.serve.discovery.chains import inputs_from

    names = {op.id: name for _, op, name in _tool_names(row)}
    start = time.perf_counter()
    for _, document in row.bundles:
        inputs_from(document, names.get)
    return {"chains_ms": (time.perf_counter() - start) * 1000}


def _latency_queries(row: Row) -> list[str]:
    rng = random.Random(20260730)
    tasks = [task["task"] for task in row.tasks] or [""]
    queries = []
    for n in range(LATENCY_QUERIES):
        if n % 4 == 0 and tasks != [""]:
            queries.append(tasks[(n // 4) % len(tasks)])
            continue
        entry = row.entries[rng.randrange(len(row.entries))]
        words = f"{entry.title} {entry.description}".split()
        size = rng.randint(2, 6)
        at = rng.randrange(max(1, len(words) - size + 1))
        queries.append(" ".join(words[at : at + size]))
    return queries


def measure_latency(row: Row) -> dict[str, Any]:
    """p50 and p99 of ``search(query, 5)``, in milliseconds."""
    if not row.entries:
        return {}
    times = []
    for query in _latency_queries(row):
        start = time.perf_counter()
        row.index.search(query, 5)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99) - 1]}


def measure_self(row: Row) -> dict[str, Any]:
    """The share of exact-name, operation-id and ``METHOD /path`` searches that find their tool first."""
    if not row.entries:
        return {}
    keys = [
        (tool.name, (tool.name, tool.operation_id, f"{tool.method} {tool.path}".casefold())) for tool in row.entries
    ]
    shared = Counter(route for _, (_, _, route) in keys)
    hits = 0
    for name, (tool_name, op_id, route) in keys:
        hits += row.index.search(tool_name, 1) == [name]
        hits += row.index.search(op_id, 1) == [name]
        hits += name in row.index.search(route, shared[route])
    return {"self_pct": 100.0 * hits / (3 * len(keys))}


def measure_recall(row: Row) -> dict[str, Any]:
    """recall@5 on the query set, ours and plain BM25, on the dev half, the held-out half and all
    (each task on its spec's index, or the whole fleet)."""
    from anvil.serve.discovery.index import SearchIndex

    if not row.tasks or not row.entries:
        return {}
    plain = SearchIndex.build(row.entries, plain=True)
    ids = {tool.name: tool.operation_id for tool in row.entries}
    halves = split_of(row.all_tasks)
    figures: dict[str, Any] = {"tasks": len(row.tasks)}
    for label, index in (("", row.index), ("p_", plain)):
        hits = {DEV: 0, HELD_OUT: 0}
        sizes = {DEV: 0, HELD_OUT: 0}
        for task in row.tasks:
            half = halves[task["task"]]
            sizes[half] += 1
            hits[half] += bool({ids[name] for name in index.search(task["task"], 5)} & set(task["gold"]))
        for half in (DEV, HELD_OUT):
            figures[f"{label}{half}"] = hits[half] / sizes[half] if sizes[half] else None
        figures[f"{label}all"] = (hits[DEV] + hits[HELD_OUT]) / len(row.tasks)
    return figures


def measure_surfaces(row: Row) -> dict[str, Any]:
    """The o200k tokens ``tools/list`` shows at rest in each disclosure mode, as ``anvil serve`` serves the
    row (one fleet over its bundles, an upstream that is never called), and the mode ``auto`` picks."""
    import httpx

    from anvil.runtime.context import RuntimeContext
    from anvil.serve.discovery.modes import DisclosureSettings, measure_listing
    from anvil.serve.fleet import Fleet, FleetBundle

    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(599)))
    bundles = [
        FleetBundle(
            id=bundle_id,
            document=document,
            context=RuntimeContext(service_id=document.service.id, base_url="http://x.invalid", client=client),
        )
        for bundle_id, document in row.bundles
    ]
    figures: dict[str, Any] = {}
    auto = Fleet(bundles, disclosure=DisclosureSettings(mode="auto")).default
    figures["auto"] = auto.surface.mode
    figures["flat_tokens"] = measure_listing(auto.flat_tools).tokens
    for mode in ("search", "laddered"):
        surface = Fleet(bundles, disclosure=DisclosureSettings(mode=mode)).default.surface  # type: ignore[arg-type]
        figures[f"{mode}_tokens"] = surface.at_rest().tokens if surface.mode == mode else None
    return figures


#: Measures run on each row, in order (a later one may read what an earlier one left on the row).
MEASURES: list[Callable[[Row], dict[str, Any]]] = [
    measure_build,
    measure_chains,
    measure_latency,
    measure_self,
    measure_recall,
    measure_surfaces,
]


#: The measures ``--recall-only`` runs.
RECALL_MEASURES: list[Callable[[Row], dict[str, Any]]] = [measure_build, measure_recall]


def run_row(
    name: str, folders: list[Path], prefixed: bool, queries: Path | None, fleet: bool, recall_only: bool = False
) -> dict[str, Any]:
    """Load the row's bundles and run every measure (in this interpreter; only build and recall if asked)."""
    from anvil.bundle.read import read_bundle

    bundles = [(folder.name, read_bundle(folder)) for folder in folders]
    tasks: list[dict[str, Any]] = []
    every: list[dict[str, Any]] = []
    if queries is not None:
        wanted = {bundle_id for bundle_id, _ in bundles}
        every = _load_tasks(queries)
        tasks = [task for task in every if fleet or task["spec"] in wanted]
    row = Row(name, bundles, prefixed, tasks, fleet, all_tasks=every)
    figures: dict[str, Any] = {}
    for measure in RECALL_MEASURES if recall_only else MEASURES:
        figures.update(measure(row))
    return figures


def _load_tasks(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    return [item for item in data if isinstance(item, dict) and {"spec", "task", "gold"} <= item.keys()]


# --- the table --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column: its header, its width, and how it reads a row's figures (``-`` when absent)."""

    header: str
    width: int
    cell: Callable[[dict[str, Any]], str]
    recall: bool = False


def _num(key: str, digits: int = 1, scale: float = 1.0) -> Callable[[dict[str, Any]], str]:
    def cell(figures: dict[str, Any]) -> str:
        value = figures.get(key)
        return "-" if value is None else f"{value * scale:.{digits}f}"

    return cell


COLUMNS: list[Column] = [
    Column("tools", 6, _num("tools", 0)),
    Column("flat tok", 10, _num("flat_tokens", 0)),
    Column("auto", 7, lambda figures: str(figures.get("auto", "-"))),
    Column("search tok", 10, _num("search_tokens", 0)),
    Column("ladder tok", 10, _num("laddered_tokens", 0)),
    Column("build ms", 9, _num("build_ms", 0)),
    Column("chains ms", 9, _num("chains_ms", 0)),
    Column("RSS MB", 7, _num("rss_mb", 1)),
    Column("p50 ms", 7, _num("p50_ms", 2)),
    Column("p99 ms", 7, _num("p99_ms", 2)),
    Column("self %", 7, _num("self_pct", 1)),
    Column("tasks", 6, _num("tasks", 0), recall=True),
    Column("dev", 6, _num("dev", 3), recall=True),
    Column("held", 6, _num("held", 3), recall=True),
    Column("all", 6, _num("all", 3), recall=True),
    Column("p.dev", 6, _num("p_dev", 3), recall=True),
    Column("p.held", 6, _num("p_held", 3), recall=True),
    Column("p.all", 6, _num("p_all", 3), recall=True),
]


def print_table(rows: list[tuple[str, dict[str, Any]]], with_recall: bool, only_measured: bool = False) -> None:
    columns = [column for column in COLUMNS if with_recall or not column.recall]
    if only_measured:
        columns = [column for column in columns if any(column.cell(figures) != "-" for _, figures in rows)]
    header = f"{'row':<28}" + "".join(f" {column.header:>{column.width}}" for column in columns) + "  note"
    print(header)
    print("-" * len(header))
    for name, figures in rows:
        cells = "".join(f" {column.cell(figures):>{column.width}}" for column in columns)
        print(f"{name:<28}{cells}  {figures.get('note', '')}")


# --- compiling the rows' bundles --------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src")}


def compile_spec(spec: Path, spec_root: Path | None, service: str, out: Path) -> str | None:
    """Compile ``spec`` with every operation approved into ``out``; None, or why it failed."""
    manifest = out.parent / f"{service}.anvil.yaml"
    try:
        write_manifest(spec, spec_root, REPO / "src", manifest, 600, service=service)
    except RuntimeError as exc:
        return str(exc)
    command = [sys.executable, "-c", COMPILE_CHILD, str(spec), str(out), service, str(manifest), str(spec_root or "")]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=_env(), timeout=900)
    return None if done.returncode == 0 and (out / "air.json").is_file() else "compile failed"


def corpus_bundles(work: Path, wanted: str) -> tuple[list[Path], list[tuple[str, str]]]:
    """Compile every corpus spec whose file name holds ``wanted``; the bundles and the failures."""
    corpus = corpus_dir()
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle, delimiter="\t") if wanted in row["file"]]
    folders, failed = [], []
    for row in sorted(rows, key=lambda r: int(r["bytes"])):
        parts = Path(row["file"]).parts
        spec_root = corpus / parts[0] if len(parts) > 1 else None
        service = service_id(row["file"])
        print(f"compiling {row['file']} ...", file=sys.stderr, flush=True)
        why = compile_spec(corpus / row["file"], spec_root, service, work / service)
        if why is None:
            folders.append(work / service)
        else:
            failed.append((service, why))
    return folders, failed


def measure_in_child(
    name: str, folders: list[Path], prefixed: bool, queries: Path | None, fleet: bool, recall_only: bool = False
) -> dict[str, Any]:
    """Run :func:`run_row` in a fresh interpreter; its figures, or a note saying why there are none."""
    row = {"name": name, "folders": [str(f) for f in folders], "prefixed": prefixed, "fleet": fleet}
    spec = json.dumps({**row, "recall_only": recall_only})
    command = [sys.executable, __file__, "--row", spec]
    if queries is not None:
        command += ["--queries", str(queries)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=_env(), timeout=1800)
    if done.returncode != 0 or not done.stdout.strip():
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"note": f"failed: {tail[:80]}"}
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str]) -> int:
    """Compile (or find) the bundles, measure each row in its own interpreter and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("filter", nargs="?", default="", help="only the corpus specs whose file name holds this")
    parser.add_argument("--bundles", type=Path, help="reuse the bundles compiled under DIR/<service>/")
    parser.add_argument("--queries", type=Path, default=QUERIES, help="the query set (default: %(default)s)")
    parser.add_argument(
        "--recall-only", action="store_true", help="only build and recall, of the query set's specs and their fleet"
    )
    parser.add_argument("--row", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    queries: Path | None = args.queries if args.queries.is_file() else None
    if args.row:
        row = json.loads(args.row)
        folders = [Path(folder) for folder in row["folders"]]
        figures = run_row(row["name"], folders, row["prefixed"], queries, row["fleet"], row.get("recall_only", False))
        print(json.dumps(figures))
        return 0
    if not (corpus_dir() / "INDEX.tsv").is_file() and args.bundles is None:
        print(f"corpus not found at {corpus_dir()} (set ANVIL_CORPUS)", file=sys.stderr)
        return 2
    if args.recall_only:
        return recall_only(args.bundles, queries, args.filter)
    rows: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="anvil-discovery-") as tmp:
        work = Path(tmp)
        failed: list[tuple[str, str]] = []
        if args.bundles is not None:
            found = sorted(p for p in args.bundles.iterdir() if (p / "air.json").is_file() and args.filter in p.name)
            folders = sorted(found, key=lambda p: (p / "air.json").stat().st_size)
        else:
            folders, failed = corpus_bundles(work, args.filter)
        synthetic_spec_file = work / f"{SYNTHETIC}.json"
        synthetic_spec_file.write_text(json.dumps(synthetic_spec(800)), encoding="utf-8")
        print(f"compiling {SYNTHETIC} ...", file=sys.stderr, flush=True)
        synthetic_failed = compile_spec(synthetic_spec_file, None, SYNTHETIC, work / SYNTHETIC)
        rows += [(folder.name, measure_in_child(folder.name, [folder], False, queries, False)) for folder in folders]
        rows += [(service, {"note": why}) for service, why in failed]
        if len(folders) > 1:
            rows.append(("fleet", measure_in_child("fleet", folders, True, queries, True)))
        if synthetic_failed is None:
            synthetic = work / SYNTHETIC
            rows.append((SYNTHETIC, measure_in_child(SYNTHETIC, [synthetic], False, None, False)))
            if folders:
                rows.append(
                    ("fleet+synthetic", measure_in_child("fleet+synthetic", [*folders, synthetic], True, queries, True))
                )
        else:
            rows.append((SYNTHETIC, {"note": synthetic_failed}))
    print_table(rows, queries is not None)
    if queries is None:
        print(f"(no query set at {args.queries}: recall columns left out)")
    return 0


def recall_only(bundles: Path | None, queries: Path | None, wanted: str) -> int:
    """``--recall-only``: build and recall of the bundles under ``bundles`` the query set names, and their fleet."""
    if bundles is None or queries is None:
        print("--recall-only needs --bundles DIR and the query set", file=sys.stderr)
        return 2
    specs = {task["spec"] for task in _load_tasks(queries)}
    found = (p for p in bundles.iterdir() if p.name in specs and wanted in p.name)
    folders = sorted(p for p in found if (p / "air.json").is_file())
    rows = [(folder.name, measure_in_child(folder.name, [folder], False, queries, False, True)) for folder in folders]
    if len(folders) > 1:
        rows.append(("fleet", measure_in_child("fleet", folders, True, queries, True, True)))
    print_table(rows, True, only_measured=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
