"""What a tool answers with, in words: the names and description of the record its response schema holds.

An API often says what a thing *is* only once, in its schema ("A *section* is a subdivision of a project
that groups tasks together. It can either be a header ... or a column in a board view"), and every operation
answering with that record shares those words. :func:`returns_text` reads them from a compiled operation's
response schema: the names of the schemas it refers to (``SectionResponse``), the properties of the record
(past a single wrapping property such as ``data``), and the first description met, each bounded.

Schemas are untrusted: references are followed only inside the document's own ``schemas``, at most
:data:`_MOST_REFS` of them and :data:`_DEPTH` levels deep, so a cyclic or huge schema costs little.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from anvil.air.model import Operation

__all__ = ["returns_text"]

_REF_PREFIX: Final = "#/components/schemas/"
#: How deep the walk goes (references and wrappers each count one level).
_DEPTH: Final = 6
#: The most references followed for one operation.
_MOST_REFS: Final = 8
#: The most property names read from the record.
_MOST_PROPERTIES: Final = 16
#: The longest description kept.
_DESCRIPTION_CHARS: Final = 300
#: Property names that hold a page's records.
_RECORDS: Final = frozenset(("data", "items", "results", "values", "records", "entries"))
#: A description saying nothing of the record (Slack's "Schema for successful response of <method>").
_BOILERPLATE: Final = ("schema for successful response", "this method either only returns")


def returns_text(op: Operation, schemas: Mapping[str, Any]) -> str:
    """The words of what ``op`` answers with (empty when its response schema says nothing)."""
    walk = _Walk(schemas)
    walk.visit(op.output.schema, 0)
    parts = [*walk.names, *walk.properties]
    if walk.description:
        parts.append(walk.description)
    return " ".join(parts)


class _Walk:
    """One bounded walk of a response schema."""

    __slots__ = ("description", "names", "properties", "refs", "schemas")

    def __init__(self, schemas: Mapping[str, Any]) -> None:
        self.schemas = schemas
        self.names: list[str] = []
        self.properties: list[str] = []
        self.description = ""
        self.refs = 0

    def visit(self, node: object, depth: int) -> None:
        if not isinstance(node, dict) or depth > _DEPTH:
            return
        ref = node.get("$ref")
        if isinstance(ref, str):
            self._follow(ref, depth)
            return
        description = node.get("description")
        if not self.description and isinstance(description, str) and not _says_nothing(description):
            self.description = description[:_DESCRIPTION_CHARS]
        for key in ("allOf", "anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                for branch in branches[:4]:
                    self.visit(branch, depth + 1)
        self.visit(node.get("items"), depth + 1)
        properties = node.get("properties")
        if not isinstance(properties, dict):
            return
        named = [str(key) for key in list(properties)[:_MOST_PROPERTIES] if key not in ("ok", "object")]
        if len(named) == 1 and not self.properties:
            # a wrapper ({"data": {...}}, {"incident": {...}}): its one property is read, then the record
            self.names.append(named[0])
            self.visit(properties[named[0]], depth + 1)
            return
        for key in [key for key in named if key in _RECORDS][:1]:
            # a page ({"data": [...], "next_page": ...}): the record is its list's item
            self.visit(properties[key], depth + 1)
        if not self.properties:
            self.properties = named

    def _follow(self, ref: str, depth: int) -> None:
        if not ref.startswith(_REF_PREFIX) or self.refs >= _MOST_REFS:
            return
        self.refs += 1
        name = ref[len(_REF_PREFIX) :]
        if len(self.names) < _MOST_REFS:
            self.names.append(name[:80])
        self.visit(self.schemas.get(name), depth + 1)


def _says_nothing(description: str) -> bool:
    return description[:40].casefold().startswith(_BOILERPLATE)
