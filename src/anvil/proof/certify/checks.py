"""The static checks of ``anvil certify`` (original-core §8.1), each a pure function of the bundle.

A check reads the bundle's bytes and AIR and answers ``(passed, detail)``; nothing is written and
nothing leaves the process. :data:`CHECKS` lists every check in record order with its id and gate: the
ids are a public contract. Checks of the original that judge what this project does not build (async
contracts, eval and conformance suites shipped inside the bundle) are not listed; the effect-contract
checks (ADR-0030) are ours. The token budgets (original-core §3.7) are judged on the tool list ``anvil
serve`` publishes, with the compiler's estimator.

Disclosure (original-core §5.15 and §8.1): the surface at rest is judged in the mode ``anvil serve``'s
``auto`` picks (flat when the flat list fits the surface budget, else searched: the meta-tools and the
pinned tools); the four ``ladder_*`` checks judge the lanes ``--disclosure laddered`` serves, as the
original asserts them (over its plan at the surface budget); ours add that every approved operation is
reachable (in exactly one lane or listed at rest; and found first by its exact tool name through the
real search index), that no meta-tool or card name is an operation tool's, and that the proxies refuse
what a direct call refuses. These serve the bundle in-process (:func:`~anvil.proof.disclosure.served_surfaces`:
its own fleet, over an upstream that records every request and answers none), once per certify run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, Final, Literal

from anvil._dataclass import dataclass
from anvil.air.carrier import resolve_carrier
from anvil.air.effects import effect_class_of, follow_up_refs, reversible_for_class
from anvil.air.enums import KEYED_MODES
from anvil.air.inputs import safety_keys
from anvil.air.model import Auth, Document, Operation, auth_label, credential_parts
from anvil.air.surface import surface_of
from anvil.bundle.hash import bundle_files
from anvil.compiler.effects import check_effects
from anvil.compiler.manifest.auth import auth_coherence_issues
from anvil.compiler.validate import validate_operations
from anvil.proof.certify import disclosure
from anvil.proof.disclosure import Surfaces, served_surfaces
from anvil.proof.generated import generated_bytes_agree
from anvil.proof.mock.routes import route_table
from anvil.proof.mock.schema import SchemaSet
from anvil.proof.skill import read_reference

__all__ = ["CHECKS", "Bundle", "Check", "Gate", "Verdict"]

Gate = Literal["contract", "semantic", "safety", "runtime"]
Verdict = tuple[bool, str]
_CORE: Final = "contract.certification-core.static."
_CONFIRM_RISKS: Final = frozenset({"high", "financial", "destructive"})
_UNEXECUTABLE_AUTH: Final = frozenset({"oauth2_authorization_code", "mtls", "custom_header"})
_MAX_NAMES: Final = 6


@dataclass(frozen=True, slots=True)
class Bundle:
    """What the checks read: the directory, its AIR and its hashed files (path -> bytes)."""

    directory: Path
    doc: Document
    files: dict[str, bytes]
    _surfaces: list[Surfaces] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def open(cls, directory: Path, doc: Document) -> Bundle:
        """Read every hashed file of ``directory`` once.

        Raises:
            BundleError: ``bundle/invalid`` for a missing directory or a symlink in it.
        """
        return cls(directory, doc, bundle_files(directory))

    def surfaces(self) -> Surfaces:
        """The bundle served in-process in every disclosure mode (built on first use, then kept)."""
        if not self._surfaces:
            self._surfaces.append(served_surfaces(self.doc))
        return self._surfaces[0]

    @property
    def approved(self) -> list[Operation]:
        """The approved operations, in AIR order."""
        return [op for op in self.doc.operations if op.is_approved]

    def json(self, path: str) -> Any:
        """The parsed JSON file at ``path``, or None when absent or not JSON."""
        data = self.files.get(path)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class Check:
    """One check: its public id, its gate and the function that judges the bundle."""

    id: str
    gate: Gate
    run: Callable[[Bundle], Verdict]


def _names(items: list[str] | set[str]) -> str:
    ordered = sorted(items)
    shown = ", ".join(ordered[:_MAX_NAMES])
    return shown + (f" and {len(ordered) - _MAX_NAMES} more" if len(ordered) > _MAX_NAMES else "")


def _verdict(bad: list[str], ok: str, what: str) -> Verdict:
    return (True, ok) if not bad else (False, f"{what}: {_names(bad)}")


# --- contract ---------------------------------------------------------------------------------------


def _air_valid(bundle: Bundle) -> Verdict:
    # read_bundle already loaded air.json as AIR; re-judging validation must be a fixed point.
    ops, diagnostics = validate_operations(bundle.doc.operations)
    approved = {op.id for op in bundle.approved}
    # A blocked operation keeps its error finding (that is why it is blocked); an approved one may not.
    errors = sorted({d.operation or "" for d in diagnostics if d.severity == "error" and d.operation in approved})
    changed = [a.id for a, b in zip(bundle.doc.operations, ops, strict=True) if a != b]
    if errors or changed:
        return False, f"air.json does not re-validate: {_names(errors + changed)}"
    return True, f"air.json loads as AIR and re-validates ({len(ops)} operation(s))"


def _surface_views(bundle: Bundle) -> dict[str, set[str] | None]:
    """AIR ids each surface exposes as callable (None: the surface file is missing or unreadable)."""
    tools, runtime = bundle.json("tools.json"), bundle.json("runtime/operations.manifest.json")
    by_tool = {op.mcp.tool_name: op.id for op in bundle.doc.operations}
    views: dict[str, set[str] | None] = {}
    views["tools.json"] = (
        {by_tool.get(str(t.get("name")), f"?{t.get('name')}") for t in tools.get("tools", []) if isinstance(t, dict)}
        if isinstance(tools, dict)
        else None
    )
    views["runtime/operations.manifest.json"] = (
        {str(o.get("id")) for o in runtime.get("operations", []) if isinstance(o, dict)}
        if isinstance(runtime, dict)
        else None
    )
    catalog = bundle.json("catalog.json")
    views["catalog.json"] = (
        {
            str(o.get("id"))
            for o in catalog.get("operations", [])
            if isinstance(o, dict) and o.get("state") == "approved"
        }
        if isinstance(catalog, dict)
        else None
    )
    harness = bundle.json("harness.json")
    views["harness.json"] = (
        {str(o.get("id")) for o in harness.get("operations", []) if isinstance(o, dict)}
        if isinstance(harness, dict)
        else None
    )
    reference = read_reference(bundle.directory)
    views["skill/reference/operations.md"] = (
        {claim.operation_id for claim in reference.approved} if reference is not None else None
    )
    return views


def _surfaces_agree(bundle: Bundle) -> Verdict:
    approved = {op.id for op in bundle.approved}
    problems = []
    for surface, ids in _surface_views(bundle).items():
        if ids is None:
            problems.append(f"{surface} is missing or unreadable")
            continue
        if ids - approved:
            problems.append(f"{surface} exposes {_names(ids - approved)} not approved in AIR")
        if approved - ids:
            problems.append(f"{surface} lacks {_names(approved - ids)}")
    if problems:
        return False, "; ".join(problems)
    return (
        True,
        f"AIR, tools.json, the runtime manifest, catalog, harness and skill reference expose the same "
        f"{len(approved)} operation(s)",
    )


def _generated_bytes(bundle: Bundle) -> Verdict:
    agreement = generated_bytes_agree(bundle.directory)
    return agreement.ok, agreement.detail()


def _no_unapproved_on_surface(bundle: Bundle) -> Verdict:
    unapproved = {op.id for op in bundle.doc.operations if not op.is_approved}
    leaks = []
    for surface, ids in _surface_views(bundle).items():
        leaks += [f"{op_id} ({surface})" for op_id in sorted((ids or set()) & unapproved)]
    reference = read_reference(bundle.directory)
    pending = set(reference.pending) if reference is not None else set()
    approved_cli = {op.cli.command for op in bundle.approved}
    leaks += [f"{cli} (listed as pending but approved)" for cli in sorted(pending & approved_cli)]
    return _verdict(leaks, f"no unapproved operation on any surface ({len(unapproved)} unapproved)", "leaked")


def _surface_matches_contract(bundle: Bundle) -> Verdict:
    tools = bundle.json("tools.json")
    listed = (
        {str(t.get("name")): t for t in tools.get("tools", []) if isinstance(t, dict)}
        if isinstance(tools, dict)
        else {}
    )
    bad = []
    surface = surface_of(bundle.doc)
    for op in bundle.approved:
        entry = listed.get(op.mcp.tool_name)
        if entry is None:
            bad.append(f"{op.id} (no tool)")
            continue
        want = surface.definition(op)
        bad += [
            f"{op.id} ({key})"
            for key in ("annotations", "_meta", "inputSchema", "description")
            if entry.get(key) != want[key]
        ]
        required = set((entry.get("inputSchema") or {}).get("required") or ())
        keys = safety_keys(op)
        if op.confirmation.required and keys.confirm is not None and keys.confirm not in required:
            bad.append(f"{op.id} (confirm input not required)")
    return _verdict(
        bad, f"{len(bundle.approved)} tool(s) state exactly the AIR posture", "tool surface differs from AIR"
    )


def _no_blocked_approved(bundle: Bundle) -> Verdict:
    bad = [op.id for op in bundle.approved if any(note.startswith("Blocked") for note in op.review_notes)]
    return _verdict(bad, "no approved operation carries a blocking review note", "approved but blocked")


def _carriers_supported(bundle: Bundle) -> Verdict:
    keyed = [op for op in bundle.approved if op.idempotency.mode in KEYED_MODES]
    bad = [f"{op.id} ({resolve_carrier(op).issue})" for op in keyed if not resolve_carrier(op).ok]
    return _verdict(bad, f"{len(keyed)} keyed operation(s) resolve an exact key carrier", "no carrier")


# --- safety -----------------------------------------------------------------------------------------


def _confirmation_required(bundle: Bundle) -> Verdict:
    bad = []
    for op in bundle.approved:
        if op.is_read:
            continue
        unsafe = op.idempotency.mode == "none" or not op.effect.reversible or op.effect.risk in _CONFIRM_RISKS
        if unsafe and not op.confirmation.required:
            bad.append(op.id)
    return _verdict(bad, "every unsafe mutation requires confirmation", "unsafe mutation without confirmation")


def _retry_basis_proven(bundle: Bundle) -> Verdict:
    bad = [op.id for op in bundle.approved if op.retries.mode == "safe" and op.retries.basis == "unproven"]
    return _verdict(bad, "no operation retries on an unproven basis", "safe retry on basis unproven")


def _no_retry_without_idempotency(bundle: Bundle) -> Verdict:
    bad = [
        op.id
        for op in bundle.approved
        if not op.is_read
        and op.retries.mode == "safe"
        and op.retries.max_attempts > 1
        and op.idempotency.mode == "none"
    ]
    return _verdict(bad, "no mutation retries without idempotency", "retried mutation without idempotency")


def _secret_handling(bundle: Bundle) -> Verdict:
    ops = [*bundle.approved]
    bad = [op.id for op in ops if (op.auth.type == "none") != (op.auth.secret_source == "none")]
    service = bundle.doc.service.auth
    if (service.type == "none") != (service.secret_source == "none"):
        bad.append(f"service {bundle.doc.service.id}")
    return _verdict(bad, "auth type none exactly where the secret source is none", "incoherent secret source")


def _unexecutable(auth: Auth) -> bool:
    """True when the runtime cannot send ``auth``'s credentials: an unexecutable type, or a composite
    without factors or with a factor of such a type (or a nested composite)."""
    parts = credential_parts(auth)
    return not parts or any(part.type in _UNEXECUTABLE_AUTH or part.type == "composite" for part in parts)


def _auth_runtime_supported(bundle: Bundle) -> Verdict:
    bad = [f"{op.id} ({auth_label(op.auth)})" for op in bundle.approved if _unexecutable(op.auth)]
    return _verdict(bad, "every approved operation's auth is executable by this runtime", "unsupported auth")


def _auth_authority(bundle: Bundle) -> Verdict:
    bad = [f"{op.id} ({auth_coherence_issues(op.auth)[0]})" for op in bundle.approved if auth_coherence_issues(op.auth)]
    return _verdict(bad, "every approved operation's auth authority is coherent", "incoherent auth")


def _effect_contracts_valid(bundle: Bundle) -> Verdict:
    rechecked, diagnostics = check_effects(bundle.doc)
    errors = sorted({f"{d.operation} ({d.code})" for d in diagnostics if d.severity == "error"})
    changed = [a.id for a, b in zip(bundle.doc.operations, rechecked.operations, strict=True) if a != b]
    declared = sum(1 for op in bundle.doc.operations if op.effect.declares_contract)
    if errors or changed:
        return False, f"effect contracts do not re-check: {_names(errors + changed)}"
    return True, f"{declared} declared effect contract(s) re-check with no error"


def _effect_class_coherent(bundle: Bundle) -> Verdict:
    bad = []
    for op in bundle.approved:
        effect, klass = op.effect, effect_class_of(op)
        if (klass == "read") != op.is_read:
            bad.append(f"{op.id} (class {klass} on a {effect.kind})")
        if effect.class_ is not None and effect.reversible != reversible_for_class(klass):
            bad.append(f"{op.id} (reversible={effect.reversible} for class {klass})")
        if klass == "reversible" and effect.inverse is None:
            bad.append(f"{op.id} (reversible without an inverse)")
        if klass == "compensable" and effect.compensate is None:
            bad.append(f"{op.id} (compensable without a compensation)")
        if klass in ("irreversible", "compensable", "read") and effect.inverse is not None:
            bad.append(f"{op.id} ({klass} with an inverse)")
        if klass == "read" and any(True for _ in follow_up_refs(effect)):
            bad.append(f"{op.id} (a read with follow-ups)")
    return _verdict(bad, "every effect class agrees with its kind, flag and follow-ups", "incoherent effect class")


def _effect_follow_ups_callable(bundle: Bundle) -> Verdict:
    approved = {op.id for op in bundle.approved}
    bad = [
        f"{op.id} {ref.place} -> {ref.operation}"
        for op in bundle.approved
        for ref in follow_up_refs(op.effect)
        if ref.operation not in approved
    ]
    total = sum(1 for op in bundle.approved for _ in follow_up_refs(op.effect))
    return _verdict(bad, f"{total} declared follow-up(s) name approved operations", "follow-up not callable")


def _effect_surfaces_agree(bundle: Bundle) -> Verdict:
    harness = bundle.json("harness.json")
    entries = (
        {str(o.get("id")): o for o in harness.get("operations", []) if isinstance(o, dict)}
        if isinstance(harness, dict)
        else {}
    )
    reference = read_reference(bundle.directory)
    bad = []
    for op in bundle.approved:
        entry = entries.get(op.id)
        if entry is None or entry.get("effect_class") != effect_class_of(op):
            bad.append(f"{op.id} (harness.json effect_class)")
        claim = reference.claim(op.id) if reference is not None else None
        wants_undo = op.effect.kind == "mutation" and op.effect.declares_contract
        if claim is None or (claim.undo is not None) != wants_undo:
            bad.append(f"{op.id} (reference Undo: line)")
    return _verdict(bad, "harness.json and the skill reference state every declared effect", "effect surface differs")


# --- semantic ---------------------------------------------------------------------------------------


def _descriptions_present(bundle: Bundle) -> Verdict:
    bad = [op.id for op in bundle.approved if not op.description.strip()]
    return _verdict(bad, "every approved operation has a description", "no description")


def _sibling_descriptions(bundle: Bundle) -> Verdict:
    seen: dict[tuple[str | None, str], str] = {}
    bad = []
    for op in bundle.approved:
        key = (op.capability_id, " ".join(op.description.lower().split()))
        if key[1] and key in seen:
            bad.append(f"{seen[key]} = {op.id}")
        seen.setdefault(key, op.id)
    return _verdict(bad, "sibling operations are described distinctly", "same description")


def _intent_routable(bundle: Bundle) -> Verdict:
    bad = []
    for attribute in ("tool", "cli"):
        names: dict[str, str] = {}
        for op in bundle.approved:
            name = op.mcp.tool_name if attribute == "tool" else op.cli.command
            if name in names:
                bad.append(f"{names[name]} and {op.id} share {attribute} {name!r}")
            names.setdefault(name, op.id)
    bad += [
        f"{op.id} (nothing to route by)"
        for op in bundle.approved
        if not (op.description.strip() or op.skill.intent_examples)
    ]
    return _verdict(bad, "every approved operation has a unique tool name and command to route to", "not routable")


def _no_blocked_disposition(bundle: Bundle) -> Verdict:
    blocked = {cap.id for cap in bundle.doc.capabilities if cap.state == "blocked"}
    bad = [f"{op.id} (capability {op.capability_id})" for op in bundle.approved if op.capability_id in blocked]
    return _verdict(bad, "no approved operation sits in a blocked capability", "blocked disposition")


# --- runtime ----------------------------------------------------------------------------------------


def _mocks_consistent(bundle: Bundle) -> Verdict:
    # The lanes' upstream is `anvil mock`, generated from this AIR: every approved operation must be a
    # route of it, and a request to the operation's own template must reach that route (not a shadow).
    routes = route_table(bundle.doc, SchemaSet(bundle.doc.schemas))
    by_op = {route.op.id: route for route in routes}
    bad = []
    for op in bundle.approved:
        route = by_op.get(op.id)
        if route is None:
            bad.append(f"{op.id} (no mock route)")
            continue
        sample = route.sample_path()
        first = next((r for r in routes if r.method == route.method and r.match(sample) is not None), None)
        if first is not None and first.op.id != op.id and first.template != route.template:
            bad.append(f"{op.id} (shadowed by {first.op.id})")
    return _verdict(bad, f"anvil mock serves all {len(bundle.approved)} approved operation(s)", "mock gap")


def _deploy_present(bundle: Bundle) -> Verdict:
    contract = bundle.json("deploy/idempotency-store.json")
    if "deploy/idempotency-store.json" not in bundle.files:
        return False, "deploy/idempotency-store.json is missing"
    if not isinstance(contract, dict):
        return False, "deploy/idempotency-store.json is not a JSON object"
    return True, "deploy/idempotency-store.json is present"


#: Every certification check, in record order. Ids are a public contract (original-core §8.1).
CHECKS: Final[tuple[Check, ...]] = (
    Check("contract.air-valid", "contract", _air_valid),
    Check("contract.surfaces-agree", "contract", _surfaces_agree),
    Check("contract.generated-bytes-agree", "contract", _generated_bytes),
    Check(_CORE + "no_unapproved_on_surface", "contract", _no_unapproved_on_surface),
    Check(_CORE + "surface_matches_contract", "contract", _surface_matches_contract),
    Check(_CORE + "no_blocked_approved", "contract", _no_blocked_approved),
    Check(_CORE + "idempotency_carriers_supported", "contract", _carriers_supported),
    Check(_CORE + "tool_surface_within_disclosure_budget", "contract", disclosure.tool_surface_within_budget),
    Check(_CORE + "surface_at_rest_within_disclosure_budget", "contract", disclosure.surface_at_rest_within_budget),
    Check(_CORE + "ladder_preserves_approved_surface", "contract", disclosure.ladder_preserves_approved_surface),
    Check(_CORE + "ladder_entry_names_unique", "contract", disclosure.ladder_entry_names_unique),
    Check(_CORE + "ladder_reduces_surface", "contract", disclosure.ladder_reduces_surface),
    Check(_CORE + "ladder_mode_justified", "contract", disclosure.ladder_mode_justified),
    Check(_CORE + "approved_operations_reachable", "contract", disclosure.approved_operations_reachable),
    Check(_CORE + "discovery_names_distinct_from_tools", "contract", disclosure.discovery_names_distinct),
    Check(_CORE + "proxies_refuse_as_direct_calls", "contract", disclosure.proxies_refuse_as_direct_calls),
    Check("safety.confirmation-required", "safety", _confirmation_required),
    Check("safety.retry-basis-proven", "safety", _retry_basis_proven),
    Check("safety.no-retry-without-idempotency", "safety", _no_retry_without_idempotency),
    Check("safety.secret-handling-coherent", "safety", _secret_handling),
    Check("safety.auth-runtime-supported", "safety", _auth_runtime_supported),
    Check("safety.auth-authority-coherent", "safety", _auth_authority),
    Check("safety.effect-contracts-valid", "safety", _effect_contracts_valid),
    Check("safety.effect-class-coherent", "safety", _effect_class_coherent),
    Check("safety.effect-follow-ups-callable", "safety", _effect_follow_ups_callable),
    Check("safety.effect-surfaces-agree", "safety", _effect_surfaces_agree),
    Check("semantic.descriptions-present", "semantic", _descriptions_present),
    Check("semantic.sibling-descriptions-distinct", "semantic", _sibling_descriptions),
    Check("semantic.intent-routable", "semantic", _intent_routable),
    Check("semantic.no-blocked-disposition", "semantic", _no_blocked_disposition),
    Check("runtime.mocks-consistent", "runtime", _mocks_consistent),
    Check("runtime.deploy-present", "runtime", _deploy_present),
)
