"""Fixtures shared by the `anvil run` tests: compiled example bundles and the payments mock upstream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.fixtures.upstreams import REPO, LoopbackServer, compile_example, compile_files, example_module

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def payments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example("payments", "payments", tmp_path_factory.mktemp("run") / "payments")


@pytest.fixture(scope="module")
def github(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example("github-mini", "github", tmp_path_factory.mktemp("run") / "github")


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from anvil.cli.compile import compile_bundle

    out = tmp_path_factory.mktemp("run") / "notes"
    outcome = compile_bundle(
        FIXTURES / "notes.yaml", out=out, manifest=FIXTURES / "notes.anvil.yaml", service_id="notes", root=REPO
    )
    assert outcome.bundle_hash is not None
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file-storage API whose two upload operations declare the server upload.files.example."""
    return compile_files(tmp_path_factory.mktemp("run") / "files")


@pytest.fixture(scope="module")
def payments_upstream() -> Iterator[tuple[str, Any]]:
    module = example_module("payments")
    state = module.State()
    server = LoopbackServer(module.create_app(state)).start()
    yield server.url, state
    server.stop()


@pytest.fixture
def mock(payments_upstream: tuple[str, Any]) -> tuple[str, Any]:
    payments_upstream[1].reset()
    return payments_upstream
