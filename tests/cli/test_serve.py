"""`anvil serve` start-up: an unreachable ledger is reported at once, not only by /readyz."""

from __future__ import annotations

import io
import os
import socket
from pathlib import Path

import pytest

from anvil.cli.serve import prepare_ledger, warn_unless_ready
from anvil.cli.serve_config import derived_key_window
from anvil.errors import ConfigError
from anvil.ledger.registry import open_ledger


@pytest.mark.anyio
async def test_an_unreachable_ledger_is_reported_on_stderr_at_start_up(tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/missing/dir/ledger.db")
    stream = io.StringIO()
    try:
        assert await warn_unless_ready(ledger, stream) is False
        assert await prepare_ledger(ledger, stream) is False  # the folder is missing: nothing can be created
    finally:
        await ledger.close()
    assert "warning" in stream.getvalue() and "(database_not_found)" in stream.getvalue()


@pytest.mark.anyio
async def test_start_up_says_when_it_creates_a_new_ledger_file_and_is_quiet_once_it_exists(tmp_path: Path) -> None:
    streams = []
    for _start in range(2):
        ledger = open_ledger(f"sqlite:///{tmp_path}/ledger.db?namespace=payments")
        stream = io.StringIO()
        try:
            assert await prepare_ledger(ledger, stream) is True
        finally:
            await ledger.close()
        streams.append(stream.getvalue())
    file = os.path.realpath(tmp_path / "ledger.db")
    assert streams[0] == (
        f"anvil: created a new ledger: sqlite host {socket.gethostname()}, file {file}, "
        "table anvil_idempotency_df384ae97c77ad30 (namespace payments)\n"
    )
    assert streams[1] == "" and (tmp_path / "ledger.db").is_file()


def test_the_derived_key_window_is_read_from_the_environment_and_bounded() -> None:
    assert derived_key_window({}) is None
    assert derived_key_window({"ANVIL_DERIVED_KEY_WINDOW_SECONDS": "90"}) == 90
    for bad in ("0", "86401", "ten"):
        with pytest.raises(ConfigError) as refused:
            derived_key_window({"ANVIL_DERIVED_KEY_WINDOW_SECONDS": bad})
        assert refused.value.code == "config/invalid"
