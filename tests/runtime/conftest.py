"""Fixtures: the loopback mock upstream, ledgers by URI, and a runtime context builder.

Every context the builder makes runs once with each upstream client the runtime supports: an
``httpx.AsyncClient`` (tests, ``anvil run``) and the pooled HTTP/1.1 client ``anvil serve`` uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from runtime_support import ContextFactory, FakeClock, MockUpstream, UpstreamState, no_sleep

from anvil.ledger.base import Ledger, LedgerOptions
from anvil.ledger.registry import open_ledger
from anvil.runtime.audit import MemoryAuditSink
from anvil.runtime.connections import PooledUpstream
from anvil.runtime.context import RuntimeContext
from anvil.runtime.upstream import UpstreamClient

#: Every ledger backend the runtime guarantees are proven on; a new backend is one more line.
LEDGER_URIS = [
    pytest.param("memory:", id="memory"),
    pytest.param("sqlite:///{tmp}/ledger.db", id="sqlite"),
]


@pytest.fixture(scope="session")
def mock_upstream() -> Iterator[MockUpstream]:
    server = MockUpstream()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def upstream(mock_upstream: MockUpstream) -> Iterator[UpstreamState]:
    mock_upstream.state.reset()
    yield mock_upstream.state
    hold = mock_upstream.state.hold
    if hold is not None:
        hold.set()


@pytest.fixture
def upstream_url(mock_upstream: MockUpstream) -> str:
    return mock_upstream.url


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=LEDGER_URIS)
async def ledger(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Ledger]:
    uri = str(request.param).format(tmp=tmp_path)
    opened = open_ledger(uri, options=LedgerOptions(result_ttl_seconds=3600, clock=clock))
    yield opened
    await opened.close()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as http:
        yield http


@pytest.fixture(params=["httpx", "pooled"])
async def upstream_client(
    request: pytest.FixtureRequest, client: httpx.AsyncClient
) -> AsyncIterator[httpx.AsyncClient | UpstreamClient]:
    """Each upstream client a context can carry (the executor's injected-client seam)."""
    if request.param == "httpx":
        yield client
        return
    pooled = PooledUpstream()
    yield pooled
    await pooled.aclose()


@pytest.fixture
def audit() -> MemoryAuditSink:
    return MemoryAuditSink()


@pytest.fixture
def make_context(
    upstream_client: httpx.AsyncClient | UpstreamClient, upstream_url: str, audit: MemoryAuditSink, clock: FakeClock
) -> ContextFactory:
    """A context against the loopback upstream in ``dev``; keywords override any field."""

    def build(**overrides: Any) -> RuntimeContext:
        values: dict[str, Any] = {
            "service_id": "payments",
            "base_url": upstream_url,
            "client": upstream_client,
            "env": "dev",
            "allowed_hosts": ("127.0.0.1",),
            "audit": audit,
            "sleep": no_sleep,
            "rng": lambda: 0.5,
            "clock": clock,
        }
        values.update(overrides)
        return RuntimeContext(**values)

    return build
