"""``anvil deploy ledger``: which approved writes need durable state, and what exactly Terraform will wire.

:func:`plan_ledger` runs the processing order of original-ledger §4.1 (flags, AIR, bundle files, store
freshness, TTL, mode consistency, tfvars coordinates) and returns a :class:`LedgerPlan`, which renders
the human text (§4.3), the ``--json`` report (§4.4) and the ``--tfvars`` input (§4.5). Offline and
read-only: it reads the bundle directory and nothing else, and never opens a socket.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from anvil._dataclass import dataclass
from anvil.air.inputs import key_posture
from anvil.air.model import Document, Operation
from anvil.bundle.container import runtime_artifact_hash
from anvil.deploy.digest import LedgerInput, ledger_input_digest
from anvil.deploy.freshness import StoreInspection, check_freshness, inspect_store
from anvil.deploy.options import DEFAULT_TTL_SECONDS, DeployError, LedgerFlags, check_flags, check_mode, parse_ttl

__all__ = ["LedgerPlan", "plan_ledger", "write_rows"]

_AIR_FILES = ("air.json", "air.yaml")
_CONTRACT_CODES = {
    "missing": "deploy/contract_missing",
    "corrupt": "deploy/contract_corrupt",
    "stale": "deploy/contract_stale",
}
_READINESS_DETAIL = (
    "Only the deployed /readyz data-plane probe can prove the database exists and the runtime identity can reach it."
)
_BOUND_DETAIL = (
    "Terraform recomputes this digest and requires the actual Cloud Build project to equal expectedProjectId."
)
_UNRESOLVED_DETAIL = (
    "Pass --project and --database to bind the reviewed store coordinates; without them no digest is emitted."
)


def write_rows(doc: Document, store_ids: list[str]) -> list[dict[str, Any]]:
    """Every approved mutation in AIR order with its idempotency posture (original-ledger §4.2)."""
    required = set(store_ids)
    return [
        _row(op, op.id in required) for op in doc.operations if op.state == "approved" and op.effect.kind == "mutation"
    ]


def _row(op: Operation, managed: bool) -> dict[str, Any]:
    return {
        "id": op.id,
        "command": op.cli.command,
        "idempotency": key_posture(op),
        "retries": op.retries.mode,
        "managedStoreRequired": managed,
    }


def _resolve(target: Path) -> Path:
    if not os.path.lexists(target):
        raise DeployError(
            "deploy/bundle_not_found",
            f"ENOENT: no such file or directory, {target}",
            hint="Pass the directory written by `anvil compile`.",
        )
    if target.is_file() and target.name in _AIR_FILES:
        root = target.parent
    else:
        root = target
    if not (root / "air.json").is_file():
        raise DeployError("deploy/no_air", f"No air.yaml or air.json in {target}.", hint="Run `anvil compile` first.")
    return root


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerPlan:
    """A proven-fresh bundle's ledger plan under the given flags."""

    inspection: StoreInspection
    flags: LedgerFlags
    ttl_seconds: int
    writes: list[dict[str, Any]]

    # --- derived values --------------------------------------------------------------------------

    @property
    def service_id(self) -> str:
        """The AIR service id."""
        return str(self.inspection.contract["serviceId"]) if self.inspection.contract else ""

    @property
    def required(self) -> bool:
        """True for the Firestore variant."""
        return self.inspection.backend == "firestore"

    @property
    def _firestore(self) -> dict[str, Any]:
        contract = self.inspection.contract or {}
        return dict(contract.get("firestore") or {})

    @property
    def bundle_hash(self) -> str:
        """The bundle hash of the bytes on disk."""
        return self.inspection.freshness.bundle_hash or ""

    @property
    def runtime_hash(self) -> str:
        """The deployed runtime artifact hash."""
        return runtime_artifact_hash(self.inspection.freshness.on_disk)

    @property
    def location(self) -> str | None:
        """The dedicated-mode location (always None in shared mode)."""
        return self.flags.location if self.flags.mode == "dedicated" else None

    @property
    def runtime_uri(self) -> str | None:
        """``ANVIL_LEDGER`` resolved from the flags, or None without both coordinates."""
        if not self.flags.resolved:
            return None
        template = str(self._firestore["runtimeUri"]["resolvedTemplate"])
        return template.replace("{project_id}", self.flags.project or "").replace(
            "{database_id}", self.flags.database or ""
        )

    def ledger_input(self) -> LedgerInput | None:
        """The digest inputs, or None without both coordinates."""
        if not self.flags.resolved:
            return None
        return LedgerInput(
            bundle_hash=self.bundle_hash,
            database_id=self.flags.database or "",
            database_mode=self.flags.mode,
            expected_project_id=self.flags.project or "",
            location=self.location,
            namespace=str(self._firestore["namespace"]),
            result_ttl_seconds=self.ttl_seconds,
            runtime_artifact_hash=self.runtime_hash,
            store_contract_digest=self.inspection.digest or "",
        )

    @property
    def digest(self) -> str | None:
        """The ledger input digest, or None when unresolved."""
        values = self.ledger_input()
        return None if values is None else ledger_input_digest(values)

    # --- renderings ------------------------------------------------------------------------------

    def tfvars(self) -> dict[str, Any]:
        """The ``--tfvars`` object (``{}`` for the none variant; partial when unresolved)."""
        if not self.required:
            return {}
        out: dict[str, Any] = {}
        if self.flags.resolved:
            out.update(
                {
                    "anvil_bundle_hash": self.bundle_hash,
                    "anvil_expected_project_id": self.flags.project,
                    "anvil_ledger_input_digest": self.digest,
                }
            )
        out["ledger_database_mode"] = self.flags.mode
        if self.flags.database is not None:
            out["ledger_database_id"] = self.flags.database
        out["ledger_location"] = self.location
        out["ledger_result_ttl_seconds"] = self.ttl_seconds
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` report (original-ledger §4.4)."""
        inspection = self.inspection
        contract: dict[str, Any] = {
            "path": str(inspection.path),
            "state": inspection.state,
            "required": self.required,
            "backend": inspection.backend,
        }
        if not self.required:
            return {
                "schemaVersion": 1,
                "serviceId": self.service_id,
                "contract": contract,
                "writes": self.writes,
                "staticWiring": {"state": "fresh", "detail": inspection.detail},
                "liveReadiness": {
                    "state": "not-required",
                    "detail": "No approved mutation requires the managed idempotency store.",
                },
                "cloudCallsMade": False,
            }
        contract["digest"] = inspection.digest
        values = self.ledger_input()
        deployment: dict[str, Any]
        if values is None:
            deployment = {"state": "unresolved", "digest": None, "detail": _UNRESOLVED_DETAIL}
        else:
            deployment = {
                "state": "bound",
                "digest": ledger_input_digest(values),
                "values": values.to_json(),
                "detail": _BOUND_DETAIL,
            }
        return {
            "schemaVersion": 1,
            "serviceId": self.service_id,
            "bundleHash": self.bundle_hash,
            "contract": contract,
            "writes": self.writes,
            "store": self._store_json(),
            "staticWiring": {"state": "fresh", "detail": inspection.detail},
            "deploymentInput": deployment,
            "liveReadiness": {
                "state": "unverified",
                "path": "/readyz",
                "method": "field_masked_list",
                "mutates": False,
                "deploymentStartupGate": True,
                "livenessRestartOnProviderFailure": False,
                "expected": {"httpStatus": 200, "body": {"ready": True, "service": self.service_id}},
                "detail": _READINESS_DETAIL,
            },
            "terraformInputs": self.tfvars(),
            "guarantees": self._guarantees(),
            "cloudCallsMade": False,
        }

    def _store_json(self) -> dict[str, Any]:
        fs = self._firestore
        return {
            "provider": "google-cloud-firestore-native",
            "project": self.flags.project,
            "databaseId": self.flags.database,
            "databaseTerraformVariable": fs["database"]["idTerraformVariable"],
            "provisioningMode": self.flags.mode,
            "databaseModeTerraformVariable": fs["database"]["provisioningModeTerraformVariable"],
            "databaseModeDefault": fs["database"]["provisioningModeDefault"],
            "databaseMode": fs["databaseMode"],
            "location": self.location,
            "locationRequiredFor": fs["location"]["requiredFor"],
            "locationImmutable": fs["location"]["immutable"],
            "provisioning": fs["provisioning"],
            "namespace": fs["namespace"],
            "collectionGroup": fs["collectionGroup"],
            "indexing": fs["indexing"],
            "runtimeEnvironmentVariable": fs["runtimeUri"]["environmentVariable"],
            "runtimeUri": self.runtime_uri,
            "runtimeUriTemplate": fs["runtimeUri"]["resolvedTemplate"],
            "deploymentArtifactHash": self.runtime_hash,
            "ttlField": fs["retention"]["ttlField"],
            "resultTtlSeconds": self.ttl_seconds,
            "inProgressExpires": fs["retention"]["inProgressExpires"],
            "maxReplayResultBytes": fs["retention"]["maxReplayResultBytes"],
            "iamRole": fs["iam"]["role"],
            "iamScope": fs["iam"]["scope"],
        }

    def _guarantees(self) -> dict[str, Any]:
        ceiling = self._firestore["retention"]["maxReplayResultBytes"]
        return {
            "exactlyOnce": False,
            "completedReplayRetentionSeconds": self.ttl_seconds,
            "completedReplay": "same key and request fingerprint returns the stored result until expiry",
            "conflictingReplay": "same key with a different request fingerprint is refused",
            "concurrentReplay": "an existing in-progress reservation is refused, not re-executed",
            "crashBoundary": (
                "an upstream success followed by a crash before completion remains in_progress and requires "
                "operator reconciliation"
            ),
            "oversizedSuccessfulResponse": (
                f"a successful response above {ceiling} serialized bytes remains in_progress for operator "
                "reconciliation"
            ),
            "scope": (
                "the document key follows the service/environment/upstream credential-profile namespace; when "
                "inbound identity is verified, the request fingerprint separately binds that principal; without "
                "inbound identity, the key is a shared operation coordinate"
            ),
        }

    def text(self) -> str:
        """The human report (original-ledger §4.3)."""
        lines = [f"Idempotency write plan — {self.service_id}", f"  contract: fresh — {self.inspection.path}", ""]
        lines.append(f"Approved writes — {len(self.writes)}")
        if not self.writes:
            lines.append("  (none)")
        for row in self.writes:
            idem = row["idempotency"]
            carrier = idem["mechanism"] + (f":{idem['key']}" if idem["key"] else "")
            if idem["explicitKeyRequired"]:
                caller = "required"
            elif idem["explicitKeyRecommended"]:
                caller = "recommended (request-fingerprint fallback)"
            else:
                caller = "not required"
            durable = "required" if row["managedStoreRequired"] else "not required by this operation's AIR contract"
            lines.extend(
                (
                    f"  {row['id']}",
                    f"    command: {row['command']}",
                    f"    idempotency: {idem['mode']} · carrier {carrier} · retries {row['retries']}",
                    f"    caller key: {caller}",
                    f"    durable store: {durable}",
                )
            )
        lines.append("")
        lines.extend(self._store_text() if self.required else _NONE_TEXT)
        lines.append("No cloud call was made.")
        return "\n".join(lines) + "\n"

    def _store_text(self) -> list[str]:
        fs = self._firestore
        flags = self.flags
        dedicated = flags.mode == "dedicated"
        database = flags.database if flags.database is not None else "var.ledger_database_id (required)"
        uri = self.runtime_uri or f"{fs['runtimeUri']['resolvedTemplate']} (pass --project and --database to resolve)"
        digest = self.digest or "unresolved — pass --project and --database to bind it"
        if dedicated:
            location = f"  location: {self.location} — immutable after first creation"
            ownership = (
                "  Terraform creates and delete-protects the named dedicated database (prevent_destroy, "
                "deletion_policy ABANDON)."
            )
            decommission = (
                "  decommission: dedicated database + both field policies use ABANDON; runtime IAM/config detaches "
                "while evidence and policy remain"
            )
            reintroduction = (
                "  reintroduction: import the preserved database and both field policies into reviewed Terraform "
                "state before apply"
            )
        else:
            location = (
                "  location: owned by the existing shared database; omit --location (it is accepted only for "
                "dedicated mode)"
            )
            ownership = (
                "  Terraform does not create or import the platform-owned shared database; it references the exact "
                "existing database id."
            )
            decommission = (
                "  decommission: both field policies use ABANDON; runtime IAM/config detaches and the shared "
                "database remains platform-owned"
            )
            reintroduction = (
                "  reintroduction: import only both preserved field policies; never import the shared database "
                "into capability state"
            )
        slots = fs["provisioning"]["databaseQuotaSlotsPerCapability"]["dedicated" if dedicated else "shared"]
        lines = [
            "Managed store — REQUIRED",
            "  backend: Google Cloud Firestore Native (no Firebase client SDK)",
            f"  database: {database}",
            f"  provisioning mode: {flags.mode}",
            f"  collection group: {fs['collectionGroup']}",
            location,
            f"  ANVIL_LEDGER: {uri}",
            f"  certified bundle hash: {self.bundle_hash}",
            f"  deployed runtime artifact hash: {self.runtime_hash}",
            f"  store contract digest: {self.inspection.digest}",
            f"  reviewed input digest: {digest}",
            "  project identity: the tfvars carry anvil_expected_project_id, not project_id. Cloud Build must submit "
            "with --project; Terraform refuses any actual project that differs from the reviewed one.",
            f"  retention: completed results {self.ttl_seconds}s; in-progress reservations never auto-expire",
            f"  replay result ceiling: {fs['retention']['maxReplayResultBytes']} serialized bytes; larger successful "
            "responses remain in_progress for reconciliation",
            "  IAM: roles/datastore.user, conditionally scoped to the selected database",
            "  IAM boundary: the database (collection groups not isolated; one trust/regulatory domain per shared "
            "database)",
            "  Console caveat: Google Cloud console access does not enforce Firestore database IAM conditions; "
            "restrict console users separately.",
            ownership,
            "  The collection materializes on the first atomic reservation.",
            "  shared prerequisite: firestore.googleapis.com enabled (not owned by this capability module)",
            f"  capacity: {slots} per-capability database quota slots; default single-field indexes disabled",
            decommission,
            reintroduction,
            "",
            "Static wiring — FRESH",
            "  The store contract and every compiler-owned bundle byte match canonical AIR and the persisted "
            "generator inputs. This is static evidence, not live proof.",
            "  Archive the emitted tfvars and the planned idempotency_store output together; the matching digest "
            "binds the plan, but is not an apply receipt.",
            "",
            "Live readiness — UNVERIFIED",
            "  After applying the exact reviewed Terraform plan, require:",
            '    curl --fail --silent --show-error "$ANVIL_SERVICE_URL/readyz"',
            f'  Expected: HTTP 200 with {{"ready":true,"service":"{self.service_id}"}}.',
            "  /healthz is insufficient: it only proves the process is alive. A Cloud Run 401/403 means the probe "
            "never reached the runtime.",
            "  Cloud Run startup is gated on readiness; transient provider failure does not trigger a liveness "
            "restart loop.",
        ]
        if dedicated and flags.project is not None:
            lines.append(
                "  Before first apply, verify the immutable location is offered: gcloud firestore locations list "
                f"--project '{flags.project}'"
            )
        lines.extend(
            (
                "",
                "Guarantee boundary",
                "  The first key + request atomically reserves a hashed ledger document before the upstream call; "
                "completed same-key/same-request replay returns the stored result until logical expiry.",
                "  This is not exactly-once execution. A crash after upstream success stays in_progress for "
                "deliberate reconciliation, and completed replay protection ends after the configured TTL.",
                "  With verified inbound identity the fingerprint binds the principal, so cross-caller raw-key reuse "
                "conflicts before upstream. Without inbound identity, the raw key is a shared operation coordinate.",
                f"  A successful response above the Firestore replay-result ceiling "
                f"({fs['retention']['maxReplayResultBytes']} bytes) remains in_progress.",
                "  AlloyDB or Spanner require an explicitly registered backend plus separately reviewed "
                "infrastructure; Anvil never silently switches stores.",
            )
        )
        return lines


_NONE_TEXT = (
    "Managed store — NOT REQUIRED",
    "  No approved mutation has idempotency mode `required`; this Terraform projection omits ledger resources and "
    "runtime IAM, and sets ANVIL_LEDGER to an explicit empty value.",
    "  A later revision that drops the ledger detaches it; ABANDON preserves replay evidence, TTL, and index policy "
    "of an earlier ledger.",
    "  This does not make non-idempotent writes safe: `none` remains non-retryable, and approval/confirmation still "
    "apply.",
    "  Static wiring is fresh: every compiler-owned bundle byte matches its deterministic projection.",
)


def plan_ledger(target: Path, flags: LedgerFlags) -> LedgerPlan:
    """Validate, prove freshness and build the plan, in the order of original-ledger §4.1.

    Args:
        target: the bundle directory, or its ``air.json``.
        flags: the command-line flags.

    Raises:
        DeployError: the first failing step's coded refusal (flags, bundle, contract state, TTL, mode).
    """
    check_flags(flags)
    root = _resolve(target)
    freshness = check_freshness(root)
    if freshness.state == "symlink":
        link = next(check.path for check in freshness.files if check.state == "symlink")
        raise DeployError(
            "deploy/bundle_symlink",
            f"Unexpected symlink in bundle at {link}; certification cannot bind external or mutable link targets.",
            hint="Replace the link with a regular file, or recompile.",
        )
    if freshness.document is None:
        raise DeployError(
            "deploy/air_invalid",
            f"{root / 'air.json'} does not load as AIR: {freshness.detail}",
            hint="Recompile the bundle with `anvil compile`.",
        )
    inspection = inspect_store(freshness)
    if inspection.state != "fresh":
        raise DeployError(
            _CONTRACT_CODES[inspection.state],
            f"Idempotency store contract is {inspection.state}: {inspection.detail}",
            hint="Recompile the bundle with `anvil compile`; never edit compiler-owned files.",
        )
    contract = inspection.contract or {}
    firestore = contract.get("firestore") or {}
    ttl = parse_ttl(flags, firestore["retention"]["resultTtlSecondsDefault"] if firestore else DEFAULT_TTL_SECONDS)
    check_mode(flags)
    if contract.get("backend") == "firestore" and flags.tfvars and not flags.resolved:
        raise DeployError(
            "deploy/tfvars_unresolved",
            "--tfvars requires --project and --database so the emitted input has no unresolved store coordinate.",
        )
    writes = write_rows(freshness.document, list(contract["requirement"]["operationIds"]))
    return LedgerPlan(inspection=inspection, flags=flags, ttl_seconds=ttl, writes=writes)
