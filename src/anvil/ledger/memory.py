"""``memory:``: a per-process ledger for development (never durable, never shared between processes).

It runs the same policy as every other backend (:class:`~anvil.ledger.base.Ledger`), so expiry, the
replay ceiling and in-progress refusals behave as they will in production; it only forgets on exit.
Outside ``ANVIL_ENV=dev`` the executor refuses writes that require a durable ledger when this is
the only one configured.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
from dataclasses import replace
from typing import ClassVar

from anvil.errors import ConfigError
from anvil.ledger.base import Ledger, LedgerOptions, LedgerRow, Sharing

__all__ = ["MemoryLedger"]

_TABLE = "anvil_idempotency"


class MemoryLedger(Ledger):
    """Rows in a dict guarded by a lock; versions come from a process-wide counter (never reused)."""

    scheme: ClassVar[str] = "memory"
    durable: ClassVar[bool] = False
    sharing: ClassVar[Sharing] = "process"

    def __init__(self, options: LedgerOptions | None = None) -> None:
        super().__init__(options)
        self._rows: dict[str, LedgerRow] = {}
        self._lock = threading.Lock()
        self._versions = itertools.count(1)
        self._instance = secrets.token_hex(8)  # rows are this object's: no two instances share one

    @classmethod
    def from_uri(cls, uri: str, options: LedgerOptions) -> MemoryLedger:
        """Open ``memory:`` (also ``memory://``); nothing may follow the scheme.

        Raises:
            ConfigError: the URI carries a path, host or query (``config/invalid``).
        """
        if uri not in ("memory:", "memory://", ""):
            raise ConfigError(
                "config/invalid", "A memory ledger URI is exactly 'memory:'.", hint="Use ANVIL_LEDGER=memory:"
            )
        return cls(options)

    @property
    def table(self) -> str:
        """Rows are reported under one fixed table name."""
        return _TABLE

    @property
    def namespace(self) -> str | None:
        """None: one fixed table, whatever namespace the gateway passes."""
        return None

    def _store_identity(self) -> dict[str, str]:
        """This process and this instance: rows are shared with nothing else."""
        return {"process": str(os.getpid()), "instance": self._instance}

    def _next(self) -> str:
        return str(next(self._versions))

    async def _create_if_absent(self, document: str, row: LedgerRow) -> str | None:
        """Atomic under the lock: exactly one creator of a document wins within this process."""
        with self._lock:
            if document in self._rows:
                return None
            version = self._next()
            self._rows[document] = replace(row, version=version)
            return version

    async def _read(self, document: str) -> LedgerRow | None:
        """The row as stored, or None."""
        with self._lock:
            return self._rows.get(document)

    async def _update_if_version(
        self, document: str, version: str, row: LedgerRow, *, final: bool = False
    ) -> str | None:
        """Compare-and-replace under the lock."""
        with self._lock:
            current = self._rows.get(document)
            if current is None or current.version != version:
                return None
            fresh = self._next()
            self._rows[document] = replace(row, version=fresh)
            return fresh

    async def _delete_if_version(self, document: str, version: str) -> bool:
        """Compare-and-delete under the lock."""
        with self._lock:
            current = self._rows.get(document)
            if current is None or current.version != version:
                return False
            del self._rows[document]
            return True
