"""Compiled payments bundles (the ledger variant and the none variant), compiled once and copied per test."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from anvil.cli.compile import compile_bundle

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "payments" / "openapi.yaml"
MANIFEST = REPO / "examples" / "payments" / "anvil.yaml"

BundleFactory = Callable[..., Path]


def compile_payments(out: Path, *, manifest: Path = MANIFEST, namespace: str | None = None) -> Path:
    """Compile the payments example into ``out`` and return it (fails the test on an error diagnostic)."""
    outcome = compile_bundle(
        SPEC, out=out, manifest=manifest, service_id="payments", root=REPO, deployment_namespace=namespace
    )
    assert outcome.bundle_hash is not None, [d.code for d in outcome.diagnostics]
    return out


def blocked_refund_manifest(directory: Path) -> Path:
    """The payments manifest with the refund (the only required-key write) blocked: the none variant."""
    text = MANIFEST.read_text(encoding="utf-8")
    marker = "  capturePayment:"
    head, tail = text.split(marker, 1)
    path = directory / "anvil.yaml"
    path.write_text(head.replace("    state: approved", "    state: blocked") + marker + tail, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def _compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("compiled")
    return {
        "ledger": compile_payments(base / "ledger"),
        "none": compile_payments(base / "none", manifest=blocked_refund_manifest(base)),
    }


@pytest.fixture
def payments_bundle(_compiled: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of the compiled payments bundle (Firestore variant), safe to tamper with."""
    return Path(shutil.copytree(_compiled["ledger"], tmp_path / "payments"))


@pytest.fixture
def none_bundle(_compiled: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of payments compiled with the refund blocked (the none variant)."""
    return Path(shutil.copytree(_compiled["none"], tmp_path / "payments-none"))
