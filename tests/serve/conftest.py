"""Fixtures: the compiled examples, the github-mini mock on loopback, and gateways over it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from anvil.air.model import Document
from anvil.ledger.registry import open_ledger
from anvil.runtime.audit import MemoryAuditSink
from anvil.runtime.context import RuntimeContext
from anvil.serve.gateway import Gateway
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
    """Build a gateway over the mock: env dev, a memory ledger, the (or another) token, the audit sink."""
    ledger = open_ledger("memory:")

    def factory(doc: Document, *, token: str = TOKEN, **kwargs: Any) -> Gateway:
        context = RuntimeContext(
            service_id=doc.service.id,
            base_url=mock.url,
            client=http,
            env="dev",
            allowed_hosts=("127.0.0.1",),
            credentials={token_variable(doc): token},
            ledger=ledger,
            audit=audit,
        )
        return Gateway(doc, context, **kwargs)

    return factory
