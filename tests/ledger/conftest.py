"""The ledger conformance fixtures: one parametrized ``ledger`` per backend URI.

Adding a backend to the suite is one line in ``BACKENDS``: its URI (``{tmp}`` is a fresh temporary
folder). Backends that need a service (PostgreSQL, the Firestore emulator) add a ``marks=`` entry and
skip with a reason when the service is absent, never silently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from ledger_support import TTL_SECONDS, FakeClock

from anvil.ledger.base import Ledger, LedgerOptions
from anvil.ledger.registry import open_ledger

BACKENDS = [
    pytest.param("memory:", id="memory"),
    pytest.param("sqlite:///{tmp}/conformance.db", id="sqlite"),
]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def ledger_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(request.param).format(tmp=tmp_path)


@pytest.fixture
def open_backend(ledger_uri: str, clock: FakeClock) -> Callable[[], Ledger]:
    """Opens another instance of the same backend (same file/database, same clock)."""

    def opener() -> Ledger:
        return open_ledger(ledger_uri, options=LedgerOptions(result_ttl_seconds=TTL_SECONDS, clock=clock))

    return opener


@pytest.fixture
async def ledger(open_backend: Callable[[], Ledger]) -> AsyncIterator[Ledger]:
    opened = open_backend()
    yield opened
    await opened.close()
