"""``anvil status``: what the evidence on disk says about a bundle, and what still gates each write.

Seed 001 §3: before enabling a write, require fresh certify, selftest, conformance and simulation
evidence for the same bundle digest; a fresh store contract; ``/readyz`` HTTP 200; and an
operator-reviewed upstream idempotency carrier. :func:`evidence_summary` answers everything of that
which can be known offline (it never opens a socket) and lists the rest as ``remaining``:

* ``lanes``: each record's verdict (``fresh|stale|failed|incomplete|skipped|missing|corrupt``,
  :mod:`anvil.proof.records`; ``skipped``: the bundle approves no operation, so the lane had nothing to prove);
* ``generatedBytes`` and ``storeContract``: whether every compiler-owned byte, and the store contract
  in particular, equals a fresh projection of the bundle's AIR and generator inputs;
* ``deployLedger``: whether ``anvil deploy ledger`` has what it needs (fresh bytes and contract);
* ``liveReadiness``: always ``unverified`` (only the deployed runtime's ``/readyz`` can prove it);
* ``writes``: per approved mutation, its idempotency posture (:func:`anvil.air.inputs.key_posture`,
  the object ``anvil deploy ledger`` prints for the same write), whether it needs the durable store,
  the ``blockers`` (offline facts that forbid enabling it; first, flagged ``neverEnabled``, the one
  no evidence lifts: no idempotency carrier, :func:`anvil.air.write_gate.never_enabled`; then, for a
  lane that failed, what failed in its record, this write's own failures first
  (:func:`anvil.proof.blockers.write_blockers`);
  ``undoNeverEnabled`` says when the undo it declares is such a write), the
  ``remaining`` checks no offline tool can make, and its ``state``: ``blocked`` while a blocker
  holds, ``ready_for_review`` when nothing blocks it but something remains, ``enabled`` only when
  nothing remains. ``/readyz`` and the operator's review of the upstream's key handling always
  remain offline, so ``writesEnabled`` (the writes nothing remains for) is empty here and
  ``writesReadyForReview`` lists the writes that may be enabled once every ``remaining`` item holds;
* ``nextAction``: one next safe action.

The lane verdicts are recomputed from each record's own checks and cells
(:func:`anvil.proof.records.judge_record`): editing a record's ``passed`` or ``summary`` makes it
``corrupt``, not fresh. ``anvil deploy ledger --json`` includes the same object under ``evidence``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from anvil._dataclass import dataclass
from anvil.air.carrier import resolve_carrier
from anvil.air.effects import effect_class_of
from anvil.air.inputs import key_posture
from anvil.air.model import Document, Operation
from anvil.air.write_gate import never_enabled, undo_never_enabled
from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.bundle.store import store_operation_ids
from anvil.deploy.freshness import Freshness, check_freshness, inspect_store
from anvil.proof.blockers import LaneFailure, lane_failures, write_blockers
from anvil.proof.generated import agreement_of
from anvil.proof.records import LANES, judge_records

__all__ = ["NEVER_SUFFIX", "StoreContractState", "WriteState", "evidence_summary", "store_contract_state"]

#: ``blocked``: an offline fact forbids it; ``ready_for_review``: nothing blocks it, but checks remain
#: (always ``/readyz``); ``enabled``: nothing remains.
WriteState = Literal["blocked", "ready_for_review", "enabled"]

#: Said after a blocker no evidence lifts.
NEVER_SUFFIX: Final = (
    "it can never be enabled as compiled, whatever the evidence: state the upstream's idempotency key in the "
    "manifest if it honours one"
)
_READYZ: Final = "/readyz answers HTTP 200 from the deployed runtime (offline status cannot see it)"
_LANE_COMMANDS: Final[dict[str, str]] = {
    "certify": "anvil certify",
    "selftest": "anvil selftest",
    "conformance": "anvil conformance",
    "simulate": "anvil simulate",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreContractState:
    """Whether ``deploy/idempotency-store.json`` is what the compiler would write for this AIR now."""

    state: Literal["fresh", "stale", "missing", "corrupt"]
    required: bool
    operation_ids: tuple[str, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``anvil status`` prints."""
        return {
            "state": self.state,
            "required": self.required,
            "operationIds": list(self.operation_ids),
            "reason": self.reason,
        }


def store_contract_state(freshness: Freshness, doc: Document) -> StoreContractState:
    """The store contract's state as ``anvil deploy ledger`` judges it (:func:`inspect_store`)."""
    ids = tuple(store_operation_ids(doc))
    inspection = inspect_store(freshness)
    return StoreContractState(state=inspection.state, required=bool(ids), operation_ids=ids, reason=inspection.detail)


def _carrier(op: Operation) -> str | None:
    binding = resolve_carrier(op).binding
    if binding is None:
        return None
    if binding.mechanism == "body" and binding.pointer:
        return "body field " + ".".join(binding.pointer)
    return f"{binding.mechanism} {binding.key}"


def _write(
    op: Operation,
    common: list[str],
    durable_ids: set[str],
    ops: Mapping[str, Operation],
    failures: Mapping[str, list[LaneFailure]],
) -> dict[str, Any]:
    mode = op.idempotency.mode
    remaining = [_READYZ]
    carrier = _carrier(op)
    never = never_enabled(op)
    # The blocker no evidence lifts comes first: running the lanes will not enable this write.
    blockers = [f"{never} ({NEVER_SUFFIX})"] if never else []
    # Each failed lane names what failed: this write's own checks first, then the rest by count.
    blockers += write_blockers(op.id, failures)
    blockers += common
    if mode in ("required", "key_supported") and carrier is not None:
        remaining.append(f"an operator has reviewed that the upstream honours the key in {carrier}")
    if op.id in durable_ids:
        remaining.append("ANVIL_LEDGER names the durable store the contract describes")
    state: WriteState = "blocked" if blockers else "ready_for_review" if remaining else "enabled"
    return {
        "operationId": op.id,
        "tool": op.mcp.tool_name,
        "effectClass": effect_class_of(op),
        "idempotency": key_posture(op),
        "carrier": carrier,
        "durableStoreRequired": op.id in durable_ids,
        "retrySafe": op.retries.mode == "safe",
        "confirmationRequired": op.confirmation.required,
        "state": state,
        "neverEnabled": never is not None,
        "undoNeverEnabled": undo_never_enabled(op, ops),
        "blockers": blockers,
        "remaining": remaining,
    }


def _next_action(lanes: dict[str, Any], bytes_ok: bool, store: StoreContractState, directory: Path) -> str:
    if not bytes_ok:
        return "recompile the bundle with `anvil compile`: its generated bytes are not what the compiler writes"
    if store.state != "fresh":
        return f"recompile the bundle with `anvil compile`: the store contract is {store.state}"
    for lane in LANES:
        if lanes[lane].state == "skipped":
            return str(lanes[lane].reason)  # nothing to prove: it says how to approve an operation
        if lanes[lane].state != "fresh":
            return f"run `{_LANE_COMMANDS[lane]} {directory}` ({lanes[lane].reason})"
    return (
        "deploy, then require /readyz HTTP 200 and an operator's review of each write's upstream key handling "
        "before enabling it (release)"
    )


def _deploy_ledger(bytes_ok: bool, store: StoreContractState) -> dict[str, Any]:
    """What ``anvil deploy ledger`` needs before it prints coordinates: fresh generated bytes and contract."""
    missing = []
    if not bytes_ok:
        missing.append("every compiler-owned byte equal to a fresh projection")
    if store.state != "fresh":
        missing.append(f"a fresh store contract (it is {store.state})")
    return {
        "ready": not missing,
        "missing": missing,
        "durableStoreRequired": store.required,
        "detail": "deploy ledger can bind this bundle" if not missing else "deploy ledger will refuse this bundle",
    }


def evidence_summary(directory: Path, *, freshness: Freshness | None = None) -> dict[str, Any]:
    """Everything offline evidence says about the bundle in ``directory`` (see the module docstring).

    Args:
        directory: The bundle directory.
        freshness: The bundle's :func:`~anvil.deploy.freshness.check_freshness` result when the caller
            already has it (``anvil deploy ledger`` does): the bundle is then not read and re-projected twice.

    Returns:
        ``{bundleHash, serviceId, lanes{lane: verdict}, generatedBytes{state, detail},
        storeContract{state, required, operationIds, reason}, deployLedger{ready, missing,
        durableStoreRequired, detail}, liveReadiness{state: "unverified"},
        writes[...], writesReadyForReview[...], writesEnabled[...], nextAction}``.

    Raises:
        BundleError: ``bundle/invalid`` when the directory or its AIR cannot be read.
    """
    if freshness is None or freshness.document is None or freshness.bundle_hash is None:
        freshness = check_freshness(directory)
    doc = freshness.document if freshness.document is not None else read_bundle(directory)
    digest = freshness.bundle_hash if freshness.bundle_hash is not None else bundle_hash(directory)
    lanes = judge_records(directory, current_hash=digest)
    agreement = agreement_of(freshness)
    store = store_contract_state(freshness, doc)
    ops = {op.id: op for op in doc.operations}
    capabilities = {op.id: op.capability_id for op in doc.operations}
    failures = {
        lane: lane_failures(directory, lane, ops, capabilities)
        for lane, verdict in lanes.items()
        if verdict.state == "failed"
    }
    common = [
        f"{lane} evidence is {verdict.state}"
        for lane, verdict in lanes.items()
        if verdict.state not in ("fresh", "failed")
    ]
    if not agreement.ok:
        common.append("the generated bytes are not fresh: " + agreement.detail())
    if store.state != "fresh":
        common.append(f"the store contract is {store.state}")
    durable = set(store.operation_ids)
    writes = [_write(op, common, durable, ops, failures) for op in doc.operations if op.is_approved and not op.is_read]
    return {
        "bundleHash": digest,
        "serviceId": doc.service.id,
        "lanes": {lane: verdict.to_json() for lane, verdict in lanes.items()},
        "generatedBytes": {"state": "fresh" if agreement.ok else "stale", "detail": agreement.detail()},
        "storeContract": store.to_json(),
        "deployLedger": _deploy_ledger(agreement.ok, store),
        "liveReadiness": {
            "state": "unverified",
            "detail": "only the deployed runtime's /readyz can prove the store is reachable",
        },
        "writes": writes,
        "writesReadyForReview": [w["operationId"] for w in writes if w["state"] == "ready_for_review"],
        "writesEnabled": [w["operationId"] for w in writes if w["state"] == "enabled"],
        "nextAction": _next_action(lanes, agreement.ok, store, directory),
    }
