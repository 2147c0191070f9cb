"""Where the external services the backend tests need are, and what to do when one is missing.

``.ci/run`` starts PostgreSQL and the Firestore emulator and exports ``ANVIL_TEST_POSTGRES_URL`` and
``FIRESTORE_EMULATOR_HOST``. Without them a test that needs one skips with a reason; with
``ANVIL_TEST_REQUIRE_SERVICES=1`` (CI) it fails instead, so a missing service can never pass silently.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from anvil.ledger.base import LedgerOptions
from anvil.ledger.postgres import PostgresLedger
from anvil.ledger.registry import open_ledger
from tests.conftest import missing

__all__ = [
    "SearchPathTraps",
    "firestore_uri",
    "postgres_ledger",
    "postgres_uri",
    "require",
    "search_path_traps",
    "service_address",
]

_ENV = {"postgres": "ANVIL_TEST_POSTGRES_URL", "firestore": "FIRESTORE_EMULATOR_HOST"}
_HOW = 'start both with eval "$(bash .ci/services.sh start)" (docs/developing.md, Test services)'


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


@dataclass(frozen=True)
class SearchPathTraps:
    """The two ways an unqualified table name reaches another table on one database: a login role owning
    a schema of its own name (first on the default ``search_path``), and a schema an ``options=-c
    search_path=`` parameter points at; ``spare`` is one more empty schema."""

    role: str
    schema: str
    spare: str

    def as_role(self, uri: str) -> str:
        """``uri`` logging in as the role (the test server trusts loopback logins)."""
        parts = urlsplit(uri)
        return urlunsplit(parts._replace(netloc=f"{self.role}@{parts.netloc.rsplit('@', 1)[-1]}"))

    def with_search_path(self, uri: str) -> str:
        """``uri`` with ``options=-c search_path=`` the trap schema."""
        return f"{uri}{'&' if '?' in uri else '?'}options=-c%20search_path%3D{self.schema}"


@contextmanager
def search_path_traps(base: str) -> Iterator[SearchPathTraps]:
    """Create the role (allowed to read and write every table, owning its own schema) and the schemas on
    the database at ``base``; drop them afterwards."""
    import psycopg

    tag = uuid.uuid4().hex[:10]
    traps = SearchPathTraps(role=f"anvil_role_{tag}", schema=f"anvil_path_{tag}", spare=f"anvil_spare_{tag}")
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {traps.role} LOGIN")
        admin.execute(f"GRANT pg_read_all_data, pg_write_all_data TO {traps.role}")
        admin.execute(f"CREATE SCHEMA {traps.role} AUTHORIZATION {traps.role}")
        admin.execute(f"CREATE SCHEMA {traps.schema}")
        try:
            yield traps
        finally:
            for schema in (traps.role, traps.schema, traps.spare):
                admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            admin.execute(f"DROP OWNED BY {traps.role}")
            admin.execute(f"DROP ROLE {traps.role}")
