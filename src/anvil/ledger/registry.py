"""Choose a ledger backend from the ``ANVIL_LEDGER`` URI scheme (original-ledger §1.9).

Built-in schemes map to ``"module:Class"`` paths imported only when used, so a backend's driver is
an optional extra. A plugin registers its own scheme with :func:`register_scheme` (a registered
scheme wins over a built-in one, deliberately). An unknown scheme is a configuration error at boot.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Final, Protocol

from anvil.errors import ConfigError
from anvil.ledger.base import Ledger, LedgerOptions

__all__ = ["LedgerFactory", "open_ledger", "register_scheme", "registered_schemes", "scheme_of"]


class LedgerFactory(Protocol):
    """Builds a ledger from the exact URI and the shared options."""

    def __call__(self, uri: str, options: LedgerOptions, /) -> Ledger: ...


_SCHEME: Final = re.compile(r"^[a-z][a-z0-9+.-]*$")
_BUILTIN: Final[dict[str, str]] = {
    "memory": "anvil.ledger.memory:MemoryLedger",
    "sqlite": "anvil.ledger.sqlite:SqliteLedger",
    "postgresql": "anvil.ledger.postgres:PostgresLedger",
    "postgres": "anvil.ledger.postgres:PostgresLedger",
    "firestore": "anvil.ledger.firestore:FirestoreLedger",
}
_registered: dict[str, LedgerFactory | str] = {}


def scheme_of(uri: str) -> str:
    """The scheme: the text before the first ``:`` (``memory`` for ``memory:``, ``sqlite`` for ``sqlite:///x``)."""
    return uri.split(":", 1)[0]


def register_scheme(scheme: str, factory: LedgerFactory | str) -> None:
    """Register a backend for ``scheme``: a factory, or a ``"module:attr"`` path imported on first use.

    A path names a class with a ``from_uri(uri, options)`` classmethod or a factory function.

    Raises:
        ConfigError: ``scheme`` is not a lowercase URI scheme (``config/invalid``).
    """
    if not _SCHEME.match(scheme):
        raise ConfigError("config/invalid", "A ledger scheme must be a lowercase URI scheme such as 'postgresql'.")
    _registered[scheme] = factory


def registered_schemes() -> tuple[str, ...]:
    """Every scheme that opens a ledger, built-in or registered, sorted."""
    return tuple(sorted({*_BUILTIN, *_registered}))


def _load(target: str) -> LedgerFactory:
    module_name, _, attr = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr)
        if module_name == "anvil.ledger.postgres":
            importlib.import_module("psycopg_pool")  # the driver is an extra: refuse at boot, not mid-call
        elif module_name == "anvil.ledger.firestore":
            importlib.import_module("google.cloud.firestore")
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            "config/invalid",
            "The ledger backend for this scheme is not installed.",
            hint="Install the extra that provides it (for example anvil-python[postgres]).",
        ) from exc
    from_uri = getattr(found, "from_uri", None)
    factory: Callable[[str, LedgerOptions], Ledger] = from_uri if callable(from_uri) else found
    return factory


def open_ledger(uri: str, *, options: LedgerOptions | None = None) -> Ledger:
    """Open the ledger ``uri`` names. An empty URI opens the per-process ``memory:`` ledger.

    Raises:
        ConfigError: no backend is registered for the scheme, or the backend refuses the URI
            (``config/invalid``; the message never repeats the URI, which may hold a password).
    """
    opts = options or LedgerOptions()
    scheme = scheme_of(uri) if uri else "memory"
    target = _registered.get(scheme) or _BUILTIN.get(scheme)
    if target is None or (uri and ":" not in uri):
        raise ConfigError(
            "config/invalid",
            "No idempotency ledger backend is registered for this ANVIL_LEDGER scheme.",
            hint=f"Use one of: {', '.join(f'{name}:' for name in registered_schemes())}",
        )
    factory = _load(target) if isinstance(target, str) else target
    ledger = factory(uri, opts)
    if not isinstance(ledger, Ledger):
        raise ConfigError("config/invalid", "The ledger backend factory did not return a Ledger.")
    return ledger
