"""o200k_base counts of many texts, taken in a helper process while the caller works on.

A compile measures every tool it publishes (:mod:`anvil.compiler.disclosure`); counting needs a
45 MB table that takes about 0.15 s to load, and the counting itself is a tenth of a large API's
compile. Started before the spec loads, :class:`TokenCounter` runs :mod:`anvil.air.tokentable` as
a helper (``python -I -B``: no environment, no bytecode written), which loads the table on another
core and counts the texts as they stream in; the compiler collects the counts at the end of its
measurement. The counts are :func:`anvil.air.tokens.count_tokens`'s: when the helper cannot start,
dies, stalls or answers short, the texts are counted in this process instead.
"""

from __future__ import annotations

import struct
import subprocess
import sys
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

    A context manager: the helper is ended on exit. :meth:`counts` answers once; texts added after
    it are counted in this process.

    Args:
        executable: the Python interpreter to run the helper with (default: this one's);
            an empty string counts in this process.
    """

    def __init__(self, *, executable: str | None = None) -> None:
        #: True once :meth:`counts` was answered by the helper (False: counted in this process).
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
            except (OSError, ValueError):
                self.close()

    def counts(self) -> list[int]:
        """The counts of every text added so far, in order."""
        if not self._texts:
            self.close()  # nothing to count: the helper is not waited for
            return []
        answer = self._answer()
        texts, self._texts = self._texts, []
        if answer is None or len(answer) != len(texts):
            return [count_tokens(text) for text in texts]
        self.answered_by_helper = True
        return answer

    def close(self) -> None:
        """End the helper (idempotent); texts not yet answered are then counted in this process."""
        process, self._process = self._process, None
        if process is not None:
            _end(process)

    def _answer(self) -> list[int] | None:
        process, self._process = self._process, None
        if process is None or process.stdin is None:
            return None
        try:
            process.stdin.write(_LENGTH.pack(tokentable.END))
            out, _ = process.communicate(timeout=_TIMEOUT_S)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            _end(process)
            return None
        if process.returncode != 0 or len(out) != _LENGTH.size * len(self._texts):
            return None
        return [count for (count,) in _LENGTH.iter_unpack(out)]


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
