"""Anvil for Python: compile OpenAPI + anvil.yaml into AIR and serve it to agents safely."""

from anvil.diagnostics import Diagnostic
from anvil.errors import AnvilError

__version__ = "0.1.0"

__all__ = ["AnvilError", "Diagnostic", "__version__"]
