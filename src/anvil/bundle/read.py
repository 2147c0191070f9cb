"""Reading a bundle back: its AIR document and its persisted generator inputs."""

from __future__ import annotations

import json
from pathlib import Path

from anvil.air.codec import load_document
from anvil.air.model import Document
from anvil.bundle.generation import Generation, parse_generation
from anvil.bundle.store import deployment_namespace
from anvil.errors import AirError, BundleError

__all__ = ["ledger_namespace", "read_bundle", "read_generation"]

_HINT = "Point at a directory written by `anvil compile`, or recompile it."


def read_bundle(directory: Path) -> Document:
    """Load ``<directory>/air.json`` as a validated AIR document.

    Raises:
        BundleError: ``bundle/invalid`` when the directory or its ``air.json`` is missing, is not JSON,
            or does not load as AIR.
    """
    path = directory / "air.json"
    if not directory.is_dir():
        raise BundleError("bundle/invalid", f"{directory} is not a directory", hint=_HINT)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BundleError("bundle/invalid", f"{directory} has no air.json", hint=_HINT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError("bundle/invalid", f"cannot read {path}: {exc}", hint=_HINT) from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BundleError("bundle/invalid", f"{path} is not valid JSON: {exc}", hint=_HINT) from exc
    try:
        return load_document(data)
    except AirError as exc:
        raise BundleError("bundle/invalid", f"{path} is not valid AIR: {exc.message}", hint=_HINT) from exc


def read_generation(directory: Path) -> Generation:
    """Load ``<directory>/generation.json``.

    Raises:
        BundleError: ``bundle/invalid`` when it is missing or invalid.
    """
    try:
        data = (directory / "generation.json").read_bytes()
    except OSError as exc:
        raise BundleError("bundle/invalid", f"{directory} has no readable generation.json", hint=_HINT) from exc
    return parse_generation(data)


def ledger_namespace(directory: Path, document: Document) -> str | None:
    """The deployment namespace a gateway serving the bundle at ``directory`` derives its ledger table
    from (original-ledger §4.8), or None (the default table) when its generation inputs are unusable.
    ``anvil serve`` and ``anvil ledger --bundle`` both take it from here, so they use one table."""
    try:
        return deployment_namespace(document, read_generation(directory))
    except BundleError:
        return None
