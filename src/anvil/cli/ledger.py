"""``anvil ledger init [URI]``, ``anvil ledger inspect REFERENCE``, ``anvil ledger resolve REFERENCE``.

The operator's reviewed tools for the durable idempotency ledger, on every backend:

* ``init`` creates the store's schema if absent (the SQLite file mode 0600 and its table, the PostgreSQL
  table of the namespace; Firestore needs none); idempotent.
* ``inspect`` prints the row a sanitized reference names (``details.ledger_reference`` of a refusal):
  status, fingerprint, operation_id, trace_id, started_at, derived_key (the key the reservation sent
  upstream if its call carried no caller key: :func:`anvil.runtime.keys.reservation_key`, the one to look
  for in the upstream's records; a caller's own key is never stored), response_status, expires_at and
  retain_until; the stored result only with ``--show-result``.
* ``resolve`` reconciles a quarantined reservation (seed 001 §4): ``--not-committed`` (the upstream
  has proven it did not apply the write: the row is deleted and the key may run again) or
  ``--committed --status N --result-file F`` (it did: the row is completed with exactly that answer,
  which retries then replay). The row is re-read; it must still be ``in_progress`` with
  ``--fingerprint`` (copied from ``inspect``), and the write is conditioned on that read's version.
  Elapsed time is never accepted as proof. Each resolution appends one audit line to
  ``ANVIL_AUDIT_FILE`` (mode 0600) when set, else to stderr.

``--ledger URI`` defaults to ``ANVIL_LEDGER``: the gateway's own URI works as it is. The table is the one
the gateway uses: the namespace the URI names, else the one of ``--bundle DIR`` (the bundle or fleet
folder ``anvil serve`` was given, read as it reads it); with neither, ``inspect`` and ``resolve`` use the
table the reference names (only one a namespace derives) and ``init`` refuses, since it could only
guess. A reference of the wrong shape, backend or namespace is refused before the store is touched,
with a hint saying which flag fixes it. Exit status: 0 done, 2 usage, 3 refused (a coded error; nothing
changed), 4 ``inspect`` found no row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from anvil.errors import UsageError

if TYPE_CHECKING:
    from anvil.ledger.base import Ledger, LedgerRow

__all__ = ["register", "run"]

_MAX_RESULT_FILE: Final = 4 * 1024 * 1024
_NOT_FOUND_EXIT: Final = 4


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``ledger`` subcommands to its subparser."""
    actions = parser.add_subparsers(dest="ledger_action", metavar="ACTION", parser_class=type(parser))
    bundle_help = "the bundle (or fleet folder) the gateway serves: its namespace picks the table"
    init = actions.add_parser("init", help="create the ledger's schema if absent (idempotent)")
    init.add_argument("uri", metavar="URI", nargs="?", help="the ledger URI (default ANVIL_LEDGER)")
    init.add_argument("--bundle", metavar="DIR", help=bundle_help)
    inspect = actions.add_parser("inspect", help="show the row a ledger reference names")
    inspect.add_argument("reference", metavar="REFERENCE", help="<backend>/<table>/<64 hex>, from ledger_reference")
    inspect.add_argument("--ledger", metavar="URI", help="the ledger URI (default ANVIL_LEDGER)")
    inspect.add_argument("--bundle", metavar="DIR", help=bundle_help)
    inspect.add_argument("--show-result", action="store_true", help="also print the stored result")
    inspect.add_argument("--json", action="store_true", help="print one JSON object")
    resolve = actions.add_parser("resolve", help="reconcile a quarantined reservation")
    resolve.add_argument("reference", metavar="REFERENCE", help="<backend>/<table>/<64 hex>, from ledger_reference")
    resolve.add_argument("--ledger", metavar="URI", help="the ledger URI (default ANVIL_LEDGER)")
    resolve.add_argument("--bundle", metavar="DIR", help=bundle_help)
    resolve.add_argument("--fingerprint", metavar="HEX", help="the row's fingerprint, as inspect shows it")
    outcome = resolve.add_mutually_exclusive_group()
    outcome.add_argument("--not-committed", action="store_true", help="the upstream proved it did not apply it")
    outcome.add_argument(
        "--committed", action="store_true", help="the upstream applied it (with --status, --result-file)"
    )
    resolve.add_argument("--status", metavar="N", type=int, help="the upstream's 2xx status (with --committed)")
    resolve.add_argument("--result-file", metavar="F", help="the JSON answer to replay (with --committed)")
    resolve.add_argument("--json", action="store_true", help="print one JSON object")


def _uri(flag: str | None) -> str:
    uri = flag or os.environ.get("ANVIL_LEDGER") or ""
    if not uri:
        raise UsageError("cli/usage", "No ledger URI: pass --ledger URI or set ANVIL_LEDGER.")
    return uri


def _bundle_namespace(folder: str) -> str | None:
    """The namespace ``anvil serve FOLDER`` derives its table from: the first bundle's, as serve takes it.

    Raises:
        BundleError: not a bundle or a folder of bundles.
    """
    from anvil.bundle.read import ledger_namespace, read_bundle
    from anvil.serve.fleet import discover_bundles

    first = discover_bundles([Path(folder)])[0]
    return ledger_namespace(first.path, read_bundle(first.path))


def _open(uri: str, *, bundle: str | None, reference: str | None = None) -> Ledger:
    """The ledger ``uri`` names, on the table the gateway uses (see the module docstring).

    Raises:
        UsageError: ``init`` without a namespace from the URI or ``--bundle``.
        ConfigError: a malformed URI.
        BundleError: ``--bundle`` names no bundle.
    """
    from anvil.ledger.base import LEDGER_TABLE, LedgerOptions
    from anvil.ledger.registry import open_ledger

    if bundle is not None:
        return open_ledger(uri, options=LedgerOptions(namespace=_bundle_namespace(bundle)))
    ledger = open_ledger(uri)
    if ledger.namespace is not None or not ledger.durable:
        return ledger  # the URI names the namespace, as it does for the gateway (or no store to pick)
    if reference is None:
        raise UsageError(
            "cli/usage",
            "Which table? The URI names no namespace, and the gateway derives its table from its bundle's.",
            hint="Pass --bundle DIR (the bundle `anvil serve` serves), or add ?namespace=NS to the URI.",
        )
    parts = reference.split("/")
    if len(parts) == 3 and LEDGER_TABLE.match(parts[1]) and parts[1] != ledger.table:
        return open_ledger(uri, options=LedgerOptions(table=parts[1]))  # the row's own table
    return ledger  # anything else is refused by the reference check, before the store is touched


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _shown(row: LedgerRow, *, show_result: bool) -> dict[str, Any]:
    from anvil.runtime.keys import reservation_key

    shown: dict[str, Any] = {
        "status": row.status,
        "fingerprint": row.fingerprint,
        "operation_id": row.operation_id,
        "trace_id": row.trace_id,
        "started_at": _iso(row.started_at),
        "derived_key": None if row.started_at is None else reservation_key(row.fingerprint, row.started_at),
        "response_status": row.response_status,
        "expires_at": _iso(row.expires_at),
        "retain_until": _iso(row.retain_until),
    }
    if show_result:
        shown["result"] = None if row.result_json is None else json.loads(row.result_json)
    return shown


def _print(shown: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(shown, ensure_ascii=False, sort_keys=False))
        return
    for name, value in shown.items():
        text = json.dumps(value, ensure_ascii=False) if name == "result" else ("-" if value is None else value)
        print(f"{name}: {text}")


def _result(path: str) -> Any:
    file = Path(path)
    try:
        if not file.is_file():
            raise UsageError("cli/usage", "--result-file must name a regular file.")
        if file.stat().st_size > _MAX_RESULT_FILE:
            raise UsageError("cli/usage", f"--result-file is larger than {_MAX_RESULT_FILE} bytes.")
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError("cli/usage", "--result-file must hold one UTF-8 JSON document.") from exc


def _audit(line: dict[str, Any]) -> None:
    text = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
    target = os.environ.get("ANVIL_AUDIT_FILE") or "-"
    if target == "-":
        print(text, file=sys.stderr, flush=True)
        return
    from anvil.runtime.audit import FileAuditSink

    sink = FileAuditSink(Path(target))
    try:
        sink.write(text)
    finally:
        sink.close()


async def _init(ledger: Ledger) -> int:
    try:
        created = await ledger.initialize()
        ready = await ledger.check_readiness()
    finally:
        await ledger.close()
    if created:
        print(f"created a new ledger: {ledger.describe()}")
    print(
        f"ledger ready: {ledger.scheme}/{ledger.table}"
        if ready.ready
        else f"ledger initialized, not ready: {ready.code}"
    )
    return 0 if ready.ready else 3


async def _inspect(args: argparse.Namespace) -> int:
    ledger = _open(_uri(args.ledger), bundle=args.bundle, reference=args.reference)
    try:
        row = await ledger.inspect(args.reference)
    finally:
        await ledger.close()
    if row is None:
        print(f"no ledger row at {args.reference}", file=sys.stderr)
        return _NOT_FOUND_EXIT
    _print(_shown(row, show_result=args.show_result), as_json=args.json)
    return 0


def _check_resolve(args: argparse.Namespace) -> None:
    if not (args.not_committed or args.committed):
        raise UsageError("cli/usage", "resolve needs --not-committed or --committed --status N --result-file F.")
    if not args.fingerprint:
        raise UsageError("cli/usage", "resolve needs --fingerprint (copy it from `anvil ledger inspect`).")
    if args.committed and (args.status is None or args.result_file is None):
        raise UsageError("cli/usage", "--committed needs --status N and --result-file F.")
    if args.committed and not 200 <= args.status <= 299:  # only a success is replayed; checked before any read
        raise UsageError("cli/usage", f"--committed needs the upstream's 2xx status, not {args.status}.")
    if args.not_committed and (args.status is not None or args.result_file is not None):
        raise UsageError("cli/usage", "--not-committed takes no --status or --result-file.")


async def _resolve(args: argparse.Namespace) -> int:
    _check_resolve(args)
    result = _result(args.result_file) if args.committed else None
    ledger = _open(_uri(args.ledger), bundle=args.bundle, reference=args.reference)
    ledger.document_of(args.reference)  # refuse a foreign or malformed reference before connecting
    try:
        before = await ledger.resolve(
            args.reference,
            fingerprint=args.fingerprint,
            committed=args.committed,
            result=result,
            status=args.status if args.status is not None else 200,
        )
    finally:
        await ledger.close()
    resolution = "committed" if args.committed else "not_committed"
    assert before is not None
    _audit(
        {
            "time": _iso(datetime.now(tz=UTC).timestamp()),
            "event": "ledger_resolve",
            "resolution": resolution,
            "ledger_reference": args.reference,
            "operation": before.operation_id,
            "trace_id": before.trace_id,
            "fingerprint": before.fingerprint,
            "reserved_at": _iso(before.started_at),
            "response_status": args.status if args.committed else None,
            "operator": os.environ.get("USER") or None,
        }
    )
    shown = {"resolved": resolution, "ledger_reference": args.reference}
    _print(shown, as_json=args.json)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``anvil ledger ACTION``.

    Raises:
        UsageError: no action, no ledger URI, ``init`` without a namespace, or flags that do not fit together.
        LedgerError: a refused reference or row, or an unreachable store (nothing changed).
        ConfigError: a malformed ledger URI.
        BundleError: ``--bundle`` names no bundle.
    """
    import anyio

    action = getattr(args, "ledger_action", None)
    if action == "init":
        return anyio.run(_init, _open(_uri(args.uri), bundle=args.bundle))
    if action == "inspect":
        return anyio.run(_inspect, args)
    if action == "resolve":
        return anyio.run(_resolve, args)
    raise UsageError("cli/usage", "anvil ledger needs an action: init, inspect or resolve.")
