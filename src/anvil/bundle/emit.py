"""The bundle as bytes: ``emit_bundle(doc, generation) -> {relative POSIX path: bytes}``.

Every emitter is a pure function of (AIR, generation inputs) and of the compiler itself: no clock, no
environment, no absolute paths, sorted or AIR-ordered iteration. (The image's runtime wheel and dependency
lock under ``deploy/image/`` are the compiler's own bytes: see :mod:`anvil.bundle.container`.) Emitting
twice gives identical bytes, which is what lets freshness checks regenerate a bundle and compare it byte
for byte (original-core §4.5). Nothing here touches the disk; :mod:`anvil.bundle.writer` installs the result.

To add a generated file, write an emitter ``(doc, generation) -> dict[str, bytes]`` and list it in
:data:`EMITTERS`; its top-level path segment becomes compiler-owned automatically. A file that binds the
hashes of other generated files (the Terraform module embeds the store-contract digest and the runtime
artifact hash) is a :data:`DerivedEmitter` in :data:`DERIVED_EMITTERS`: it runs after every emitter and
reads their output instead of serializing AIR a second time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anvil.air.model import Document
from anvil.bundle.airfile import air_file
from anvil.bundle.catalog import emit_catalog
from anvil.bundle.cloudbuild import emit_cloudbuild
from anvil.bundle.container import emit_container
from anvil.bundle.credentials import emit_credentials
from anvil.bundle.encoding import json_file
from anvil.bundle.envschema import emit_env_schema
from anvil.bundle.generation import Generation
from anvil.bundle.harness import emit_harness
from anvil.bundle.reference import emit_reference
from anvil.bundle.runbook import emit_runbook
from anvil.bundle.runtime import emit_runtime
from anvil.bundle.skill import emit_skill
from anvil.bundle.store import emit_store_contract
from anvil.bundle.terraform import emit_terraform
from anvil.errors import BundleError

__all__ = ["DERIVED_EMITTERS", "EMITTERS", "DerivedEmitter", "Emitter", "emit_bundle", "owned_roots"]

Emitter = Callable[[Document, Generation], dict[str, bytes]]
#: An emitter that also reads the files every :data:`EMITTERS` entry produced (read-only).
DerivedEmitter = Callable[[Document, Generation, Mapping[str, bytes]], dict[str, bytes]]


def _emit_air(doc: Document, generation: Generation) -> dict[str, bytes]:
    return {
        "air.json": air_file(doc),
        "generation.json": json_file(generation.to_json()),
    }


#: Every emitter, in a fixed order. Two emitters may not write the same path.
EMITTERS: tuple[Emitter, ...] = (
    _emit_air,
    lambda doc, _generation: emit_catalog(doc),
    lambda doc, _generation: emit_runtime(doc),
    lambda doc, _generation: emit_skill(doc),
    lambda doc, _generation: emit_reference(doc),
    emit_store_contract,
    lambda doc, _generation: emit_harness(doc),
    emit_container,
    emit_cloudbuild,
    emit_env_schema,
    emit_credentials,
    emit_runbook,
)

#: Emitters that bind hashes of the files above, in a fixed order.
DERIVED_EMITTERS: tuple[DerivedEmitter, ...] = (emit_terraform,)


def _merge(files: dict[str, bytes], produced: dict[str, bytes]) -> None:
    for path, data in produced.items():
        if path in files:
            raise BundleError("bundle/invalid", f"two emitters wrote {path!r}")
        files[path] = data


def emit_bundle(
    doc: Document,
    generation: Generation | None = None,
    *,
    operations_json: list[Any] | None = None,
    sink: Callable[[Mapping[str, bytes]], None] | None = None,
) -> dict[str, bytes]:
    """Project ``doc`` into every compiler-owned file, keyed by relative POSIX path (sorted).

    ``operations_json``: the JSON of ``doc.operations`` when the caller has it (a compile's round trip
    wrote it: :attr:`anvil.compiler.CompileResult.operations_json`); ``air.json`` is written from it.
    ``sink``: called with each emitter's files as soon as they are made (say
    :meth:`anvil.bundle.writer.BundleInstall.add`, so they are written while the next are emitted).

    Raises:
        BundleError: ``bundle/invalid`` when the generation inputs are unusable, or two emitters claim
            one path (a bug).
    """
    inputs = generation or Generation()
    if operations_json is not None:
        air_file(doc, operations_json=operations_json)  # kept for ``doc``: the emitters that need it find it
    files: dict[str, bytes] = {}
    for emitter in EMITTERS:
        produced = emitter(doc, inputs)
        _merge(files, produced)
        if sink is not None:
            sink(produced)
    for derived in DERIVED_EMITTERS:
        produced = derived(doc, inputs, files)
        _merge(files, produced)
        if sink is not None:
            sink(produced)
    return dict(sorted(files.items()))


def owned_roots(paths: list[str] | tuple[str, ...] | dict[str, bytes]) -> frozenset[str]:
    """The top-level names (files or directories) the given generated paths live under."""
    return frozenset(path.split("/", 1)[0] for path in paths)
