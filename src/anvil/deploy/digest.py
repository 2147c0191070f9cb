"""The ledger deployment input digest (original-ledger §4.6): one hash binding the reviewed plan inputs.

sha256 of the compact JSON of ten keys in alphabetical order. The generated Terraform recomputes the
same value with ``sha256(jsonencode({...}))`` (``jsonencode`` sorts keys and writes compact JSON, which
matches because every value is a plain ASCII id, hex string, integer or null) and fails the plan on a
mismatch.
"""

from __future__ import annotations

import json

from anvil._dataclass import dataclass
from anvil.air.canonical import sha256_hex

__all__ = ["LedgerInput", "ledger_input_digest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerInput:
    """The values the digest binds (``deploymentInput.values`` of ``anvil deploy ledger --json``)."""

    bundle_hash: str
    database_id: str
    database_mode: str
    expected_project_id: str
    location: str | None
    namespace: str
    result_ttl_seconds: int
    runtime_artifact_hash: str
    store_contract_digest: str

    def canonical_text(self) -> str:
        """The exact text that is hashed."""
        return json.dumps(
            {
                "bundle_hash": self.bundle_hash,
                "database_id": self.database_id,
                "database_mode": self.database_mode,
                "expected_project_id": self.expected_project_id,
                "location": self.location,
                "namespace": self.namespace,
                "result_ttl_seconds": self.result_ttl_seconds,
                "runtime_artifact_hash": self.runtime_artifact_hash,
                "schema_version": 1,
                "store_contract_digest": self.store_contract_digest,
            },
            separators=(",", ":"),
            sort_keys=True,
        )

    def to_json(self) -> dict[str, object]:
        """The report's camelCase ``values`` object."""
        return {
            "bundleHash": self.bundle_hash,
            "databaseId": self.database_id,
            "databaseMode": self.database_mode,
            "expectedProjectId": self.expected_project_id,
            "location": self.location,
            "namespace": self.namespace,
            "resultTtlSeconds": self.result_ttl_seconds,
            "runtimeArtifactHash": self.runtime_artifact_hash,
            "storeContractDigest": self.store_contract_digest,
        }


def ledger_input_digest(values: LedgerInput) -> str:
    """sha256 hex of :meth:`LedgerInput.canonical_text`."""
    return sha256_hex(values.canonical_text())
