"""Gateway latency: per-call p50/p99 through ``anvil serve --http`` next to a direct httpx call, one run.

    .venv/bin/python bench/gateway.py [--calls N] [--warmup W] [--max-seconds S]

Three processes on loopback: the payments mock upstream (``examples/payments/mock_upstream.py``),
the gateway (``python -m anvil serve BUNDLE --http 127.0.0.1:0``, env ``prod`` with a SQLite ledger
and the mock as ``ANVIL_BASE_URL``) and this client. Rows, each N sequential calls after W warm-up
calls:

* read, direct: ``GET /customers/cus_123`` with one shared ``httpx.AsyncClient``;
* read, gateway: ``payments_get_customer`` through :class:`anvil.client.AnvilClient` (the official MCP
  client over Streamable HTTP, one session);
* keyed write, direct: ``POST /payments/pay_123/refunds`` with a fresh ``Idempotency-Key`` per call;
* keyed write, gateway: ``payments_create_refund`` with ``confirm`` and a fresh
  ``_meta.idempotency_key`` per call, so every call reserves and completes a SQLite ledger row.

Overhead is gateway minus direct at the same percentile. The write/read ratio compares the gateway
rows (the target: a keyed write through the SQLite ledger costs at most 1.2x a read). The loops are
bounded by N and by ``--max-seconds`` per row; only loopback addresses are used.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx

from anvil.client import AnvilClient

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "payments"
TOKEN = "bench-token"


def _start(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    if not line:
        process.kill()
        raise SystemExit(f"did not start: {' '.join(command[:4])}")
    return process, str(json.loads(line)["url"])


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _serve_mock() -> int:
    """``--mock``: serve the payments mock on a free loopback port and print ``{"url": ...}``.

    The socket is created with ``IPPROTO_TCP`` so asyncio sets ``TCP_NODELAY`` on accepted connections
    (it skips sockets whose protocol field is 0); without it a response written as headers then body
    stalls ~40 ms on the client's delayed ACK, which would swamp every number in the table.
    """
    import importlib.util
    import socket

    import uvicorn

    spec = importlib.util.spec_from_file_location("payments_mock_upstream", EXAMPLE / "mock_upstream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(json.dumps({"url": f"http://127.0.0.1:{sock.getsockname()[1]}"}), flush=True)
    server = uvicorn.Server(uvicorn.Config(module.create_app(), log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
    return 0


def _compile(out: Path) -> None:
    from anvil.cli.compile import compile_bundle

    outcome = compile_bundle(
        EXAMPLE / "openapi.yaml", out=out, manifest=EXAMPLE / "anvil.yaml", service_id="payments", root=REPO
    )
    if outcome.bundle_hash is None:
        raise SystemExit("the payments example did not compile")


def _token_variable(bundle: Path) -> str:
    from anvil.bundle.read import read_bundle
    from anvil.runtime.credentials import credential_profile, expected_env

    op = read_bundle(bundle).operation("payments.refunds.create")
    assert op is not None
    return expected_env(op.auth, credential_profile("default", op.auth))[0]


async def _series(call: Callable[[int], Awaitable[None]], calls: int, warmup: int, budget_s: float) -> list[float]:
    for index in range(warmup):
        await call(-1 - index)
    latencies: list[float] = []
    deadline = time.perf_counter() + budget_s
    for index in range(calls):
        started = time.perf_counter()
        await call(index)
        latencies.append((time.perf_counter() - started) * 1000)
        if time.perf_counter() > deadline:
            break
    return latencies


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


async def _measure(mock: str, gateway: str, calls: int, warmup: int, budget_s: float) -> dict[str, list[float]]:
    headers = {"authorization": f"Bearer {TOKEN}", "accept": "application/json"}
    refund = {"amount": 1, "currency": "EUR"}
    rows: dict[str, list[float]] = {}
    async with httpx.AsyncClient(base_url=mock, headers=headers) as http, AnvilClient.http(gateway) as client:

        async def direct_read(_: int) -> None:
            (await http.get("/customers/cus_123")).raise_for_status()

        async def direct_write(index: int) -> None:
            response = await http.post(
                "/payments/pay_123/refunds", json=refund, headers={"Idempotency-Key": f"d{index}"}
            )
            response.raise_for_status()

        async def gateway_read(_: int) -> None:
            await client.call("payments_get_customer", {"customer_id": "cus_123"})

        async def gateway_write(index: int) -> None:
            arguments = {"payment_id": "pay_123", **refund, "confirm": True}
            await client.call("payments_create_refund", arguments, idempotency_key=f"g{index}")

        rows["read, direct"] = await _series(direct_read, calls, warmup, budget_s)
        rows["read, gateway"] = await _series(gateway_read, calls, warmup, budget_s)
        await http.post("/__reset")
        rows["keyed write, direct"] = await _series(direct_write, calls, warmup, budget_s)
        await http.post("/__reset")
        rows["keyed write, gateway"] = await _series(gateway_write, calls, warmup, budget_s)
    return rows


def _table(rows: dict[str, list[float]]) -> str:
    lines = [
        "| call | n | p50 ms | p99 ms | overhead over direct p50 / p99 ms |",
        "|---|---|---|---|---|",
    ]
    for name, values in rows.items():
        p50, p99 = _percentile(values, 0.5), _percentile(values, 0.99)
        overhead = ""
        if name.endswith("gateway"):
            direct = rows[name.replace("gateway", "direct")]
            overhead = f"{p50 - _percentile(direct, 0.5):.2f} / {p99 - _percentile(direct, 0.99):.2f}"
        lines.append(f"| {name} | {len(values)} | {p50:.2f} | {p99:.2f} | {overhead} |")
    read, write = rows["read, gateway"], rows["keyed write, gateway"]
    ratio = _percentile(write, 0.5) / _percentile(read, 0.5)
    lines.append("")
    lines.append(f"keyed write / read through the gateway, p50: {ratio:.2f}x (target <= 1.2x)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per row (default 1000)")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls per row (default 50)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time bound per row (default 60)")
    parser.add_argument("--mock", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mock:
        return _serve_mock()
    if not 1 <= args.calls <= 4000:
        parser.error("--calls must be 1..4000 (each gateway write refunds 1 of the mock payment's 5000)")
    with tempfile.TemporaryDirectory(prefix="anvil-bench-") as scratch:
        bundle = Path(scratch) / "payments"
        _compile(bundle)
        base_env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
        mock_process, mock_url = _start([sys.executable, __file__, "--mock"], base_env)
        gateway_env = {
            **base_env,
            "ANVIL_ENV": "prod",
            "ANVIL_BASE_URL": mock_url,
            "ANVIL_LEDGER": f"sqlite:///{Path(scratch) / 'ledger.db'}",
            _token_variable(bundle): TOKEN,
        }
        command = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", "127.0.0.1:0"]
        gateway_process, gateway_url = _start(command, gateway_env)
        try:
            rows = anyio.run(_measure, mock_url, gateway_url, args.calls, args.warmup, args.max_seconds)
        finally:
            _stop(gateway_process)
            _stop(mock_process)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
