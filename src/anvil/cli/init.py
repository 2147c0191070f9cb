"""``anvil init SPEC --service ID --out MANIFEST [--spec-root DIR] [--approve none|reads|all] [--propose-effects]``
``[--auth-scheme NAME [--auth-type TYPE --auth-reason TEXT]] [--force]``.

Writes a first, reviewable ``anvil.yaml`` for a spec: every operation keyed by its AIR id, the
classifier's posture as comments, ``state: approved`` only as ``--approve`` says (default: none), so a
reviewer starts from what the compiler already knows instead of a blank file
(:func:`anvil.compiler.manifest.draft.draft_manifest`). With ``--propose-effects`` each create whose
item can be deleted (or cancelled) gets a proposed ``effect:`` block marked for review
(:mod:`anvil.compiler.manifest.proposals`); a proposal the compiler's ``effect/*`` checks refuse is
left out with a comment saying why. A write whose spec declares an idempotency key header (or a JSON
body field named ``idempotency_key``) gets a proposed ``idempotency:`` block too (left out when the
compiler cannot carry the key).
``--auth-scheme`` chooses one of the spec's security schemes service-wide; with ``--auth-type`` and
``--auth-reason`` it is served as that type, a reviewed override (a spec whose only scheme is an
end-user OAuth flow, Slack's or Netlify's, is otherwise served nowhere); without it, init ends with a
note when the spec's auth keeps operations blocked however they are approved, naming the choices.
``--force`` replaces an existing file; the folder of ``--out`` is created when it does not exist yet.

A POST whose summary (or operationId) says it reads (get, list, search, retrieve, check, calculate...)
and that describes no state change gets a commented ``side_effect: read`` with the reason, for the
reviewer to accept by uncommenting it (:mod:`anvil.compiler.review_hints`); the classifier itself
stays conservative. A read answering only HTML (an OAuth authorize page) is a browser page:
``--approve reads`` leaves it unapproved, with a comment. An operation the compiler blocks however it
is approved, for an input passing a query language through unchecked (a JQL string), is never
approved, with a comment saying what a reviewer can do. A create paired with an undo that the write
gate can never enable as compiled (it has no idempotency carrier) is said so under its entry and in
the closing lines.

The spec is untrusted: a path or operationId holding a control character is refused at load
(``source/control_character``), every name it chose is written as one line, and the text is read back
before it is written: unless every entry holds exactly what was meant, nothing is written
(``manifest/draft_unsafe``).

Exit status: 0 written; 1 the spec could not be read or drafted safely (its diagnostics on stderr,
nothing written); 2 usage (a bad service id, an existing ``--out`` without ``--force``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil.errors import UsageError

if TYPE_CHECKING:
    from anvil.air.model import Document
    from anvil.compiler.manifest.proposals import Proposal
    from anvil.diagnostics import Diagnostic

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``init`` arguments to its subparser."""
    from anvil.air.enums import AUTH_TYPES
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
    parser.add_argument(
        "--propose-effects",
        action="store_true",
        help="propose an effect: block (inverse or compensation, lookup) for each create whose item can be "
        "deleted, and an idempotency: block for each write that declares a key header or body field",
    )
    parser.add_argument(
        "--auth-scheme",
        metavar="NAME",
        help="choose one of the spec's security schemes service-wide (writes auth: {scheme: NAME})",
    )
    parser.add_argument(
        "--auth-type",
        metavar="TYPE",
        choices=("bearer", *(kind for kind in AUTH_TYPES if kind != "composite")),
        help="with --auth-scheme and --auth-reason: serve that scheme as TYPE, a reviewed override (an end-user "
        "OAuth flow's tokens obtained out of band: bearer)",
    )
    parser.add_argument("--auth-reason", metavar="TEXT", help="why the --auth-type override is sound (written down)")
    parser.add_argument("--force", action="store_true", help="replace an existing --out file")


def _source(args: argparse.Namespace) -> dict[str, Any]:
    """The spec as loaded (OpenAPI-3-shaped), for what AIR does not keep: schemes, summaries, media types."""
    from anvil.cli.compile import max_file_bytes
    from anvil.load.files import DEFAULT_MAX_FILE_BYTES
    from anvil.load.spec import load_spec

    limit = max_file_bytes(os.environ)
    loaded = load_spec(
        Path(args.spec),
        root=Path(args.spec_root) if args.spec_root else None,
        max_file_bytes=DEFAULT_MAX_FILE_BYTES if limit is None else limit,
    )
    return loaded.document if isinstance(loaded.document, dict) else {}


def _security_schemes(document: dict[str, Any]) -> dict[str, str]:
    """The spec's declared security schemes: name -> ``type`` (and flows or scheme), for the comment."""
    components = document.get("components")
    declared = components.get("securitySchemes") if isinstance(components, dict) else None
    out: dict[str, str] = {}
    for name, scheme in (declared or {}).items() if isinstance(declared, dict) else ():
        if not isinstance(scheme, dict):
            continue
        kind = str(scheme.get("type", "unknown"))
        detail = scheme.get("scheme") or (
            ", ".join(sorted(scheme["flows"])) if isinstance(scheme.get("flows"), dict) else ""
        )
        out[str(name)] = f"{kind} {detail}".strip()
    return out


def _auth_override(args: argparse.Namespace) -> tuple[str, str] | None:
    """``(type, reason)`` of a reviewed auth override, or None; both flags, and a scheme, or neither."""
    kind, reason = args.auth_type, (args.auth_reason or "").strip()
    if kind is None and not args.auth_reason:
        return None
    if kind is None or not reason or not args.auth_scheme:
        raise UsageError(
            "cli/usage",
            "--auth-type and --auth-reason go together, with --auth-scheme: an override is a reviewed statement",
            hint="Pass --auth-scheme NAME --auth-type TYPE --auth-reason 'why it is sound'.",
        )
    return kind, reason


def _checked_proposals(document: Document, args: argparse.Namespace) -> dict[str, Proposal]:
    """Proposals the compiler's effect checks accept; a refused one keeps the refusal as its reason."""
    from anvil.cli.compile import max_file_bytes
    from anvil.compiler import build
    from anvil.compiler.manifest.draft import draft_manifest
    from anvil.compiler.manifest.proposals import Proposal, propose_effects, propose_idempotency

    proposals = propose_effects(document)
    for op_id, block in propose_idempotency(document).items():
        proposals[op_id] = replace(proposals.get(op_id, Proposal(op_id)), idempotency=block)
    with tempfile.TemporaryDirectory(prefix="anvil-init-") as folder:
        trial = Path(folder) / "anvil.yaml"
        draft = draft_manifest(
            document,
            approve="all",
            proposals=proposals,
            auth_scheme=args.auth_scheme,
            auth_override=_auth_override(args),
        )
        trial.write_text(draft, encoding="utf-8")
        checked = build(
            Path(args.spec),
            manifest=trial,
            service_id=args.service,
            source_uri=args.spec,
            spec_root=Path(args.spec_root) if args.spec_root else None,
            max_file_bytes=max_file_bytes(os.environ),
        )
    refused: dict[str, list[str]] = {}
    unkeyed: set[str] = set()
    for found in checked.diagnostics:
        if found.severity != "error" or found.operation not in proposals:
            continue
        if found.code.startswith("effect/"):
            refused.setdefault(found.operation, []).append(f"{found.code}: {found.message}")
        elif "idempotency" in found.code:  # the key header cannot be carried: no idempotency proposed
            unkeyed.add(found.operation)
    out: dict[str, Proposal] = {}
    for op_id, proposal in proposals.items():
        if op_id in refused:
            proposal = replace(proposal, effect=None, reasons=tuple(refused[op_id]))
        if op_id in unkeyed:
            proposal = replace(proposal, idempotency=None)
        out[op_id] = proposal
    return out


def _auth_hint(
    document: Document, diagnostics: Sequence[Diagnostic], schemes: dict[str, str], args: argparse.Namespace
) -> str | None:
    """A line saying how many operations their auth keeps blocked however they are approved, and the choice
    that would serve them; None when auth blocks none (or a scheme was chosen already)."""
    from anvil.load.controls import fold_controls

    if args.auth_scheme is not None or not schemes:
        return None
    blocked = {op.id for op in document.operations if op.state == "blocked"}
    codes: dict[str, str] = {}
    for found in diagnostics:
        if found.operation in blocked and found.code.startswith("auth/"):
            codes.setdefault(found.operation, found.code)
    if not codes:
        return None
    counts = Counter(codes.values())
    why = ", ".join(f"{code} {count}" for code, count in sorted(counts.items()))
    offered = fold_controls(", ".join(f"{name} ({kind})" for name, kind in sorted(schemes.items())))
    return (
        f"Note: {len(codes)} of {len(document.operations)} operations stay blocked by their auth however they are "
        f"approved ({why}). Choose a scheme service-wide: rerun with --force --auth-scheme NAME, one of {offered}; "
        "for an end-user OAuth flow whose tokens you obtain out of band, add --auth-type bearer --auth-reason TEXT."
    )


def _shown(ids: Sequence[str], limit: int = 3) -> str:
    head = ", ".join(ids[:limit])
    return head + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _report_proposals(document: Document, proposals: dict[str, Proposal]) -> None:
    """Print what ``--propose-effects`` proposed, and the paired writes the write gate never enables."""
    from anvil.air.write_gate import never_enabled

    made = [op_id for op_id, proposal in proposals.items() if proposal.effect is not None]
    creates = sum(1 for proposal in proposals.values() if proposal.effect is not None or proposal.reasons)
    keyed = sum(1 for proposal in proposals.values() if proposal.idempotency is not None)
    compensations = sum(1 for op_id in made if "compensate" in (proposals[op_id].effect or {}))
    how = f", {compensations} of them a compensation" if compensations else ""
    print(f"Proposed {len(made)} effect contracts for {creates} creates (each marked for review){how}.")
    if keyed:
        print(f"Proposed the idempotency key (a header or body field) of {keyed} writes (each marked for review).")
    ops = {op.id: op for op in document.operations}
    never = [
        op_id
        for op_id in made
        if proposals[op_id].idempotency is None and op_id in ops and never_enabled(ops[op_id]) is not None
    ]
    if never:
        print(
            f"{len(never)} of them the write gate never enables as compiled, undo or not: they have no idempotency "
            f"carrier ({_shown(never)}); state the upstream's key (idempotency:) where it honours one."
        )


def run(args: argparse.Namespace) -> int:
    """Write the manifest; return the exit status."""
    from anvil.air.codec import SERVICE_ID_PATTERN
    from anvil.cli.compile import max_file_bytes, render_diagnostics
    from anvil.cli.files import write_text_atomically
    from anvil.compiler import build
    from anvil.compiler.manifest.draft import DraftError, draft_manifest, held_passthrough
    from anvil.compiler.review_hints import page_hints, read_hints, source_facts
    from anvil.diagnostics import has_errors
    from anvil.load.controls import fold_controls

    if not SERVICE_ID_PATTERN.match(args.service):
        raise UsageError(
            "cli/invalid_service_id",
            f"--service {args.service!r} is not a valid service id",
            hint="Use a lowercase slug of 1-64 characters: letters, digits, '-' and '_', starting with a letter.",
        )
    override = _auth_override(args)
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
    source = _source(args)
    schemes = _security_schemes(source)
    if args.auth_scheme is not None and args.auth_scheme not in schemes:
        offered = fold_controls(", ".join(sorted(schemes))) or "none"
        raise UsageError(
            "cli/usage",
            f"--auth-scheme {args.auth_scheme!a} is not a security scheme of the spec",
            hint=f"Choose one the spec declares: {offered}.",
        )
    facts = source_facts(source)
    reads = read_hints(result.document.operations, facts)
    pages = page_hints(result.document.operations, facts)
    proposals = None
    try:
        if args.propose_effects:
            proposals = _checked_proposals(result.document, args)
        text = draft_manifest(
            result.document,
            approve=args.approve,
            spec_label=args.spec,
            proposals=proposals,
            schemes=schemes,
            auth_scheme=args.auth_scheme,
            auth_override=override,
            reads=reads,
            pages=pages,
        )
    except DraftError as exc:  # the text would not read back as what was meant: never written
        print(f"error[{exc.code}]: {exc}", file=sys.stderr)
        print(f"Not written: {args.spec} cannot be drafted safely; {args.out} is unchanged.", file=sys.stderr)
        return 1
    try:
        out.parent.mkdir(parents=True, exist_ok=True)  # a folder that does not exist yet is made
    except OSError as exc:
        raise UsageError(
            "cli/usage",
            f"cannot create the folder of {args.out}: {exc.strerror or exc}",
            hint="Pass --out a path whose folder can be created.",
        ) from None
    write_text_atomically(out, text)
    ops = result.document.operations
    approved = sum(1 for line in text.splitlines() if line.strip() == "state: approved")
    if proposals is not None:
        _report_proposals(result.document, proposals)
    if reads:
        many = len(reads) != 1
        print(
            f"Proposed side_effect: read, commented out, for {len(reads)} POST{'s' if many else ''} whose summary "
            f"says {'they read' if many else 'it reads'} (uncomment each you accept)."
        )
    held = sorted(op.id for op in ops if held_passthrough(op))
    if held:
        what = "operations pass" if len(held) != 1 else "operation passes"
        left = " (left unapproved)" if args.approve != "none" else ""
        print(
            f"{len(held)} {what} a query language through, which the compiler blocks however approved{left}: "
            f"{_shown(held)}."
        )
    if pages:
        left = " (left unapproved)" if args.approve == "reads" else ""
        what = "operations are browser pages" if len(pages) != 1 else "operation is a browser page"
        print(f"{len(pages)} {what} answering HTML, not data{left}: {_shown(sorted(pages))}.")
    print(
        f"Wrote {args.out}: {len(ops)} operations ({approved} approved) of service '{args.service}'. "
        f"Review it, approve with `anvil approve {args.out} ID...`, then "
        f"`anvil compile {args.spec} --manifest {args.out} --out DIR`."
    )
    hint = _auth_hint(result.document, result.diagnostics, schemes, args)
    if hint is not None:
        print(hint)
    return 0
