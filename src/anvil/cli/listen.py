"""The HTTP listener's connection flags of ``anvil serve``, and the socket a worker inherits.

| flag | variable | default | range |
|---|---|---|---|
| ``--header-timeout SECONDS`` | ``ANVIL_HEADER_TIMEOUT_SECONDS`` | 10 | 0.1 to 3600 |
| ``--keep-alive SECONDS`` | ``ANVIL_KEEP_ALIVE_SECONDS`` | 5 | 0.1 to 3600 |
| ``--max-connections N`` | ``ANVIL_MAX_CONNECTIONS`` | 4096 | 1 to 1000000 |

A flag wins over its variable. What each bounds is in :mod:`anvil.serve.mcp.limits`; the connections
at once are also capped by the open-file limit less a reserve.
"""

from __future__ import annotations

import argparse
import math
import socket
from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from anvil.errors import ConfigError
from anvil.serve.mcp.limits import DEFAULT_LIMITS, ConnectionLimits

__all__ = ["connection_limits", "inherited_listener", "limit_argv", "register_listener_flags"]

_SECONDS: Final = (0.1, 3600.0)
_CONNECTIONS: Final = (1, 1_000_000)
#: (flag, attribute on the parsed arguments, variable, field of ConnectionLimits).
_FLAGS: Final = (
    ("--header-timeout", "header_timeout", "ANVIL_HEADER_TIMEOUT_SECONDS", "header_timeout_seconds"),
    ("--keep-alive", "keep_alive", "ANVIL_KEEP_ALIVE_SECONDS", "keep_alive_seconds"),
    ("--max-connections", "max_connections", "ANVIL_MAX_CONNECTIONS", "max_connections"),
)


def register_listener_flags(parser: argparse.ArgumentParser) -> None:
    """Add the connection flags (and the worker's hidden ``--listen-fd``) to the ``serve`` subparser."""
    parser.add_argument(
        "--header-timeout",
        metavar="SECONDS",
        help="close a connection whose request head has not arrived in time "
        f"(default ANVIL_HEADER_TIMEOUT_SECONDS, else {DEFAULT_LIMITS.header_timeout_seconds:g})",
    )
    parser.add_argument(
        "--keep-alive",
        metavar="SECONDS",
        help="close an idle kept-alive connection after this long "
        f"(default ANVIL_KEEP_ALIVE_SECONDS, else {DEFAULT_LIMITS.keep_alive_seconds:g})",
    )
    parser.add_argument(
        "--max-connections",
        metavar="N",
        help="inbound connections open at once; idle ones are closed first to make room "
        f"(default ANVIL_MAX_CONNECTIONS, else {DEFAULT_LIMITS.max_connections})",
    )
    parser.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)


def _number(raw: str, source: str, *, whole: bool) -> float:
    low, high = _CONNECTIONS if whole else _SECONDS
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        value = math.nan
    if not low <= value <= high:  # NaN fails too
        kind = "a whole number" if whole else "a number of seconds"
        raise ConfigError(
            "config/invalid", f"{source} must be {kind} from {low:g} to {high:g}.", hint=f"Fix or unset {source}."
        )
    return value


def connection_limits(environ: Mapping[str, str], args: argparse.Namespace) -> ConnectionLimits:
    """The listener's connection limits from the flags and the environment (module docstring).

    Raises:
        ConfigError: ``config/invalid`` for a value that is not a number in range.
    """
    chosen: dict[str, float] = {}
    for flag, attribute, variable, field in _FLAGS:
        given = getattr(args, attribute, None)
        raw, source = (given, flag) if given is not None else (environ.get(variable, ""), variable)
        if raw.strip():
            whole = field == "max_connections"
            chosen[field] = _number(raw.strip(), source, whole=whole)
    return replace(DEFAULT_LIMITS, **chosen)  # type: ignore[arg-type]


def limit_argv(args: argparse.Namespace) -> list[str]:
    """The connection flags given on the command line, for a worker's command line."""
    argv: list[str] = []
    for flag, attribute, _, _ in _FLAGS:
        given = getattr(args, attribute, None)
        if given is not None:
            argv += [flag, given]
    return argv


def inherited_listener(fd: int) -> socket.socket:
    """The listening TCP socket a ``--workers`` supervisor handed this worker as descriptor ``fd``.

    Raises:
        ConfigError: ``config/invalid`` when ``fd`` is not a listening TCP socket.
    """
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise ConfigError("config/invalid", f"Descriptor {fd} is not a socket: {exc.strerror or exc}.") from exc
    listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6) or not listening:
        sock.detach()
        raise ConfigError("config/invalid", f"Descriptor {fd} is not a listening TCP socket.")
    return sock
