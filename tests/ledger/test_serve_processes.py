"""Each durable backend through real ``anvil serve`` processes, a counting loopback upstream and real faults.

Per backend (SQLite, PostgreSQL, the Firestore emulator): four gateway processes sharing one ledger
answer 24 concurrent calls with one key with exactly one upstream request; a gateway SIGKILLed after the
upstream applied a write but before completing leaves the row quarantined, a retry is refused with
``operator_action_required`` and a sanitized reference, and ``anvil ledger resolve --not-committed`` lets
the key run once more; a store that stops answering (a loopback proxy in front of the database is cut,
or the SQLite file is locked by another process) makes keyed writes fail closed with 503
``idempotency_ledger_unavailable`` and nothing upstream, while reads are still served and ``/readyz``
turns 503 within two seconds.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from services import firestore_uri, postgres_uri, require, search_path_traps

from anvil.cli.compile import compile_bundle
from tests.e2e.support import EXAMPLES, REPO, GatewayProcess, ThreadedMock, load_mock, token_variable

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REFUND = {"payment_id": "pay_123", "amount": 250, "currency": "EUR", "confirm": True}
TOOL = "payments_create_refund"
READ = ("payments_get_payment", {"payment_id": "pay_123"})
UPSTREAM_TOKEN = "ledger-upstream-token"
REFERENCE = re.compile(r"^(sqlite|postgresql|firestore)/anvil_idempotency_[0-9a-f]{16}/[0-9a-f]{64}$")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# --- the counting upstream ---------------------------------------------------------------------------


class CountingUpstream:
    """The payments mock behind a wrapper that counts refund requests and can hold their answers
    (the mock has applied the refund; its answer waits), so a gateway can die between the two."""

    def __init__(self) -> None:
        module = load_mock("payments")
        self._app = module.create_app(module.State())
        self._lock = threading.Lock()
        self.refunds = 0
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.release.set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith("/refunds"):
            await self._app(scope, receive, send)
            return
        with self._lock:
            self.refunds += 1
        self.arrived.set()

        async def held_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and not self.release.is_set():
                await anyio.to_thread.run_sync(self.release.wait, 30.0)
            await send(message)

        await self._app(scope, receive, held_send)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ledger-bundle") / "payments"
    folder = EXAMPLES / "payments"
    outcome = compile_bundle(
        folder / "openapi.yaml", out=out, manifest=folder / "anvil.yaml", service_id="payments", root=REPO
    )
    assert outcome.ok
    return out


@pytest.fixture
def upstream() -> Iterator[tuple[CountingUpstream, str]]:
    counting = CountingUpstream()
    mock = ThreadedMock(counting, "payments").start()
    try:
        yield counting, mock.url
    finally:
        counting.release.set()
        mock.stop()


# --- a cuttable loopback proxy (a database that stops answering) ------------------------------------


class Proxy:
    """Forwards 127.0.0.1:<port> to ``target``; :meth:`cut` drops every connection and refuses new ones."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self._open:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    def _pipe(self, left: socket.socket, right: socket.socket) -> None:
        pair = {left: right, right: left}
        try:
            while self._open:
                ready, _, _ = select.select(list(pair), [], [], 0.5)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    pair[sock].sendall(data)
        except OSError:
            return
        finally:
            left.close()
            right.close()

    def cut(self) -> None:
        """The database is gone: close the listener and every forwarded connection."""
        self._open = False
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()


def _host_port(address: str) -> tuple[str, int]:
    host_port = address.split("@")[-1].split("/")[0] if "://" in address else address
    host, _, port = host_port.rpartition(":")
    return host, int(port)


# --- the backends -------------------------------------------------------------------------------------


@dataclass
class Backend:
    name: str
    uri: str
    env: dict[str, str]
    proxy: Proxy | None = None
    path: Path | None = None


@pytest.fixture(params=["sqlite", "postgresql", "firestore"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    namespace = f"p-{uuid.uuid4().hex[:12]}"
    env: dict[str, str] = {}
    if request.param == "sqlite":
        path = tmp_path / "ledger.db"
        yield Backend("sqlite", f"sqlite:///{path}?namespace={namespace}", env, path=path)
        return
    if request.param == "postgresql":
        base = require("postgres")
        proxy = Proxy(_host_port(base))
        host, port = _host_port(base)
        proxied = base.replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}", 1)
        try:
            yield Backend("postgresql", postgres_uri(proxied, namespace), env, proxy=proxy)
        finally:
            proxy.cut()
        return
    emulator = require("firestore")
    proxy = Proxy(_host_port(emulator))
    env["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{proxy.port}"
    try:
        yield Backend("firestore", firestore_uri(emulator, namespace), env, proxy=proxy)
    finally:
        proxy.cut()


def _gateway_env(backend: Backend, bundle: Path, upstream_url: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env.update(backend.env)
    env.update(
        {
            "ANVIL_ENV": "prod",
            "ANVIL_LEDGER": backend.uri,
            "ANVIL_LEDGER_LOCK_TIMEOUT_MS": "1000",
            "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
            "ANVIL_BASE_URL": upstream_url,
            "ANVIL_UPSTREAM_TIMEOUT_MS": "10000",
            token_variable(bundle): UPSTREAM_TOKEN,
        }
    )
    return env


def _start(bundle: Path, env: dict[str, str], log: Path) -> GatewayProcess:
    return _settled(GatewayProcess([str(bundle), "--http", "127.0.0.1:0"], env=env, log=log).start())


def _settled(gateway: GatewayProcess) -> GatewayProcess:
    """Wait until the gateway has loaded the MCP SDK in the background (a ``ping`` only the SDK answers
    returns then), so a burst measures the ledger, not four interpreters importing at once on 2 cores."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    answer = httpx.post(gateway.url, json=ping, headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text
    return gateway


async def _refund(http: httpx.AsyncClient, base: str, key: str) -> httpx.Response:
    body = json.dumps({"arguments": REFUND}).encode("utf-8")
    headers = {"content-type": "application/json", "idempotency-key": key}
    return await http.post(f"{base}/call/{TOOL}", content=body, headers=headers)


async def _read(http: httpx.AsyncClient, base: str) -> httpx.Response:
    tool, arguments = READ
    body = json.dumps({"arguments": arguments}).encode("utf-8")
    return await http.post(f"{base}/call/{tool}", content=body, headers={"content-type": "application/json"})


def _anvil(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anvil", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


# --- the scenarios ------------------------------------------------------------------------------------


async def test_four_gateways_answer_24_concurrent_same_key_calls_with_exactly_one_upstream_request(
    backend: Backend, bundle: Path, upstream: tuple[CountingUpstream, str], tmp_path: Path
) -> None:
    counting, url = upstream
    env = _gateway_env(backend, bundle, url)
    gateways: list[GatewayProcess] = []

    async def start(index: int) -> None:
        gateways.append(await anyio.to_thread.run_sync(_start, bundle, env, tmp_path / f"gateway-{index}.log"))

    async with anyio.create_task_group() as group:  # start the four side by side
        for index in range(4):
            group.start_soon(start, index)
    try:
        statuses: list[int] = []
        odd: list[str] = []  # the bodies of answers other than 200/409, for the failure message
        async with httpx.AsyncClient(timeout=30) as http:

            async def call(index: int) -> None:
                answer = await _refund(http, gateways[index % 4].base, "race-key-1")
                statuses.append(answer.status_code)
                if answer.status_code not in (200, 409):
                    odd.append(answer.text)

            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for index in range(24):
                        group.start_soon(call, index)
            replay = await _refund(http, gateways[3].base, "race-key-1")
    finally:
        for gateway in gateways:
            gateway.stop()
    assert counting.refunds == 1
    assert len(statuses) == 24 and statuses.count(200) >= 1 and set(statuses) <= {200, 409}, odd
    assert replay.status_code == 200 and counting.refunds == 1


async def test_a_gateway_killed_before_completion_leaves_the_row_quarantined_until_an_operator_resolves_it(
    backend: Backend, bundle: Path, upstream: tuple[CountingUpstream, str], tmp_path: Path
) -> None:
    counting, url = upstream
    env = _gateway_env(backend, bundle, url)
    first = _start(bundle, env, tmp_path / "first.log")
    counting.release.clear()  # the upstream applies the refund but holds its answer
    try:
        async with httpx.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
            group.start_soon(_refund, http, first.base, "crash-key-1")
            with anyio.fail_after(20):
                while not counting.arrived.is_set():
                    await anyio.sleep(0.01)
            assert first._process is not None
            os.kill(first._process.pid, signal.SIGKILL)
            group.cancel_scope.cancel()
    finally:
        first.stop()
        counting.release.set()
    assert counting.refunds == 1
    second = _start(bundle, env, tmp_path / "second.log")
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            refused = await _refund(http, second.base, "crash-key-1")
            error = refused.json()["error"]
            assert refused.status_code == 409 and error["code"] == "conflict", refused.text
            details = error["details"]
            assert details["operator_action_required"] is True and "anvil ledger inspect" in details["hint"]
            assert REFERENCE.match(details["ledger_reference"]) and details["reservation_age_s"] >= 0
            assert "crash-key-1" not in details["ledger_reference"] and counting.refunds == 1
            reference = details["ledger_reference"]
            tool_env = {**env, "ANVIL_AUDIT_FILE": str(tmp_path / "audit.jsonl")}
            inspected = _anvil("ledger", "inspect", reference, "--ledger", backend.uri, "--json", env=tool_env)
            assert inspected.returncode == 0, inspected.stderr
            row = json.loads(inspected.stdout)
            assert row["status"] == "in_progress" and row["operation_id"] == "payments.refunds.create"
            resolve = ["ledger", "resolve", reference, "--ledger", backend.uri, "--fingerprint", row["fingerprint"]]
            resolved = _anvil(*resolve, "--not-committed", env=tool_env)
            assert resolved.returncode == 0, resolved.stderr
            again = await _refund(http, second.base, "crash-key-1")
            assert again.status_code == 200 and counting.refunds == 2
            replay = await _refund(http, second.base, "crash-key-1")
            assert replay.status_code == 200 and counting.refunds == 2
    finally:
        second.stop()
    [audit] = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert (audit["event"], audit["resolution"], audit["ledger_reference"]) == (
        "ledger_resolve",
        "not_committed",
        reference,
    )


async def test_a_store_that_stops_answering_fails_keyed_writes_closed_while_reads_are_served(
    backend: Backend, bundle: Path, upstream: tuple[CountingUpstream, str], tmp_path: Path
) -> None:
    counting, url = upstream
    gateway = _start(bundle, _gateway_env(backend, bundle, url), tmp_path / "gateway.log")
    holder: sqlite3.Connection | None = None
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            assert (await http.get(f"{gateway.base}/readyz")).status_code == 200
            assert (await _refund(http, gateway.base, "stop-key-1")).status_code == 200
            assert counting.refunds == 1
            stopped = time.monotonic()
            if backend.proxy is not None:
                backend.proxy.cut()
            else:
                assert backend.path is not None
                holder = sqlite3.connect(backend.path, isolation_level=None)
                holder.execute("BEGIN EXCLUSIVE")
            with anyio.fail_after(10):
                while (await http.get(f"{gateway.base}/readyz")).status_code != 503:
                    await anyio.sleep(0.05)
            assert time.monotonic() - stopped < 2.5
            ready = await http.get(f"{gateway.base}/readyz")
            assert ready.status_code == 503 and ready.json()["code"] == "ledger_unavailable"
            for index in range(3):
                started = time.monotonic()
                refused = await _refund(http, gateway.base, f"stop-key-{index + 2}")
                assert refused.status_code == 503, refused.text
                assert refused.json()["error"]["code"] == "idempotency_ledger_unavailable"
                assert time.monotonic() - started < 10
            assert counting.refunds == 1  # nothing reached the upstream
            read = await _read(http, gateway.base)
            assert read.status_code == 200, read.text
    finally:
        if holder is not None:
            holder.execute("ROLLBACK")
            holder.close()
        gateway.stop()


# --- where rows live: one table per database, schema and namespace, whoever connects -----------------


def _digest(gateway: GatewayProcess) -> str:
    [line] = [line for line in gateway.stderr().splitlines() if line.startswith("anvil: ledger scope payments:")]
    return line.rsplit(" digest ", 1)[1]


async def test_gateways_on_one_postgres_database_as_another_role_or_under_a_search_path_run_a_key_once(
    bundle: Path, upstream: tuple[CountingUpstream, str], tmp_path: Path
) -> None:
    counting, url = upstream
    base = require("postgres")
    uri = postgres_uri(base, f"p-{uuid.uuid4().hex[:12]}")
    with search_path_traps(base) as traps:
        uris = [uri, traps.as_role(uri), traps.with_search_path(uri), f"{uri}&schema={traps.spare}"]
        envs = [_gateway_env(Backend("postgresql", each, {}), bundle, url) for each in uris]
        gateways = [_start(bundle, envs[0], tmp_path / "owner.log")]  # creates the table, in public
        try:
            gateways.extend(_start(bundle, envs[index], tmp_path / f"gateway-{index}.log") for index in (1, 2, 3))
            statuses: list[int] = []
            async with httpx.AsyncClient(timeout=30) as http:

                async def call(index: int) -> None:
                    statuses.append((await _refund(http, gateways[index % 3].base, "split-key")).status_code)

                with anyio.fail_after(60):
                    async with anyio.create_task_group() as group:
                        for index in range(16):
                            group.start_soon(call, index)
                assert counting.refunds == 1 and sorted(set(statuses)) == [200, 409], statuses
                elsewhere = await _refund(http, gateways[3].base, "split-key")  # another schema: other rows
                assert elsewhere.status_code == 200 and counting.refunds == 2
        finally:
            for gateway in gateways:
                gateway.stop()
        digests = [_digest(gateway) for gateway in gateways]
        assert digests[0] == digests[1] == digests[2] != digests[3]
        assert "anvil: created a new ledger: postgresql" in gateways[0].stderr()
        assert "created a new ledger" not in gateways[1].stderr() + gateways[2].stderr()
        assert f"schema {traps.spare}, table" in gateways[3].stderr() and "created a new ledger" in gateways[3].stderr()


@pytest.mark.parametrize("name", ["sqlite", "postgresql"])
async def test_the_ledger_tool_with_the_gateways_own_uri_prepares_and_inspects_the_gateways_table(
    name: str, bundle: Path, upstream: tuple[CountingUpstream, str], tmp_path: Path
) -> None:
    counting, url = upstream
    schema = f"anvil_tool_{uuid.uuid4().hex[:10]}"
    if name == "sqlite":  # exactly what the gateway is given: no namespace, its bundle has one
        uri, typo = f"sqlite:///{tmp_path}/ledger.db", f"sqlite:///{tmp_path}/ledgr.db"
    else:
        base = require("postgres")
        uri, typo = f"{base}?schema={schema}", f"{base}?schema={schema}_x"
    env = _gateway_env(Backend(name, uri, {}), bundle, url)
    try:
        init = _anvil("ledger", "init", uri, "--bundle", str(bundle), env=env)
        assert init.returncode == 0 and "created a new ledger" in init.stdout, init.stdout + init.stderr
        gateway = _start(bundle, env, tmp_path / "gateway.log")
        counting.release.clear()  # the upstream applies the refund and holds its answer
        try:
            async with httpx.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
                group.start_soon(_refund, http, gateway.base, "tool-key")
                with anyio.fail_after(20):
                    while not counting.arrived.is_set():
                        await anyio.sleep(0.01)
                held = await _refund(http, gateway.base, "tool-key")
                reference = held.json()["error"]["details"]["ledger_reference"]
                for extra in ([], ["--bundle", str(bundle)]):
                    shown = _anvil("ledger", "inspect", reference, "--ledger", uri, "--json", *extra, env=env)
                    assert shown.returncode == 0, shown.stderr
                    assert json.loads(shown.stdout)["status"] == "in_progress"
                counting.release.set()
        finally:
            counting.release.set()
            gateway.stop()
        assert "created a new ledger" not in gateway.stderr()  # init prepared the table the gateway uses
        mistyped = _start(bundle, _gateway_env(Backend(name, typo, {}), bundle, url), tmp_path / "typo.log")
        mistyped.stop()
        assert f"anvil: created a new ledger: {name} " in mistyped.stderr()
    finally:
        if name == "postgresql":
            import psycopg

            with psycopg.connect(require("postgres"), autocommit=True) as admin:
                for each in (schema, f"{schema}_x"):
                    admin.execute(f"DROP SCHEMA IF EXISTS {each} CASCADE")
