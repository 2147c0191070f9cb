"""Inbound connection limits: how long a request head may take, how long an idle connection stays, how many.

uvicorn times out an idle keep-alive connection but nothing else: a connection that never sends a byte,
or sends its request head one byte at a time, is kept forever, and enough of them exhaust the process's
file descriptors, after which the listener cannot accept (or resets) the legitimate calls that follow.
:func:`guarded_protocol` wraps uvicorn's HTTP protocol so that

* a request head (request line and headers) must arrive within ``header_timeout_seconds`` of the
  connection opening, or of its first byte on a kept-alive connection; a connection that has not
  finished it by then is closed (408 first when part of a head arrived);
* a head larger than ``max_head_bytes`` is refused (431) and the connection closed;
* at most ``max_connections`` connections are open at once, and never more than the open-file limit
  less :data:`FD_RESERVE` (descriptors kept for the ledger, upstream connections and imports, so the
  listener never meets ``EMFILE``). When a new connection would pass the limit, the connection that
  has been waiting longest for a request head (idle or slow) is closed to make room: connections
  serving a request are never closed for it, and a caller that sends its request at once is the last
  to be closed. Only when every open connection is serving a request is the new one closed.

Idle keep-alive connections are closed by uvicorn after ``keep_alive_seconds``.
:func:`raise_open_file_limit` raises the process's soft open-file limit to its hard limit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil.serve.mcp.coalescer import HeadCoalescer

__all__ = [
    "DEFAULT_LIMITS",
    "FD_RESERVE",
    "ConnectionLimits",
    "ConnectionTable",
    "connection_cap",
    "guarded_protocol",
    "raise_open_file_limit",
]

logger = logging.getLogger(__name__)

#: Descriptors the listener leaves for everything but inbound connections.
FD_RESERVE: Final = 256
_TIMED_OUT: Final = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_TOO_LARGE: Final = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_WARN_EVERY_SECONDS: Final = 60.0
#: Taken as the open-file limit where none is set (Linux's default ceiling, ``fs.nr_open``).
_UNLIMITED: Final = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    """The listener's inbound connection limits (module docstring)."""

    #: Seconds a request head may take to arrive.
    header_timeout_seconds: float = 10.0
    #: Seconds an idle kept-alive connection stays open.
    keep_alive_seconds: float = 5.0
    #: Connections open at once (also capped by the open-file limit less :data:`FD_RESERVE`).
    max_connections: int = 4096
    #: Bytes a request head (request line and headers) may hold.
    max_head_bytes: int = 65536


DEFAULT_LIMITS: Final = ConnectionLimits()


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard limit where the platform allows; the soft limit in force."""
    try:
        import resource
    except ImportError:  # not a POSIX platform: nothing to raise, no limit known
        return _UNLIMITED
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else _UNLIMITED
    if soft == resource.RLIM_INFINITY:
        return _UNLIMITED
    if soft >= wanted:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ValueError, OSError):  # a sandbox may refuse: keep what we have
        return soft
    return wanted


def connection_cap(limits: ConnectionLimits, open_files: int) -> int:
    """How many inbound connections may be open with ``open_files`` descriptors allowed."""
    spare = open_files - FD_RESERVE if open_files >= 2 * FD_RESERVE else open_files // 2
    return max(1, min(limits.max_connections, spare))


class ConnectionTable:
    """The open connections of one listener, and which of them wait for a request head (oldest first).

    Args:
        cap: The most connections open at once.
        clock: Monotonic seconds (a test seam for the warning's rate).
    """

    def __init__(self, cap: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = cap
        self._open: set[Any] = set()
        self._waiting: OrderedDict[Any, None] = OrderedDict()
        self._clock = clock
        self._warned = float("-inf")
        #: Connections closed to make room, and new connections closed because none could be.
        self.evicted = 0
        self.refused = 0

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, connection: Any, close: Callable[[Any], None]) -> bool:
        """Count a new connection (waiting for its head); False when it must be closed.

        At the cap, the connection waiting longest for a head is closed (by ``close``) to make room.
        """
        if len(self._open) >= self.cap:
            victim = next(iter(self._waiting), None)
            now = self._clock()
            if now - self._warned >= _WARN_EVERY_SECONDS:
                self._warned = now
                logger.warning(
                    "anvil: %d inbound connections are open (the limit); closing those idle longest", len(self._open)
                )
            if victim is None:
                self.refused += 1
                return False
            self.gone(victim)
            close(victim)
            self.evicted += 1
        self._open.add(connection)
        self._waiting[connection] = None
        return True

    def busy(self, connection: Any) -> None:
        """``connection`` has a request in progress: never closed to make room."""
        self._waiting.pop(connection, None)

    def waiting(self, connection: Any) -> None:
        """``connection`` waits for its next request head (the newest waiting one)."""
        if connection in self._open:
            self._waiting[connection] = None
            self._waiting.move_to_end(connection)

    def gone(self, connection: Any) -> None:
        """``connection`` is closed."""
        self._open.discard(connection)
        self._waiting.pop(connection, None)


def _close(connection: Any) -> None:
    connection.close_idle()


def guarded_protocol(base: type[Any], limits: ConnectionLimits, table: ConnectionTable) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class ``base`` (httptools or h11) under ``limits``, counting in ``table``.

    The wrapper knows a request head is complete when uvicorn starts its request cycle (``self.cycle``
    changes), which both of uvicorn's parsers do once the headers are parsed.
    """
    header_timeout = limits.header_timeout_seconds
    max_head = limits.max_head_bytes

    class Guarded(base):  # type: ignore[misc]
        _head_timer: asyncio.TimerHandle | None = None
        _head_bytes = 0
        _awaiting_head = True

        def connection_made(self, transport: asyncio.Transport) -> None:
            # The answer's head and body in one segment: see anvil.serve.mcp.coalescer.
            super().connection_made(HeadCoalescer(transport, self.loop))
            if not table.admit(self, _close):
                transport.abort()  # every open connection is serving a request: no room
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            table.gone(self)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if not self._awaiting_head:
                super().data_received(data)
                return
            before = self.cycle
            super().data_received(data)
            if self.cycle is not before:  # the head is complete: a request is in progress
                self._awaiting_head = False
                self._head_bytes = 0
                self._disarm()
                table.busy(self)
                return
            self._head_bytes += len(data)
            if self._head_bytes > max_head:
                self._refuse(_TOO_LARGE)
            elif self._head_timer is None:  # the first bytes of a request on a kept-alive connection
                self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            cycle = self.cycle
            if self.transport.is_closing() or (cycle is not None and not cycle.response_complete):
                return  # closing, or a pipelined request already started
            self._awaiting_head = True  # idle: uvicorn's keep-alive timer runs until a byte arrives
            self._head_bytes = 0
            table.waiting(self)

        def close_idle(self) -> None:
            """Closed to make room for a new connection."""
            self._disarm()
            if not self.transport.is_closing():
                self.transport.close()

        def _arm(self) -> None:
            self._head_timer = self.loop.call_later(header_timeout, self._head_timed_out)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self._awaiting_head:
                self._refuse(_TIMED_OUT if self._head_bytes else b"")

        def _refuse(self, answer: bytes) -> None:
            self._disarm()
            table.gone(self)
            if self.transport.is_closing():
                return
            if answer:
                self.transport.write(answer)
            self.transport.close()

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded
