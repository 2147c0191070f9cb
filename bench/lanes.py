"""Time the proof lanes on the examples and on the largest corpus specs, and print tables.

Usage: ``python bench/lanes.py [--runs N] [--corpus DIR] [--specs N] [--time-cap S]``.

**Examples** (the budget: all lanes on github-mini under 60 s). The example is compiled once
into a temporary directory; each lane then runs as its CLI would, in a fresh ``python -m anvil``
process, so interpreter start, imports and child processes are counted. Everything stays on
127.0.0.1.

Lanes measured here: ``mock`` (start ``anvil mock``, answer a create, a get and a list, stop it with
SIGTERM), ``certify``, ``selftest`` (which starts its own mock and gateway), ``conformance`` (two
mocks, a gateway and one ``anvil run`` child per call), ``simulate`` (in process) and ``status`` (which
then reads the four fresh records). Add a lane by
appending to :data:`LANES` a name and the ``anvil`` arguments after the bundle, or a function taking the
bundle and returning seconds.

**Corpus** (the budget: at most 0.3 s per approved operation for selftest, conformance and simulate).
The ``--specs`` largest specs of ``--corpus`` (default ``$ANVIL_CORPUS``; by operation count in its
``INDEX.tsv``) each get a manifest from ``anvil init SPEC --approve all --propose-effects`` (and the
auth choice :data:`INIT_CHOICES` names for it) and a bundle
from ``anvil compile``; then ``selftest``, ``conformance`` and ``simulate`` run on it as the CLI would
(``--quiet``), and the table shows each lane's wall time, its cost per approved operation and the peak
RSS of the largest process in the lane's process tree (``wait4``'s ``ru_maxrss``). The payments and
github-mini examples get the same table. ``--time-cap`` passes a cap to each lane (its record is then
partial and the cost is per operation it ran).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "github-mini"

#: How long one lane may take before the bench calls it a failure (the issue's budget for all lanes).
BUDGET_S = 60.0
#: The budget per approved operation for the operation-driving lanes.
PER_OPERATION_BUDGET_S = 0.3
#: The lanes measured per operation, with the record each writes.
OPERATION_LANES = {
    "selftest": "selftest.report.json",
    "conformance": "conformance.report.json",
    "simulate": "simulation.report.json",
}


def _env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}


def compile_example(out: Path) -> Path:
    """Compile github-mini into ``out`` with ``anvil compile``."""
    spec, manifest = str(EXAMPLE / "openapi.yaml"), str(EXAMPLE / "anvil.yaml")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "anvil",
            "compile",
            spec,
            "--manifest",
            manifest,
            "--service",
            "github",
            "--out",
            str(out),
            "--root",
            str(REPO),
        ],
        check=True,
        capture_output=True,
        env=_env(),
    )
    return out


def _request(url: str, method: str = "GET", body: object | None = None) -> object:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
        return json.loads(answer.read() or b"null")


def mock_lane(bundle: Path) -> float:
    """Seconds to start ``anvil mock``, answer a create, a get and a list, and stop on SIGTERM."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "anvil", "mock", str(bundle), "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env()) as child:
        assert child.stdout is not None
        url = json.loads(child.stdout.readline())["url"]
        issue = _request(f"{url}/repos/o/r/issues", "POST", {"title": "bench"})
        assert isinstance(issue, dict)
        _request(f"{url}/repos/o/r/issues/{issue['number']}")
        _request(f"{url}/repos/o/r/issues")
        child.send_signal(signal.SIGTERM)
        if child.wait(timeout=30) != 0:
            raise RuntimeError("anvil mock did not stop cleanly")
    return time.perf_counter() - start


def cli_lane(*arguments: str) -> Callable[[Path], float]:
    """A lane that runs ``anvil <arguments[0]> BUNDLE <arguments[1:]>`` and must exit 0."""

    def lane(bundle: Path) -> float:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "anvil", arguments[0], str(bundle), *arguments[1:]],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=BUDGET_S * 2,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"anvil {arguments[0]} exited {done.returncode}: {done.stderr.strip()[-300:]}")
        return time.perf_counter() - start

    return lane


#: The lanes, in the order they run.
LANES: list[tuple[str, Callable[[Path], float]]] = [
    ("mock", mock_lane),
    ("certify", cli_lane("certify", "--json")),
    ("selftest", cli_lane("selftest")),
    ("conformance", cli_lane("conformance", "--json")),
    ("simulate", cli_lane("simulate", "--json")),
    ("status", cli_lane("status", "--json")),
]


@dataclass(frozen=True)
class LaneCost:
    """One lane run on one bundle: wall seconds, operations it ran, peak RSS (MiB) and its exit status."""

    spec: str
    lane: str
    approved: int
    ran: int
    wall_s: float
    peak_rss_mib: float
    status: int

    @property
    def per_operation_s(self) -> float:
        return self.wall_s / self.ran if self.ran else float("nan")


def _timed(command: list[str], timeout: float) -> tuple[float, float, int]:
    """``(wall seconds, peak RSS MiB of the largest process in the tree, exit status)`` of ``command``."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.05)
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, child.returncode


def _ran(bundle: Path, lane: str, approved: int) -> int:
    try:
        record = json.loads((bundle / OPERATION_LANES[lane]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    incomplete = record.get("incomplete")
    return int(incomplete["operationsRun"]) if isinstance(incomplete, dict) else approved


def measure_bundle(spec: str, bundle: Path, time_cap: float | None) -> list[LaneCost]:
    """Run the three operation-driving lanes on ``bundle`` and measure each."""
    from anvil.bundle.read import read_bundle

    approved = sum(1 for op in read_bundle(bundle).operations if op.is_approved)
    out = []
    for lane in OPERATION_LANES:
        command = [sys.executable, "-m", "anvil", lane, str(bundle), "--quiet"]
        if time_cap is not None:
            command += ["--time-cap", str(time_cap)]
        wall, rss, status = _timed(command, timeout=(time_cap or 3600) + 300)
        out.append(LaneCost(spec, lane, approved, _ran(bundle, lane, approved), wall, rss, status))
    return out


def largest_specs(corpus: Path, count: int) -> list[tuple[str, int]]:
    """The ``count`` specs of ``corpus/INDEX.tsv`` with the most operations, as ``(file, operations)``."""
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        rows = [(row["file"], int(row["operations"])) for row in csv.DictReader(handle, delimiter="\t")]
    return sorted(rows, key=lambda row: -row[1])[:count]


#: A reviewer's auth choice per corpus spec whose operations are otherwise served nowhere: Jira, Asana and
#: Sentry (its user feedback) offer alternatives the compiler does not choose between; Slack and Netlify
#: only an end-user OAuth flow, served as a bearer token obtained out of band (a reviewed override).
#: Plaid needs no choice: its three keys at once are one composite auth, every key sent on each call.
INIT_CHOICES: dict[str, tuple[str, ...]] = {
    "jira-platform.json": ("--auth-scheme", "basicAuth"),
    "asana.yaml": ("--auth-scheme", "personalAccessToken"),
    "sentry-derefed.json": ("--auth-scheme", "auth_token"),
    **{
        spec: ("--auth-scheme", scheme, "--auth-type", "bearer", "--auth-reason", "Tokens minted out of band.")
        for spec, scheme in (("slack-web-api.json", "slackAuth"), ("netlify.yml", "netlifyAuth"))
    },
}


def prepare_spec(corpus: Path, name: str, work: Path) -> Path:
    """``anvil init --approve all --propose-effects`` (with the spec's :data:`INIT_CHOICES`) then
    ``anvil compile``; the bundle directory."""
    spec = corpus / name
    service = "".join(ch for ch in Path(name).stem.split("-")[0].lower() if ch.isalnum()) or "api"
    manifest = work / f"{service}.anvil.yaml"
    bundle = work / service
    anvil = [sys.executable, "-m", "anvil"]
    init = [*anvil, "init", str(spec), "--service", service, "--out", str(manifest), "--approve", "all"]
    choices = INIT_CHOICES.get(name, ())
    subprocess.run([*init, "--propose-effects", "--force", *choices], check=True, capture_output=True, env=_env())
    compiled = [*anvil, "compile", str(spec), "--manifest", str(manifest), "--service", service, "--out", str(bundle)]
    subprocess.run(compiled, check=False, capture_output=True, env=_env())
    if not (bundle / "air.json").is_file():
        raise RuntimeError(f"anvil compile wrote no bundle for {name}")
    return bundle


def print_costs(costs: list[LaneCost], *, judged: bool = True) -> bool:
    """Print the per-operation table; True when every lane is within the per-operation budget (or not ``judged``:
    on a few operations the children's start-up dominates, so the examples' cost is shown, not judged)."""
    print(f"{'spec':<28} {'lane':<12} {'approved':>8} {'ran':>5} {'wall s':>8} {'s/op':>6} {'peak MiB':>9} {'exit':>4}")
    ok = True
    for cost in costs:
        within = cost.per_operation_s <= PER_OPERATION_BUDGET_S or not judged
        ok = ok and within
        print(
            f"{cost.spec:<28} {cost.lane:<12} {cost.approved:>8} {cost.ran:>5} {cost.wall_s:>8.1f} "
            f"{cost.per_operation_s:>6.3f} {cost.peak_rss_mib:>9.0f} {cost.status:>4}{'' if within else '  OVER'}"
        )
    if judged:
        print(f"(budget: {PER_OPERATION_BUDGET_S} s per operation run: {'ok' if ok else 'OVER'})")
    else:
        print("(start-up included: not judged against the per-operation budget)")
    return ok


def main(argv: list[str] | None = None) -> int:
    """Print the examples' lane table and the corpus per-operation table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per example lane (default 1)")
    parser.add_argument("--corpus", default=os.environ.get("ANVIL_CORPUS"), help="the corpus folder (INDEX.tsv)")
    parser.add_argument("--specs", type=int, default=3, help="how many of the largest corpus specs (default 3)")
    parser.add_argument("--time-cap", type=float, default=None, help="a --time-cap for each corpus lane run")
    parser.add_argument("--skip-examples", action="store_true", help="only the corpus table")
    args = parser.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory(prefix="anvil-lanes-") as tmp:
        if not args.skip_examples:
            ok = examples_table(Path(tmp), args.runs) and ok
            costs = []
            for example, service in (("payments", "payments"), ("github-mini", "github")):
                bundle = compile_named(example, service, Path(tmp) / f"costs-{service}")
                costs += measure_bundle(example, bundle, None)
            print()
            print_costs(costs, judged=False)
        if args.corpus:
            corpus = Path(args.corpus)
            costs = []
            for name, _operations in largest_specs(corpus, args.specs):
                bundle = prepare_spec(corpus, name, Path(tmp))
                costs += measure_bundle(name, bundle, args.time_cap)
            print()
            ok = print_costs(costs) and ok
    return 0 if ok else 1


def compile_named(example: str, service: str, out: Path) -> Path:
    """Compile ``examples/<example>`` into ``out``."""
    folder = REPO / "examples" / example
    command = [sys.executable, "-m", "anvil", "compile", str(folder / "openapi.yaml"), "--manifest"]
    command += [str(folder / "anvil.yaml"), "--service", service, "--out", str(out), "--root", str(REPO)]
    subprocess.run(command, check=True, capture_output=True, env=_env())
    return out


def examples_table(tmp: Path, runs: int) -> bool:
    """Print ``lane | runs | median s | max s`` on github-mini and the total of the medians against the budget."""
    bundle = compile_example(tmp / "github")
    rows = []
    for name, lane in LANES:
        times = [lane(bundle) for _ in range(max(1, runs))]
        rows.append((name, len(times), statistics.median(times), max(times)))
    print(f"{'lane':<12} {'runs':>4} {'median s':>9} {'max s':>7}")
    for name, count, median, worst in rows:
        print(f"{name:<12} {count:>4} {median:>9.2f} {worst:>7.2f}")
    total = sum(row[2] for row in rows)
    print(f"{'total':<12} {'':>4} {total:>9.2f}   (budget {BUDGET_S:.0f} s: {'ok' if total < BUDGET_S else 'OVER'})")
    return total < BUDGET_S


if __name__ == "__main__":
    sys.exit(main())
