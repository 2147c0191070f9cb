"""References: JSON pointers (RFC 6901) as ``$ref`` fragments use them, and resolving the internal ``$ref``s of
a loaded document (cycle-guarded, cached)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final
from urllib.parse import unquote

from anvil._types import JSONObject, JSONValue

__all__ = [
    "MISSING",
    "Resolver",
    "escape_token",
    "follow",
    "is_ref",
    "join_pointer",
    "split_fragment",
    "split_pointer",
]


class _Missing:
    """The type of :data:`MISSING`: a pointer named nothing (distinct from a JSON ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: Returned by :func:`follow` when a pointer names nothing.
MISSING: Final = _Missing()


def escape_token(token: str) -> str:
    """Escape one reference token (``~`` → ``~0``, ``/`` → ``~1``)."""
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def join_pointer(tokens: Sequence[str | int]) -> str:
    """Build a JSON pointer (``/a/b~1c``) from its tokens; no tokens gives ``""`` (the whole document)."""
    return "".join("/" + escape_token(str(token)) for token in tokens)


def split_pointer(pointer: str) -> list[str] | None:
    """Split a JSON pointer into unescaped tokens; ``None`` when it is not a pointer (no leading ``/``)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        return None
    tokens = pointer[1:].split("/")
    if "~" in pointer:
        tokens = [token.replace("~1", "/").replace("~0", "~") for token in tokens]
    return tokens


def split_fragment(fragment: str) -> list[str] | None:
    """Tokens of a URI fragment holding a JSON pointer (percent-decoded); ``None`` when it is not one."""
    if "%" in fragment:
        fragment = unquote(fragment)
    return split_pointer(fragment)


def follow(document: JSONValue, tokens: Sequence[str]) -> JSONValue:
    """The value ``tokens`` name inside ``document``, or :data:`MISSING`.

    Array indexes are decimal tokens without leading zeros; ``$ref`` objects on the way are not followed
    (JSON pointer semantics).
    """
    node = document
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                return MISSING
            node = node[token]
        elif isinstance(node, list):
            if not (token.isascii() and token.isdigit()) or (token != "0" and token.startswith("0")):
                return MISSING
            index = int(token)
            if index >= len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node


def is_ref(node: JSONValue) -> bool:
    """True when ``node`` is a reference object (a mapping whose ``$ref`` is a string)."""
    return isinstance(node, dict) and isinstance(node.get("$ref"), str)


class Resolver:
    """Follows internal references (``#/...``) in one document.

    The document a :class:`~anvil.load.result.LoadResult` holds has only internal references, every one
    of which resolves; cycles are kept as references, so callers resolve one hop at a time and guard their
    own recursion. Lookups are cached: the document must not be mutated while a resolver is in use.

    Args:
        document: The OpenAPI-3-shaped document to resolve against.
    """

    __slots__ = ("_cache", "_document")

    def __init__(self, document: JSONObject) -> None:
        self._document = document
        self._cache: dict[str, JSONValue] = {}

    @property
    def document(self) -> JSONObject:
        """The document references are resolved against."""
        return self._document

    def lookup(self, ref: str) -> JSONValue | None:
        """The node an internal reference names, or ``None`` when it names nothing (or a JSON ``null``).

        Args:
            ref: A reference such as ``#/components/schemas/Pet`` (``~1``/``~0`` and percent escapes
                are decoded). References that are not internal (no leading ``#``) name nothing.
        """
        cached = self._cache.get(ref, MISSING)
        if cached is MISSING:
            cached = self._find(ref)
            self._cache[ref] = cached
        return None if cached is MISSING else cached

    def contains(self, ref: str) -> bool:
        """True when the internal reference ``ref`` names a node (even a JSON ``null``)."""
        self.lookup(ref)
        return self._cache[ref] is not MISSING

    def _find(self, ref: str) -> JSONValue:
        if not ref.startswith("#"):
            return MISSING
        tokens = split_fragment(ref[1:])
        if tokens is None:
            return MISSING
        return follow(self._document, tokens)

    def resolve(self, node: JSONValue) -> JSONValue:
        """Follow a chain of references from ``node`` to the first node that is not a reference.

        A node that is not a reference is returned unchanged. A dangling reference, or a chain that
        loops back on itself without reaching content, resolves to an empty mapping.
        """
        seen: set[str] | None = None
        while isinstance(node, dict):
            ref = node.get("$ref")
            if not isinstance(ref, str):
                return node
            if seen is None:
                seen = {ref}
            elif ref in seen:
                return {}
            else:
                seen.add(ref)
            target = self.lookup(ref)
            if target is None:
                return {}
            node = target
        return node

    def name_of(self, node: JSONValue) -> str | None:
        """The last token of ``node``'s reference (``Pet`` for ``#/components/schemas/Pet``), or ``None``."""
        if not is_ref(node):
            return None
        ref: str = node["$ref"]
        tokens = split_fragment(ref[1:]) if ref.startswith("#") else None
        return tokens[-1] if tokens else None
