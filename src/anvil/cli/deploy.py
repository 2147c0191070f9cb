"""``anvil deploy ledger DIR --project P --database D [--database-mode shared|dedicated] [--location L]
[--ttl-seconds N] [--json | --tfvars]``.

Offline and read-only: durable idempotency evidence for a compiled bundle. It lists every approved write
with its idempotency posture, proves the store contract and every compiler-owned byte fresh against a
projection of the persisted generator inputs, and prints the Firestore coordinates, the Terraform input
(``--tfvars``) and the plan-binding digest. It does not call Cloud Run, Firestore or any other cloud API,
and it never writes the bundle.

Exit status: 0 ok; 1 a refused flag, a missing or malformed bundle, or a contract that is not fresh
(``error[deploy/...]`` on stderr, nothing on stdout); 2 an unknown flag. ``--tfvars`` for a bundle that
needs no store prints ``{}`` and says why on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["register", "run"]

_DESCRIPTION = (
    "Offline deployment evidence for durable idempotency. `anvil deploy ledger` reads a compiled bundle and "
    "prints which writes need the managed Firestore ledger, the exact Terraform inputs and the plan-binding "
    "digest. It does not call Cloud Run, Firestore or any other cloud API."
)
#: Said on stderr when ``--tfvars`` prints ``{}``: stdout stays the JSON a pipeline redirects to a file.
_NO_STORE_TFVARS = (
    "note: no approved write of this bundle has idempotency mode `required`, so it needs no managed ledger "
    "store and Terraform takes no ledger input: {} is the whole of it (merge it as is, or leave it out)."
)


def register(parser: argparse.ArgumentParser) -> None:
    """Add ``deploy`` and its ``ledger`` subcommand."""
    parser.epilog = _DESCRIPTION
    sub = parser.add_subparsers(dest="deploy_command", metavar="SUBCOMMAND", parser_class=type(parser))
    ledger = sub.add_parser(
        "ledger",
        help="durable idempotency: writes, store coordinates, --tfvars and the plan digest (offline)",
        description=_DESCRIPTION,
    )
    ledger.add_argument(
        "bundle", metavar="DIR", help="the bundle directory written by `anvil compile` (or its air.json)"
    )
    ledger.add_argument("--project", metavar="P", help="the GCP project; becomes the expected project of the plan")
    ledger.add_argument("--database", metavar="D", help="the exact Firestore database id, or (default)")
    ledger.add_argument(
        "--database-mode", metavar="MODE", help="shared (default: an existing platform database) or dedicated"
    )
    ledger.add_argument("--location", metavar="L", help="the immutable location of a dedicated database")
    ledger.add_argument("--ttl-seconds", metavar="N", help="completed-result retention, 60..31536000 (default 604800)")
    ledger.add_argument("--json", action="store_true", help="print one machine-readable report")
    ledger.add_argument("--tfvars", action="store_true", help="print only the Terraform input JSON")


def run(args: argparse.Namespace) -> int:
    """Run ``anvil deploy``; return the exit status."""
    from anvil.deploy.options import DeployError, LedgerFlags
    from anvil.deploy.report import plan_ledger

    if getattr(args, "deploy_command", None) != "ledger":
        print("usage: anvil deploy ledger DIR [--project P --database D] [--json | --tfvars]", file=sys.stderr)
        return 2
    flags = LedgerFlags(
        project=args.project,
        database=args.database,
        database_mode=args.database_mode,
        location=args.location,
        ttl_seconds=args.ttl_seconds,
        json=args.json,
        tfvars=args.tfvars,
    )
    try:
        plan = plan_ledger(Path(args.bundle), flags)
    except DeployError as exc:
        print(f"error[{exc.code}]: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 1
    if flags.tfvars:
        if not plan.required:  # stdout stays the JSON a pipeline redirects; the why goes beside it
            print(_NO_STORE_TFVARS, file=sys.stderr)
        sys.stdout.write(json.dumps(plan.tfvars(), indent=2, ensure_ascii=False) + "\n")
    elif flags.json:
        from anvil.proof.status import evidence_summary

        report = plan.to_json()
        # Beyond the original's report: what the proof lanes (original-core §8) say about these exact bytes.
        freshness = plan.inspection.freshness
        report["evidence"] = evidence_summary(freshness.directory, freshness=freshness)
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(plan.text())
    return 0
