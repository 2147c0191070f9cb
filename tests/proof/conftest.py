"""Compiled example bundles for the proof-lane tests (compiled once per module; copy before tampering)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.cli.compile import compile_bundle
from tests.cli.fixtures.upstreams import REPO, compile_example, compile_files, compile_vault

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def payments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example("payments", "payments", tmp_path_factory.mktemp("proof") / "payments")


@pytest.fixture(scope="module")
def github(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example("github-mini", "github", tmp_path_factory.mktemp("proof") / "github")


@pytest.fixture(scope="module")
def telephony(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A form-body API: a payment keyed by the urlencoded field IdempotencyKey, a recording keyed by the
    multipart field RequestToken (``fixtures/telephony.yaml``), every operation approved."""
    out = tmp_path_factory.mktemp("proof") / "telephony"
    outcome = compile_bundle(
        FIXTURES / "telephony.yaml",
        out=out,
        manifest=FIXTURES / "telephony.anvil.yaml",
        service_id="telephony",
        root=REPO,
    )
    assert outcome.bundle_hash is not None, [d.code for d in outcome.diagnostics if d.severity == "error"]
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file-storage API whose two uploads declare their own server (``tests/cli/fixtures/files.yaml``)."""
    return compile_files(tmp_path_factory.mktemp("proof") / "files")


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An API whose every credentialed call sends two header keys and a query key at once (a composite
    auth, ``tests/cli/fixtures/vault.yaml``), every operation approved."""
    return compile_vault(tmp_path_factory.mktemp("proof") / "vault")


@pytest.fixture(scope="session")
def evidenced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The payments bundle with every lane run on it (all four records fresh); copy before tampering."""
    from anvil.cli import main

    bundle = compile_example("payments", "payments", tmp_path_factory.mktemp("evidenced") / "payments")
    for lane in ("certify", "selftest", "conformance", "simulate"):
        assert main([lane, str(bundle)]) == 0, lane
    return bundle


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An unseen-style API: a pattern-bound account id, date-time and length-bound fields, a body no value fits."""
    out = tmp_path_factory.mktemp("proof") / "events"
    outcome = compile_bundle(
        FIXTURES / "events.yaml", out=out, manifest=FIXTURES / "events.anvil.yaml", service_id="events", root=REPO
    )
    assert outcome.bundle_hash is not None
    return out


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """shapes.yaml as the pipeline takes a real spec: ``anvil init --approve all --propose-effects``,
    then ``anvil compile`` (the shapes real corpus specs use, each in a few lines)."""
    from anvil.cli import main

    out = tmp_path_factory.mktemp("shapes")
    manifest, bundle = out / "anvil.yaml", out / "shapes"
    spec = str(FIXTURES / "shapes.yaml")
    argv = ["init", spec, "--service", "shapes", "--out", str(manifest), "--approve", "all", "--propose-effects"]
    assert main(argv) == 0
    assert main(["compile", spec, "--manifest", str(manifest), "--out", str(bundle)]) == 0
    return bundle


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Values the generator cannot make within its bounds (``fixtures/hostile.yaml``): a pattern no
    stretched text matches, a two-billion-character minLength, 64 x 64 x 64 items; every operation approved."""
    out = tmp_path_factory.mktemp("proof") / "hostile"
    outcome = compile_bundle(
        FIXTURES / "hostile.yaml", out=out, manifest=FIXTURES / "hostile.anvil.yaml", service_id="hostile", root=REPO
    )
    assert outcome.bundle_hash is not None, [d.code for d in outcome.diagnostics if d.severity == "error"]
    return out


@pytest.fixture
def copy_bundle(tmp_path: Path) -> Callable[[Path], Path]:
    """Copy a compiled bundle so a test can tamper with it without touching the shared one."""

    def copy(source: Path) -> Path:
        target = tmp_path / source.name
        shutil.copytree(source, target)
        return target

    return copy


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    """Load ``path`` as JSON, apply ``change`` in place and write it back (2-space, trailing newline)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def operation(air: dict[str, Any], op_id: str) -> dict[str, Any]:
    """The AIR operation object with id ``op_id``."""
    return next(op for op in air["operations"] if op["id"] == op_id)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An unseen checkout API (``fixtures/checkout.yaml``): a payment looked up by its key through a
    filtered list, a stored method whose optional body its undo reads, a session no approved create
    makes, a post staged as a draft that only a list observes."""
    out = tmp_path_factory.mktemp("proof") / "checkout"
    outcome = compile_bundle(
        FIXTURES / "checkout.yaml", out=out, manifest=FIXTURES / "checkout.anvil.yaml", service_id="checkout", root=REPO
    )
    assert outcome.bundle_hash is not None, [d.code for d in outcome.diagnostics if d.severity == "error"]
    return out
