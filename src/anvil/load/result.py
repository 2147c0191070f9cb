"""The loader's output: one OpenAPI-3-shaped document plus provenance and diagnostics."""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.diagnostics import Diagnostic, has_errors

__all__ = ["LoadResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadResult:
    """What :func:`anvil.load.spec.load_spec` returns.

    ``document`` is OpenAPI 3.x in shape even for Swagger 2.0 input (converted). Every ``$ref`` in it is
    *internal* (``#/...``): refs into other local files were merged into this document (external schemas
    are hoisted under ``components.schemas`` with deterministic names). Refs are kept, not expanded, so
    cycles are representable; resolve them with :class:`anvil.load.refs.Resolver`.
    ``document`` is ``None`` when loading failed (then ``diagnostics`` holds at least one error).
    ``files`` maps each source file's POSIX path relative to the entry file's folder (or to the ``root``
    given to ``load_spec``) to its bytes; ``entrypoint`` is the entry file's path in the same terms.
    """

    document: JSONObject | None
    kind: Literal["openapi", "swagger"] = "openapi"
    version: str = ""
    entrypoint: str = ""
    uri: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    source_hash: str = ""
    snapshot_id: str = ""
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def ok(self) -> bool:
        """True when a document was produced and no error was reported."""
        return self.document is not None and not has_errors(self.diagnostics)
