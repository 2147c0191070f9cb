"""``deploy/Dockerfile`` and ``deploy/image/``: a digest-pinned base, the compiling Anvil as a reproducible
wheel installed with ``--no-index``, hash-pinned dependencies, non-root ``anvil serve`` on ``$PORT``.

(``tests/bundle/test_image.py`` builds the Python layer for real.)
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shlex
import zipfile
from dataclasses import replace
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from anvil.air.model import Document
from anvil.bundle.container import (
    BASE_IMAGE,
    DOCKERFILE_PATH,
    DOCKERIGNORE_PATH,
    INSTALL_FILES,
    REQUIREMENTS_PATH,
    RUNTIME_ARTIFACT_FILES,
    RUNTIME_REQUIREMENT_PATH,
    WHEEL_PATH,
    runtime_artifact_hash,
)
from anvil.bundle.emit import emit_bundle
from anvil.bundle.imagelock import image_lock, parse_lock
from anvil.bundle.wheel import DISTRIBUTION, build_wheel, runtime_wheel
from anvil.errors import BundleError
from tests.bundle.dockerfile import dockerignore_admits, instructions

#: ``name==version \`` then ``    --hash=sha256:<hex>``: one pinned, hashed requirement.
_HASHED_LINE = re.compile(
    r"^([a-z0-9][a-z0-9._-]*(?:\[[a-z,]+\])?)==([^ ]+) \\\n    --hash=sha256:([0-9a-f]{64})$", re.M
)


def _none_doc(doc: Document) -> Document:
    ops = tuple(replace(op, state="blocked") if op.id == "payments.refunds.create" else op for op in doc.operations)
    return replace(doc, operations=ops)


def test_the_base_image_is_pinned_by_digest_and_matches_the_locks_python(payments_doc: Document) -> None:
    steps = instructions(emit_bundle(payments_doc)[DOCKERFILE_PATH].decode())
    froms = [args for word, args in steps if word == "FROM"]
    assert froms == [BASE_IMAGE]
    match = re.fullmatch(r"python:(3\.\d+)\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", BASE_IMAGE)
    assert match is not None and match.group(1) == image_lock().python
    assert "latest" not in BASE_IMAGE and "syntax=" not in emit_bundle(payments_doc)[DOCKERFILE_PATH].decode()


def test_it_runs_anvil_serve_on_port_as_a_non_root_user(payments_doc: Document) -> None:
    steps = instructions(emit_bundle(payments_doc)[DOCKERFILE_PATH].decode())
    users = [args for word, args in steps if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    cmd = json.loads(next(args for word, args in steps if word == "CMD"))
    assert cmd[:2] == ["sh", "-c"]
    words = shlex.split(cmd[2])
    assert words[:4] == ["exec", "anvil", "serve", "/srv/bundle"]
    assert words[words.index("--http") + 1] == "0.0.0.0:${PORT:-8080}"
    assert (
        "ENV",
        "PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PORT=8080",
    ) in steps
    assert ("EXPOSE", "8080") in steps


def test_anvil_comes_from_the_bundle_with_no_index_and_every_install_is_hash_checked(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    run = next(args for word, args in instructions(files[DOCKERFILE_PATH].decode()) if word == "RUN")
    installs = [shlex.split(command) for command in run.split("&&") if command.split()[:2] == ["pip", "install"]]
    assert len(installs) == 2
    assert all("--require-hashes" in words for words in installs)
    assert "--only-binary=:all:" in installs[0] and installs[0][-1].endswith("/requirements.txt")
    assert "--no-index" in installs[1] and installs[1][-1].endswith("/runtime.txt")
    assert "pip check" in run
    runtime = files[RUNTIME_REQUIREMENT_PATH].decode()
    [(name, version, digest)] = _HASHED_LINE.findall(runtime)
    wheel = runtime_wheel()
    assert (name, version) == ("anvil-python[firestore,otel]", wheel.version)
    assert digest == hashlib.sha256(files[WHEEL_PATH]).hexdigest() == wheel.sha256
    assert WHEEL_PATH == f"deploy/image/{wheel.filename}"
    assert "anvil-python" not in files[REQUIREMENTS_PATH].decode()  # never resolved from an index


def test_every_dependency_is_pinned_with_the_locks_hash_and_the_ledger_decides_the_profile(
    payments_doc: Document,
) -> None:
    lock = image_lock()
    with_ledger = emit_bundle(payments_doc)
    without = emit_bundle(_none_doc(payments_doc))
    for files, ledger in ((with_ledger, True), (without, False)):
        text = files[REQUIREMENTS_PATH].decode()
        body = [line for line in text.splitlines() if not line.startswith("#")]
        pins = _HASHED_LINE.findall(text)
        assert len(body) == 2 * len(pins)  # nothing unpinned or unhashed slips in
        assert pins == [(pin.name, pin.version, pin.sha256) for pin in lock.pins(ledger=ledger)]
    assert "google-cloud-firestore" in with_ledger[REQUIREMENTS_PATH].decode()
    assert "google-cloud-firestore" not in without[REQUIREMENTS_PATH].decode()
    assert "anvil-python[otel]==" in without[RUNTIME_REQUIREMENT_PATH].decode()
    assert "anvil-python[firestore,otel]==" in with_ledger[RUNTIME_REQUIREMENT_PATH].decode()
    for files in (with_ledger, without):  # the exporters ANVIL_OTEL_EXPORTER=cloud_trace needs are in every image
        text = files[REQUIREMENTS_PATH].decode()
        assert "opentelemetry-sdk==" in text and "opentelemetry-exporter-otlp-proto-http==" in text
        assert "google-auth==" in text


def test_the_build_context_admits_exactly_what_the_dockerfile_copies(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    copies = [args for word, args in instructions(files[DOCKERFILE_PATH].decode()) if word == "COPY"]
    assert copies == [
        " ".join(INSTALL_FILES) + " /opt/anvil-image/",
        "--chown=root:root air.json generation.json /srv/bundle/",
    ]
    ignore = files[DOCKERIGNORE_PATH].decode()
    admitted = sorted(path for path in files if dockerignore_admits(ignore, path))
    assert admitted == sorted(("air.json", "generation.json", *INSTALL_FILES))


def test_the_runtime_artifact_hash_covers_the_dockerfile_and_everything_it_copies(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    assert RUNTIME_ARTIFACT_FILES == (DOCKERFILE_PATH, *INSTALL_FILES, "air.json", "generation.json")
    before = runtime_artifact_hash(files)
    for path in RUNTIME_ARTIFACT_FILES:
        assert runtime_artifact_hash({**files, path: files[path] + b"\n"}) != before, path
    assert runtime_artifact_hash({**files, "tools.json": b"{}"}) == before


def test_the_runtime_wheel_is_reproducible_sorted_and_timeless(payments_doc: Document) -> None:
    assert emit_bundle(payments_doc)[WHEEL_PATH] == emit_bundle(payments_doc)[WHEEL_PATH]
    archive = zipfile.ZipFile(io.BytesIO(runtime_wheel().data))
    names = archive.namelist()
    package = [name for name in names if name.startswith("anvil/")]
    assert package == sorted(package) and "anvil/cli/__init__.py" in package
    assert "anvil/bundle/image-lock.json" in package and "anvil/py.typed" in package
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}
    info = "anvil_python-" + runtime_wheel().version + ".dist-info"
    assert names[-1] == f"{info}/RECORD"
    assert archive.read(f"{info}/entry_points.txt").decode() == "[console_scripts]\nanvil = anvil.cli:main\n"
    assert "Requires-Dist: google-cloud-firestore" in archive.read(f"{info}/METADATA").decode()
    record = archive.read(f"{info}/RECORD").decode().splitlines()
    assert len(record) == len(names) and record[-1] == f"{info}/RECORD,,"


def test_a_wheel_is_a_function_of_its_inputs_only() -> None:
    def build(files: dict[str, bytes]) -> bytes:
        return build_wheel(name="demo-pkg", version="1.0", fields=[("Summary", "x")], entry_points=[], files=files).data

    one = build({"demo/b.py": b"B", "demo/a.py": b"A"})
    assert one == build({"demo/a.py": b"A", "demo/b.py": b"B"})
    assert one != build({"demo/a.py": b"A", "demo/b.py": b"b"})


def test_an_anvil_without_distribution_metadata_cannot_be_packaged() -> None:
    with pytest.raises(BundleError) as raised:
        runtime_wheel("anvil-python-not-installed")
    assert raised.value.code == "bundle/runtime_unavailable"
    assert "pip install" in (raised.value.hint or "")


def test_a_malformed_dependency_lock_is_refused() -> None:
    for data in (b"{", b'{"schemaVersion": 2, "target": {}, "profiles": {}, "packages": {}}'):
        with pytest.raises(BundleError) as raised:
            parse_lock(data)
        assert raised.value.code == "bundle/runtime_unavailable"
    broken = {"schemaVersion": 1, "target": {"python": "3.11", "abi": "cp311", "platforms": []}}
    broken |= {"profiles": {"base": ["ghost"], "firestore": []}, "packages": {}}
    with pytest.raises(BundleError, match="lock shipped with Anvil is unusable"):
        parse_lock(json.dumps(broken).encode())


def test_the_lock_pins_every_direct_requirement_within_its_declared_range() -> None:
    # A dependency added or raised in pyproject.toml without `make image-lock` fails here, before an image build.
    markers = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}
    markers |= {"python_version": image_lock().python, "implementation_name": "cpython"}
    for extra, ledger in (("", False), ("otel", False), ("otel", True), ("firestore", True)):
        pins = {pin.name: pin.version for pin in image_lock().pins(ledger=ledger)}
        for text in metadata.requires(DISTRIBUTION) or []:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({**markers, "extra": extra}):
                continue
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{name} is not in the image lock (run make image-lock)"
            assert requirement.specifier.contains(pins[name], prereleases=True), (name, pins[name])
