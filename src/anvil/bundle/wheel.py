"""A reproducible wheel of the running Anvil, so the exact runtime that compiled a bundle travels with it.

``anvil compile`` places it in the bundle (``deploy/image/``) and the generated image installs it with
``pip install --no-index``: the code that runs in the container is the code that compiled the bundle, never a
same-named package from an index. The wheel is built from the installed package's own files and metadata
and is deterministic: entries in sorted order, a fixed timestamp and mode, and stored rather than deflated
(compressed bytes would depend on the zlib build). One Anvil therefore always gives the same bytes, a
recompile is byte-identical, and an Anvil installed from this wheel rebuilds it byte for byte.

The wheel is a function of the compiler, like every other emitted byte: a bundle checked by another Anvil
than the one that compiled it is stale, which is the truth (the image would run other code).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import stat
import zipfile
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path

import anvil
from anvil._dataclass import dataclass
from anvil.errors import BundleError

__all__ = ["DISTRIBUTION", "RuntimeWheel", "build_wheel", "package_files", "runtime_wheel", "wheel_filename"]

#: The distribution name this package is installed under.
DISTRIBUTION = "anvil-python"
#: 1980-01-01 00:00:00, the earliest time a ZIP entry can carry.
_EPOCH = (1980, 1, 1, 0, 0, 0)
_FILE_MODE = 0o100644 << 16
_UNIX = 3
#: Metadata fields carried into the wheel, in this order; the long description is left out on purpose.
_SINGLE_FIELDS = ("Summary", "Requires-Python")
_MULTI_FIELDS = ("Provides-Extra", "Requires-Dist")


@dataclass(frozen=True, slots=True)
class RuntimeWheel:
    """A built wheel: its PEP 427 file name, its bytes and what it installs."""

    filename: str
    data: bytes
    name: str
    version: str

    @property
    def sha256(self) -> str:
        """sha256 hex of the wheel bytes (what ``--hash=sha256:`` pins)."""
        return hashlib.sha256(self.data).hexdigest()


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_filename(name: str, version: str) -> str:
    """The PEP 427 file name of a pure-Python wheel: ``anvil_python-0.1.0-py3-none-any.whl``."""
    return f"{_normalized(name)}-{version}-py3-none-any.whl"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def _entry(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.create_system = _UNIX
    info.external_attr = _FILE_MODE
    info.compress_type = zipfile.ZIP_STORED
    archive.writestr(info, data)


def build_wheel(
    *,
    name: str,
    version: str,
    fields: Iterable[tuple[str, str]],
    entry_points: Iterable[tuple[str, str, str]],
    files: Mapping[str, bytes],
) -> RuntimeWheel:
    """A pure, deterministic ``py3-none-any`` wheel.

    Args:
        name: the distribution name (``anvil-python``).
        version: its version.
        fields: extra ``METADATA`` header fields, written in the given order after Name and Version.
        entry_points: ``(group, name, value)`` triples for ``entry_points.txt`` (written sorted).
        files: archive path -> bytes of the importable files (written sorted).
    """
    stem = f"{_normalized(name)}-{version}"
    info_dir = f"{stem}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines.extend(f"{key}: {value}" for key, value in fields)
    points = sorted(set(entry_points))
    groups: dict[str, list[str]] = {}
    for group, point, value in points:
        groups.setdefault(group, []).append(f"{point} = {value}")
    members = dict(sorted(files.items()))
    members[f"{info_dir}/METADATA"] = ("\n".join(lines) + "\n").encode("utf-8")
    members[f"{info_dir}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: anvil (reproducible)\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode("ascii")
    if groups:
        text = "\n".join(f"[{group}]\n" + "\n".join(items) + "\n" for group, items in groups.items())
        members[f"{info_dir}/entry_points.txt"] = text.encode("utf-8")
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in members.items())
    members[f"{info_dir}/RECORD"] = (record + f"{info_dir}/RECORD,,\n").encode("utf-8")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for path, data in members.items():
            _entry(archive, path, data)
    return RuntimeWheel(filename=wheel_filename(name, version), data=buffer.getvalue(), name=name, version=version)


def package_files(package_dir: Path, prefix: str) -> dict[str, bytes]:
    """Every file of an installed package, keyed ``<prefix>/<relative POSIX path>`` (in path order).

    Bytecode caches and hidden entries are left out: they are written by whoever imported or installed
    the package, not part of it. So are symbolic links and what is not a regular file.
    """
    found: list[tuple[list[str], str]] = []
    for current, folders, names in os.walk(package_dir):  # links to folders are not followed
        folders[:] = [name for name in folders if name != "__pycache__" and not name.startswith(".")]
        base = Path(current).relative_to(package_dir).parts
        for name in names:
            if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                continue
            if stat.S_ISREG(os.lstat(os.path.join(current, name)).st_mode):
                found.append(([*base, name], os.path.join(current, name)))
    found.sort(key=lambda item: item[0])  # as paths sort: part by part
    return {f"{prefix}/{'/'.join(parts)}": Path(path).read_bytes() for parts, path in found}


def _unavailable(detail: str) -> BundleError:
    return BundleError(
        "bundle/runtime_unavailable",
        f"cannot package the running Anvil into the bundle: {detail}",
        hint=f"Install Anvil as a distribution (pip install {DISTRIBUTION}, or pip install -e . in a checkout) "
        "and compile again.",
    )


@cache
def runtime_wheel(distribution: str = DISTRIBUTION) -> RuntimeWheel:
    """The wheel of the running Anvil: the ``anvil`` package's files plus ``distribution``'s metadata.

    Built once per process (the running package does not change under it).

    Raises:
        BundleError: ``bundle/runtime_unavailable`` when the distribution metadata is not installed or
            names another version than the running package.
    """
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise _unavailable(f"no installed distribution {distribution!r}") from None
    meta = dist.metadata
    if meta["Version"] != anvil.__version__:
        raise _unavailable(
            f"the installed {distribution} metadata is version {meta['Version']} but the running package "
            f"is {anvil.__version__}"
        )
    fields = [(key, meta[key]) for key in _SINGLE_FIELDS if meta[key]]
    fields.extend((key, value) for key in _MULTI_FIELDS for value in meta.get_all(key) or [])
    points = [(point.group, point.name, point.value) for point in dist.entry_points]
    return build_wheel(
        name=meta["Name"],
        version=meta["Version"],
        fields=fields,
        entry_points=points,
        files=package_files(Path(anvil.__file__).parent, "anvil"),
    )
