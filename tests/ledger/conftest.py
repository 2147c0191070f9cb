"""The ledger conformance fixtures: one parametrized ``ledger`` per backend URI.

Adding a backend to the suite is one line in ``BACKENDS``: its URI (``{tmp}`` is a fresh temporary
folder, ``{ns}`` a fresh namespace so every test gets its own table or collection). Backends that need
a service (PostgreSQL, the Firestore emulator) skip with a reason when the service is absent, or fail
when ``ANVIL_TEST_REQUIRE_SERVICES=1`` (see ``services.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from ledger_support import TTL_SECONDS, FakeClock
from services import firestore_uri, postgres_uri, require

from anvil.ledger.base import Ledger, LedgerOptions
from anvil.ledger.registry import open_ledger

BACKENDS = [
    pytest.param("memory:", id="memory"),
    pytest.param("sqlite:///{tmp}/conformance.db?namespace={ns}", id="sqlite"),
    pytest.param("postgres", id="postgresql"),
    pytest.param("firestore", id="firestore"),
]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def ledger_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    namespace = f"t-{uuid.uuid4().hex[:12]}"
    if request.param == "postgres":
        return postgres_uri(require("postgres"), namespace)
    if request.param == "firestore":
        return firestore_uri(require("firestore"), namespace)
    return str(request.param).format(tmp=tmp_path, ns=namespace)


@pytest.fixture
def open_backend(ledger_uri: str, clock: FakeClock) -> Callable[[], Ledger]:
    """Opens another instance of the same backend (same file/database, same clock)."""

    def opener() -> Ledger:
        return open_ledger(ledger_uri, options=LedgerOptions(result_ttl_seconds=TTL_SECONDS, clock=clock))

    return opener


@pytest.fixture
async def ledger(open_backend: Callable[[], Ledger], one_event_loop: None) -> AsyncIterator[Ledger]:
    opened = open_backend()
    await opened.initialize()
    yield opened
    await opened.close()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Every ledger test runs on asyncio, one event loop per module (see ``one_event_loop``)."""
    return "asyncio"


@pytest.fixture(scope="module")
async def one_event_loop() -> AsyncIterator[None]:
    """Keep one loop for a module: gRPC's asyncio poller (the Firestore client) binds to the first
    loop it sees and fails on a closed one. Module-scoped, so no other test directory inherits it."""
    yield
