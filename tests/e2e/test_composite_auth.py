"""Composite auth end to end: one requirement naming three schemes at once, served through the real gateway.

``tests/cli/fixtures/vault.yaml`` asks for ``X-Client-Id`` and ``X-Client-Secret`` headers and a ``tenant_key``
query parameter on every credentialed call (AND). Compiled against a loopback upstream that refuses (401)
unless all three arrive with the right values, each MCP call must send every factor's credential, read from
the variable that factor's scheme reads alone; a factor left unset is ``auth_required`` naming every missing
variable and sends nothing; no value reaches an error, the gateway's log, the audit file or the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from anvil.bundle.read import read_bundle
from anvil.client import ToolError
from anvil.runtime.credentials import credential_profile, expected_env
from tests.cli.fixtures.upstreams import LoopbackServer, compile_vault
from tests.e2e.conftest import local_gateway_env
from tests.e2e.support import GatewayProcess, connect

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TIMEOUT_S = 60
VALUES = {"client": "cid-7f3a9e", "secret": "sec-0b51c4", "tenant": "tk-93d2aa"}


class Upstream:
    """A loopback API that answers only a request carrying all three credentials, and records what came."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.server = LoopbackServer(Starlette(routes=[Route("/{path:path}", self.handle, methods=["GET", "POST"])]))

    async def handle(self, request: Request) -> JSONResponse:
        sent = {
            "client": request.headers.get("x-client-id"),
            "secret": request.headers.get("x-client-secret"),
            "tenant": request.query_params.get("tenant_key"),
        }
        self.seen.append({"method": request.method, "path": request.url.path, **sent})
        if request.url.path == "/health":  # the anonymous operation
            return JSONResponse({"ok": True})
        if sent != VALUES:
            return JSONResponse({"message": "unauthenticated"}, status_code=401)
        if request.method == "POST":
            body = json.loads(await request.body())
            return JSONResponse({"id": "item-1", "name": body["name"]}, status_code=201)
        return JSONResponse({"id": request.url.path.rsplit("/", 1)[-1], "name": "box"})


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    server.server.start()
    yield server
    server.server.stop()


@pytest.fixture(scope="module")
def bundle(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_vault(
        tmp_path_factory.mktemp("composite") / "vault", {"https://vault.example.com": upstream.server.url}
    )


def variables(bundle: Path) -> dict[str, str]:
    """Each factor's variable (as its scheme reads it alone) with the value the upstream wants."""
    op = read_bundle(bundle).operation("vault.items.get")
    assert op is not None and op.auth.type == "composite"
    client, secret, tenant = expected_env(op.auth, credential_profile("default", op.auth))
    return {client: VALUES["client"], secret: VALUES["secret"], tenant: VALUES["tenant"]}


def serve(bundle: Path, folder: Path, credentials: dict[str, str]) -> GatewayProcess:
    env = {**local_gateway_env(folder), **credentials}
    return GatewayProcess([str(bundle), "--http", "127.0.0.1:0"], env=env, log=folder / "gateway.log").start()


def _written(folder: Path) -> str:
    """Everything the gateway wrote to disk or its log (the ledger's bytes too)."""
    return "".join(path.read_bytes().decode("latin-1") for path in sorted(folder.iterdir()) if path.is_file())


async def test_each_mcp_call_sends_every_factor_and_no_value_reaches_the_log_the_audit_or_the_ledger(
    bundle: Path, upstream: Upstream, tmp_path: Path
) -> None:
    upstream.seen.clear()
    gateway = serve(bundle, tmp_path, variables(bundle))
    try:
        with anyio.fail_after(TIMEOUT_S):
            async with connect(gateway.url) as client:
                created, _ = await client.call("vault_create_item", {"name": "box"}, idempotency_key="k-composite")
                item, _ = await client.call("vault_get_item", {"item_id": "item-1"})
                health, _ = await client.call("vault_health", {})
    finally:
        gateway.stop()
    assert created == {"id": "item-1", "name": "box"} and item == {"id": "item-1", "name": "box"}
    assert health == {"ok": True}
    credentialed = [seen for seen in upstream.seen if seen["path"] != "/health"]
    assert [(seen["method"], seen["path"]) for seen in credentialed] == [("POST", "/items"), ("GET", "/items/item-1")]
    assert all({key: seen[key] for key in VALUES} == VALUES for seen in credentialed)
    health_seen = next(seen for seen in upstream.seen if seen["path"] == "/health")
    assert (health_seen["client"], health_seen["secret"], health_seen["tenant"]) == (None, None, None)
    assert (tmp_path / "ledger.db").is_file() and (tmp_path / "audit.jsonl").is_file()
    written = _written(tmp_path)
    assert "k-composite" in written or "vault.items.create" in written  # the ledger and audit were written
    assert not [value for value in VALUES.values() if value in written]


async def test_a_factor_left_unset_is_auth_required_naming_every_missing_variable_and_nothing_is_sent(
    bundle: Path, upstream: Upstream, tmp_path: Path
) -> None:
    upstream.seen.clear()
    client_variable, secret_variable, tenant_variable = variables(bundle)
    gateway = serve(bundle, tmp_path, {secret_variable: VALUES["secret"]})
    try:
        with anyio.fail_after(TIMEOUT_S):
            async with connect(gateway.url) as client:
                with pytest.raises(ToolError) as raised:
                    await client.call("vault_get_item", {"item_id": "item-1"})
    finally:
        gateway.stop()
    error = raised.value.envelope["error"]
    assert error["code"] == "auth_required"
    assert error["details"]["expected_env"] == [client_variable, tenant_variable]
    assert VALUES["secret"] not in json.dumps(raised.value.envelope)
    assert VALUES["secret"] not in _written(tmp_path)
    assert upstream.seen == []
