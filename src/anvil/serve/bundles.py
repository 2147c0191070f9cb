"""Where served bundles come from: discovery of bundle directories, their fleet ids, and the start-up refusals.

A path holding ``air.json`` is one bundle whose id is its directory name; any other directory is
searched, and every directory beneath it that holds ``air.json`` is a bundle whose id is its POSIX path
relative to that directory (``team/github``). Hidden directories (``.git``, compile stages) and symbolic
links are skipped; a bundle's own subdirectories are not searched. (Re-exported by :mod:`anvil.serve.fleet`.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from anvil.errors import BundleError, ConfigError

__all__ = ["BundleSource", "FleetError", "check_unique", "discover_bundles"]

_AIR_FILE: Final = "air.json"


class FleetError(ConfigError):
    """A fleet that cannot be composed (``fleet/no_bundles``, ``fleet/duplicate_bundle``, ``fleet/tool_collision``)."""


@dataclass(frozen=True, slots=True)
class BundleSource:
    """A discovered bundle: its fleet id and its directory."""

    id: str
    path: Path


def _is_bundle(path: Path) -> bool:
    return (path / _AIR_FILE).is_file()


def _beneath(root: Path) -> list[BundleSource]:
    found: list[BundleSource] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            children = sorted((child for child in folder.iterdir()), reverse=True)
        except OSError as exc:
            raise BundleError("bundle/invalid", f"cannot list {folder}: {exc.strerror or exc}") from exc
        for child in children:
            if child.name.startswith(".") or child.is_symlink() or not child.is_dir():
                continue
            if _is_bundle(child):
                found.append(BundleSource(child.relative_to(root).as_posix(), child))
            else:
                pending.append(child)
    return sorted(found, key=lambda source: source.id)


def discover_bundles(paths: Sequence[Path]) -> tuple[BundleSource, ...]:
    """The bundles at or beneath ``paths``, in argument order (ids sorted within one folder).

    Raises:
        BundleError: ``bundle/invalid`` for a path that is not a directory.
        FleetError: ``fleet/no_bundles`` for a folder holding no bundle (or no paths at all);
            ``fleet/duplicate_bundle`` when two paths yield one id.
    """
    sources: list[BundleSource] = []
    for path in paths:
        if not path.is_dir():
            raise BundleError("bundle/invalid", f"{path} is not a directory", hint="Name a bundle or a folder.")
        if _is_bundle(path):
            sources.append(BundleSource(path.resolve().name, path))
            continue
        found = _beneath(path)
        if not found:
            raise FleetError(
                "fleet/no_bundles",
                f"No bundle (a directory holding {_AIR_FILE}) was found under {path}.",
                hint="Compile one with `anvil compile ... --out DIR`.",
            )
        sources.extend(found)
    if not sources:
        raise FleetError("fleet/no_bundles", "No bundle to serve.", hint="Name at least one bundle directory.")
    check_unique(source.id for source in sources)
    return tuple(sources)


def check_unique(ids: Iterable[str]) -> None:
    """Raise ``fleet/duplicate_bundle`` when ``ids`` repeats one."""
    seen: set[str] = set()
    for bundle_id in ids:
        if bundle_id in seen:
            raise FleetError(
                "fleet/duplicate_bundle",
                f"Duplicate bundle id '{bundle_id}': two served bundles have the same fleet id.",
                hint="Serve each bundle once, or give one a distinct path.",
            )
        seen.add(bundle_id)
