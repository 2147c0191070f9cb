"""Parsing the entry spec in a forked child while this process goes on with other work.

A large YAML spec takes 0.1-0.3 s to parse (libyaml), about as long as ``anvil compile`` takes to
import the compiler: :class:`ParseAhead` reads the entry file, forks, and the child parses those bytes
with :func:`~anvil.load.parse.parse_bytes` and sends the outcome back (``marshal``: shared objects stay
shared) while the parent imports. :meth:`ParseAhead.parse` is then a drop-in for ``parse_bytes``:
it answers the child's outcome for the very bytes the child parsed, under the same file name, and
parses in this process otherwise, or when the child failed in any way. The outcome is the same either
way (the same function on the same bytes), so a bundle never depends on which process parsed.

Forking is only done where it is safe and pays: a POSIX system, a process with a single thread (a
lock another thread holds at the fork would stay held in the child), a file read in full, and YAML
text (JSON parses in C about six times as fast: 0.03 s for a 3 MB spec, about what the child's
answer takes to load here, so a JSON spec is parsed in this process).
"""

from __future__ import annotations

import marshal
import os
import threading
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from anvil.load.files import DEFAULT_MAX_FILE_BYTES, read_bounded

if TYPE_CHECKING:
    from anvil.load.parse import Parsed, ParseFailure

__all__ = ["ParseAhead"]

#: How much the pipe from the child holds at once, where Linux allows (the default 64 KiB would make a
#: 3 MB answer take fifty round trips between the processes).
_PIPE_BYTES: Final = 1 << 20
_CHUNK: Final = 1 << 20


class ParseAhead:
    """The parse of the file at ``path``, taken in a forked child from the moment this is made.

    A context manager: on exit a child not yet heard is ended and reaped. Nothing here raises for a
    file that cannot be read or forked for: :meth:`parse` then parses in this process.

    Args:
        path: The entry file (read now with :func:`~anvil.load.files.read_bounded`).
        max_file_bytes: The per-file size limit; a larger or irregular file is not read ahead.
    """

    def __init__(self, path: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self._name = path.name
        self._data: bytes | None = None
        self._pid: int | None = None
        self._fd: int | None = None
        self._outcome: Parsed | ParseFailure | None = None
        #: True once :meth:`parse` answered with the child's outcome (False: every answer was parsed here).
        self.answered_by_child = False
        if not hasattr(os, "fork") or not _single_threaded():
            return
        data = read_bounded(path, max_file_bytes)
        if not isinstance(data, bytes) or not data or _json_text(data):
            return
        try:
            readable, writable = os.pipe()
        except OSError:
            return
        _widen(writable)
        try:
            pid = os.fork()
        except OSError:
            os.close(readable)
            os.close(writable)
            return
        if pid == 0:  # pragma: no cover - the child: coverage is not collected past os._exit
            _child(readable, writable, data, self._name)
        os.close(writable)
        self._data, self._pid, self._fd = data, pid, readable

    def __enter__(self) -> ParseAhead:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    @property
    def forked(self) -> bool:
        """True when a child was started to parse the file."""
        return self._data is not None

    def parse(self, data: bytes, name: str) -> Parsed | ParseFailure:
        """:func:`~anvil.load.parse.parse_bytes`'s answer for ``data`` read as ``name``: the child's, when it
        parsed these very bytes under this file name and answered, else parsed here."""
        from anvil.load.parse import parse_bytes

        if self._data is not None and PurePosixPath(name).name == self._name and data == self._data:
            outcome = self._collect()
            if outcome is not None:
                self.answered_by_child = True
                return outcome
        return parse_bytes(data, name)

    def close(self) -> None:
        """End and reap the child (idempotent); later :meth:`parse` calls parse in this process."""
        self._data = None
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        pid, self._pid = self._pid, None
        if pid is not None:
            try:
                os.kill(pid, 9)
            except OSError:
                pass  # already ended
            _reap(pid)

    def _collect(self) -> Parsed | ParseFailure | None:
        """The child's outcome (read once and kept), or None when it sent none that loads."""
        if self._outcome is not None:
            return self._outcome
        fd, pid = self._fd, self._pid
        if fd is None or pid is None:
            return None
        self._fd = self._pid = None
        try:
            chunks: list[bytes] = []
            while chunk := os.read(fd, _CHUNK):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(fd)
        ended_well = _reap(pid)
        if not ended_well or not chunks:
            return None
        try:
            self._outcome = _outcome(marshal.loads(b"".join(chunks)))
        except (EOFError, ValueError, TypeError):
            return None
        return self._outcome


def _json_text(data: bytes) -> bool:
    """True when ``data`` opens as JSON does (``{`` or ``[``): the test :func:`~anvil.load.parse.parse_bytes`
    reads JSON first by (not imported here: it would import YAML before the fork)."""
    return data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[")


def _single_threaded() -> bool:
    """True when this process runs one thread: no Python thread beside this one, nor (where Linux lists
    them) one started by native code."""
    if threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return True  # no /proc: the interpreter's own count is all there is to go by


def _child(readable: int, writable: int, data: bytes, name: str) -> None:  # pragma: no cover - runs forked
    """Parse ``data``, write the marshalled outcome to ``writable`` and end the process (never returns)."""
    status = 1
    try:
        os.close(readable)
        from anvil.load.parse import Parsed, parse_bytes

        found = parse_bytes(data, name)
        if isinstance(found, Parsed):
            payload = marshal.dumps(("parsed", found.value, found.syntax, found.truncated))
        else:
            payload = marshal.dumps(("failure", found.message, found.line, found.column, found.code))
        view = memoryview(payload)
        while view:
            view = view[os.write(writable, view) :]
        status = 0
    finally:
        os._exit(status)


def _outcome(message: Any) -> Parsed | ParseFailure:
    """The :class:`Parsed` or :class:`ParseFailure` the child sent as a tuple."""
    from anvil.load.parse import Parsed, ParseFailure

    if not isinstance(message, tuple) or not message:
        raise ValueError("not an outcome")
    if message[0] == "parsed" and len(message) == 4:
        return Parsed(message[1], message[2], message[3])
    if message[0] == "failure" and len(message) == 5:
        return ParseFailure(message[1], message[2], message[3], message[4])
    raise ValueError("not an outcome")


def _reap(pid: int) -> bool:
    """Wait for the child ``pid``; True when it exited with status 0."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return False
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _widen(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_BYTES)
    except (ImportError, OSError):
        pass  # the default pipe size: the answer takes more round trips, it is the same
