"""``anvil inspect BUNDLE [--json] [--state S] [--class C]``: the operation catalog of a compiled bundle.

One row per operation: its AIR id, state, effect class, risk, idempotency mode and carrier,
confirmation, auth (a composite with its factors: ``composite (client_id + secret + plaid_version)``),
retries and declared undo (inverse, compensation, or none; ``(never enabled)`` beside the undo of a
write the write gate can never enable as compiled, ``neverEnabled`` in JSON: it has no idempotency
carrier, :func:`anvil.air.write_gate.never_enabled`; ``(undo never enabled)``, ``undoNeverEnabled``, when
the undo is itself such a write), so a reviewer sees what the compiler made
of every operation before approving more. An operation sent to its own server on another host than
the service's shows that host, and whether its credential goes there (``credential_hosts`` names it)
or is withheld; the table grows a HOST column when any does. ``--state`` and ``--class`` filter (each
may be repeated); ``--json`` prints ``{"service", "operations": [...], "disclosure": {...}}`` with the
same facts.

The disclosure (what ``anvil serve`` lists at rest, measured by serving the bundle in-process with an
upstream that answers nothing: :func:`anvil.proof.disclosure.served_surfaces`): the mode ``--disclosure
auto`` picks, the surface budget, the flat list's o200k_base tokens counted whole, the tokens at rest
when searched and when laddered, and the lane count. JSON keys: ``auto``, ``surfaceBudgetTokens``,
``flatTools``, ``flatTokens``, ``searchTokens``, ``ladderedTokens`` (null when a lane card would collide
with a tool), ``lanes``, ``estimator``.

Exit status: 0 listed (possibly nothing after filtering); 3 the bundle cannot be read.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["catalog_row", "register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``inspect`` arguments to its subparser."""
    from anvil.air.enums import STATES

    parser.add_argument("bundle", metavar="BUNDLE", help="the compiled bundle directory (or its air.json)")
    parser.add_argument("--json", action="store_true", help="print the catalog as JSON")
    parser.add_argument("--state", action="append", choices=STATES, help="only operations in this state (repeatable)")
    parser.add_argument(
        "--class", dest="effect_class", action="append", metavar="CLASS", help="only this effect class (repeatable)"
    )


def _own_host(op: Any, service_host: str | None) -> str | None:
    """The host of ``op``'s own server when it is not the service's, else None."""
    from anvil.air.servers import operation_server, resolve_server, server_hosts

    own = operation_server(op)
    url = resolve_server(own).url if own is not None else None
    hosts = server_hosts([url]) if url else ()
    return hosts[0] if hosts and hosts[0] != service_host else None


def catalog_row(
    op: Any, service_host: str | None = None, operations: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One operation's catalog facts (JSON-ready); ``service_host`` is the service's server host, which an
    operation's own server is compared with (``host`` and ``credential`` are set only when they differ);
    ``operations`` (by AIR id) are where its undo is found, to say whether the gate can enable it."""
    from anvil.air.effects import effect_class_of
    from anvil.air.model import auth_label
    from anvil.air.write_gate import never_enabled, undo_never_enabled

    effect = op.effect
    undo = "inverse" if effect.inverse is not None else "compensate" if effect.compensate is not None else "none"
    idem = op.idempotency
    return {
        "operationId": op.id,
        "tool": op.mcp.tool_name,
        "state": op.state,
        "class": effect_class_of(op),
        "risk": effect.risk,
        "idempotency": idem.mode,
        "carrier": f"{idem.mechanism}:{idem.key}" if idem.mechanism != "none" and idem.key else None,
        "confirmation": op.confirmation.required,
        "auth": auth_label(op.auth),
        "retries": op.retries.max_attempts if op.retries.mode != "none" else 0,
        "undo": undo,
        "lookup": effect.lookup is not None,
        "draft": effect.draft is not None,
        "neverEnabled": never_enabled(op) is not None,
        "undoNeverEnabled": undo_never_enabled(op, operations or {}) is not None,
        **_host_facts(op, service_host),
    }


def _host_facts(op: Any, service_host: str | None) -> dict[str, Any]:
    host = _own_host(op, service_host)
    if host is None:
        return {}
    consented = host in (op.credential_hosts or ())
    credential = "none" if op.auth.type == "none" else "sent" if consented else "withheld"
    return {"host": host, "credential": credential}


#: Beside the undo of a write the write gate can never enable as compiled.
_NEVER_MARK = "(never enabled)"
#: Beside an undo that is itself a write the write gate can never enable as compiled.
_UNDO_NEVER_MARK = "(undo never enabled)"


def _text(service: str, rows: list[dict[str, Any]], total: int) -> str:
    header = ("OPERATION", "STATE", "CLASS", "RISK", "IDEMPOTENCY", "CONFIRM", "AUTH", "RETRIES", "UNDO")
    table = [header] + [
        (
            row["operationId"],
            row["state"],
            row["class"],
            row["risk"],
            row["idempotency"] + (f" ({row['carrier']})" if row["carrier"] else ""),
            "yes" if row["confirmation"] else "no",
            row["auth"],
            str(row["retries"]),
            row["undo"]
            + (", lookup" if row["lookup"] else "")
            + (", draft" if row["draft"] else "")
            + (f" {_NEVER_MARK}" if row["neverEnabled"] and row["undo"] != "none" else "")
            + (f" {_UNDO_NEVER_MARK}" if row["undoNeverEnabled"] else ""),
        )
        for row in rows
    ]
    if any("host" in row for row in rows):
        table = [(*table[0], "HOST")] + [
            (*line, f"{row['host']} (credential {row['credential']})" if "host" in row else "")
            for line, row in zip(table[1:], rows, strict=True)
        ]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in table]
    lines.append(f"{service}: {len(rows)} of {total} operations shown.")
    never = sum(1 for row in rows if row["neverEnabled"] and row["undo"] != "none")
    if never:
        lines.append(
            f"{never} write{'s' if never != 1 else ''} with an undo marked {_NEVER_MARK}: the write gate never "
            "enables them as compiled (no idempotency carrier, so a retry would repeat the effect); "
            "`anvil status` names it first among their blockers."
        )
    hollow = sum(1 for row in rows if row["undoNeverEnabled"])
    if hollow:
        lines.append(
            f"{hollow} undo{'s' if hollow != 1 else ''} marked {_UNDO_NEVER_MARK}: the undo is itself a write the "
            "write gate never enables as compiled (no idempotency carrier)."
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the catalog.

    Raises:
        BundleError: ``bundle/invalid`` when the bundle cannot be read.
    """
    from anvil.bundle.read import read_bundle

    path = Path(args.bundle)
    doc = read_bundle(path.parent if path.name == "air.json" else path)
    from anvil.air.servers import resolve_server, server_hosts

    servers = doc.service.servers
    home = server_hosts([resolve_server(servers[0]).url or ""]) if servers else ()
    ops = {op.id: op for op in doc.operations}
    rows = [catalog_row(op, home[0] if home else None, ops) for op in sorted(doc.operations, key=lambda op: op.id)]
    if args.state:
        rows = [row for row in rows if row["state"] in args.state]
    if args.effect_class:
        rows = [row for row in rows if row["class"] in args.effect_class]
    from anvil.proof.disclosure import served_surfaces

    surfaces = served_surfaces(doc)
    if args.json:
        shown = {"service": doc.service.id, "operations": rows, "disclosure": surfaces.to_json()}
        print(json.dumps(shown, indent=2, ensure_ascii=False))
    else:
        print(_text(doc.service.id, rows, len(doc.operations)))
        print(surfaces.line())
    return 0
