"""Child processes the proof lanes drive: ``anvil mock`` (and anything else that prints ``{"url": ...}``).

A child is started with an explicit environment, must print its URL as the first stdout line within
a bound, and is stopped with SIGTERM (then SIGKILL if it lingers) when the block exits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import Process

from anvil.errors import ConfigError

__all__ = ["STOP_TIMEOUT_S", "UrlProcess", "mock_process", "url_process"]

#: How long a child gets to stop after SIGTERM before it is killed.
STOP_TIMEOUT_S: Final = 5.0
_MAX_LINE: Final = 4096


class UrlProcess:
    """A running child and the URL it announced."""

    def __init__(self, process: Process, url: str) -> None:
        """Args: process: the child; url: what it printed."""
        self.process = process
        self.url = url


async def _first_line(process: Process, timeout: float) -> str:
    assert process.stdout is not None
    buffered = b""
    with anyio.move_on_after(timeout):
        while b"\n" not in buffered and len(buffered) < _MAX_LINE:
            try:
                buffered += await process.stdout.receive()
            except anyio.EndOfStream:
                break
    return buffered.split(b"\n", 1)[0].decode("utf-8", errors="replace")


async def _stop(process: Process) -> None:
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(STOP_TIMEOUT_S, shield=True):
            await process.wait()
    if process.returncode is None:
        process.kill()
        with anyio.move_on_after(STOP_TIMEOUT_S, shield=True):
            await process.wait()


@asynccontextmanager
async def url_process(
    command: Sequence[str], *, env: Mapping[str, str], what: str, timeout: float = 30.0
) -> AsyncIterator[UrlProcess]:
    """Start ``command``, wait for its ``{"url": ...}`` line, yield it, stop the child on exit.

    Raises:
        ConfigError: ``config/invalid`` when the child exits or stays silent instead of announcing a URL.
    """
    # A session of its own: a Ctrl-C at the terminal asks the lane to stop and write its record, and
    # must not kill the children that lane still talks to (the lane stops them on the way out).
    process = await anyio.open_process(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(env),
        start_new_session=True,
    )
    try:
        line = await _first_line(process, timeout)
        try:
            url = json.loads(line)["url"]
        except (ValueError, KeyError, TypeError):
            url = None
        if not isinstance(url, str):
            raise ConfigError("config/invalid", f"{what} did not start (no URL within {timeout:g} s).")
        yield UrlProcess(process, url)
    finally:
        await _stop(process)
        if process.stdout is not None:
            await process.stdout.aclose()


def mock_process(
    bundle: Path, *, env: Mapping[str, str], seed: int = 0, python: str | None = None, timeout: float = 30.0
) -> AbstractAsyncContextManager[UrlProcess]:
    """``python -m anvil mock BUNDLE --port 0 --seed SEED`` as a :func:`url_process` context manager
    (``timeout``: how long it may take to announce its URL)."""
    command = [python or sys.executable, "-m", "anvil", "mock", str(bundle), "--port", "0", "--seed", str(seed)]
    return url_process(command, env=env, what="anvil mock", timeout=timeout)
