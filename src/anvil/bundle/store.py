"""``deploy/idempotency-store.json``: whether the bundle needs a durable ledger, and how it is wired.

The contract of original-ledger §3: the ``none`` variant when no approved mutation requires a caller
key, else the Firestore variant with the namespace-hashed collection group, the runtime URI template,
TTL, IAM and readiness facts. Key order is the emitted order; the file's bytes are hashed
(``storeContractDigest``), so this module must stay byte-stable.
"""

from __future__ import annotations

import re
from typing import Any

from anvil.air.deployment import collection_group
from anvil.air.model import Document
from anvil.bundle.encoding import json_file
from anvil.bundle.generation import DEPLOYMENT_NAMESPACE_PATTERN, Generation
from anvil.errors import BundleError

__all__ = [
    "REQUIREMENT_PREDICATE",
    "STORE_CONTRACT_PATH",
    "collection_group",
    "deployment_namespace",
    "emit_store_contract",
    "firestore_settings",
    "store_contract",
    "store_operation_ids",
]

STORE_CONTRACT_PATH = "deploy/idempotency-store.json"
REQUIREMENT_PREDICATE = "approved_required_key_mutation_requires_durable_ledger"
_NAMESPACE = re.compile(r"^[a-zA-Z0-9_.~-]{1,128}$")


def store_operation_ids(doc: Document) -> list[str]:
    """Ids of approved mutations whose idempotency mode is ``required``, sorted."""
    return sorted(
        op.id
        for op in doc.operations
        if op.state == "approved" and op.effect.kind == "mutation" and op.idempotency.mode == "required"
    )


def deployment_namespace(doc: Document, generation: Generation) -> str:
    """The persisted deployment namespace, else the AIR service id (original-ledger §4.8).

    Raises:
        BundleError: ``bundle/invalid`` when the namespace is not usable as a ledger namespace.
    """
    namespace = generation.deployment_namespace
    if namespace is not None and not DEPLOYMENT_NAMESPACE_PATTERN.match(namespace):
        raise BundleError(
            "bundle/invalid",
            "deploymentNamespace must be a 1-128 character lowercase provider-safe id starting with a letter.",
        )
    chosen = namespace or doc.service.id
    if not _NAMESPACE.match(chosen):
        raise BundleError("bundle/invalid", f"deployment namespace {chosen!r} is not a valid ledger namespace.")
    return chosen


def _firestore(namespace: str) -> dict[str, Any]:
    return {
        "projectTerraformExpression": "${var.project_id}",
        "database": {
            "idTerraformVariable": "ledger_database_id",
            "provisioningModeTerraformVariable": "ledger_database_mode",
            "provisioningModeDefault": "shared",
            "supportedProvisioningModes": ["shared", "dedicated"],
            "required": True,
            "trustBoundary": "database",
        },
        "databaseMode": "FIRESTORE_NATIVE",
        "location": {
            "terraformVariable": "ledger_location",
            "requiredFor": "dedicated",
            "ignoredFor": "shared",
            "immutable": True,
        },
        "provisioning": {
            "databaseManagedByCapabilityTerraform": "dedicated_only",
            "sharedApiEnablementManagedByCapabilityTerraform": False,
            "requiredSharedApis": ["firestore.googleapis.com"],
            "googleProviderConstraint": ">= 7.33.0, < 8.0.0",
            "sharedIsolation": "deployment_namespace_hashed_collection_group",
            "dedicatedIsolation": "database",
            "databaseQuotaSlotsPerCapability": {"shared": 0, "dedicated": 1},
            "sharedDatabaseQuotaSlots": 1,
            "iamIsolation": "database_not_collection_group",
            "collectionMaterialization": "first_atomic_reservation",
            "decommissionPolicy": "abandon_service_field_policies_and_data",
        },
        "namespace": namespace,
        "collectionGroup": collection_group(namespace),
        "runtimeUri": {
            "environmentVariable": "ANVIL_LEDGER",
            "terraformExpression": f"firestore://${{var.project_id}}/${{local.ledger_database_id}}/{namespace}",
            "resolvedTemplate": f"firestore://{{project_id}}/{{database_id}}/{namespace}",
        },
        "indexing": {
            "defaultSingleFieldIndexes": False,
            "wildcardFieldOverride": "*",
            "queryPattern": "document_id_only",
        },
        "retention": {
            "ttlField": "expires_at",
            "resultTtlSecondsTerraformVariable": "ledger_result_ttl_seconds",
            "resultTtlSecondsDefault": 604800,
            "logicalExpiryBeforeReplay": True,
            "providerDeletionAsynchronous": True,
            "inProgressExpires": False,
            "ttlFieldIndexed": False,
            "maxReplayResultBytes": 819200,
        },
        "consistency": {
            "reserve": "atomic_create",
            "complete": "update_time_precondition",
            "release": "update_time_precondition",
            "requestFingerprintBound": True,
        },
        "iam": {
            "role": "roles/datastore.user",
            "scope": "database",
            "resourceTerraformExpression": "projects/${var.project_id}/databases/${local.ledger_database_id}",
        },
        "readiness": {
            "path": "/readyz",
            "method": "field_masked_list",
            "fieldMask": ["status"],
            "mutates": False,
            "deploymentStartupGate": True,
            "livenessRestartOnProviderFailure": False,
        },
    }


def firestore_settings(namespace: str) -> dict[str, Any]:
    """The contract's ``firestore`` object for ``namespace`` (also the strict parser's template)."""
    return _firestore(namespace)


def store_contract(doc: Document, generation: Generation) -> dict[str, Any]:
    """The store contract object: the ``none`` variant or the Firestore variant.

    Raises:
        BundleError: ``bundle/invalid`` for an unusable deployment namespace (Firestore variant only).
    """
    ids = store_operation_ids(doc)
    contract: dict[str, Any] = {
        "schemaVersion": 1,
        "serviceId": doc.service.id,
        "required": bool(ids),
        "requirement": {"predicate": REQUIREMENT_PREDICATE, "operationIds": ids},
    }
    if not ids:
        contract.update({"backend": "none", "firestore": None})
        return contract
    contract.update({"backend": "firestore", "firestore": _firestore(deployment_namespace(doc, generation))})
    return contract


def emit_store_contract(doc: Document, generation: Generation) -> dict[str, bytes]:
    """``{"deploy/idempotency-store.json": bytes}``."""
    return {STORE_CONTRACT_PATH: json_file(store_contract(doc, generation))}
