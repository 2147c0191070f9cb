"""``anvil mock BUNDLE [--port N] [--seed S]``: serve a stateful mock of the bundle's upstream API.

The mock is generated from the bundle's AIR (:mod:`anvil.proof.mock`): resources are kept in memory
by path template, requests are validated against each operation's inputs, idempotency keys are
honoured, and ``/__anvil/fault`` and ``/__anvil/requests`` let a test inject faults and read what
reached the wire. It listens on 127.0.0.1 only, prints ``{"url": "http://127.0.0.1:PORT"}`` once it
is listening, and exits 0 on SIGINT/SIGTERM. Point a gateway at it with
``anvil serve BUNDLE --base-url URL`` (and ``ANVIL_ENV=dev``).

Exit status: 0 after a clean shutdown, 2 usage, 3 a bundle that cannot be read or a port that
cannot be bound.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from anvil.errors import ConfigError, UsageError

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``mock`` flags to its subparser."""
    parser.add_argument("bundle", metavar="BUNDLE", help="a bundle directory written by `anvil compile`")
    parser.add_argument("--port", default="0", help="the loopback port to listen on (0, the default, picks one)")
    parser.add_argument("--seed", default="0", help="varies generated values; the same seed gives the same answers")


def _number(flag: str, value: str, high: int) -> int:
    if not value.isdigit() or int(value) > high:
        raise UsageError("cli/usage", f"{flag} expects a whole number from 0 to {high}, got {value!r}")
    return int(value)


def run(args: argparse.Namespace) -> int:
    """Serve the mock until signalled.

    Raises:
        UsageError: a malformed ``--port`` or ``--seed``.
        BundleError: the bundle cannot be read.
        ConfigError: the port cannot be bound.
    """
    import anyio

    from anvil.bundle.read import read_bundle
    from anvil.proof.mock import serve_mock

    port = _number("--port", args.port, 65535)
    seed = _number("--seed", args.seed, 2**31 - 1)
    document = read_bundle(Path(args.bundle))
    try:
        anyio.run(lambda: serve_mock(document, port=port, seed=seed))
    except OSError as exc:
        raise ConfigError("config/invalid", f"Cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}.") from exc
    return 0
