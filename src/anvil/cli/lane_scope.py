"""The flags the operation-driving proof lanes share (``selftest``, ``conformance``, ``simulate``).

``--operations GLOB...`` runs a subset (a glob over AIR ids, canonical names and tool names),
``--time-cap SECONDS`` stops starting operations after that long, ``--startup-timeout SECONDS``
bounds each child process's start (lanes that start children), and ``--quiet`` drops the progress
lines printed on stderr, one per operation. SIGINT and SIGTERM ask the lane to stop after the
operation in flight and write what it has, marked incomplete; a second signal stops at once.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from anvil.errors import UsageError
from anvil.proof.scope import DEFAULT_STARTUP_TIMEOUT_S, LaneScope

__all__ = ["add_scope_arguments", "scope_from", "stopping_on_signals"]

_MAX_SECONDS = 7 * 24 * 3600.0


def add_scope_arguments(parser: argparse.ArgumentParser, *, startup: bool) -> None:
    """Add ``--operations``, ``--time-cap``, ``--quiet`` and (when ``startup``) ``--startup-timeout``."""
    parser.add_argument(
        "--operations",
        nargs="+",
        metavar="GLOB",
        default=[],
        help="run only the approved operations these globs name (AIR id, canonical or tool name); "
        "the record is then marked incomplete",
    )
    parser.add_argument(
        "--time-cap", metavar="SECONDS", help="stop starting operations after this long and write a partial record"
    )
    if startup:
        parser.add_argument(
            "--startup-timeout",
            metavar="SECONDS",
            default=str(DEFAULT_STARTUP_TIMEOUT_S),
            help=f"how long each child process may take to start (default {DEFAULT_STARTUP_TIMEOUT_S:g})",
        )
    parser.add_argument("--quiet", action="store_true", help="print no progress line per operation on stderr")


def _seconds(flag: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= _MAX_SECONDS:
        raise UsageError("cli/usage", f"{flag} expects seconds above 0, got {text!r}")
    return value


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def scope_from(args: argparse.Namespace) -> LaneScope:
    """The :class:`LaneScope` the parsed flags describe.

    Raises:
        UsageError: a malformed ``--time-cap`` or ``--startup-timeout``, or an empty glob.
    """
    patterns = tuple(str(p) for p in args.operations)
    if any(not p.strip() for p in patterns):
        raise UsageError("cli/usage", "--operations expects non-empty globs")
    startup = _seconds("--startup-timeout", getattr(args, "startup_timeout", None))
    return LaneScope(
        operations=patterns,
        progress=None if args.quiet else _progress,
        time_cap_s=_seconds("--time-cap", args.time_cap),
        startup_timeout_s=startup if startup is not None else DEFAULT_STARTUP_TIMEOUT_S,
    )


@contextmanager
def stopping_on_signals(scope: LaneScope) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM ask ``scope`` to stop; a second one interrupts at once."""
    names = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
    saved = {number: signal.getsignal(number) for number in names}

    def handler(number: int, _frame: FrameType | None) -> None:
        if scope.stop.is_set():
            raise KeyboardInterrupt
        scope.stop.set(f"{names.get(signal.Signals(number), 'a signal')} received")
        _progress(f"stopping after the operation in flight ({names.get(signal.Signals(number))}); again to abort")

    for number in names:
        signal.signal(number, handler)
    try:
        yield
    finally:
        for number, previous in saved.items():
            signal.signal(number, previous)
