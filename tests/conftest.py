"""Shared fixtures: repository paths, the corpus location and the service requirement switch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def require_services() -> bool:
    """True under CI (ANVIL_TEST_REQUIRE_SERVICES=1): a missing service or data set fails instead of skipping."""
    return os.environ.get("ANVIL_TEST_REQUIRE_SERVICES") == "1"


def missing(reason: str) -> None:
    """Skip with ``reason`` locally; fail under ANVIL_TEST_REQUIRE_SERVICES=1."""
    if require_services():
        pytest.fail(f"required for this run but missing: {reason}")
    pytest.skip(reason)


def corpus_dir() -> Path:
    """The real-world spec corpus (``ANVIL_CORPUS``, default ``../shared/corpus`` beside the repo)."""
    return Path(os.environ.get("ANVIL_CORPUS", str(REPO.parent / "shared" / "corpus")))


@pytest.fixture
def corpus() -> Path:
    path = corpus_dir()
    if not (path / "INDEX.tsv").is_file():
        missing(f"corpus not found at {path} (set ANVIL_CORPUS)")
    return path
