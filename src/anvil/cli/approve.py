"""``anvil approve MANIFEST OPERATION...``: approve manifest entries by key or glob, keeping the review.

``OPERATION`` is an entry's key (an AIR id as ``anvil init`` writes them, or any key the manifest
uses) or a shell-style glob (``stripe.customers.*``). Each matching entry gets ``state: approved``;
comments and every other line stay as they are (:mod:`anvil.compiler.manifest.approval`). The file
is replaced at once, or not at all. Under each entry it approves, every safety field the entry sets
beyond the classifier's posture (risk, confirmation, retries, idempotency, effect, reversible, side
effect, action, auth, credential hosts) is printed, so the reviewer sees all they approve.

Exit status: 0 approved (or already approved); 2 a pattern names no entry, or the manifest cannot be
read or edited safely (nothing written).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from anvil.errors import UsageError

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``approve`` arguments to its subparser."""
    parser.add_argument("manifest", metavar="MANIFEST", help="the manifest to edit (anvil.yaml)")
    parser.add_argument(
        "operations", metavar="OPERATION", nargs="+", help="entry keys or globs, e.g. payments.refunds.create 'a.b.*'"
    )


def run(args: argparse.Namespace) -> int:
    """Approve the named entries; return the exit status."""
    from anvil.cli.files import write_text_atomically
    from anvil.compiler.manifest.approval import ApprovalError, approve_entries
    from anvil.load.controls import fold_controls

    path = Path(args.manifest)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            "manifest/not_found", f"cannot read the manifest {args.manifest}: {exc}", hint="Pass an anvil.yaml file."
        ) from None
    try:
        approval = approve_entries(text, args.operations)
    except ApprovalError as exc:
        raise UsageError("manifest/not_editable", exc.message, hint=exc.hint) from None
    if approval.approved:
        write_text_atomically(path, approval.text)
    for key in approval.approved:
        print(f"approved {fold_controls(key)}")
        for line in approval.safety.get(key, ()):
            print(f"  sets {line}")
    for key in approval.already:
        print(f"already approved {fold_controls(key)}")
    print(f"{args.manifest}: {len(approval.approved)} approved, {len(approval.already)} already approved.")
    if approval.safety:
        print(
            f"{len(approval.safety)} of the approved entries set safety fields beyond the classifier's posture "
            "(listed under each): check them against the spec."
        )
    return 0
