"""``anvil certify``: static assurance, the deterministic re-judgement of a bundle's bytes (original-core §8.1).

:func:`certify` runs every check of :data:`anvil.proof.certify.checks.CHECKS` over the bundle (nothing
is executed, nothing upstream is touched) and returns the ``certification.json`` record: ``status``
is ``passed`` only when every check passed, and ``bundleHash`` binds it to the exact bytes judged.
A check that raises is recorded as failed with the reason, never as passed. Apart from
``certifiedAt`` the record is a pure function of the bundle.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from anvil.air.canonical import hash_canonical
from anvil.air.codec import contract_hash, to_json
from anvil.bundle.hash import hash_files
from anvil.bundle.read import read_bundle
from anvil.proof.certify.checks import CHECKS, Bundle
from anvil.proof.records import timestamp
from anvil.proof.signature import signature_digest

__all__ = ["CERTIFICATION_FILE", "CERTIFICATION_VERSION", "CHECK_IDS", "ENGINE", "certify"]

CERTIFICATION_FILE: Final = "certification.json"
CERTIFICATION_VERSION: Final = "0.1.0"
ENGINE: Final = "anvil.proof.certify.lane"
#: Every certification check id, in record order (a public contract).
CHECK_IDS: Final[tuple[str, ...]] = tuple(check.id for check in CHECKS)


def _run(check_run: Callable[[Bundle], tuple[bool, str]], bundle: Bundle) -> tuple[str, str]:
    try:
        ok, detail = check_run(bundle)
    except Exception as exc:  # a check that cannot judge the bundle fails it, with the reason
        return "failed", f"the check could not run: {type(exc).__name__}: {exc}"
    return ("passed" if ok else "failed"), detail


def certify(directory: Path, *, clock: Callable[[], datetime] | None = None) -> dict[str, Any]:
    """Certify the bundle in ``directory`` and return its ``certification.json`` record (not written).

    Args:
        directory: The bundle directory.
        clock: The wall clock for ``certifiedAt`` (a test seam).

    Raises:
        BundleError: ``bundle/invalid`` when the directory, its ``air.json`` or its files cannot be read.
    """
    doc = read_bundle(directory)
    bundle = Bundle.open(directory, doc)
    checks = []
    for check in CHECKS:
        status, detail = _run(check.run, bundle)
        checks.append({"id": check.id, "gate": check.gate, "status": status, "detail": detail})
    passed = all(check["status"] == "passed" for check in checks)
    status = "passed" if passed else "failed"
    bundle_digest = hash_files(bundle.files)
    attestation = {
        "packDigest": "none",
        "contractDigest": contract_hash(doc),
        "capabilityDigests": [hash_canonical(to_json(cap)) for cap in sorted(doc.capabilities, key=lambda c: c.id)],
        "surfaceSignatureDigest": signature_digest(doc),
        "certificationVersion": CERTIFICATION_VERSION,
    }
    record_digest = hash_canonical({"bundleHash": bundle_digest, "status": status, "checks": checks, **attestation})
    record: dict[str, Any] = {"schemaVersion": 1, "serviceId": doc.service.id}
    if len(doc.capabilities) == 1:
        record["capabilityId"] = doc.capabilities[0].id
    record.update(
        {
            "bundleHash": bundle_digest,
            "assuranceLevel": "static",
            "assurance": {
                "level": "static",
                "engine": ENGINE,
                "engineStatus": "static_passed" if passed else "failed",
                "recordDigest": record_digest,
                "attestation": attestation,
            },
            "status": status,
            "checks": checks,
            "certifiedAt": timestamp(clock),
        }
    )
    return record
