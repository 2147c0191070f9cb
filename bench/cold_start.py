"""Cold start alone, A/B: spawn ``anvil serve`` on the payments example until its first ``tools/list`` answer.

    .venv/bin/python bench/cold_start.py [--runs N] [--src DIR ...] [--fastmcp] [--instructions]

The method is ``bench/compare.py``'s cold-start row (its light client polls the port, then sends
``initialize``, the notification and ``tools/list``), without the rest of that run. Each ``--src`` is a
source tree (``src/`` of a checkout, default this one's) served in turn, run after run, so a shared
machine's load weighs on every tree alike; each tree is byte-compiled first, as a wheel install leaves
it. ``--fastmcp`` adds FastMCP ``from_openapi`` on the same spec (from ``.bench-venv``, as
``compare.py`` makes it) for the ratio. Each row prints the median and the minimum in ms and the
listing's digest (the trees must answer the same bytes). ``--instructions`` instead counts, under
valgrind's callgrind, the instructions each tree runs from spawn to the first listing (independent of
the machine's load; about 40 s a tree).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import glob
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from compare import FASTMCP_SERVER, PAYMENTS, REPO, LightSession, _ensure_fastmcp, _stop
from gateway import _compile, _token_variable


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _listed(process: subprocess.Popen[bytes], port: int, poll_s: float) -> bytes:
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the server exited at start-up ({process.returncode})")
        session = LightSession(port)
        try:
            await session.open()
            listed = await session.rpc("tools/list")
            return json.dumps(listed, sort_keys=True).encode()
        except (OSError, RuntimeError, asyncio.IncompleteReadError, KeyError):
            await asyncio.sleep(poll_s)
        finally:
            await session.close()


async def _cold(command: list[str], env: dict[str, str], port: int) -> tuple[float, str]:
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        listed = await _listed(process, port, 0.005)
        return (time.perf_counter() - started) * 1000, hashlib.sha256(listed).hexdigest()[:12]
    finally:
        _stop(process)


async def _instructions(command: list[str], env: dict[str, str], port: int, scratch: Path) -> int:
    out = scratch / f"callgrind-{port}"
    wrapped = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no", *command]
    process = subprocess.Popen(wrapped, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await _listed(process, port, 0.02)
        subprocess.run(["callgrind_control", "-d", str(process.pid)], stdout=subprocess.DEVNULL, check=True)
        time.sleep(0.5)
    finally:
        _stop(process)
    for dump in sorted(glob.glob(f"{out}.*")):  # the dump taken at the first listing
        for line in Path(dump).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit("callgrind wrote no dump")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="spawns per tree (default 20)")
    parser.add_argument("--src", action="append", type=Path, help="a source tree to serve (repeatable)")
    parser.add_argument("--fastmcp", action="store_true", help="add FastMCP from .bench-venv for the ratio")
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind), once a tree")
    args = parser.parse_args(argv)
    if not 1 <= args.runs <= 200:
        parser.error("--runs 1..200")
    trees = [path.resolve() for path in (args.src or [REPO / "src"])]
    for tree in trees:
        compileall.compile_dir(tree / "anvil", quiet=1)  # bytecode, as an installed wheel has it
    with tempfile.TemporaryDirectory(prefix="anvil-cold-") as scratch:
        folder = Path(scratch)
        bundle = _compile(folder / "workspace")["payments"]
        base = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
        base["PYTHONDONTWRITEBYTECODE"] = "1"
        rows: dict[str, tuple[list[str], dict[str, str]]] = {}
        for index, tree in enumerate(trees):
            env = {
                **base,
                "PYTHONPATH": str(tree),
                "ANVIL_ENV": "prod",
                "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
                "ANVIL_BASE_URL": "http://127.0.0.1:9",
                "ANVIL_LEDGER": f"sqlite:///{folder / f'ledger-{index}.db'}",
                _token_variable(bundle): "bench-token",
            }
            rows[str(tree)] = ([sys.executable, "-m", "anvil", "serve", str(bundle), "--http"], env)
        if args.fastmcp and not args.instructions:
            spec = folder / "payments.json"
            spec.write_text(json.dumps(yaml.safe_load((PAYMENTS / "openapi.yaml").read_text())), encoding="utf-8")
            script = folder / "fastmcp_server.py"
            script.write_text(FASTMCP_SERVER, encoding="utf-8")
            rows["FastMCP"] = ([str(_ensure_fastmcp()), str(script), str(spec), "http://127.0.0.1:9"], base)

        def command(label: str, port: int) -> list[str]:
            head, _env = rows[label]
            if label == "FastMCP":
                return [*head, str(port), "bench-token", "stateless"]
            return [*head, f"127.0.0.1:{port}"]

        if args.instructions:
            for label, (_head, env) in rows.items():
                port = _free_port()
                count = asyncio.run(_instructions(command(label, port), env, port, folder))
                print(f"{label}: {count:,} instructions to the first tools/list")
            return 0
        times: dict[str, list[float]] = {label: [] for label in rows}
        digests: dict[str, set[str]] = {label: set() for label in rows}
        for _ in range(args.runs):
            for label, (_head, env) in rows.items():
                port = _free_port()
                elapsed, digest = asyncio.run(_cold(command(label, port), env, port))
                times[label].append(elapsed)
                digests[label].add(digest)
        for label, found in times.items():
            median = statistics.median(found)
            shown = f"median {median:.0f} ms, min {min(found):.0f} ms, n={len(found)}"
            print(f"{label}: {shown}, listing {sorted(digests[label])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
