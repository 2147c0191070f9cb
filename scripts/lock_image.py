"""Regenerate ``src/anvil/bundle/image-lock.json``: the gateway image's runtime dependencies, hash-pinned.

    .venv/bin/python scripts/lock_image.py        # or: make image-lock

The dependency set and every version come from the current environment: the closure of ``anvil-python[otel]``
(and of ``anvil-python[firestore,otel]``; the image always carries the OpenTelemetry exporters, since the
generated Terraform exports traces) from the checkout's ``pyproject.toml``, walked through the installed
distributions' ``Requires-Dist``, with
markers evaluated for the image (CPython 3.11 on manylinux x86_64, the generated Dockerfile's base image),
not for this machine. Each pinned version's wheel for that platform is fetched once with ``pip download``
(the only network use; the lock is committed, so ``anvil compile`` never touches the network) and its
sha256 recorded. Run it after changing dependencies or upgrading the environment, then recompile.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

REPO = Path(__file__).resolve().parent.parent
LOCK = REPO / "src" / "anvil" / "bundle" / "image-lock.json"
ROOT = "anvil-python"
#: The image's interpreter and platform (keep in step with BASE_IMAGE in src/anvil/bundle/container.py).
PYTHON = "3.11"
PYTHON_FULL = "3.11.11"
ABI = "cp311"
#: manylinux tags the base image's glibc (Debian 12, 2.36) accepts, most specific first.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)] + [
    "manylinux2014_x86_64",
    "manylinux_2_12_x86_64",
    "manylinux2010_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
]
MARKERS = {
    "implementation_name": "cpython",
    "implementation_version": PYTHON_FULL,
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_system": "Linux",
    "platform_version": "",
    "python_full_version": PYTHON_FULL,
    "python_version": PYTHON,
    "sys_platform": "linux",
}


def root_requirements(extras: frozenset[str]) -> list[str]:
    """``anvil-python[extras]``'s requirements as this checkout declares them (the installed metadata may be
    older than the checkout)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    return [*project["dependencies"], *(text for extra in sorted(extras) for text in optional[extra])]


def closure(extras: frozenset[str]) -> dict[str, str]:
    """canonical name -> installed version of everything ``anvil-python[extras]`` needs in the image."""
    found: dict[str, str] = {}
    pending: list[tuple[str, frozenset[str]]] = [(ROOT, extras)]
    visited: set[tuple[str, frozenset[str]]] = set()
    while pending:
        name, wanted = pending.pop()
        if (canonicalize_name(name), wanted) in visited:
            continue
        visited.add((canonicalize_name(name), wanted))
        if canonicalize_name(name) == canonicalize_name(ROOT):
            requires, wanted = root_requirements(wanted), frozenset()
        else:
            dist = metadata.distribution(name)
            found[canonicalize_name(dist.metadata["Name"])] = dist.version
            requires = dist.requires or []
        for text in requires:
            requirement = Requirement(text)
            if any(
                requirement.marker is None or requirement.marker.evaluate({**MARKERS, "extra": extra})
                for extra in (*wanted, "")
            ):
                pending.append((requirement.name, frozenset(requirement.extras)))
    return dict(sorted(found.items()))


def fetch_hashes(pins: dict[str, str]) -> dict[str, tuple[str, str]]:
    """canonical name -> (wheel file name, sha256) of each pin's wheel for the image's platform."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        command += ["--python-version", PYTHON, "--implementation", "cp", "--abi", ABI, "--dest", folder]
        for platform in PLATFORMS:
            command += ["--platform", platform]
        command += [f"{name}=={version}" for name, version in pins.items()]
        subprocess.run(command, check=True)
        out: dict[str, tuple[str, str]] = {}
        for path in sorted(Path(folder).iterdir()):
            name = canonicalize_name(parse_wheel_filename(path.name)[0])
            out[name] = (path.name, hashlib.sha256(path.read_bytes()).hexdigest())
    missing = sorted(set(pins) - set(out))
    if missing:
        raise SystemExit(f"no wheel downloaded for {missing}")
    return out


def main() -> int:
    base, firestore = closure(frozenset({"otel"})), closure(frozenset({"firestore", "otel"}))
    hashes = fetch_hashes(firestore)
    lock = {
        "schemaVersion": 1,
        "target": {"python": PYTHON, "abi": ABI, "platforms": PLATFORMS},
        "profiles": {"base": list(base), "firestore": list(firestore)},
        "packages": {
            name: {"version": version, "file": hashes[name][0], "sha256": hashes[name][1]}
            for name, version in firestore.items()
        },
    }
    LOCK.write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {LOCK.relative_to(REPO)}: {len(base)} base, {len(firestore)} with firestore")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
