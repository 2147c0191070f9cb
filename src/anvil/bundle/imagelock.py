"""The gateway image's runtime dependencies, pinned with hashes (``image-lock.json``, shipped with Anvil).

The lock is resolved from the environment Anvil was developed and tested in (``scripts/lock_image.py``):
every runtime dependency of ``anvil-python[otel]`` and of ``anvil-python[firestore,otel]`` (the image always
carries the OpenTelemetry exporters), transitively, at the installed
version, with the sha256 of that version's wheel for the image's platform (CPython 3.11, manylinux
x86_64: the generated Dockerfile's base image). ``anvil compile`` only reads it, so a compile never
touches the network and its bytes depend on the compiler alone.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from anvil._dataclass import dataclass
from anvil.errors import BundleError

__all__ = ["LOCK_RESOURCE", "ImageLock", "Pin", "image_lock", "parse_lock"]

LOCK_RESOURCE = "image-lock.json"
_PROFILES = ("base", "firestore")


@dataclass(frozen=True, slots=True)
class Pin:
    """One locked distribution: ``name==version``, the wheel it resolves to and that wheel's sha256."""

    name: str
    version: str
    file: str
    sha256: str


@dataclass(frozen=True, slots=True)
class ImageLock:
    """The parsed lock: the target interpreter and platforms, and each profile's pins (sorted by name)."""

    python: str
    abi: str
    platforms: tuple[str, ...]
    profiles: dict[str, tuple[Pin, ...]]

    def pins(self, *, ledger: bool) -> tuple[Pin, ...]:
        """The pins an image needs: with the Firestore client when the bundle needs the managed ledger."""
        return self.profiles["firestore" if ledger else "base"]


def _broken(detail: str) -> BundleError:
    return BundleError(
        "bundle/runtime_unavailable",
        f"the image dependency lock shipped with Anvil is unusable: {detail}",
        hint="Reinstall Anvil; in a checkout, regenerate it with scripts/lock_image.py.",
    )


def parse_lock(data: bytes) -> ImageLock:
    """Parse ``image-lock.json`` bytes.

    Raises:
        BundleError: ``bundle/runtime_unavailable`` when the lock is not schema version 1 or a profile
            names a package the lock does not pin.
    """
    try:
        raw: Any = json.loads(data)
        packages = raw["packages"]
        profiles = {
            profile: tuple(
                Pin(name, packages[name]["version"], packages[name]["file"], packages[name]["sha256"])
                for name in raw["profiles"][profile]
            )
            for profile in _PROFILES
        }
        target = raw["target"]
        lock = ImageLock(
            python=str(target["python"]),
            abi=str(target["abi"]),
            platforms=tuple(str(p) for p in target["platforms"]),
            profiles=profiles,
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise _broken(f"{type(exc).__name__}: {exc}") from None
    if raw.get("schemaVersion") != 1:
        raise _broken("schemaVersion must be 1")
    return lock


@cache
def image_lock() -> ImageLock:
    """The lock shipped in this package (read once per process).

    Raises:
        BundleError: ``bundle/runtime_unavailable`` when it is missing or malformed.
    """
    try:
        data = resources.files("anvil.bundle").joinpath(LOCK_RESOURCE).read_bytes()
    except OSError as exc:
        raise _broken(f"{LOCK_RESOURCE} cannot be read ({exc.strerror or exc})") from None
    return parse_lock(data)
