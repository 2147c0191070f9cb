"""Shared helpers for the loader tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from anvil.load.refs import Resolver

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def refs_in(document: Any) -> Iterator[str]:
    """Every ``$ref`` string anywhere in ``document`` (shared objects visited once)."""
    seen: set[int] = set()
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                yield ref
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def unresolved_refs(document: dict[str, Any]) -> list[str]:
    """The references in ``document`` that are not internal or name nothing."""
    resolver = Resolver(document)
    return sorted({ref for ref in refs_in(document) if not resolver.contains(ref)})
