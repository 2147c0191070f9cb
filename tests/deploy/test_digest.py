"""The ledger deployment input digest reproduces the original's golden values (original-ledger §4.6)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from anvil.deploy.digest import LedgerInput, ledger_input_digest
from tests.conftest import missing

GOLDEN = Path(__file__).resolve().parent / "golden" / "anvil-deploy-ledger.payments.json"

SYNTHETIC = LedgerInput(
    bundle_hash="0" * 64,
    database_id="bank-shared-ledger",
    database_mode="shared",
    expected_project_id="acme-prod-1",
    location=None,
    namespace="payments",
    result_ttl_seconds=3600,
    runtime_artifact_hash="1" * 64,
    store_contract_digest="2" * 64,
)


def test_the_synthetic_golden_digest_and_its_canonical_text() -> None:
    assert SYNTHETIC.canonical_text() == (
        '{"bundle_hash":"' + "0" * 64 + '","database_id":"bank-shared-ledger","database_mode":"shared",'
        '"expected_project_id":"acme-prod-1","location":null,"namespace":"payments","result_ttl_seconds":3600,'
        '"runtime_artifact_hash":"' + "1" * 64 + '","schema_version":1,"store_contract_digest":"' + "2" * 64 + '"}'
    )
    assert ledger_input_digest(SYNTHETIC) == "9aa946b0da76fccbb741ca10e73335e4107580e2c2a9fa57246d7ff499b5be18"


def test_the_originals_own_payments_digest_is_reproduced_from_its_report_values() -> None:
    report = json.loads(GOLDEN.read_text(encoding="utf-8"))
    values = report["deploymentInput"]["values"]
    given = LedgerInput(
        bundle_hash=values["bundleHash"],
        database_id=values["databaseId"],
        database_mode=values["databaseMode"],
        expected_project_id=values["expectedProjectId"],
        location=values["location"],
        namespace=values["namespace"],
        result_ttl_seconds=values["resultTtlSeconds"],
        runtime_artifact_hash=values["runtimeArtifactHash"],
        store_contract_digest=values["storeContractDigest"],
    )
    assert given.to_json() == values
    assert ledger_input_digest(given) == report["deploymentInput"]["digest"]
    assert report["deploymentInput"]["digest"] == "58572956ffa4d2e9c55c163ab562b13e0dcaddc81d4c2ddd010903d2fc3fb938"


@pytest.mark.parametrize(
    "change",
    [
        {"bundle_hash": "3" * 64},
        {"database_id": "other-ledger"},
        {"database_mode": "dedicated", "location": "nam5"},
        {"expected_project_id": "acme-prod-2"},
        {"namespace": "payments-eu"},
        {"result_ttl_seconds": 3601},
        {"runtime_artifact_hash": "4" * 64},
        {"store_contract_digest": "5" * 64},
    ],
)
def test_every_bound_value_changes_the_digest(change: dict[str, object]) -> None:
    assert ledger_input_digest(replace(SYNTHETIC, **change)) != ledger_input_digest(SYNTHETIC)  # type: ignore[arg-type]


def test_terraform_jsonencode_recomputes_the_same_digest(tmp_path: Path) -> None:
    """The plan's sha256(jsonencode({...})) over the same values gives the Python digest (real terraform)."""
    binary = shutil.which("terraform")
    if binary is None:
        missing("no terraform binary on PATH")
        return
    values = SYNTHETIC
    fields = ", ".join(
        (
            f'bundle_hash = "{values.bundle_hash}"',
            f'database_id = "{values.database_id}"',
            f'database_mode = "{values.database_mode}"',
            f'expected_project_id = "{values.expected_project_id}"',
            "location = null",
            f'namespace = "{values.namespace}"',
            f"result_ttl_seconds = {values.result_ttl_seconds}",
            f'runtime_artifact_hash = "{values.runtime_artifact_hash}"',
            "schema_version = 1",
            f'store_contract_digest = "{values.store_contract_digest}"',
        )
    )
    expression = f"sha256(jsonencode({{{fields}}}))"
    done = subprocess.run(
        [binary, "console"],
        input=expression + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"TF_CLI_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin", "CHECKPOINT_DISABLE": "1"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().strip('"') == ledger_input_digest(values)
