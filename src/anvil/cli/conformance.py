"""``anvil conformance BUNDLE [--json] [--live CONFIG.json] [--operations GLOB...] [--time-cap S]
[--startup-timeout S] [--quiet]``: the surfaces agree (original-core §8.3).

Hermetic by default: starts ``anvil mock`` and a real ``anvil serve`` on loopback, sends the same
input through MCP, ``POST /call/<tool>`` and ``anvil run``, and checks that every surface puts the same
request on the wire, answers the same, documents the same operations and refuses the same calls.
Writes ``conformance.report.json``. Only the variables a child process needs to run Python pass to
the children; the mock, the gateway and ``anvil run`` run with ``ANVIL_ENV=dev``, an in-memory
ledger and placeholder credentials. A progress line per operation goes to stderr; ``--operations``,
``--time-cap`` and SIGINT/SIGTERM give a partial record marked ``incomplete`` (:mod:`anvil.cli.lane_scope`),
which ``anvil status`` never counts as fresh; ``--startup-timeout`` bounds each child's start.

``--live CONFIG.json`` instead checks a deployed gateway, read-only:
``{"mcpUrl": URL, "headers": {NAME: VALUE with ${ENV} references}, "probeReads": [operation ids],
"inputs": {operation id: arguments}}``. The gateway must first attest (``/healthz`` ``artifactHash``)
that it runs this bundle; then its tool list, a confirmation gate (as a dry run) and the opted-in
reads are checked. A config naming a mutation is refused before any connection. Writes
``conformance.live.report.json`` (never a header value).

Exit status: 0 when no check failed and at least one passed, 1 otherwise, 3 when the bundle cannot
be read, the config is refused (``proof/live_config_invalid``, ``proof/live_mutation_refused``) or a
child process does not start.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from anvil.cli.lane_scope import add_scope_arguments, scope_from, stopping_on_signals
from anvil.errors import ConfigError

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``conformance`` arguments to its subparser."""
    parser.add_argument("bundle", metavar="BUNDLE", help="the compiled bundle directory")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--live", metavar="CONFIG.json", help="check a deployed gateway read-only instead")
    add_scope_arguments(parser, startup=True)
    parser.epilog = (
        'live config: {"mcpUrl": "https://HOST/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, '
        '"probeReads": ["<read operation id>"], "inputs": {"<read operation id>": {...}}}. '
        "${NAME} is read from the environment; a config naming a mutation is refused."
    )


def run(args: argparse.Namespace) -> int:
    """Run the lane, write its record and print the summary.

    Raises:
        BundleError: ``bundle/invalid`` when the bundle cannot be read.
        ConfigError: the live config is refused, or the mock or the gateway does not start.
    """
    from anvil.proof.conformance.lane import CONFORMANCE_FILE, conformance
    from anvil.proof.conformance.live import LIVE_FILE, live_conformance
    from anvil.proof.record import write_record
    from anvil.proof.records import render_checks

    directory = Path(args.bundle)
    scope = scope_from(args)
    if args.live:
        try:
            text = Path(args.live).read_bytes()
        except OSError as exc:
            raise ConfigError("proof/live_config_invalid", f"cannot read {args.live}: {exc.strerror or exc}") from None
        record = live_conformance(directory, text, environ=os.environ)
        name = LIVE_FILE
    else:
        with stopping_on_signals(scope):
            record = conformance(directory, environ=os.environ, scope=scope)
        name = CONFORMANCE_FILE
    write_record(directory, name, record)
    summary = record["summary"]
    passed = summary["fail"] == 0 and summary["pass"] >= 1
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        line = (
            f"{summary['pass']} pass, {summary['fail']} fail, {summary['skipped']} skipped "
            f"for bundle {record['bundleHash'][:12]}"
        )
        title = f"conformance{' --live ' + record['endpoint'] if args.live else ''} {directory}"
        incomplete = record.get("incomplete")
        if isinstance(incomplete, dict):
            line += f"; INCOMPLETE — {incomplete['reason']} (not evidence for `anvil status`)"
        print(render_checks(title, record["checks"], passed=passed, summary=line))
    return 0 if passed else 1
