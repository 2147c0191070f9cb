"""The discovery tests' rig: the github-mini and payments fleet in-process (:class:`tests.serve.test_fleet.Rig`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from anvil.air.model import Document
from tests.serve.test_fleet import Rig


@pytest.fixture
async def rig(github: Document, payments: Document) -> AsyncIterator[Rig]:
    made = Rig(github, payments)
    yield made
    await made.aclose()
