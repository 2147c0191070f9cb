"""Where served bundles come from: discovery of bundle directories, their fleet ids, and the start-up refusals.

A path holding ``air.json`` is one bundle. Its id is the one the operator gave it (``ID=DIR``,
:func:`bundle_argument`), else its AIR service id when the caller can read it (``service_id``: ``anvil
serve`` passes it, so a bundle in a folder named ``bundle``, as the generated image serves it, is called
by its service), else its directory name. Any other directory is searched, and every directory beneath it
that holds ``air.json`` is a bundle whose id is its POSIX path relative to that directory
(``team/github``): the layout names it. Hidden directories (``.git``, compile stages) and symbolic links
are skipped; a bundle's own subdirectories are not searched. (Re-exported by :mod:`anvil.serve.fleet`.)

A bundle's id is its fleet coordinate (tool prefixes, connector, ``ANVIL_BASE_URL_<ID>``), never part of
a ledger key: the ledger scope names the AIR service id (:func:`anvil.runtime.keys.ledger_scope`) and the
table the deployment namespace, so how a bundle is named changes no ledger row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final

from anvil._dataclass import dataclass
from anvil.errors import BundleError, ConfigError, UsageError

__all__ = ["BundleSource", "FleetError", "bundle_argument", "check_unique", "discover_bundles"]

_AIR_FILE: Final = "air.json"
#: An id an operator gives a bundle (``ID=DIR``): what a workspace path segment may be.
_OPERATOR_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


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


def bundle_argument(text: str) -> tuple[str | None, Path]:
    """A command-line bundle argument: ``DIR``, or ``ID=DIR`` naming the bundle at ``DIR`` (an existing
    path is always a path, even with ``=`` in it).

    Raises:
        UsageError: ``cli/usage`` for an ``ID`` that is not 1-64 of ``A-Z a-z 0-9 _ . -`` (first a letter
            or digit).
    """
    if "=" not in text or Path(text).exists():
        return None, Path(text)
    name, _, folder = text.partition("=")
    if not _OPERATOR_ID.match(name):
        raise UsageError(
            "cli/usage",
            f"'{name}' cannot name a bundle: an id is 1-64 of A-Z a-z 0-9 _ . - (first a letter or digit).",
            hint="Write ID=DIR, for example payments=./bundle.",
        )
    return name, Path(folder)


def discover_bundles(
    paths: Sequence[Path | tuple[str | None, Path]], *, service_id: Callable[[Path], str] | None = None
) -> tuple[BundleSource, ...]:
    """The bundles at or beneath ``paths``, in argument order (ids sorted within one folder).

    Args:
        paths: Bundle directories or folders of bundles; a ``(id, path)`` pair names a bundle directory.
        service_id: Reads the AIR service id of a bundle directory: the id of a bundle named by neither
            the operator nor a layout (without it, the directory name).

    Raises:
        BundleError: ``bundle/invalid`` for a path that is not a directory, or a named path that is not a
            bundle.
        FleetError: ``fleet/no_bundles`` for a folder holding no bundle (or no paths at all);
            ``fleet/duplicate_bundle`` when two paths yield one id.
    """
    sources: list[BundleSource] = []
    for given in paths:
        name, path = given if isinstance(given, tuple) else (None, given)
        if not path.is_dir():
            raise BundleError("bundle/invalid", f"{path} is not a directory", hint="Name a bundle or a folder.")
        if _is_bundle(path):
            own = name or (service_id(path) if service_id is not None else path.resolve().name)
            sources.append(BundleSource(own, path))
            continue
        if name is not None:
            raise BundleError(
                "bundle/invalid",
                f"{path} holds no {_AIR_FILE}: only a bundle directory takes a name ({name}=DIR).",
                hint="Name the bundle directory itself, or serve the folder without a name.",
            )
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
                hint="Serve each bundle once, or name one: ID=DIR (a bundle is called by its service id).",
            )
        seen.add(bundle_id)
