"""Compiled example bundles for the proof-lane tests (module-scoped: one compile per test module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.fixtures.upstreams import compile_example


@pytest.fixture(scope="module")
def payments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example("payments", "payments", tmp_path_factory.mktemp("proof") / "payments")


@pytest.fixture(scope="module")
def github(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example("github-mini", "github", tmp_path_factory.mktemp("proof") / "github")
