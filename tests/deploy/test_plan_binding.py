"""The generated plan gates, evaluated by real Terraform against `anvil deploy ledger --tfvars` output.

The google provider cannot be downloaded here, so the test builds a provider-free module from the
generated files: ``variables.tf`` verbatim, the ``locals`` block of ``main.tf`` (the dedicated database's
``name`` read from a built-in ``terraform_data`` stand-in with the same ``count`` and ``lifecycle``) and the
Cloud Run service's ``lifecycle`` preconditions verbatim on another ``terraform_data`` resource.
``terraform plan`` then evaluates the same expressions the real plan would: the emitted tfvars pass; a
different deploying project, a changed retention, a shadowing ``var.env`` key (a compiler-set name, a
runtime control the deployment fixes, a per-bundle allowlist), a name in both maps and a malformed
database id each fail.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from anvil.cli import main
from tests.conftest import missing

_ENV = {"TF_CLI_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin", "CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1"}
_SHARED_DB = (
    'var.ledger_database_mode == "dedicated" ? google_firestore_database.ledger[0].name : var.ledger_database_id'
)


def _harness(bundle: Path, work: Path) -> None:
    main_tf = (bundle / "deploy/terraform/main.tf").read_text(encoding="utf-8")
    locals_block = re.search(r"^locals \{\n.*?^\}\n", main_tf, flags=re.S | re.M)
    start = r"\n  lifecycle \{\n    precondition \{\n      condition     = "
    gates = re.search(start + r"length\(local\.anvil_env_shadowing\).*?\n  \}\n", main_tf, flags=re.S)
    database = re.search(
        r'resource "google_firestore_database" "ledger" \{\n  (count = .*?)\n.*?(\n  lifecycle \{\n.*?\n  \}\n)',
        main_tf,
        flags=re.S,
    )
    assert locals_block is not None and gates is not None and database is not None
    assert _SHARED_DB in locals_block.group(0)
    harness = locals_block.group(0).replace(
        "google_firestore_database.ledger[0].name", "terraform_data.database[0].output"
    )
    harness += '\nresource "terraform_data" "gate" {' + gates.group(0) + "}\n"
    harness += (
        '\nresource "terraform_data" "database" {\n  ' + database.group(1) + "\n  input = var.ledger_database_id\n"
    )
    harness += database.group(2) + "}\n"
    (work / "main.tf").write_text(harness, encoding="utf-8")
    shutil.copy(bundle / "deploy/terraform/variables.tf", work / "variables.tf")


def _terraform(binary: str, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, f"-chdir={work}", *args], capture_output=True, text=True, env=_ENV, timeout=120, check=False
    )


@pytest.fixture(params=["shared"])
def planned(
    payments_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> tuple[str, Path]:
    binary = shutil.which("terraform")
    if binary is None:
        missing("no terraform binary on PATH (the machine image provides one)")
    assert binary is not None
    work = tmp_path / "tf"
    work.mkdir()
    _harness(payments_bundle, work)
    args = ["--project", "acme-prod-1", "--database", "bank-shared-ledger", "--ttl-seconds", "3600", "--tfvars"]
    if request.param == "dedicated":
        args += ["--database-mode", "dedicated", "--location", "nam5"]
    assert main(["deploy", "ledger", str(payments_bundle), *args]) == 0
    (work / "ledger.auto.tfvars.json").write_text(capsys.readouterr().out, encoding="utf-8")
    init = _terraform(binary, work, "init", "-input=false", "-no-color", "-backend=false")
    assert init.returncode == 0, init.stdout + init.stderr
    return binary, work


def _plan(planned: tuple[str, Path], *variables: str) -> subprocess.CompletedProcess[str]:
    binary, work = planned
    flags = [f"-var={item}" for item in ("image_tag=build-1", *variables)]
    return _terraform(binary, work, "plan", "-input=false", "-no-color", "-lock=false", *flags)


@pytest.mark.parametrize("planned", ["shared", "dedicated"], indirect=True)
def test_the_emitted_tfvars_pass_every_plan_gate_in_both_modes(planned: tuple[str, Path]) -> None:
    done = _plan(planned, "project_id=acme-prod-1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "terraform_data.gate will be created" in done.stdout
    dedicated = json.loads((planned[1] / "ledger.auto.tfvars.json").read_text())["ledger_database_mode"] == "dedicated"
    assert ("terraform_data.database[0] will be created" in done.stdout) is dedicated


@pytest.mark.parametrize("planned", ["dedicated"], indirect=True)
def test_a_dedicated_plan_refuses_the_default_database(planned: tuple[str, Path]) -> None:
    done = _plan(planned, "project_id=acme-prod-1", "ledger_database_id=(default)")
    assert done.returncode != 0
    assert "not (default)" in " ".join((done.stdout + done.stderr).split())


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (["project_id=acme-prod-2"], "does not match Cloud Build's deployment project"),
        (["project_id=acme-prod-1", "ledger_result_ttl_seconds=3601"], "regenerate them with"),
        (["project_id=acme-prod-1", "ledger_database_mode=dedicated"], "regenerate them with"),
        (["project_id=acme-prod-1", 'env={"ANVIL_LEDGER":"memory:"}'], "var.env may not redefine"),
        (["project_id=acme-prod-1", 'credential_secret_refs={"ANVIL_ENV":"s"}'], "credential_secret_refs may not"),
        (["project_id=acme-prod-1", 'env={"X_TOKEN":"a"}', 'credential_secret_refs={"X_TOKEN":"s"}'], "both var.env"),
        (["project_id=acme-prod-1", 'env={"ANVIL_LEDGER_BINDING_TTL_SECONDS":"1"}'], "var.env may not redefine"),
        (["project_id=acme-prod-1", 'env={"ANVIL_DERIVED_KEY_WINDOW_SECONDS":"9"}'], "var.env may not redefine"),
        (["project_id=acme-prod-1", 'env={"ANVIL_LEDGER_LOCK_TIMEOUT_MS":"1"}'], "var.env may not redefine"),
        (["project_id=acme-prod-1", 'env={"ANVIL_HEADER_TIMEOUT_SECONDS":"3600"}'], "var.env may not redefine"),
        (["project_id=acme-prod-1", 'env={"ANVIL_ALLOWED_HOSTS_BUNDLE":"evil.example"}'], "var.env may not redefine"),
        (
            ["project_id=acme-prod-1", 'credential_secret_refs={"ANVIL_LEDGER_LOCK_TIMEOUT_MS":"s"}'],
            "credential_secret_refs may not",
        ),
        (["project_id=acme-prod-1", "ledger_database_id=x"], "4-63 character Firestore database id"),
        (["project_id=acme-prod-1", 'env={"A":"REPLACE_ME_LATER"}'], "REPLACE_ME"),
    ],
)
def test_a_moved_or_shadowed_input_is_a_hard_plan_failure(
    planned: tuple[str, Path], variables: list[str], message: str
) -> None:
    done = _plan(planned, *variables)
    assert done.returncode != 0
    assert message in " ".join((done.stdout + done.stderr).split())


def test_the_tfvars_file_holds_no_deployment_project(planned: tuple[str, Path]) -> None:
    tfvars = json.loads((planned[1] / "ledger.auto.tfvars.json").read_text(encoding="utf-8"))
    assert "project_id" not in tfvars and tfvars["anvil_expected_project_id"] == "acme-prod-1"


def test_operator_inputs_that_shadow_nothing_pass(planned: tuple[str, Path]) -> None:
    env = '{"ANVIL_INBOUND_AUTH_MODE":"jwt","ANVIL_BASE_URL":"https://payments.internal.example.com/v2","ANVIL_X":"y"}'
    done = _plan(planned, "project_id=acme-prod-1", f"env={env}")
    assert done.returncode == 0, done.stdout + done.stderr
