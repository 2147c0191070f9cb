"""Loading source specs (OpenAPI 3.0/3.1, Swagger 2.0; JSON or YAML; one file or many).

Public entry point: :func:`anvil.load.spec.load_spec` returning a :class:`LoadResult`; internal
references in its document are followed with :class:`anvil.load.refs.Resolver`.

The names below are imported when first asked for, not with the package: ``anvil compile`` imports
:mod:`anvil.load.ahead` first, to fork the spec's parse before anything else is loaded (YAML included).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anvil.load.refs import Resolver
    from anvil.load.result import LoadResult
    from anvil.load.spec import load_spec

__all__ = ["LoadResult", "Resolver", "load_spec"]

_HOMES = {"LoadResult": "anvil.load.result", "Resolver": "anvil.load.refs", "load_spec": "anvil.load.spec"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
