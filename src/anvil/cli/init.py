"""``anvil init SPEC --service ID --out MANIFEST [--spec-root DIR] [--approve none|reads|all] [--force]``.

Writes a first, reviewable ``anvil.yaml`` for a spec: every operation keyed by its AIR id, the
classifier's posture as comments, ``state: approved`` only as ``--approve`` says (default: none), so a
reviewer starts from what the compiler already knows instead of a blank file
(:func:`anvil.compiler.manifest.draft.draft_manifest`).

Exit status: 0 written; 1 the spec could not be read (its diagnostics on stderr, nothing written);
2 usage (a bad service id, an existing ``--out`` without ``--force``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from anvil.errors import UsageError

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``init`` arguments to its subparser."""
    from anvil.compiler.manifest.draft import APPROVE_CHOICES

    parser.add_argument("spec", metavar="SPEC", help="the OpenAPI 3.x or Swagger 2.0 file (YAML or JSON)")
    parser.add_argument("--service", metavar="ID", required=True, help="the service id (a lowercase slug)")
    parser.add_argument("--out", metavar="MANIFEST", required=True, help="the manifest file to write (anvil.yaml)")
    parser.add_argument("--spec-root", metavar="DIR", help="the folder relative $refs may reach (default: the spec's)")
    parser.add_argument(
        "--approve",
        choices=APPROVE_CHOICES,
        default="none",
        help="which entries start approved: none (default), the reads, or all (review them anyway)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --out file")


def run(args: argparse.Namespace) -> int:
    """Write the manifest; return the exit status."""
    from anvil.air.codec import SERVICE_ID_PATTERN
    from anvil.cli.compile import max_file_bytes, render_diagnostics
    from anvil.cli.files import write_text_atomically
    from anvil.compiler import build
    from anvil.compiler.manifest.draft import draft_manifest
    from anvil.diagnostics import has_errors

    if not SERVICE_ID_PATTERN.match(args.service):
        raise UsageError(
            "cli/invalid_service_id",
            f"--service {args.service!r} is not a valid service id",
            hint="Use a lowercase slug of 1-64 characters: letters, digits, '-' and '_', starting with a letter.",
        )
    out = Path(args.out)
    if out.exists() and not args.force:
        raise UsageError(
            "cli/usage",
            f"{args.out} exists; anvil init never changes a manifest someone may have reviewed",
            hint="Pass --force to replace it, or --out another file.",
        )
    result = build(
        Path(args.spec),
        service_id=args.service,
        source_uri=args.spec,
        spec_root=Path(args.spec_root) if args.spec_root else None,
        max_file_bytes=max_file_bytes(os.environ),
    )
    load_errors = [d for d in result.diagnostics if d.code.startswith("source/") and d.severity == "error"]
    if load_errors or (not result.document.operations and has_errors(result.diagnostics)):
        print(render_diagnostics(result.diagnostics, colour=False), file=sys.stderr)
        print(f"Not written: {args.spec} could not be compiled; {args.out} is unchanged.", file=sys.stderr)
        return 1
    text = draft_manifest(result.document, approve=args.approve, spec_label=args.spec)
    write_text_atomically(out, text)
    ops = result.document.operations
    approved = sum(1 for line in text.splitlines() if line.strip() == "state: approved")
    print(
        f"Wrote {args.out}: {len(ops)} operations ({approved} approved) of service '{args.service}'. "
        f"Review it, approve with `anvil approve {args.out} ID...`, then "
        f"`anvil compile {args.spec} --manifest {args.out} --out DIR`."
    )
    return 0
