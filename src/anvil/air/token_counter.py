"""o200k_base counts of many texts, taken in a helper process while the caller works on.

A compile measures every tool it publishes (:mod:`anvil.compiler.disclosure`); counting needs a
45 MB table that takes about 0.15 s to load, and the counting itself is a tenth of a large API's
compile. Started before the spec loads, :class:`TokenCounter` runs :mod:`anvil.air.tokentable` as
a helper (``python -I -B``: no environment, no bytecode written), which loads the table on another
core and counts each text as it streams in; the compiler collects the counts of what it sent so far
when it needs them (one round for every tool, one for the tools over the budget), and the helper
lives on until the counter is closed. The counts are :func:`anvil.air.tokens.count_tokens`'s: when
the helper cannot start, dies, stalls or answers short, the texts are counted in this process instead.
"""

from __future__ import annotations

import os
import select
import struct
import subprocess
import sys
import time
from types import TracebackType
from typing import IO, Final

from anvil.air import tokentable
from anvil.air.tokens import count_tokens

__all__ = ["TokenCounter"]

_LENGTH: Final = struct.Struct(">I")
#: How long the helper may take to answer once every text is sent (only a stalled helper reaches it).
_TIMEOUT_S: Final = 600.0


class TokenCounter:
    """The o200k_base counts of the texts given to :meth:`add`, in order (:meth:`counts`).

    A context manager: the helper is ended on exit. Each :meth:`counts` answers the texts added since
    the one before; once the helper failed, every later text is counted in this process.

    Args:
        executable: the Python interpreter to run the helper with (default: this one's);
            an empty string counts in this process.
    """

    def __init__(self, *, executable: str | None = None) -> None:
        #: True when the last :meth:`counts` was answered by the helper (False: counted in this process).
        self.answered_by_helper = False
        self._texts: list[str] = []
        self._process: subprocess.Popen[bytes] | None = None
        command = sys.executable if executable is None else executable
        if command:
            try:
                self._process = subprocess.Popen(
                    [command, "-I", "-B", tokentable.__file__],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            except OSError:
                self._process = None
        if self._process is not None and self._process.stdin is not None:
            _widen(self._process.stdin.fileno())

    def __enter__(self) -> TokenCounter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def add(self, text: str) -> None:
        """Queue ``text`` to be counted (sent to the helper at once, when there is one)."""
        self._texts.append(text)
        process = self._process
        if process is not None and process.stdin is not None:
            data = text.encode("utf-8", "surrogatepass")
            try:
                process.stdin.write(_LENGTH.pack(len(data)) + data)
                process.stdin.flush()  # counted while the caller builds the next text
            except (OSError, ValueError):
                self.close()

    def counts(self) -> list[int]:
        """The counts of every text added since the last call, in order."""
        texts, self._texts = self._texts, []
        if not texts:
            return []
        answer = self._answer(len(texts))
        self.answered_by_helper = answer is not None
        return answer if answer is not None else [count_tokens(text) for text in texts]

    def close(self) -> None:
        """End the helper (idempotent); texts not yet answered are then counted in this process."""
        process, self._process = self._process, None
        if process is not None:
            _end(process)

    def _answer(self, expected: int) -> list[int] | None:
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            return None
        try:
            process.stdin.write(_LENGTH.pack(tokentable.FLUSH))
            process.stdin.flush()
            out = _read(process.stdout.fileno(), _LENGTH.size * expected, time.monotonic() + _TIMEOUT_S)
        except (OSError, ValueError):
            out = None
        if out is None:
            self.close()
            return None
        return [count for (count,) in _LENGTH.iter_unpack(out)]


def _widen(fd: int) -> None:
    """Raise the pipe to the helper to what it reads at once, where Linux allows, so sending rarely waits."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), tokentable.CHUNK)
    except (ImportError, OSError):
        pass  # the default pipe: sending waits for the helper more often, the counts are the same


def _read(fd: int, size: int, deadline: float) -> bytes | None:
    """Exactly ``size`` bytes from ``fd``, or None when it ends first or ``deadline`` passes."""
    chunks: list[bytes] = []
    left = size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            return None
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    for stream in (process.stdin, process.stdout):
        _close(stream)
    process.wait()


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        try:
            stream.close()
        except OSError:
            pass
