"""Time the proof lanes on the github-mini example and print a table (the budget: all lanes under 60 s).

Usage: ``python bench/lanes.py [--runs N]`` (default 1 run per lane). The example is compiled once
into a temporary directory; each lane then runs as its CLI would, in a fresh ``python -m anvil``
process, so interpreter start, imports and child processes are counted. Everything stays on
127.0.0.1.

Lanes measured here: ``mock`` (start ``anvil mock``, answer a create, a get and a list, stop it with
SIGTERM), ``certify``, ``selftest`` (which starts its own mock and gateway), ``conformance`` (two
mocks, a gateway and one ``anvil run`` child per call), ``simulate`` (in process) and ``status`` (which
then reads the four fresh records). Add a lane by
appending to :data:`LANES` a name and the ``anvil`` arguments after the bundle, or a function taking the
bundle and returning seconds.
"""

from __future__ import annotations

import argparse
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "github-mini"

#: How long one lane may take before the bench calls it a failure (the issue's budget for all lanes).
BUDGET_S = 60.0


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


def main(argv: list[str] | None = None) -> int:
    """Print ``lane | runs | median s | max s`` and the total of the medians against the budget."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per lane (default 1)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="anvil-lanes-") as tmp:
        bundle = compile_example(Path(tmp) / "github")
        rows = []
        for name, lane in LANES:
            times = [lane(bundle) for _ in range(max(1, args.runs))]
            rows.append((name, len(times), statistics.median(times), max(times)))
    print(f"{'lane':<12} {'runs':>4} {'median s':>9} {'max s':>7}")
    for name, runs, median, worst in rows:
        print(f"{name:<12} {runs:>4} {median:>9.2f} {worst:>7.2f}")
    total = sum(row[2] for row in rows)
    print(f"{'total':<12} {'':>4} {total:>9.2f}   (budget {BUDGET_S:.0f} s: {'ok' if total < BUDGET_S else 'OVER'})")
    return 0 if total < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
