"""Cold start: preparing the first ``tools/list`` of ``anvil serve --http`` loads only what listing needs.

The call path (executor, request building, RE2 patterns, response paths), the laddered and searched
disclosure, the ledger backends that are not configured, telemetry and the MCP SDK load later: on the
first call, when that mode or backend is configured, or in the background once the socket listens.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from anvil.cli.compile import compile_bundle

REPO = Path(__file__).resolve().parents[2]

#: Never loaded before the first listing of a SQLite-ledger bundle served with auth none and no exporter.
LATER = (
    "anvil.air.paths",
    "anvil.air.tokentable",
    "anvil.air.patterns",
    "anvil.diagnostics",
    "anvil.runtime.executor",
    "anvil.runtime.gates",
    "anvil.runtime.request",
    "anvil.serve.discovery.index",
    "anvil.serve.discovery.ladder",
    "anvil.serve.projection",
    "anvil.serve.responses",
    "email.policy",
    "google.cloud",
    "httpx",
    "jsonschema",
    "mcp",
    "mcp_types",
    "opentelemetry",
    "psycopg",
    "pydantic_core",
    "re2",
    "yaml",
)

START = textwrap.dedent(
    """
    import argparse, asyncio, hashlib, json, os, sys

    for name in sys.argv[3:]:
        __import__(name)  # loaded up front: the listing must not depend on what is loaded when
    from anvil.cli import serve
    from anvil.cli.serve_config import config_from_env, ledger_options
    from anvil.ledger.registry import open_ledger
    from anvil.runtime.connections import PooledUpstream
    from anvil.runtime.context import RuntimeContext
    from anvil.serve.answer_store import keeper_for
    from anvil.serve.fleet import Fleet, FleetBundle
    from anvil.serve.listener import create_listener

    LATER = json.loads(sys.argv[2])
    CALL_PATH = ("anvil.air.paths", "anvil.air.patterns", "anvil.runtime.executor")

    async def post(app, body):
        raw = json.dumps(body).encode()
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
            "server": ("127.0.0.1", 9), "client": ("127.0.0.1", 1),
            "headers": [
                (b"host", b"127.0.0.1:9"), (b"content-type", b"application/json"),
                (b"accept", b"application/json, text/event-stream"), (b"content-length", str(len(raw)).encode()),
                (b"mcp-protocol-version", b"2025-11-25"),
            ],
        }
        sent = []
        async def receive():
            return {"type": "http.request", "body": raw, "more_body": False}
        async def send(message):
            sent.append(message)
        await app(scope, receive, send)
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    async def main():
        parser = argparse.ArgumentParser()
        serve.register(parser)
        args = parser.parse_args([sys.argv[1], "--http", "127.0.0.1:0"])
        config = config_from_env(os.environ, args)
        first = config.settings[0]
        ledger = open_ledger(config.ledger_uri, options=ledger_options(first, config.ledger_namespace))
        await serve.prepare_ledger(ledger)
        upstream = PooledUpstream()
        bundles = [
            FleetBundle(id=bundle_id, document=document, context=RuntimeContext(
                service_id=document.service.id, base_url=found.base_url, client=upstream, env=found.env,
                allowed_hosts=found.allowed_hosts, credentials=found.credentials, ledger=ledger))
            for (bundle_id, document), found in zip(config.bundles, config.settings)
        ]
        fleet = Fleet(bundles, disclosure=config.disclosure, keeper=keeper_for(ledger))
        app = create_listener(fleet, host="127.0.0.1")
        statuses = []
        for body in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ):
            statuses.append((await post(app, body))[0])
        status, listing = await post(app, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        statuses.append(status)
        loaded = sorted(name for name in LATER if name in sys.modules)
        warmed = None
        if os.environ.get("LOAD_SDK"):  # then the SDK loads, and the call path with it, before any call
            from anvil.serve.mcp.http import mcp_sdk

            async with app.router.lifespan_context(app):
                assert await mcp_sdk(app).loaded()
                warmed = sorted(name for name in CALL_PATH if name in sys.modules)
        await upstream.aclose()
        await ledger.close()
        import anvil._dataclass

        templates = sorted(anvil._dataclass._TEMPLATES)  # the __init__ texts made so far
        print(json.dumps({
            "statuses": statuses, "loaded": loaded, "listing": listing.decode(), "warmed": warmed,
            "templates": templates,
        }))

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module")
def payments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    example = REPO / "examples" / "payments"
    out = tmp_path_factory.mktemp("cold") / "payments"
    outcome = compile_bundle(
        example / "openapi.yaml", out=out, manifest=example / "anvil.yaml", service_id="payments", root=REPO
    )
    assert outcome.bundle_hash is not None
    return out


def _start(bundle: Path, ledger: Path, *preloaded: str, load_sdk: bool = False) -> dict[str, Any]:
    from anvil.bundle.read import read_bundle
    from anvil.runtime.credentials import credential_profile, expected_env

    environ = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(REPO / "src"),
        "ANVIL_ENV": "prod",
        "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
        "ANVIL_BASE_URL": "http://127.0.0.1:9",
        "ANVIL_LEDGER": f"sqlite:///{ledger}",
        **({"LOAD_SDK": "1"} if load_sdk else {}),
    }
    for op in read_bundle(bundle).operations:
        for name in expected_env(op.auth, credential_profile("default", op.auth)):
            environ[name] = "token-for-the-test"
    shown = subprocess.run(
        [sys.executable, "-c", START, str(bundle), json.dumps(LATER), *preloaded],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    found: dict[str, Any] = json.loads(shown.stdout.strip().splitlines()[-1])
    return found


def test_the_first_listing_of_a_sqlite_bundle_loads_no_call_path_backend_telemetry_or_sdk_module(
    payments: Path, tmp_path: Path
) -> None:
    started = _start(payments, tmp_path / "ledger.db")
    assert started["statuses"] == [200, 202, 200]
    assert started["loaded"] == []
    assert [tool["name"] for tool in json.loads(started["listing"])["result"]["tools"]]


def test_the_first_listing_is_byte_identical_whether_the_call_path_is_loaded_or_not(
    payments: Path, tmp_path: Path
) -> None:
    lazy = _start(payments, tmp_path / "lazy.db")
    eager = _start(
        payments,
        tmp_path / "eager.db",
        "anvil.diagnostics",
        "anvil.runtime.executor",
        "anvil.air.paths",
        "anvil.air.patterns",
        "anvil.serve.discovery.ladder",
    )
    assert set(eager["loaded"]) >= {"anvil.runtime.executor", "anvil.air.patterns"}
    assert lazy["listing"] == eager["listing"]


def test_once_the_sdk_has_loaded_in_the_background_the_call_path_is_loaded_before_the_first_call(
    payments: Path, tmp_path: Path
) -> None:
    started = _start(payments, tmp_path / "warm.db", load_sdk=True)
    assert started["loaded"] == []
    assert started["warmed"] == ["anvil.air.paths", "anvil.air.patterns", "anvil.runtime.executor"]


def test_the_first_listing_compiles_no_init_text_every_one_is_prepared(payments: Path, tmp_path: Path) -> None:
    from anvil._prepared_inits import TEMPLATES

    started = _start(payments, tmp_path / "prepared.db")
    prepared = {text for text, _function in TEMPLATES}
    assert started["templates"]
    assert [text for text in started["templates"] if text not in prepared] == [], (
        "run: PYTHONPATH=src .venv/bin/python scripts/prepare_inits.py"
    )
