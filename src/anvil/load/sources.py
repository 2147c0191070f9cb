"""The files of one spec: reading them inside a root folder, parsing once, classifying ``$ref`` strings."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import unquote

from yaml.nodes import Node

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.diagnostics import Diagnostic, diagnostic
from anvil.load.files import DEFAULT_MAX_FILE_BYTES, FileRefusal, read_bounded
from anvil.load.parse import Parsed, ParseFailure, compose, locate, parse_bytes
from anvil.load.refs import join_pointer, split_fragment

if TYPE_CHECKING:
    from anvil.load.ahead import ParseAhead

__all__ = ["RefTarget", "SourceFile", "SourceSet", "classify_ref"]

_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

RefKind = Literal["internal", "file", "external", "escape", "invalid"]


@dataclass(frozen=True, slots=True)
class RefTarget:
    """Where a ``$ref`` string points, relative to the file that holds it.

    ``kind`` is ``internal`` (same file), ``file`` (another local file: ``file`` is its key),
    ``external`` (a URL or other scheme: never fetched), ``escape`` (a file outside the root, or an
    absolute path) or ``invalid`` (not a usable reference). ``tokens`` is the fragment's JSON pointer.
    """

    kind: RefKind
    file: str = ""
    tokens: tuple[str, ...] = ()


def classify_ref(ref: str, holder: str) -> RefTarget:
    """Classify a ``$ref`` string found in the file whose key is ``holder``.

    Args:
        ref: The reference text (``#/a/b``, ``other.yaml#/x``, ``https://...``).
        holder: The key (root-relative POSIX path) of the file holding the reference.
    """
    if _SCHEME.match(ref) or ref.startswith("//"):
        return RefTarget("external")
    path, _, fragment = ref.partition("#")
    tokens = split_fragment(fragment)
    if tokens is None:
        return RefTarget("invalid")
    if not path:
        return RefTarget("internal", holder, tuple(tokens))
    if "%" in path:
        path = unquote(path)
    if path.startswith("/") or "\\" in path or "\0" in path:
        return RefTarget("escape")
    key = posixpath.normpath(posixpath.join(posixpath.dirname(holder), path))
    if key == ".." or key.startswith("../") or key == ".":
        return RefTarget("escape")
    if key == holder:
        return RefTarget("internal", holder, tuple(tokens))
    return RefTarget("file", key, tuple(tokens))


@dataclass(slots=True)
class SourceFile:
    """One file read for the spec: its key, bytes and parse outcome."""

    key: str
    data: bytes
    parsed: Parsed | ParseFailure

    @property
    def value(self) -> JSONValue:
        """The parsed value (``None`` when parsing failed)."""
        return self.parsed.value if isinstance(self.parsed, Parsed) else None


class SourceSet:
    """Reads and parses the files of one spec, each at most once, never outside ``root``.

    Args:
        root: The folder every file must stay inside (after following symlinks).
        max_file_bytes: The largest file read; larger ones, and anything but a regular file, are refused.
        ahead: the entry file's parse, started in another process (it answers only for the bytes it read).
    """

    def __init__(
        self, root: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, ahead: ParseAhead | None = None
    ) -> None:
        self._root = root
        self._limit = max_file_bytes
        self._parse = parse_bytes if ahead is None else ahead.parse
        self._real_root: Path | None = None
        self.refusals: dict[str, FileRefusal] = {}
        self._files: dict[str, SourceFile | None] = {}
        self._nodes: dict[str, Node | None] = {}
        self.diagnostics: list[Diagnostic] = []

    @property
    def files(self) -> dict[str, bytes]:
        """Every file read so far, by key, with its bytes (parsed or not)."""
        return {key: source.data for key, source in self._files.items() if source is not None}

    def _inside_root(self, path: Path) -> bool:
        try:
            if self._real_root is None:
                self._real_root = self._root.resolve()
            return path.resolve().is_relative_to(self._real_root)
        except (OSError, RuntimeError):
            return False

    def read(self, key: str, *, inside_root: bool = True) -> SourceFile | None:
        """The file at ``key`` (root-relative POSIX path), read and parsed; ``None`` if it cannot be read.

        A file that does not parse is returned with a :class:`ParseFailure` and reported once as
        ``source/parse_error``. A file that cannot be read is reported by the caller, who knows the
        reference that named it (with :attr:`refusals` saying why, for a file that is not regular or
        is over the size limit). A symlink leading outside the root is treated as unreadable, unless
        ``inside_root`` is false (the entry file the caller named itself).
        """
        if key in self._files:
            return self._files[key]
        path = self._root.joinpath(*key.split("/"))
        source: SourceFile | None = None
        if not inside_root or self._inside_root(path):
            read = read_bounded(path, self._limit)
            data = None
            if isinstance(read, FileRefusal):
                if read.code != "unreadable":
                    self.refusals[key] = read
            else:
                data = read
            if data is not None:
                source = SourceFile(key, data, self._parse(data, key))
                truncated = source.parsed.truncated if isinstance(source.parsed, Parsed) else ()
                for line, column in truncated:
                    self.diagnostics.append(
                        diagnostic(
                            "schema_cycle_truncated",
                            f"{key}: a YAML alias inside this node refers back to it; the inner copy was cut to a stub",
                            file=key,
                            line=line,
                            column=column,
                        )
                    )
                if isinstance(source.parsed, ParseFailure):
                    failure = source.parsed
                    self.diagnostics.append(
                        diagnostic(
                            failure.code,
                            f"{key}: {failure.message}",
                            file=key,
                            line=failure.line,
                            column=failure.column,
                        )
                    )
        self._files[key] = source
        return source

    def where(self, key: str, tokens: tuple[str, ...] | list[str]) -> tuple[int | None, int | None, str | None]:
        """``(line, column, None)`` for a node of file ``key`` when its text can be placed, else
        ``(None, None, pointer)``."""
        source = self._files.get(key)
        if source is not None and isinstance(source.parsed, Parsed):
            if key not in self._nodes:
                self._nodes[key] = compose(source.data)
            found = locate(self._nodes[key], list(tokens))
            if found is not None:
                return found[0], found[1], None
        return None, None, join_pointer(tokens)
