"""Hostile patterns and forms against a served gateway: the event loop's worst stall, and RE2's per-call cost.

    .venv/bin/python bench/patterns.py [--quick]

Part 1 serves a small bundle with ``anvil serve BUNDLE --http 127.0.0.1:0`` (``ANVIL_ENV=dev``) in front
of a loopback upstream run by this process, and, while a poller reads ``GET /healthz`` every 2 ms on its
own connection, sends each hostile call over MCP (the official client, Streamable HTTP):

* an argument against the slug pattern ``^([a-z0-9]+-?)+$`` that does not match (``a...a!``: 20 to 40
  characters, and 512 KiB); with Python's ``re`` a 27-character one froze the gateway for 17.6 s;
* an answer against the same pattern (25 and 40 characters, and 1 MiB);
* a dry run of a multipart upload whose value is the 1 MiB chain of boundaries the old field-name
  derivation tried in turn (4.7 s of a frozen loop before).

Each row prints the call's latency and the worst ``/healthz`` latency while it ran (the loop's stall as
a client sees it; the target is at most 50 ms), the median of three runs. ``re (before)`` is Python's
``re.search`` on the same pattern and text, measured for the short texts only (it doubles per character).

Part 2 times one ``search`` of ordinary corpus patterns on typical texts: Python's ``re`` (what the
gateway used) against :func:`anvil.air.patterns.schema_pattern` (RE2), best of 5 runs; the difference
is the per-call overhead of the linear engine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import timeit
from pathlib import Path
from typing import Any

import anyio
import httpx

from anvil.air.patterns import schema_pattern
from anvil.client import AnvilClient

REPO = Path(__file__).resolve().parent.parent
SLUG = r"^([a-z0-9]+-?)+$"
#: Python's re is run on texts at most this long (each character doubles its time).
RE_MAX = 23
#: Each row runs this many times; the table shows the median run (the machine may be shared).
RUNS = 3
SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Hostile", "version": "1"},
    "servers": [{"url": "https://hostile.example.com"}],
    "paths": {
        "/slugs": {
            "get": {
                "operationId": "findSlug",
                "parameters": [{"name": "slug", "in": "query", "required": True, "schema": {"pattern": SLUG}}],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/things": {
            "get": {
                "operationId": "getThing",
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"slug": {"type": "string", "pattern": SLUG}},
                                }
                            }
                        },
                    }
                },
            }
        },
        "/uploads": {
            "post": {
                "operationId": "createUpload",
                "requestBody": {
                    "required": True,
                    "content": {
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "required": ["note"],
                                "properties": {"note": {"type": "string"}},
                            }
                        }
                    },
                },
                "responses": {"201": {"description": "ok"}},
            }
        },
    },
}
MANIFEST = """service:
  name: hostile
operations:
  findSlug: { state: approved }
  getThing: { state: approved }
  createUpload: { state: approved, confirmation: { required: false } }
"""
_ANSWER: dict[str, Any] = {"slug": "ok"}


def _upstream() -> str:
    """A loopback upstream answering ``GET /things`` with :data:`_ANSWER` (set per row), anything else ``{}``."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def answer(request: Request) -> Response:
        body = json.dumps(_ANSWER if request.url.path == "/things" else {})
        return Response(body, media_type="application/json")

    app = Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _compile(folder: Path) -> Path:
    from anvil.cli.compile import compile_bundle

    (folder / "hostile.json").write_text(json.dumps(SPEC), encoding="utf-8")
    (folder / "anvil.yaml").write_text(MANIFEST, encoding="utf-8")
    out = folder / "hostile"
    outcome = compile_bundle(
        folder / "hostile.json", out=out, manifest=folder / "anvil.yaml", service_id="hostile", root=folder
    )
    if outcome.bundle_hash is None:
        raise SystemExit("the hostile bundle did not compile")
    return out


def _serve(bundle: Path, upstream: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "ANVIL_ENV": "dev", "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", "127.0.0.1:0", "--base-url", upstream]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    if not line:
        process.kill()
        raise SystemExit("anvil serve did not start")
    return process, str(json.loads(line)["url"])


def _old_boundary_chain(names: str, size: int) -> str:
    """The boundaries the field-name derivation tried in turn, joined up to ``size`` characters."""
    digest = hashlib.sha256(names.encode("utf-8"))
    chain: list[str] = []
    total = 0
    while total < size:
        chain.append("anvil-" + digest.hexdigest()[:32])
        total += len(chain[-1])
        digest.update(b"\0")
    return "".join(chain)


def _re_ms(text: str) -> str:
    if len(text) > RE_MAX:
        return "-"
    started = time.perf_counter()
    re.search(SLUG, text)
    return f"{(time.perf_counter() - started) * 1000:.0f}"


async def _stalls(url: str, quick: bool) -> list[tuple[str, str, str, float, float, str]]:
    health = url.removesuffix("/mcp") + "/healthz"
    tools = {"input": "hostile_find_slug", "answer": "hostile_get_thing", "form": "hostile_create_upload"}
    rows: list[tuple[str, str, str, float, float, str]] = []
    inputs = [20, 27, 40] if quick else [20, 22, 25, 27, 30, 35, 40]
    answers = [25, 40]
    async with AnvilClient.http(url, timeout=120) as client, httpx.AsyncClient(timeout=120) as poll:
        listed = {str(tool["name"]) for tool in await client.list_tools()}
        missing = set(tools.values()) - listed
        if missing:
            raise SystemExit(f"the gateway does not serve {sorted(missing)}")
        worst = [0.0]
        running = [True]

        async def poller() -> None:
            while running[0]:
                started = time.perf_counter()
                await poll.get(health)
                worst[0] = max(worst[0], time.perf_counter() - started)
                await anyio.sleep(0.002)

        async def row(scenario: str, size: str, tool: str, arguments: dict[str, Any], before: str) -> None:
            runs: list[tuple[float, float]] = []
            code = "?"
            for _ in range(RUNS):
                await anyio.sleep(0.05)
                worst[0] = 0.0
                started = time.perf_counter()
                answer = await client.call_result(tool, arguments)
                took = time.perf_counter() - started
                await anyio.sleep(0.01)
                code = str((answer.envelope or {}).get("error", {}).get("code", "?")) if answer.is_error else "ok"
                runs.append((worst[0] * 1000, took * 1000))
            stall, took_ms = sorted(runs)[len(runs) // 2]
            rows.append((scenario, size, code, took_ms, stall, before))

        async with anyio.create_task_group() as group:
            group.start_soon(poller)
            for tool, arguments in ((tools["input"], {"slug": "a-b"}), (tools["answer"], {})):
                await client.call_result(tool, arguments)  # warm: each tool's checks are compiled on first use
            await row("ordinary call (baseline)", "-", tools["input"], {"slug": "a-b"}, "-")
            for length in inputs:
                text = "a" * length + "!"
                await row("argument vs slug pattern", f"{length} ch", tools["input"], {"slug": text}, _re_ms(text))
            big = "a" * (512 << 10) + "!"
            await row("argument vs slug pattern", "512 KiB", tools["input"], {"slug": big}, "-")
            for length in answers:
                _ANSWER["slug"] = "a" * length + "!"
                await row("answer vs slug pattern", f"{length} ch", tools["answer"], {}, _re_ms(_ANSWER["slug"]))
            _ANSWER["slug"] = "a" * (1 << 20) + "!"
            await row("answer vs slug pattern", "1 MiB", tools["answer"], {}, "-")
            chain = _old_boundary_chain("note", 900 << 10)  # under the 1 MiB /mcp body limit
            await row(
                "multipart dry run, boundary chain",
                "900 KiB",
                tools["form"],
                {"note": chain, "anvil_dry_run": True},
                "-",
            )
            running[0] = False
            group.cancel_scope.cancel()
    return rows


ORDINARY = [
    (r"^[a-z0-9-]+$", "my-project-42"),
    (r"^\d{4}-\d{2}-\d{2}$", "2030-01-31"),
    (r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", "3f2b8c1e-9d4a-4b7e-8f00-1234567890ab"),
    (r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$", "someone@example.com"),
    (r"^(?![0-9]+$)[a-z0-9_\-]+$", "project_42"),  # a leading lookahead: two RE2 searches
    (r"^\+?[1-9]\d{1,14}$", "+15550100123"),
]


def _overhead() -> list[tuple[str, float, float]]:
    out = []
    for pattern, text in ORDINARY:
        python = re.compile(pattern)
        linear = schema_pattern(pattern)
        assert bool(python.search(text)) == linear.search(text)
        number = 20000
        re_ns = min(timeit.repeat(lambda p=python, t=text: p.search(t), number=number, repeat=5)) / number * 1e9
        re2_ns = min(timeit.repeat(lambda m=linear, t=text: m.search(t), number=number, repeat=5)) / number * 1e9
        out.append((pattern, re_ns, re2_ns))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer argument lengths")
    quick = parser.parse_args().quick
    overhead = _overhead()  # first: the servers' threads would share the interpreter with the timing loop
    with tempfile.TemporaryDirectory() as folder:
        bundle = _compile(Path(folder))
        process, url = _serve(bundle, _upstream())
        try:
            rows = anyio.run(_stalls, url, quick)
        finally:
            process.terminate()
            process.wait(timeout=10)
    print("Event loop stall while the gateway checks hostile input (target: worst /healthz <= 50 ms), median of 3")
    print(
        f"{'scenario':<34} {'size':>8} {'answer':>17} {'call ms':>8} {'worst /healthz ms':>18} {'re (before) ms':>15}"
    )
    for scenario, size, code, call_ms, stall_ms, before in rows:
        print(f"{scenario:<34} {size:>8} {code:>17} {call_ms:>8.1f} {stall_ms:>18.1f} {before:>15}")
    print()
    print("Per-call cost of one search on ordinary patterns (best of 5)")
    print(f"{'pattern':<66} {'re ns':>8} {'RE2 ns':>8} {'overhead ns':>12}")
    for pattern, re_ns, re2_ns in overhead:
        shown = pattern if len(pattern) <= 64 else pattern[:61] + "..."
        print(f"{shown:<66} {re_ns:>8.0f} {re2_ns:>8.0f} {re2_ns - re_ns:>12.0f}")


if __name__ == "__main__":
    main()
