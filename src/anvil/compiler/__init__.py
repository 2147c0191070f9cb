"""compiler stage: a loaded spec and an optional manifest -> one AIR document (original-core §3)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from anvil.air.token_counter import TokenCounter
from anvil.compiler.pipeline import CompileResult, compile_source
from anvil.diagnostics import Diagnostic

if TYPE_CHECKING:
    from anvil.compiler.manifest.model import Manifest
    from anvil.load.ahead import ParseAhead

__all__ = ["CompileResult", "build", "compile_source"]


def build(
    spec: Path,
    *,
    manifest: Path | None = None,
    service_id: str | None = None,
    source_uri: str | None = None,
    spec_root: Path | None = None,
    max_file_bytes: int | None = None,
    counter: TokenCounter | None = None,
    on_manifest: Callable[[Manifest], None] | None = None,
    ahead: ParseAhead | None = None,
) -> CompileResult:
    """Load ``spec`` (and ``manifest``), compile, and return the AIR document with every diagnostic.

    Diagnostics come in this order: load, manifest, then compile. Nothing here raises for bad input.

    When the spec fails to load (``LoadResult.document`` is None) the result is still a document:
    the service id is ``service_id`` (or the manifest's ``service.name``, or ``service``), version
    ``0.0.0``, no operations, and its diagnostics are the load (and manifest) diagnostics, at least
    one of which is an error. When the manifest fails to parse, the spec is compiled without one and
    the manifest's errors are reported.

    Args:
        spec: the spec entry file.
        manifest: the ``anvil.yaml`` file, if any.
        service_id: the ``--service`` value, if given.
        source_uri: the spec path as given on the command line (recorded in the AIR; default: ``spec``).
        spec_root: the folder relative ``$ref``s may reach (default: the spec's own folder), for specs
            whose files sit in sibling folders (``spec/swagger.yaml`` referring to ``../common/x.yaml``).
        max_file_bytes: the per-file size limit for the spec, its ``$ref`` files and the manifest
            (default 64 MiB); only regular files are read.
        counter: counts the disclosure figures' tokens (the caller ends it); default: one started here,
            whose helper process loads the tokenizer while the spec loads.
        on_manifest: called with the parsed manifest before the spec is compiled (not called without
            one): say, to prepare for the operations it approves while the compile runs.
        ahead: ``spec``'s parse, started in another process before the compiler was imported (the result
            is the same with it or without).

    Returns:
        The :class:`CompileResult`.
    """
    # The disclosure figures' tokenizer loads in a helper process while the spec loads here.
    with nullcontext(counter) if counter is not None else TokenCounter() as active:
        from anvil.compiler.manifest.parse import load_manifest
        from anvil.load.files import DEFAULT_MAX_FILE_BYTES
        from anvil.load.spec import load_spec

        limit = DEFAULT_MAX_FILE_BYTES if max_file_bytes is None else max_file_bytes
        loaded = load_spec(spec, uri=source_uri, root=spec_root, max_file_bytes=limit, ahead=ahead)
        parsed = None
        manifest_found: list[Diagnostic] = []
        if manifest is not None:
            parsed, manifest_found = load_manifest(manifest, max_file_bytes=limit)
            if parsed is not None and on_manifest is not None:
                on_manifest(parsed)
        result = compile_source(
            loaded, parsed, service_id=service_id, source_uri=source_uri or str(spec), counter=active
        )
    load_count = len(loaded.diagnostics)
    ordered = (*result.diagnostics[:load_count], *manifest_found, *result.diagnostics[load_count:])
    document = result.document
    if manifest_found:
        document = replace(document, diagnostics=tuple(d.to_air() for d in ordered))
    return CompileResult(
        document=document, diagnostics=tuple(ordered), manifest=parsed, operations_json=result.operations_json
    )
