"""Connector names: a bundle's fleet id folded to ``[A-Za-z0-9_-]`` (original-gateway §1.4).

A connector *is* the folded fleet id: grants, wire tool names, vault records and audit lines all use
the same string, so every one of them goes through :func:`fold_bundle_id`.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["CONNECTOR_PATTERN", "FLEET_SEPARATOR", "fleet_tool_name", "fold_bundle_id"]

#: What a connector id must look like (in a grant entry, a harness package, a vault record).
CONNECTOR_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: Between the connector and the bundle's own tool name in a prefixed wire name.
FLEET_SEPARATOR: Final = "__"
_OUTSIDE: Final = re.compile(r"[^A-Za-z0-9_-]+")


def fold_bundle_id(bundle_id: str) -> str:
    """Fold a bundle's workspace-relative id into a connector id.

    Every run of characters outside ``[A-Za-z0-9_-]`` becomes one ``_``; leading and trailing ``_`` are
    stripped; an empty result is ``bundle``.

    Args:
        bundle_id: the bundle's fleet id, e.g. ``payments/v2``.

    Returns:
        The connector id, e.g. ``payments_v2``.
    """
    return _OUTSIDE.sub("_", bundle_id).strip("_") or "bundle"


def fleet_tool_name(bundle_id: str, tool_name: str) -> str:
    """The prefixed wire name of a bundle's tool: ``fold(id) + "__" + tool`` (``payments_v2__list_orders``)."""
    return fold_bundle_id(bundle_id) + FLEET_SEPARATOR + tool_name
