"""Anvil for Python: compile OpenAPI + anvil.yaml into AIR and serve it to agents safely."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.errors import AnvilError

if TYPE_CHECKING:
    from anvil.diagnostics import Diagnostic

__version__ = "0.1.0"

__all__ = ["AnvilError", "Diagnostic", "__version__"]


def __getattr__(name: str) -> Any:
    # ``Diagnostic`` loads on first use: its module loads the code table, which a served gateway never
    # reads (cold start).
    if name == "Diagnostic":
        from anvil.diagnostics import Diagnostic

        return Diagnostic
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
