"""A reviewable first manifest for a spec: every operation keyed by its AIR id, the posture as comments.

``anvil init`` compiles the spec without a manifest (the conservative classifier decides everything)
and writes what it found as ``anvil.yaml``: one entry per operation, keyed by its AIR id, with the
classifier's posture above it as comments (method and path, effect and risk, idempotency and its
carrier, retries, confirmation, auth, and the operation's own host when it is not the service's) and a
``state:`` line a reviewer (or ``anvil approve``) flips. Only the ``state`` is set: every other fact is
the classifier's until a reviewer writes it down.

The spec is untrusted: every string it chose is written as one line (:mod:`anvil.compiler.manifest.yaml_text`),
and the text is read back, by YAML and by the manifest parser, before it is returned: unless every entry
holds exactly what was meant (:func:`check_draft`), :class:`DraftError` is raised and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import yaml

from anvil.air.model import Document, Operation, auth_label, auth_type_label
from anvil.air.servers import operation_server, resolve_server, server_hosts
from anvil.air.write_gate import never_enabled
from anvil.compiler.classify import passthrough_inputs
from anvil.compiler.manifest.proposals import Proposal
from anvil.compiler.manifest.yaml_text import YamlTextError, block_lines, comment, yaml_key, yaml_scalar

__all__ = [
    "APPROVE_CHOICES",
    "PENDING_STATE",
    "PROPOSED_MARK",
    "READ_MARK",
    "ApproveChoice",
    "DraftError",
    "check_draft",
    "draft_manifest",
    "held_passthrough",
    "yaml_key",
]

#: The comment line above every effect block ``--propose-effects`` wrote.
PROPOSED_MARK: Final = "# proposed by anvil init: review before approving"
#: The comment before a commented-out ``side_effect: read`` for a POST that may only read.
READ_MARK: Final = "proposed by anvil init, commented out:"

ApproveChoice = Literal["none", "reads", "all"]
APPROVE_CHOICES: Final[tuple[str, ...]] = ("none", "reads", "all")
#: The state of an entry nobody has approved yet: not served until a reviewer approves it.
PENDING_STATE: Final = "review_required"

_COMMENT_WIDTH: Final = 110


class DraftError(ValueError):
    """The manifest text would not read back as exactly what ``anvil init`` meant to write."""

    code = "manifest/draft_unsafe"


def _one_line(text: str, limit: int = _COMMENT_WIDTH) -> str:
    return comment(text, limit)


def _host(url: str | None) -> str | None:
    hosts = server_hosts([url]) if url else ()
    return hosts[0] if hosts else None


def _server_lines(op: Operation, service_host: str | None) -> list[str]:
    """Where ``op`` is sent when its own server is on another host than the service's, and whether its
    credential goes there (empty when it is the service's host)."""
    own = operation_server(op)
    if own is None:
        return []
    resolved = resolve_server(own)
    if resolved.url is None:
        return [f"server: {own.url} is not served ({resolved.issue})"]
    host = _host(resolved.url)
    if host is None or host == service_host:
        return []
    where = f"not the service's {service_host}" if service_host else "the service has no server"
    lines = [f"server: {resolved.url} (host {host}, {where})"]
    if op.auth.type != "none":
        if host in (op.credential_hosts or ()):
            lines.append(f"credential: sent to {host} (credential_hosts)")
        else:
            lines.append(f"credential: withheld from {host} unless credential_hosts or ANVIL_CREDENTIAL_HOSTS names it")
    return lines


def _posture(op: Operation, service_host: str | None = None) -> list[str]:
    source = op.source_ref
    where = f"{(source.method or '').upper()} {source.path or ''}".strip()
    first = where + (f" (operationId {source.operation_id})" if source.operation_id else "")
    lines = [first]
    if op.display_name or op.description:
        lines.append(op.display_name or op.description)
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
        lines.append(f"auth: {auth_type_label(op.auth.type)}")
    lines += _server_lines(op, service_host)
    if op.deprecated:
        lines.append("deprecated in the spec")
    # Every line holds spec text somewhere (a path, an id, a header or scheme name): each is folded.
    return [_one_line(line, 200) for line in lines]


def held_passthrough(op: Operation) -> tuple[str, ...]:
    """The inputs that pass a query language through unchecked, when the compiler blocks ``op`` for them
    (``query_language_passthrough``) however it is approved: ``--approve`` never approves such an entry."""
    return passthrough_inputs(op) if op.archetype == "query_passthrough" else ()


def _state(op: Operation, approve: ApproveChoice, pages: Mapping[str, str]) -> str:
    if held_passthrough(op):
        return PENDING_STATE
    if approve == "all" or (approve == "reads" and op.is_read and op.id not in pages):
        return "approved"
    return PENDING_STATE


def _passthrough_lines(op: Operation, approve: ApproveChoice) -> list[str]:
    inputs = held_passthrough(op)
    if not inputs:
        return []
    why = f"not approved by --approve {approve}: " if approve != "none" else ""
    return [
        f"{why}input {', '.join(inputs)} passes a query language through unchecked, so the compiler blocks it "
        "however it is approved (query_language_passthrough)",
        "no manifest key accepts it (query_policy is not supported): keep it unapproved, or constrain that input "
        "in the spec (an enum or pattern of the queries you accept) and rerun anvil init",
    ]


def _hint_lines(
    op: Operation,
    proposal: Proposal | None,
    approve: ApproveChoice,
    reads: Mapping[str, str],
    pages: Mapping[str, str],
    ops: Mapping[str, Operation],
) -> list[str]:
    """Comments for the reviewer under an entry: why a query-language passthrough was not approved, a
    commented ``side_effect: read`` for a POST that may only read, why a browser page was not approved,
    and that the write gate never enables a write paired with an undo while it has no idempotency
    carrier. Never a key: each is a comment."""
    lines = _passthrough_lines(op, approve)
    if op.id in pages:
        why = "not approved by --approve reads: " if approve == "reads" else ""
        lines.append(f"{why}a browser page ({pages[op.id]}); approve it only if an agent should fetch it")
    if op.id in reads:
        lines.append(f"{READ_MARK} it may only read ({reads[op.id]}); uncomment to accept:")
        lines.append("side_effect: read")
    never = never_enabled(op)
    if proposal is not None and proposal.effect is not None and never and proposal.idempotency is None:
        lines.append(
            f"the write gate never enables it as compiled, undo or not: {never}; state the upstream's "
            "idempotency key (idempotency:) if it honours one"
        )
    effect = proposal.effect if proposal is not None and proposal.effect is not None else {}
    follow = effect.get("inverse") or effect.get("compensate")
    undo = ops.get(str(follow.get("operation"))) if isinstance(follow, Mapping) else None
    hollow = never_enabled(undo) if undo is not None else None
    if undo is not None and hollow:
        lines.append(f"its undo {undo.id} is a write the write gate never enables as compiled either: {hollow}")
    return [f"    # {_one_line(line, 300)}" for line in lines]


def _proposal_blocks(proposal: Proposal | None) -> dict[str, Any]:
    blocks: dict[str, Any] = {}
    if proposal is not None and proposal.idempotency is not None:
        blocks["idempotency"] = dict(proposal.idempotency)
    if proposal is not None and proposal.effect is not None:
        blocks["effect"] = dict(proposal.effect)
    return blocks


def _proposal_lines(proposal: Proposal | None, blocks: Mapping[str, Any]) -> list[str]:
    lines = [f"    {PROPOSED_MARK}", *block_lines(blocks, 4)] if blocks else []
    if proposal is not None and proposal.effect is None and proposal.reasons:
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
    reads: Mapping[str, str] | None = None,
    pages: Mapping[str, str] | None = None,
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
        reads: why each POST the classifier made a write may only read, by AIR id
            (:func:`anvil.compiler.review_hints.read_hints`): a commented ``side_effect: read`` to accept.
        pages: why each browser page is not data, by AIR id (:func:`anvil.compiler.review_hints.page_hints`):
            ``--approve reads`` leaves it unapproved, saying why. An operation the compiler blocks for a
            query-language passthrough (:func:`held_passthrough`) is never approved, saying why.

    Returns:
        YAML text ending in a newline; every operation keyed by its AIR id.
    """
    service = document.service
    intended: dict[str, Any] = {"service": {"name": service.id}}
    header = [
        f"# anvil.yaml for '{_one_line(service.id, 80)}', written by `anvil init`"
        + (f" from {_one_line(spec_label, 80)}." if spec_label else "."),
        "# Every operation of the spec is listed by its AIR id with the classifier's posture as comments.",
        "# Review each entry: write down what the spec cannot say (idempotency, confirmation, effect:),",
        f"# then approve it (`anvil approve anvil.yaml ID...`, or `state: approved`). '{PENDING_STATE}' is not served.",
    ]
    try:
        header += ["service:", f"  name: {yaml_scalar(service.id)}"]
        if service.display_name and _one_line(service.display_name, 200):
            display = intended["service"]["display_name"] = _one_line(service.display_name, 200)
            header.append(f"  display_name: {yaml_scalar(display)}")
        if schemes:
            listed = ", ".join(f"{name} ({kind})" for name, kind in sorted(schemes.items()))
            header.append("")
            header.append(f"# The spec's security schemes: {_one_line(listed, 300)}.")
            header.append(
                "# Where operations offer several, choose one service-wide (or per entry) with `auth: {scheme: NAME}`."
            )
        if auth_scheme:
            intended["auth"] = {"scheme": auth_scheme}
            header += ["", "auth:", f"  scheme: {yaml_scalar(auth_scheme)}"]
            if auth_override is not None:
                kind, reason = auth_override[0], _one_line(auth_override[1], 300)
                intended["auth"].update({"type": kind, "override": True, "reason": reason})
                header += [f"  type: {yaml_scalar(kind)}", "  override: true", f"  reason: {yaml_scalar(reason)}"]
        body: list[str] = ["", "operations:"]
        comments: list[str] = []
        entries: dict[str, Any] = {}
        operations: Sequence[Operation] = sorted(document.operations, key=lambda op: op.id)
        by_id = {op.id: op for op in operations}
        if not operations:
            body[-1] = "operations: {}"
        service_host = _host(resolve_server(service.servers[0]).url) if service.servers else None
        for op in operations:
            proposal = (proposals or {}).get(op.id)
            blocks = _proposal_blocks(proposal)
            state = _state(op, approve, pages or {})
            entries[op.id] = {"state": state, **blocks}
            body.extend(f"  # {line}" for line in _posture(op, service_host))
            body.append(f"  {yaml_key(op.id)}:")
            body.append(f"    state: {state}")
            body.extend(_proposal_lines(proposal, blocks))
            hints = _hint_lines(op, proposal, approve, reads or {}, pages or {}, by_id)
            comments.extend(hints)
            body.extend(hints)
            body.append("")
    except YamlTextError as exc:
        raise DraftError(f"A name from the spec cannot be written into the manifest: {exc}.") from None
    intended["operations"] = entries
    text = "\n".join(header + body).rstrip("\n") + "\n"
    check_draft(text, intended, comments)
    return text


def check_draft(text: str, intended: Mapping[str, Any], comments: Sequence[str] = ()) -> None:
    """Read ``text`` back as YAML and as a manifest: it must hold exactly ``intended`` (its top-level
    blocks, every operation entry with exactly its keys and values) and nothing the parser refuses;
    each of ``comments`` (a commented-out proposal among them) must be a whole comment line of it.

    Raises:
        DraftError: naming the first difference (an entry that is missing, added or changed).
    """
    from anvil.compiler.manifest.parse import parse_manifest

    written = set(text.splitlines())  # every break YAML honours (NEL, LS, PS) splits here too
    for line in comments:
        if line not in written or not line.lstrip().startswith("#"):
            raise DraftError(f"A comment does not read back as the one line written ({_one_line(line, 80)}).")

    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DraftError(f"The manifest text is not valid YAML: {_one_line(str(exc), 200)}.") from None
    if parsed != intended:
        raise DraftError(f"The manifest text does not read back as written ({_difference(parsed, intended)}).")
    manifest, found = parse_manifest(text, "anvil.yaml")
    errors = [d for d in found if d.severity == "error"]
    if manifest is None or errors:
        problem = f"{errors[0].code}: {_one_line(errors[0].message, 200)}" if errors else "not a manifest"
        raise DraftError(f"The manifest parser refuses the text ({problem}).")
    meant = intended.get("operations") or {}
    read = {entry.key: entry for entry in manifest.operations}
    if list(read) != list(meant):
        raise DraftError("The manifest parser reads other operation entries than were written.")
    for key, entry in read.items():
        want = meant[key]
        stated = {name for name in ("state", "idempotency", "effect") if getattr(entry, name) is not None}
        if entry.state != want.get("state") or stated != set(want):
            raise DraftError(f"The manifest parser reads the entry '{_one_line(key, 80)}' otherwise than written.")


def _difference(parsed: Any, intended: Mapping[str, Any]) -> str:
    if not isinstance(parsed, dict):
        return "its top level is not a mapping"
    for key in sorted(set(parsed) | set(intended), key=str):
        if parsed.get(key) == intended.get(key):
            continue
        got, want = parsed.get(key), intended.get(key)
        if key == "operations" and isinstance(got, dict) and isinstance(want, dict):
            for op_id in [*want, *(k for k in got if k not in want)]:
                if got.get(op_id) != want.get(op_id):
                    state = "missing" if op_id not in got else "added" if op_id not in want else "changed"
                    return f"the entry '{_one_line(str(op_id), 80)}' is {state}"
        return f"'{_one_line(str(key), 40)}' differs"
    return "the text differs"
