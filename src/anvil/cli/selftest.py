"""``anvil selftest BUNDLE [--upstream URL] [--allow-remote-sandbox] [--json] [--seed S] [--timeout S]
[--operations GLOB...] [--time-cap S] [--startup-timeout S] [--quiet]``.

Serves the bundle with a real ``anvil serve`` process over MCP against ``anvil mock`` (or the
operator's sandbox named by ``--upstream``) and drives every approved tool: surface, fidelity,
confirmation gate, error mapping, read retry, mutation retry guard, key forwarding; then proves every
declared effect contract (inverse, compensation, draft, lookup) by reading the state back. Writes
``selftest.report.json`` at the bundle root (bound to the bundle hash) and prints one line per check
and a summary ending ``PASSED — ...`` or ``FAILED — ...``; ``--json`` prints the report instead. A
progress line per operation goes to stderr; ``--operations``, ``--time-cap`` and SIGINT/SIGTERM give a
partial record marked ``incomplete`` (:mod:`anvil.cli.lane_scope`), which ``anvil status`` never counts
as fresh; ``--startup-timeout`` bounds the mock's start.

``--upstream`` must name a loopback host unless ``--allow-remote-sandbox`` is given: selftest performs
real writes (and their undo), so it is never pointed at a production API. Upstream credentials are
taken from the bundle's ``ANVIL_<PROFILE>_*`` variables when set; otherwise the served gateway gets a
placeholder (the mock checks none).

Exit status: 0 when it passes (no fail and at least one pass) or has nothing to prove (the bundle
approves no operation: ``SKIPPED — ...`` says how to approve one, and no process is started), 1 when it
fails, 2 usage, 3 a bundle that cannot be read or a process that cannot be started.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from anvil.cli.lane_scope import add_scope_arguments, scope_from, stopping_on_signals
from anvil.errors import UsageError

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``selftest`` flags to its subparser."""
    parser.add_argument("bundle", metavar="BUNDLE", help="a bundle directory written by `anvil compile`")
    parser.add_argument(
        "--upstream", metavar="URL", help="an operator's sandbox base URL (default: start `anvil mock`)"
    )
    parser.add_argument(
        "--allow-remote-sandbox", action="store_true", help="allow an --upstream that is not on this machine"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--seed", default="0", help="the mock's --seed (default 0)")
    parser.add_argument("--timeout", default="30", help="seconds each call may take")
    add_scope_arguments(parser, startup=True)


def _checked_upstream(url: str | None, allow_remote: bool) -> str | None:
    if url is None:
        return None
    from anvil.serve.mcp.http import is_loopback

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError("cli/usage", f"--upstream expects an http(s) URL, got {url!r}")
    if not allow_remote and not is_loopback(parts.hostname):
        raise UsageError(
            "selftest/remote_upstream",
            f"refusing to selftest against {parts.hostname}: selftest performs real writes",
            hint="Point --upstream at a loopback sandbox, or pass --allow-remote-sandbox for a sandbox you own.",
        )
    return url


def _child_env(environ: dict[str, str]) -> dict[str, str]:
    """The children's environment: everything but ANVIL_* settings, plus the operator's credentials."""
    keep = {"ANVIL_AUTH_PROFILE"}
    settings = {"ANVIL_ENV", "ANVIL_BASE_URL", "ANVIL_LEDGER", "ANVIL_ALLOWED_HOSTS", "ANVIL_AUDIT_FILE"}
    out = {k: v for k, v in environ.items() if not k.startswith("ANVIL_") or k in keep}
    out.update(
        {k: v for k, v in environ.items() if k.startswith("ANVIL_") and k not in settings and "BASE_URL" not in k}
    )
    out.pop("ANVIL_INBOUND_AUTH_MODE", None)
    return out


def run(args: argparse.Namespace) -> int:
    """Run the selftest and print its checks and summary.

    Raises:
        UsageError: a malformed ``--upstream``, ``--seed`` or ``--timeout``; a remote upstream without
            ``--allow-remote-sandbox`` (``selftest/remote_upstream``).
        BundleError: the bundle cannot be read or the record cannot be written.
        ConfigError: a child process does not start.
    """
    import anyio

    from anvil.proof.selftest.lane import SelftestOptions, run_selftest, summary_line

    upstream = _checked_upstream(args.upstream, args.allow_remote_sandbox)
    if not args.seed.isdigit():
        raise UsageError("cli/usage", f"--seed expects a whole number, got {args.seed!r}")
    try:
        timeout = float(args.timeout)
    except ValueError:
        timeout = -1.0
    if not 1 <= timeout <= 600:
        raise UsageError("cli/usage", f"--timeout expects seconds from 1 to 600, got {args.timeout!r}")
    options = SelftestOptions(upstream=upstream, env=_child_env(dict(os.environ)), timeout=timeout, seed=int(args.seed))
    scope = scope_from(args)
    with stopping_on_signals(scope):
        report = anyio.run(lambda: run_selftest(Path(args.bundle), options, scope=scope))
    if args.json:
        print(json.dumps(report.record, indent=2, ensure_ascii=False))
    else:
        for check in report.checks:
            where = f" {check.operation}" if check.operation else ""
            print(f"{check.status.upper():7} {check.id}{where}: {check.detail}")
        incomplete = report.record.get("incomplete")
        if isinstance(incomplete, dict):
            print(f"INCOMPLETE — {incomplete['reason']} (not evidence for `anvil status`)")
        print(summary_line(report), file=sys.stderr if report.verdict == "failed" else sys.stdout)
    return 1 if report.verdict == "failed" else 0
