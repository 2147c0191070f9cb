"""Helpers shared by the ledger tests."""

from __future__ import annotations

#: The completed-result retention every conformance ledger is opened with.
TTL_SECONDS = 3600


class FakeClock:
    """Wall-clock seconds that only move when a test says so."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
