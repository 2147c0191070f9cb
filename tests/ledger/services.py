"""Where the external services the backend tests need are, and what to do when one is missing.

``.ci/run`` starts PostgreSQL and the Firestore emulator and exports ``ANVIL_TEST_POSTGRES_URL`` and
``FIRESTORE_EMULATOR_HOST``. Without them a test that needs one skips with a reason; with
``ANVIL_TEST_REQUIRE_SERVICES=1`` (CI) it fails instead, so a missing service can never pass silently.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anvil.ledger.base import LedgerOptions
from anvil.ledger.postgres import PostgresLedger
from anvil.ledger.registry import open_ledger
from tests.conftest import missing

__all__ = ["firestore_uri", "postgres_ledger", "postgres_uri", "require", "service_address"]

_ENV = {"postgres": "ANVIL_TEST_POSTGRES_URL", "firestore": "FIRESTORE_EMULATOR_HOST"}
_HOW = 'start both with eval "$(bash .ci/services.sh start)" (README, Choosing a ledger backend)'


def service_address(name: str) -> str | None:
    """The configured address of ``name`` (``postgres``: a URL; ``firestore``: HOST:PORT), or None."""
    return os.environ.get(_ENV[name]) or None


def _reachable(address: str) -> bool:
    host_port = address.split("@")[-1].split("/")[0] if "://" in address else address
    host, _, port = host_port.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port or 5432)), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


def require(name: str) -> str:
    """The address of service ``name``; skips (or fails under ANVIL_TEST_REQUIRE_SERVICES=1) when absent."""
    address = service_address(name)
    problem = None
    if address is None:
        problem = f"{_ENV[name]} is not set"
    elif not _reachable(address):
        problem = f"{name} at {_ENV[name]} does not answer"
    if problem is None:
        assert address is not None
        return address
    missing(f"{name} is not available: {problem}; {_HOW}")
    raise AssertionError("unreachable")


def postgres_uri(base: str, namespace: str) -> str:
    """The ledger URI for a fresh namespace on the test database."""
    return f"{base}{'&' if '?' in base else '?'}namespace={namespace}"


@asynccontextmanager
async def postgres_ledger(base: str, *, lock_timeout_seconds: float | None = None) -> AsyncIterator[PostgresLedger]:
    """A ledger on a fresh namespace of the database at ``base``, its table created, closed afterwards."""
    options = None if lock_timeout_seconds is None else LedgerOptions(lock_timeout_seconds=lock_timeout_seconds)
    ledger = open_ledger(postgres_uri(base, f"t-{uuid.uuid4().hex[:12]}"), options=options)
    assert isinstance(ledger, PostgresLedger)
    try:
        await ledger.initialize()
        yield ledger
    finally:
        await ledger.close()


def firestore_uri(host: str, namespace: str) -> str:
    """The ledger URI for a fresh namespace on the emulator (project ``demo-anvil``, default database)."""
    del host  # the client finds the emulator through FIRESTORE_EMULATOR_HOST itself
    return f"firestore://demo-anvil/(default)/{namespace}"
