"""A reviewable first manifest for a spec: every operation keyed by its AIR id, the posture as comments.

``anvil init`` compiles the spec without a manifest (the conservative classifier decides everything)
and writes what it found as ``anvil.yaml``: one entry per operation, keyed by its AIR id, with the
classifier's posture above it as comments (method and path, effect and risk, idempotency and its
carrier, retries, confirmation, auth) and a ``state:`` line a reviewer (or ``anvil approve``) flips. Only the
``state`` is set: every other fact is the classifier's until a reviewer writes it down.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Final, Literal

import yaml

from anvil.air.model import Document, Operation, auth_label
from anvil.compiler.manifest.proposals import Proposal

__all__ = ["APPROVE_CHOICES", "PENDING_STATE", "PROPOSED_MARK", "ApproveChoice", "draft_manifest", "yaml_key"]

#: The comment line above every effect block ``--propose-effects`` wrote.
PROPOSED_MARK: Final = "# proposed by anvil init: review before approving"

ApproveChoice = Literal["none", "reads", "all"]
APPROVE_CHOICES: Final[tuple[str, ...]] = ("none", "reads", "all")
#: The state of an entry nobody has approved yet: not served until a reviewer approves it.
PENDING_STATE: Final = "review_required"

_PLAIN_KEY: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_SPACE: Final = re.compile(r"\s+")
_COMMENT_WIDTH: Final = 110


def yaml_key(key: str) -> str:
    """``key`` as a YAML mapping key: plain when that reads back as the same string, else JSON-quoted."""
    reserved = key.lower() in {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}
    return key if _PLAIN_KEY.match(key) and not reserved else json.dumps(key, ensure_ascii=False)


def _one_line(text: str, limit: int = _COMMENT_WIDTH) -> str:
    """Spec text fit for one comment line: whitespace folded, cut at ``limit`` characters."""
    folded = _SPACE.sub(" ", text).strip()
    return folded if len(folded) <= limit else folded[: limit - 1].rstrip() + "…"


def _posture(op: Operation) -> list[str]:
    source = op.source_ref
    where = f"{(source.method or '').upper()} {source.path or ''}".strip()
    first = where + (f" (operationId {source.operation_id})" if source.operation_id else "")
    lines = [first]
    if op.display_name or op.description:
        lines.append(_one_line(op.display_name or op.description))
    effect = op.effect
    kind = "read" if op.is_read else f"write ({effect.action})"
    lines.append(f"effect: {kind}, risk {effect.risk}, {'reversible' if effect.reversible else 'irreversible'}")
    idem = op.idempotency
    carrier = f", carrier {idem.mechanism} {idem.key}" if idem.mechanism != "none" and idem.key else ""
    lines.append(f"idempotency: {idem.mode}{carrier}, key {idem.key_derivation}")
    retries = op.retries
    lines.append(f"retries: {retries.mode} (basis {retries.basis}, at most {retries.max_attempts} attempts)")
    confirmation = op.confirmation
    if confirmation.required:
        reason = f": {_one_line(confirmation.reason, 80)}" if confirmation.reason else ""
        lines.append(f"confirmation: required{reason}")
    else:
        lines.append("confirmation: not required")
    if op.auth.type == "composite":
        lines.append(f"auth: {auth_label(op.auth)}, every factor's credential sent on each call")
    elif op.auth.type != "none":
        lines.append(f"auth: {auth_label(op.auth)}")
    if op.deprecated:
        lines.append("deprecated in the spec")
    return lines


def _state(op: Operation, approve: ApproveChoice) -> str:
    if approve == "all" or (approve == "reads" and op.is_read):
        return "approved"
    return PENDING_STATE


def _proposal_lines(proposal: Proposal | None) -> list[str]:
    if proposal is None:
        return []
    blocks: dict[str, object] = {}
    if proposal.idempotency is not None:
        blocks["idempotency"] = dict(proposal.idempotency)
    if proposal.effect is not None:
        blocks["effect"] = dict(proposal.effect)
    lines = []
    if blocks:
        text = yaml.safe_dump(blocks, sort_keys=False, default_flow_style=False, width=1000)
        lines = [f"    {PROPOSED_MARK}", *(f"    {line}" for line in text.splitlines())]
    if proposal.effect is None and proposal.reasons:
        lines.append(f"    # no effect proposed: {_one_line('; '.join(proposal.reasons), 200)}")
    return lines


def draft_manifest(
    document: Document,
    *,
    approve: ApproveChoice = "none",
    spec_label: str = "",
    proposals: Mapping[str, Proposal] | None = None,
    schemes: Mapping[str, str] | None = None,
    auth_scheme: str | None = None,
    auth_override: tuple[str, str] | None = None,
) -> str:
    """The text of a first ``anvil.yaml`` for ``document`` (deterministic: the same input, the same text).

    Args:
        document: the AIR compiled from the spec without a manifest.
        approve: which entries start ``approved``: none, the reads, or all.
        spec_label: how the spec is named in the header comment (a path as the user gave it).
        proposals: proposed effect contracts by AIR id (``--propose-effects``), written under their
            entries behind :data:`PROPOSED_MARK`, or as a comment saying why none was proposed.
        schemes: the spec's security schemes (name -> a short description), listed as a comment so
            a reviewer can choose one with ``auth: {scheme: NAME}``.
        auth_scheme: the scheme to choose service-wide (a top-level ``auth: {scheme: ...}`` block).
        auth_override: ``(type, reason)``: serve the chosen scheme as that auth type, a reviewed
            override (``override: true`` and the reason written beside it), as when an end-user OAuth
            flow's tokens are obtained out of band and sent as a static bearer token.

    Returns:
        YAML text ending in a newline; every operation keyed by its AIR id.
    """
    service = document.service
    header = [
        f"# anvil.yaml for '{service.id}', written by `anvil init`"
        + (f" from {_one_line(spec_label, 80)}." if spec_label else "."),
        "# Every operation of the spec is listed by its AIR id with the classifier's posture as comments.",
        "# Review each entry: write down what the spec cannot say (idempotency, confirmation, effect:),",
        f"# then approve it (`anvil approve anvil.yaml ID...`, or `state: approved`). '{PENDING_STATE}' is not served.",
        "service:",
        f"  name: {yaml_key(service.id)}",
    ]
    if service.display_name:
        header.append(f"  display_name: {json.dumps(_one_line(service.display_name, 200), ensure_ascii=False)}")
    if schemes:
        listed = ", ".join(f"{name} ({kind})" for name, kind in sorted(schemes.items()))
        header.append("")
        header.append(f"# The spec's security schemes: {_one_line(listed, 300)}.")
        header.append(
            "# Where operations offer several, choose one service-wide (or per entry) with `auth: {scheme: NAME}`."
        )
    if auth_scheme:
        header += ["", "auth:", f"  scheme: {yaml_key(auth_scheme)}"]
        if auth_override is not None:
            kind, reason = auth_override
            header += [
                f"  type: {yaml_key(kind)}",
                "  override: true",
                f"  reason: {json.dumps(_one_line(reason, 300), ensure_ascii=False)}",
            ]
    body: list[str] = ["", "operations:"]
    operations: Sequence[Operation] = sorted(document.operations, key=lambda op: op.id)
    if not operations:
        body[-1] = "operations: {}"
    for op in operations:
        body.extend(f"  # {line}" for line in _posture(op))
        body.append(f"  {yaml_key(op.id)}:")
        body.append(f"    state: {_state(op, approve)}")
        body.extend(_proposal_lines((proposals or {}).get(op.id)))
        body.append("")
    return "\n".join(header + body).rstrip("\n") + "\n"
