"""``load_spec``: read a spec (one file or many) into one OpenAPI-3-shaped document with provenance."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Final, Literal

from anvil._types import JSONObject, JSONValue
from anvil.diagnostics import Diagnostic, diagnostic
from anvil.load.controls import has_control
from anvil.load.files import DEFAULT_MAX_FILE_BYTES
from anvil.load.identity import snapshot_id, source_hash
from anvil.load.merge import METHODS, bundle_document
from anvil.load.parse import ParseFailure
from anvil.load.refs import Resolver
from anvil.load.result import LoadResult
from anvil.load.sources import SourceSet
from anvil.load.swagger import convert_swagger

if TYPE_CHECKING:
    from anvil.load.ahead import ParseAhead

__all__ = ["count_operations", "load_spec"]

_OPENAPI: Final = re.compile(r"^3\.[01](?:\.\d+)?(?:-[0-9A-Za-z.-]+)?$")
_SWAGGER: Final = re.compile(r"^2\.0(?:\.\d+)?$")

Kind = Literal["openapi", "swagger"]


def count_operations(document: JSONObject) -> int:
    """How many path × method operations ``document`` declares (path-item references followed)."""
    paths = document.get("paths")
    if not isinstance(paths, dict):
        return 0
    resolver = Resolver(document)
    total = 0
    for item in paths.values():
        resolved = resolver.resolve(item)
        if isinstance(resolved, dict):
            total += sum(1 for method in resolved if method in METHODS)
    return total


def _shown(name: str, limit: int = 120) -> str:
    """``name`` for a message: every non-ASCII character escaped (so no control reaches a terminal), cut."""
    escaped = ascii(name)[1:-1]
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "..."


def _version_text(value: JSONValue) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return str(value)


class _Load:
    """One call of :func:`load_spec`."""

    def __init__(self, path: Path, uri: str, root: Path | None, max_file_bytes: int, ahead: ParseAhead | None) -> None:
        self.path = path
        self.uri = uri
        self.folder = path.parent if root is None else root
        self.diagnostics: list[Diagnostic] = []
        self.key = path.name
        if root is not None:
            relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
            self.key = PurePath(relative).as_posix()
        self.sources = SourceSet(self.folder, max_file_bytes=max_file_bytes, ahead=ahead)

    def result(self, document: JSONObject | None, kind: Kind = "openapi", version: str = "") -> LoadResult:
        files = dict(sorted(self.sources.files.items()))
        return LoadResult(
            document=document,
            kind=kind,
            version=version,
            entrypoint=self.key,
            uri=self.uri,
            files=files,
            source_hash=source_hash(files),
            snapshot_id=snapshot_id(files),
            diagnostics=(*self.sources.diagnostics, *self.diagnostics),
        )

    def report(self, code: str, message: str, tokens: list[str]) -> None:
        line, column, pointer = self.sources.where(self.key, tokens)
        self.diagnostics.append(diagnostic(code, message, file=self.key, line=line, column=column, pointer=pointer))

    def version(self, document: JSONObject) -> tuple[Kind, str] | None:
        if "openapi" in document:
            text = _version_text(document["openapi"])
            if text is not None and _OPENAPI.match(text):
                return "openapi", text
            self.report("source/unsupported_version", f"OpenAPI version {text or '?'} is not 3.0 or 3.1", ["openapi"])
            return None
        if "swagger" in document:
            text = _version_text(document["swagger"])
            if text is not None and _SWAGGER.match(text):
                return "swagger", text
            self.report("source/unsupported_version", f"Swagger version {text or '?'} is not 2.0", ["swagger"])
            return None
        if "swaggerVersion" in document:
            text = _version_text(document["swaggerVersion"]) or "?"
            self.report("source/unsupported_version", f"Swagger {text} is not supported (2.0 is)", ["swaggerVersion"])
            return None
        self.report("source/not_openapi", "the document has neither an 'openapi' nor a 'swagger' field", [])
        return None

    def run(self) -> LoadResult:
        if self.key.startswith("../") or self.key == "..":
            self.diagnostics.append(
                diagnostic("source/path_escape", f"{self.path} is outside the root folder", file=self.key)
            )
            return self.result(None)
        entry = self.sources.read(self.key, inside_root=False)
        if entry is None:
            refusal = self.sources.refusals.get(self.key)
            if refusal is not None:
                self.diagnostics.append(
                    diagnostic(refusal.code, f"{self.path} was not read: {refusal.reason}", file=self.key)
                )
            else:
                self.diagnostics.append(
                    diagnostic("source/not_found", f"{self.path} does not exist or cannot be read", file=self.key)
                )
            return self.result(None)
        if isinstance(entry.parsed, ParseFailure):
            return self.result(None)
        document = entry.value
        if not isinstance(document, dict):
            self.report("source/not_openapi", "the document is not a mapping", [])
            return self.result(None)
        found = self.version(document)
        if found is None:
            return self.result(None)
        kind, version = found
        try:
            self.diagnostics.extend(bundle_document(self.sources, self.key, document, swagger=kind == "swagger"))
            if kind == "swagger":
                document = convert_swagger(document)
        except RecursionError:
            self.report("source/too_deep", "the document nests too deeply to load", [])
            return self.result(None, kind, version)
        paths = document.get("paths")
        if "paths" in document and not isinstance(paths, dict):
            self.report("source/not_openapi", "'paths' is not a mapping", ["paths"])
            document["paths"] = {}
        if count_operations(document) == 0:
            self.report("source/no_operations", "the spec declares no operations", ["paths"])
        self.names(document)
        return self.result(document, kind, version)

    def names(self, document: JSONObject) -> None:
        """Refuse every path and operationId holding a control character (:mod:`anvil.load.controls`):
        such a name is never sent, shown or written into a manifest."""
        paths = document.get("paths")
        if not isinstance(paths, dict):
            return
        resolver = Resolver(document)
        for path, raw in paths.items():
            if has_control(path):
                message = f"the path '{_shown(path)}' holds a control character"
                self.report("source/control_character", message, ["paths", path])
                continue
            item = resolver.resolve(raw)
            for method in sorted(METHODS):
                operation = item.get(method) if isinstance(item, dict) else None
                found = operation.get("operationId") if isinstance(operation, dict) else None
                if isinstance(found, str) and has_control(found):
                    where = f"{method.upper()} {_shown(path)}"
                    message = f"the operationId '{_shown(found)}' of {where} holds a control character"
                    self.report("source/control_character", message, ["paths", path, method, "operationId"])


def load_spec(
    path: Path,
    *,
    uri: str | None = None,
    root: Path | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ahead: ParseAhead | None = None,
) -> LoadResult:
    """Load a spec into one OpenAPI-3-shaped document whose every ``$ref`` is internal.

    OpenAPI 3.0/3.1 and Swagger 2.0 (converted), JSON or YAML, one file or several: relative file
    references are followed inside ``root``; URLs are never fetched. Every problem is a diagnostic; a
    fatal one (unreadable, unparsable, not OpenAPI, unsupported version) leaves ``document`` ``None``.

    Args:
        path: The entry file.
        uri: The source URI recorded in the result (default: ``str(path)`` as given).
        root: The folder references may not leave, and that ``files`` keys are relative to (default:
            the entry file's folder). A spec whose files sit beside its entry's folder
            (``spec/openapi.yaml`` referring to ``../common/x.yaml``) needs the common parent here.
        max_file_bytes: The per-file size limit; only regular files are read.
        ahead: ``path``'s parse already started in another process (:class:`~anvil.load.ahead.ParseAhead`);
            the result is the same with it or without.

    Returns:
        The :class:`LoadResult`; it never raises for bad input.
    """
    return _Load(path, str(path) if uri is None else uri, root, max_file_bytes, ahead).run()
