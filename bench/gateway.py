"""Gateway latency: per-call p50/p99 over MCP and REST, single bundle and two-bundle fleet, next to direct, one run.

    .venv/bin/python bench/gateway.py [--calls N] [--warmup W] [--max-seconds S]

Five processes on loopback: the payments and github-mini mock upstreams, two gateways and this client.
The gateways run with env ``prod``, a SQLite ledger each and the mocks as their upstreams:

* the single-bundle gateway, ``python -m anvil serve PAYMENTS_BUNDLE --http 127.0.0.1:0``;
* the fleet, ``python -m anvil serve WORKSPACE --http 127.0.0.1:0`` over a workspace holding both
  examples, so its tools are prefixed (``payments__payments_get_customer``) and each call crosses the
  fleet hop; inbound auth ``none`` (loopback).

Rows, each N sequential calls after W warm-up calls, all against the payments mock:

* read, direct: ``GET /customers/cus_123`` with one shared ``httpx.AsyncClient``;
* read, MCP: ``payments_get_customer`` through :class:`anvil.client.AnvilClient` (the official MCP client
  over Streamable HTTP, one session), on the single-bundle gateway and on the fleet;
* read, REST: ``POST /call/payments__payments_get_customer`` on the fleet with one shared httpx client;
* keyed write, direct: ``POST /payments/pay_123/refunds`` with a fresh ``Idempotency-Key`` per call;
* keyed write, MCP and REST: ``payments_create_refund`` with ``confirm`` and a fresh ledger id per call
  (``_meta.idempotency_key``, or the ``Idempotency-Key`` header over REST), so every call reserves and
  completes a SQLite ledger row.

Overhead is the row minus direct at the same percentile. The write/read ratio compares each surface's
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
from contextlib import ExitStack
from pathlib import Path

import anyio
import httpx

from anvil.client import AnvilClient

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = {"payments": REPO / "examples" / "payments", "github": REPO / "examples" / "github-mini"}
TOKEN = "bench-token"
REFUND = {"amount": 1, "currency": "EUR"}
#: Measured surfaces, in table order: (row suffix, transport, gateway).
SURFACES = (("MCP, single bundle", "mcp", "single"), ("MCP, fleet", "mcp", "fleet"), ("REST, fleet", "rest", "fleet"))


def _start(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    if not line:
        _stop(process)
        raise SystemExit(f"did not start: {' '.join(command[:4])}")
    return process, str(json.loads(line)["url"])


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


def _serve_mock(example: str) -> int:
    """``--mock EXAMPLE``: serve that example's mock on a free loopback port and print ``{"url": ...}``.

    The socket is created with ``IPPROTO_TCP`` so asyncio sets ``TCP_NODELAY`` on accepted connections
    (it skips sockets whose protocol field is 0); without it a response written as headers then body
    stalls ~40 ms on the client's delayed ACK, which would swamp every number in the table.
    """
    import importlib.util
    import socket

    import uvicorn

    spec = importlib.util.spec_from_file_location(f"{example}_mock_upstream", EXAMPLES[example] / "mock_upstream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    app = module.create_app() if example == "payments" else module.create_app(token=TOKEN)[0]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(json.dumps({"url": f"http://127.0.0.1:{sock.getsockname()[1]}"}), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
    return 0


def _compile(workspace: Path) -> dict[str, Path]:
    from anvil.cli.compile import compile_bundle

    bundles = {}
    for service, folder in EXAMPLES.items():
        out = workspace / service
        outcome = compile_bundle(
            folder / "openapi.yaml", out=out, manifest=folder / "anvil.yaml", service_id=service, root=REPO
        )
        if outcome.bundle_hash is None:
            raise SystemExit(f"the {service} example did not compile")
        bundles[service] = out
    return bundles


def _token_variable(bundle: Path) -> str:
    from anvil.bundle.read import read_bundle
    from anvil.runtime.credentials import credential_profile, expected_env

    for op in read_bundle(bundle).operations:
        names = expected_env(op.auth, credential_profile("default", op.auth))
        if names:
            return names[0]
    raise SystemExit(f"{bundle.name} names no credential variable")


def _fleet_env(base_env: dict[str, str], bundles: dict[str, Path], mocks: dict[str, str]) -> dict[str, str]:
    """The fleet's per-bundle upstreams and credentials (see ``anvil serve --help``)."""
    env = dict(base_env)
    for service, bundle in bundles.items():
        env[f"ANVIL_BASE_URL_{service.upper()}"] = mocks[service]
        env[_token_variable(bundle)] = TOKEN
    return env


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


def _rest_caller(http: httpx.AsyncClient, tool: str) -> Callable[[dict[str, object], str | None], Awaitable[None]]:
    async def call(arguments: dict[str, object], key: str | None) -> None:
        headers = {"Idempotency-Key": key} if key is not None else None
        response = await http.post(f"/call/{tool}", json={"arguments": arguments}, headers=headers)
        if response.status_code != 200:
            raise SystemExit(f"REST {tool} answered {response.status_code}: {response.text[:300]}")

    return call


async def _measure(
    mock: str, gateways: dict[str, str], calls: int, warmup: int, budget_s: float
) -> dict[str, list[float]]:
    headers = {"authorization": f"Bearer {TOKEN}", "accept": "application/json"}
    fleet_base = gateways["fleet"].removesuffix("/mcp")
    rows: dict[str, list[float]] = {}
    async with (
        httpx.AsyncClient(base_url=mock, headers=headers) as http,
        httpx.AsyncClient(base_url=fleet_base, timeout=30) as rest,
        AnvilClient.http(gateways["single"]) as single,
        AnvilClient.http(gateways["fleet"]) as fleet,
    ):
        clients = {"single": (single, ""), "fleet": (fleet, "payments__")}

        def read(transport: str, gateway: str) -> Callable[[int], Awaitable[None]]:
            client, prefix = clients[gateway]
            arguments: dict[str, object] = {"customer_id": "cus_123"}
            if transport == "rest":
                rest_call = _rest_caller(rest, f"{prefix}payments_get_customer")
                return lambda _: rest_call(arguments, None)
            return lambda _: _mcp_call(client, f"{prefix}payments_get_customer", arguments, None)

        def write(transport: str, gateway: str) -> Callable[[int], Awaitable[None]]:
            client, prefix = clients[gateway]
            arguments: dict[str, object] = {"payment_id": "pay_123", **REFUND, "confirm": True}
            tag = f"{transport}-{gateway}"
            if transport == "rest":
                rest_call = _rest_caller(rest, f"{prefix}payments_create_refund")
                return lambda index: rest_call(arguments, f"{tag}-{index}")
            return lambda index: _mcp_call(client, f"{prefix}payments_create_refund", arguments, f"{tag}-{index}")

        async def direct_read(_: int) -> None:
            (await http.get("/customers/cus_123")).raise_for_status()

        async def direct_write(index: int) -> None:
            response = await http.post(
                "/payments/pay_123/refunds", json=REFUND, headers={"Idempotency-Key": f"d{index}"}
            )
            response.raise_for_status()

        rows["read, direct"] = await _series(direct_read, calls, warmup, budget_s)
        for name, transport, gateway in SURFACES:
            rows[f"read, {name}"] = await _series(read(transport, gateway), calls, warmup, budget_s)
        await http.post("/__reset")
        rows["keyed write, direct"] = await _series(direct_write, calls, warmup, budget_s)
        for name, transport, gateway in SURFACES:
            await http.post("/__reset")  # each row refunds up to N + W of the payment's 5000
            rows[f"keyed write, {name}"] = await _series(write(transport, gateway), calls, warmup, budget_s)
    return rows


async def _mcp_call(client: AnvilClient, tool: str, arguments: dict[str, object], key: str | None) -> None:
    await client.call(tool, arguments, idempotency_key=key)


def _table(rows: dict[str, list[float]]) -> str:
    lines = [
        "| call | n | p50 ms | p99 ms | overhead over direct p50 / p99 ms |",
        "|---|---|---|---|---|",
    ]
    for name, values in rows.items():
        p50, p99 = _percentile(values, 0.5), _percentile(values, 0.99)
        overhead = ""
        kind, _, surface = name.partition(", ")
        if surface != "direct":
            direct = rows[f"{kind}, direct"]
            overhead = f"{p50 - _percentile(direct, 0.5):.2f} / {p99 - _percentile(direct, 0.99):.2f}"
        lines.append(f"| {name} | {len(values)} | {p50:.2f} | {p99:.2f} | {overhead} |")
    lines.append("")
    for surface, _, _ in SURFACES:
        ratio = _percentile(rows[f"keyed write, {surface}"], 0.5) / _percentile(rows[f"read, {surface}"], 0.5)
        lines.append(f"keyed write / read, {surface}, p50: {ratio:.2f}x (target <= 1.2x)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per row (default 1000)")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls per row (default 50)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time bound per row (default 60)")
    parser.add_argument("--mock", choices=sorted(EXAMPLES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mock:
        return _serve_mock(args.mock)
    if not 1 <= args.calls + args.warmup <= 4000:
        parser.error("--calls + --warmup must be 1..4000 (each write refunds 1 of the mock payment's 5000)")
    with tempfile.TemporaryDirectory(prefix="anvil-bench-") as scratch, ExitStack() as processes:
        folder = Path(scratch)
        bundles = _compile(folder / "workspace")
        base_env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
        mocks: dict[str, str] = {}
        for service in EXAMPLES:
            process, mocks[service] = _start([sys.executable, __file__, "--mock", service], base_env)
            processes.callback(_stop, process)
        common = {**base_env, "ANVIL_ENV": "prod", "ANVIL_ALLOWED_HOSTS": "127.0.0.1"}
        single_env = {
            **common,
            "ANVIL_BASE_URL": mocks["payments"],
            "ANVIL_LEDGER": f"sqlite:///{folder / 'single.db'}",
            _token_variable(bundles["payments"]): TOKEN,
        }
        fleet_env = {**_fleet_env(common, bundles, mocks), "ANVIL_LEDGER": f"sqlite:///{folder / 'fleet.db'}"}
        gateways: dict[str, str] = {}
        for name, target, env in (
            ("single", bundles["payments"], single_env),
            ("fleet", folder / "workspace", fleet_env),
        ):
            command = [sys.executable, "-m", "anvil", "serve", str(target), "--http", "127.0.0.1:0"]
            process, gateways[name] = _start(command, env)
            processes.callback(_stop, process)
        rows = anyio.run(_measure, mocks["payments"], gateways, args.calls, args.warmup, args.max_seconds)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
