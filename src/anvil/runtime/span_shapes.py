"""The attributes a call's child spans share with every span of their shape, built once and kept.

A tracer is handed them as ``fixed`` (:meth:`anvil.runtime.tracing.Tracer.start`): one read-only mapping per
shape - a ledger backend's spans, an operation's gates span, one upstream's attempts of one method and path
template - so a span's own attributes are only what differs from call to call (the attempt number, the
status, the sizes), and the exporter keeps each shape encoded once.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final
from urllib.parse import urlsplit

from anvil.runtime.tracing import Attribute

__all__ = ["attempt_shape", "gates_shape", "ledger_shape"]

#: Shapes kept at most (then forgotten at once: a stream of one-off shapes costs their building, not memory).
_MAX_SHAPES: Final = 4096
_SHAPES: dict[tuple[str, ...], Mapping[str, Attribute]] = {}


def _kept(key: tuple[str, ...], attributes: dict[str, Attribute]) -> Mapping[str, Attribute]:
    if len(_SHAPES) >= _MAX_SHAPES:
        _SHAPES.clear()
    found = _SHAPES[key] = MappingProxyType(attributes)
    return found


def ledger_shape(backend: str) -> Mapping[str, Attribute]:
    """A ledger span's: ``anvil.ledger.backend``."""
    return _SHAPES.get(("ledger", backend)) or _kept(("ledger", backend), {"anvil.ledger.backend": backend})


def gates_shape(operation: str) -> Mapping[str, Attribute]:
    """The gates span's: ``anvil.operation``."""
    return _SHAPES.get(("gates", operation)) or _kept(("gates", operation), {"anvil.operation": operation})


def attempt_shape(base: str, method: str, template: str) -> Mapping[str, Attribute]:
    """An upstream attempt's (HTTP client conventions): the method, ``url.scheme``, ``server.address`` and
    ``server.port`` of the base URL ``base``, and ``url.template`` (the operation's path; none when empty)."""
    key = ("attempt", base, method, template)
    found = _SHAPES.get(key)
    if found is not None:
        return found
    parts = urlsplit(base)
    scheme = parts.scheme or "https"
    attributes: dict[str, Attribute] = {
        "http.request.method": method,
        "url.scheme": scheme,
        "server.address": parts.hostname or "",
        "server.port": parts.port or (443 if scheme == "https" else 80),
    }
    if template:
        attributes["url.template"] = template
    return _kept(key, attributes)
