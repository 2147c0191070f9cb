"""One write for an answer's head and body: :class:`HeadCoalescer` wraps uvicorn's socket transport.

uvicorn writes a response's status line and headers, then its body, as two ``transport.write`` calls. With
Nagle off each becomes its own TCP segment, and a client reading as the bytes arrive often wakes twice
for one answer (the MCP SDK's client does: about one more read per call). The head is therefore held
until the first body bytes are written, and both go out in one write. It is never held past the current
event-loop iteration (a streamed answer whose first chunk comes later gets its head at once), an interim
``1xx`` answer (``100 Continue``) is never held, and a close sends what is held first.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["HeadCoalescer"]

_HEAD_START = b"HTTP/1.1 "
_HEAD_END = b"\r\n\r\n"
_INTERIM = b"HTTP/1.1 1"


class HeadCoalescer:
    """A transport that joins a response head with the body bytes written after it in the same step.

    Everything but ``write``, ``writelines``, ``close``, ``abort`` and ``get_write_buffer_size`` is the
    wrapped transport's own (flow control, extra info, ``is_closing``).
    """

    __slots__ = ("_flush", "_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._flush: asyncio.Handle | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hold a complete response head for its body; send anything else (with a held head) at once."""
        if not data:
            return  # h11 ends a message with an empty write: it must not part a held head from its body
        held = self._held
        if held is not None:
            self._release_timer()
            self._held = None
            self._transport.write(held + bytes(data))
            return
        if (
            isinstance(data, bytes)
            and data.startswith(_HEAD_START)
            and data.endswith(_HEAD_END)
            and not data.startswith(_INTERIM)
            and not self._transport.is_closing()
        ):
            self._held = data
            self._flush = self._loop.call_soon(self.flush)
            return
        self._transport.write(data)

    def writelines(self, lines: Any) -> None:
        """Send ``lines`` after anything held."""
        self.write(b"".join(lines))

    def flush(self) -> None:
        """Send a held head now (its body did not follow in the same step)."""
        self._flush = None
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        """Send what is held, then close."""
        self._release_timer()
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        """Drop what is held and abort."""
        self._release_timer()
        self._held = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        """The wrapped transport's buffer plus what is held."""
        held = self._held
        return self._transport.get_write_buffer_size() + (len(held) if held is not None else 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def _release_timer(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
