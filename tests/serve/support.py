"""Helpers for the serve tests: the compiled examples, the github-mini mock on loopback, an MCP client."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import uvicorn
from mcp.client import Client

from anvil.air.model import Document, Operation
from anvil.compiler import build
from anvil.runtime.context import RuntimeContext
from anvil.runtime.credentials import credential_profile, expected_env
from anvil.serve.gateway import Gateway
from anvil.serve.mcp.server import build_server

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / "examples" / "github-mini"
PAYMENTS = REPO / "examples" / "payments"
TOKEN = "gh-test-token"
OWNER_REPO = {"owner": "octo", "repo": "hello"}


def _load_mock() -> ModuleType:
    spec = importlib.util.spec_from_file_location("serve_github_mini_mock", GITHUB / "mock_upstream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through the module registry
    spec.loader.exec_module(module)
    return module


mock_module = _load_mock()


def compile_example(folder: Path, service: str) -> Document:
    """Compile an example with its manifest; no error diagnostics allowed."""
    result = build(folder / "openapi.yaml", manifest=folder / "anvil.yaml", service_id=service)
    errors = [d.code for d in result.diagnostics if d.severity == "error"]
    assert errors == []
    return result.document


def token_variable(doc: Document) -> str:
    """The environment variable the github bundle reads its bearer token from."""
    op = doc.operations[0]
    return expected_env(op.auth, credential_profile("default", op.auth))[0]


class MockServer:
    """The github-mini mock upstream under uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self) -> None:
        app, self.state = mock_module.create_app(token=TOKEN)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off", ws="none")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the github-mini mock did not start")
            time.sleep(0.005)
        self.url = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def reset(self) -> None:
        self.state.__dict__.update(mock_module.State().__dict__)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request the mock received since the last reset."""
        return list(self.state.requests)


@asynccontextmanager
async def connected(gateway: Gateway) -> AsyncIterator[Client]:
    """An official MCP client connected in-process to the gateway's server."""
    async with Client(build_server(gateway)) as client:
        yield client


def op_of(doc: Document, op_id: str) -> Operation:
    op = doc.operation(op_id)
    assert op is not None, op_id
    return op


def listing_gateway(document: Document, client: httpx.AsyncClient) -> Gateway:
    """A gateway listing every operation of ``document`` (approved or not), for listing comparisons."""
    context = RuntimeContext(service_id=document.service.id, base_url="http://127.0.0.1:9", client=client, env="dev")
    return Gateway(document, context, include_unapproved=True)
