"""Shared fixtures: repository paths, the corpus location, the service requirement switch, and the payments
example's authorization server on loopback (``token_server``, ``token_mock``; :mod:`tests.e2e.oauth_support`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.e2e.oauth_support import TokenServer

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


@pytest.fixture(scope="module")
def token_server() -> Iterator[TokenServer]:
    """The payments mock and its token endpoint, one per test module (imported here only when used)."""
    from tests.e2e.oauth_support import TokenServer

    with TokenServer.serve() as server:
        yield server


@pytest.fixture
def token_mock(token_server: TokenServer) -> Iterator[tuple[str, Any]]:
    """``(url, state)`` of :func:`token_server`, back to its seed state for each test."""
    with token_server.fresh() as fresh:
        yield fresh


@pytest.fixture
def receiver() -> Iterator[Any]:
    """A started OTLP/HTTP receiver on loopback (tests/telemetry/receiver.py), stopped after the test."""
    from tests.telemetry.receiver import Receiver

    found = Receiver().start()
    try:
        yield found
    finally:
        found.stop()
