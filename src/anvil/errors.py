"""Exceptions for runtime faults, under one root.

A bad spec or manifest never raises: those problems are :class:`anvil.diagnostics.Diagnostic`
values. Exceptions are for faults an operator can see at run time, and each carries a code from
:mod:`anvil.codes`::

    AnvilError                 every fault of ours; has .code (registered) and .hint
    ├── UsageError             bad command-line or environment input (exit 2)
    ├── AirError               an AIR document that does not load (bounds, ids, shapes)
    ├── BundleError            a bundle directory that cannot be read, written or installed
    ├── ConfigError            configuration that cannot be used (env vars, URIs, files)
    ├── LedgerError            the idempotency ledger failed or is unreachable
    └── ExecutionError         a call could not be carried out (wraps an error envelope)

Foreign exceptions are translated at one boundary per layer with ``raise Ours(...) from exc``.
"""

from __future__ import annotations

__all__ = [
    "AirError",
    "AnvilError",
    "BundleError",
    "ConfigError",
    "ExecutionError",
    "LedgerError",
    "UsageError",
]


class AnvilError(Exception):
    """Root of every Anvil fault. ``code`` is a registered code; ``hint`` says what to do."""

    def __init__(self, code: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(AnvilError):
    """Bad command-line or environment input."""


class AirError(AnvilError):
    """An AIR document that does not load."""


class BundleError(AnvilError):
    """A bundle directory that cannot be read, written or installed."""


class ConfigError(AnvilError):
    """Configuration that cannot be used."""


class LedgerError(AnvilError):
    """The idempotency ledger failed or is unreachable."""


class ExecutionError(AnvilError):
    """A call could not be carried out."""
