"""Fixtures: the compiled examples and corpus, the github-mini mock on loopback, and gateways over it."""

from __future__ import annotations

import csv
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from anvil.air.model import Document
from anvil.compiler import build
from anvil.ledger.base import Ledger
from anvil.ledger.registry import open_ledger
from anvil.runtime.audit import MemoryAuditSink
from anvil.runtime.context import RuntimeContext
from anvil.serve.gateway import Gateway
from tests.conftest import corpus_dir, missing
from tests.serve.support import GITHUB, PAYMENTS, TOKEN, MockServer, compile_example, token_variable


@pytest.fixture(scope="session")
def github() -> Document:
    return compile_example(GITHUB, "github")


@pytest.fixture(scope="session")
def payments() -> Document:
    return compile_example(PAYMENTS, "payments")


@pytest.fixture(scope="session")
def mock_server() -> Iterator[MockServer]:
    server = MockServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def mock(mock_server: MockServer) -> MockServer:
    mock_server.reset()
    return mock_server


@pytest.fixture
def audit() -> MemoryAuditSink:
    return MemoryAuditSink()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def make_gateway(mock: MockServer, http: httpx.AsyncClient, audit: MemoryAuditSink) -> Callable[..., Gateway]:
    """Build a gateway over the mock: env dev, a memory ledger (or ``ledger``), the (or another) token, the
    audit sink."""
    memory = open_ledger("memory:")

    def factory(doc: Document, *, token: str = TOKEN, ledger: Ledger | None = None, **kwargs: Any) -> Gateway:
        context = RuntimeContext(
            service_id=doc.service.id,
            base_url=mock.url,
            client=http,
            env="dev",
            allowed_hosts=("127.0.0.1",),
            credentials={token_variable(doc): token},
            ledger=memory if ledger is None else ledger,
            audit=audit,
        )
        return Gateway(doc, context, **kwargs)

    return factory


@pytest.fixture(scope="session")
def corpus_documents() -> list[tuple[str, Document]]:
    """Every corpus spec that compiles (no manifest: every operation unapproved), by INDEX.tsv name."""
    folder = corpus_dir()
    if not (folder / "INDEX.tsv").is_file():
        missing(f"corpus not found at {folder} (set ANVIL_CORPUS)")
    out = []
    with (folder / "INDEX.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            name = row["file"]
            top = Path(name).parts[0]
            spec_root = folder / top if len(Path(name).parts) > 1 else None
            result = build(folder / name, manifest=None, service_id="corpus", source_uri=name, spec_root=spec_root)
            if result.document is not None and result.document.operations:
                out.append((name, result.document))
    return out
