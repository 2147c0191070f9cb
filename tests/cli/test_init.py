"""From a spec to a reviewed bundle: ``anvil init``, ``anvil approve``, ``anvil compile``, ``anvil inspect``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from anvil.cli import main

REPO = Path(__file__).resolve().parents[2]
PAYMENTS = REPO / "examples" / "payments" / "openapi.yaml"
CORPUS = Path(os.environ.get("ANVIL_CORPUS", REPO.parent / "shared" / "corpus"))


def _anvil(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_init_approve_compile_and_inspect_take_a_spec_to_a_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "anvil.yaml"
    code, out, _ = _anvil(capsys, "init", str(PAYMENTS), "--service", "payments", "--out", str(manifest))
    assert code == 0 and "4 operations (0 approved)" in out
    code, out, _ = _anvil(capsys, "approve", str(manifest), "payments.customers.*", "payments.payments.get")
    assert code == 0
    assert out.splitlines()[:2] == ["approved payments.customers.get", "approved payments.payments.get"]
    bundle = tmp_path / "bundle"
    code, _, err = _anvil(capsys, "compile", str(PAYMENTS), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    code, out, _ = _anvil(capsys, "inspect", str(bundle), "--json", "--state", "approved")
    rows = json.loads(out)["operations"]
    assert [row["operationId"] for row in rows] == ["payments.customers.get", "payments.payments.get"]
    assert {row["class"] for row in rows} == {"read"}
    code, out, _ = _anvil(capsys, "inspect", str(bundle), "--class", "irreversible")
    assert code == 0
    assert "payments.refunds.create" in out and "payments.customers.get" not in out


def test_init_never_replaces_an_existing_manifest_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text("# reviewed\n", encoding="utf-8")
    code, _, err = _anvil(capsys, "init", str(PAYMENTS), "--service", "payments", "--out", str(manifest))
    assert code == 2 and "error[cli/usage]" in err
    assert manifest.read_text(encoding="utf-8") == "# reviewed\n"
    code, _, _ = _anvil(capsys, "init", str(PAYMENTS), "--service", "payments", "--out", str(manifest), "--force")
    assert code == 0 and "operations:" in manifest.read_text(encoding="utf-8")


def test_init_of_an_unreadable_spec_writes_nothing_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "anvil.yaml"
    code, _, err = _anvil(capsys, "init", str(tmp_path / "missing.yaml"), "--service", "x", "--out", str(manifest))
    assert code == 1 and "source/" in err
    assert not manifest.exists()


def test_approve_of_a_pattern_naming_nothing_exits_2_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "anvil.yaml"
    _anvil(capsys, "init", str(PAYMENTS), "--service", "payments", "--out", str(manifest))
    before = manifest.read_bytes()
    code, _, err = _anvil(capsys, "approve", str(manifest), "payments.customers.get", "payments.nothing.*")
    assert code == 2 and f"error[{'manifest/not_editable'}]" in err
    assert manifest.read_bytes() == before


def test_inspect_of_a_missing_bundle_is_a_coded_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _anvil(capsys, "inspect", str(tmp_path / "nothing"))
    assert code == 3 and "error[bundle/invalid]" in err


@pytest.mark.corpus
@pytest.mark.parametrize("spec", ["jira-platform.json", "pagerduty-rest.json", "plaid.yml"])
def test_init_with_approve_all_lists_every_operation_of_a_large_spec_and_approves_all_it_can_serve(
    spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from anvil.compiler import build
    from anvil.compiler.manifest.draft import held_passthrough

    path = CORPUS / spec
    if not path.is_file():
        if os.environ.get("ANVIL_TEST_REQUIRE_SERVICES") == "1":
            pytest.fail(f"corpus spec {path} is missing")
        pytest.skip(f"corpus spec {path} is missing")
    manifest = tmp_path / "anvil.yaml"
    code, _, err = _anvil(capsys, "init", str(path), "--service", "big", "--out", str(manifest), "--approve", "all")
    assert code == 0, err
    entries = yaml.safe_load(manifest.read_text(encoding="utf-8"))["operations"]
    ops = build(path, service_id="big").document.operations
    assert set(entries) == {op.id for op in ops}
    # all but what the compiler blocks however approved: a query-language passthrough (Jira's JQL inputs)
    held = {op.id for op in ops if held_passthrough(op)}
    assert {key for key, entry in entries.items() if entry["state"] != "approved"} == held
    assert {entries[key]["state"] for key in held} <= {"review_required"}


def test_propose_effects_writes_reviewable_effect_blocks_that_compile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = REPO / "examples" / "github-mini" / "openapi.yaml"
    manifest = tmp_path / "anvil.yaml"
    code, out, _ = _anvil(
        capsys,
        "init",
        str(spec),
        "--service",
        "github",
        "--out",
        str(manifest),
        "--approve",
        "all",
        "--propose-effects",
    )
    assert code == 0 and "Proposed 3 effect contracts for 3 creates" in out
    text = manifest.read_text(encoding="utf-8")
    assert text.count("# proposed by anvil init: review before approving") == 3
    bundle = tmp_path / "bundle"
    code, _, err = _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    code, out, _ = _anvil(capsys, "inspect", str(bundle), "--json")
    undo = {row["operationId"]: row["undo"] for row in json.loads(out)["operations"]}
    assert undo["github.comments.create"] == "inverse"
    assert undo["github.releases.create"] == "inverse"
    assert undo["github.issues.create"] == "compensate"  # closing it: the update to a terminal state


def _byo_block() -> str:
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(# \[byo-api-tested\]\n.*?)```", readme, flags=re.S)
    assert len(blocks) == 1, "the README carries exactly one [byo-api-tested] block"
    return blocks[0]


def test_the_readmes_bring_your_own_api_walk_through_runs_as_written(tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    bash = shutil.which("bash")
    assert bash is not None
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(
        [bash, "-c", "set -euo pipefail\n" + _byo_block()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Proposed 3 effect contracts" in done.stdout
    assert "approved github.comments.create" in done.stdout
    catalog = [line for line in done.stdout.splitlines() if line.startswith("github.comments.create ")]
    assert len(catalog) == 1 and "inverse" in catalog[0]
    assert "github.comments.create" in done.stdout.split("anvil status:", 1)[1]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.corpus
def test_init_lists_the_specs_security_schemes_and_auth_scheme_chooses_one_service_wide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = CORPUS / "jira-platform.json"
    if not path.is_file():
        if os.environ.get("ANVIL_TEST_REQUIRE_SERVICES") == "1":
            pytest.fail(f"corpus spec {path} is missing")
        pytest.skip(f"corpus spec {path} is missing")
    manifest = tmp_path / "anvil.yaml"
    argv = ["init", str(path), "--service", "jira", "--out", str(manifest), "--approve", "all"]
    code, _, err = _anvil(capsys, *argv, "--auth-scheme", "nope")
    assert code == 2 and "OAuth2, basicAuth" in err and not manifest.exists()
    code, _, err = _anvil(capsys, *argv, "--auth-scheme", "basicAuth")
    assert code == 0, err
    text = manifest.read_text(encoding="utf-8")
    assert "# The spec's security schemes: OAuth2 (oauth2 authorizationCode), basicAuth (http basic)." in text
    assert yaml.safe_load(text)["auth"] == {"scheme": "basicAuth"}
    from anvil.compiler import build

    document = build(path, manifest=manifest, service_id="jira").document
    blocked = [op.id for op in document.operations if op.state == "blocked"]
    # jql passthrough and an upload whose multipart body names no part (findings about the API), never auth
    assert sorted(blocked) == ["jira.attachments.create", "jira.issue.delete.field", "jira.search.list"], blocked


def test_init_writes_a_reviewed_override_that_serves_an_end_user_oauth_flow_as_a_bearer_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "openapi.yaml"
    flow = {"authorizationCode": {"authorizationUrl": "https://x.example/a", "tokenUrl": "https://x.example/t"}}
    spec.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "Chat", "version": "1"},
                "security": [{"chatAuth": []}],
                "paths": {
                    "/channels": {"get": {"operationId": "listChannels", "responses": {"200": {"description": "ok"}}}}
                },
                "components": {"securitySchemes": {"chatAuth": {"type": "oauth2", "flows": flow}}},
            }
        ),
        encoding="utf-8",
    )
    manifest = tmp_path / "anvil.yaml"
    argv = [
        "init",
        str(spec),
        "--service",
        "chat",
        "--out",
        str(manifest),
        "--approve",
        "all",
        "--auth-scheme",
        "chatAuth",
    ]
    code, _, err = _anvil(capsys, *argv, "--auth-type", "bearer")
    assert code == 2 and "--auth-reason" in err and not manifest.exists()
    reason = "Tokens come from the operator's app, minted out of band."
    code, _, err = _anvil(capsys, *argv, "--auth-type", "bearer", "--auth-reason", reason)
    assert code == 0, err
    auth = yaml.safe_load(manifest.read_text(encoding="utf-8"))["auth"]
    assert auth == {"scheme": "chatAuth", "type": "bearer", "override": True, "reason": reason}
    from anvil.compiler import build

    (served,) = build(spec, manifest=manifest, service_id="chat").document.operations
    assert served.state == "approved" and served.auth.type == "jwt_bearer"
    (blocked,) = build(spec, service_id="chat").document.operations
    assert blocked.state == "blocked"  # without the override, the end-user flow is served nowhere


def test_init_notes_operations_their_auth_keeps_blocked_and_names_the_choice_that_serves_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "openapi.yaml"
    flow = {"authorizationCode": {"authorizationUrl": "https://x.example/a", "tokenUrl": "https://x.example/t"}}
    get = {"get": {"operationId": "listChannels", "responses": {"200": {"description": "ok"}}}}
    open_get = {"get": {"operationId": "getStatus", "security": [], "responses": {"200": {"description": "ok"}}}}
    spec.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "Chat", "version": "1"},
                "security": [{"chatAuth": []}],
                "paths": {"/channels": get, "/status": open_get},
                "components": {"securitySchemes": {"chatAuth": {"type": "oauth2", "flows": flow}}},
            }
        ),
        encoding="utf-8",
    )
    manifest = tmp_path / "anvil.yaml"
    argv = ["init", str(spec), "--service", "chat", "--out", str(manifest), "--approve", "all", "--force"]
    code, out, err = _anvil(capsys, *argv)
    assert code == 0, err
    (note,) = [line for line in out.splitlines() if line.startswith("Note: ")]
    assert "1 of 2 operations stay blocked by their auth" in note
    assert "(auth/end_user_flow_unexecutable 1)" in note and "chatAuth (oauth2 authorizationCode)" in note
    assert "--auth-scheme NAME" in note and "--auth-type bearer --auth-reason TEXT" in note
    reason = "Tokens come from the operator's app, minted out of band."
    chosen = ["--auth-scheme", "chatAuth", "--auth-type", "bearer", "--auth-reason", reason]
    code, out, err = _anvil(capsys, *argv, *chosen)
    assert code == 0 and "Note: " not in out, err
    code, out, err = _anvil(capsys, "init", str(PAYMENTS), "--service", "payments", "--out", str(manifest), "--force")
    assert code == 0 and "Note: " not in out, err  # nothing is blocked by auth: nothing to say


def test_init_and_inspect_show_a_composites_factors_and_it_compiles_approved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli.fixtures.upstreams import VAULT_SPEC

    manifest, bundle = tmp_path / "anvil.yaml", tmp_path / "bundle"
    code, _, err = _anvil(
        capsys, "init", str(VAULT_SPEC), "--service", "vault", "--out", str(manifest), "--approve", "all"
    )
    assert code == 0, err
    text = manifest.read_text(encoding="utf-8")
    label = "composite (client_id + secret + tenant_key)"
    assert text.count(f"  # auth: {label}, every factor's credential sent on each call\n") == 3
    code, _, err = _anvil(capsys, "compile", str(VAULT_SPEC), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    code, out, _ = _anvil(capsys, "inspect", str(bundle), "--json")
    rows = {row["operationId"]: row for row in json.loads(out)["operations"]}
    assert {op_id: (row["state"], row["auth"]) for op_id, row in rows.items()} == {
        "vault.items.create": ("approved", label),
        "vault.items.get": ("approved", label),
        "vault.items.delete": ("approved", label),
        "vault.health.list": ("approved", "none"),
    }
    code, out, _ = _anvil(capsys, "inspect", str(bundle))
    assert code == 0 and "AUTH" in out.splitlines()[0] and label in out


@pytest.mark.corpus
def test_every_plaid_operation_compiles_approved_with_its_three_keys_as_one_composite(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, manifest, bundle = corpus / "plaid.yml", tmp_path / "anvil.yaml", tmp_path / "plaid"
    code, _, err = _anvil(capsys, "init", str(spec), "--service", "plaid", "--out", str(manifest), "--approve", "all")
    assert code == 0, err
    code, _, err = _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    air = json.loads((bundle / "air.json").read_text(encoding="utf-8"))
    operations = air["operations"]
    assert len(operations) == 329
    assert [op["id"] for op in operations if op["state"] != "approved"] == []
    assert sum(1 for op in operations if op["auth"]["type"] == "composite") == 328
    assert not [d for d in air["diagnostics"] if d["code"] == "auth/composite_unmodeled"]
    composite = next(op["auth"] for op in operations if op["auth"]["type"] == "composite")
    carriers = [factor["provider"]["apiKey"]["name"] for factor in composite["factors"]]
    assert carriers == ["PLAID-CLIENT-ID", "PLAID-SECRET", "Plaid-Version"]


def test_approve_prints_every_safety_field_an_entry_sets_beyond_the_classifiers_posture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "anvil.yaml"
    _anvil(capsys, "init", str(PAYMENTS), "--service", "payments", "--out", str(manifest))
    text = manifest.read_text(encoding="utf-8").replace(
        "  payments.refunds.create:\n    state: review_required\n",
        "  payments.refunds.create:\n    state: review_required\n    risk: low\n"
        "    confirmation:\n      required: false\n",
    )
    manifest.write_text(text, encoding="utf-8")
    code, out, _ = _anvil(capsys, "approve", str(manifest), "payments.refunds.create", "payments.customers.get")
    assert code == 0
    lines = out.splitlines()
    at = lines.index("approved payments.refunds.create")
    assert lines[at + 1 : at + 3] == ['  sets risk: "low"', '  sets confirmation: {"required": false}']
    assert "approved payments.customers.get" in lines
    assert "1 of the approved entries set safety fields beyond the classifier's posture" in out


def test_inspect_shows_an_operations_host_when_it_is_not_the_services_and_where_its_credential_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "openapi.json"
    status = {"operationId": "listIncidents", "servers": [{"url": "https://status.example.net/v1"}], "responses": {}}
    spec.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "Status", "version": "1"},
                "servers": [{"url": "https://api.example.com/v1"}],
                "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
                "security": [{"key": []}],
                "paths": {"/incidents": {"get": status}, "/items": {"get": {"operationId": "listItems"}}},
            }
        ),
        encoding="utf-8",
    )
    manifest, bundle = tmp_path / "anvil.yaml", tmp_path / "bundle"
    assert _anvil(capsys, "init", str(spec), "--service", "status", "--out", str(manifest))[0] == 0
    drafted = manifest.read_text(encoding="utf-8")
    assert "# server: https://status.example.net/v1 (host status.example.net, not the service's api.example.com)" in (
        drafted
    )
    _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    rows = {
        row["operationId"]: row for row in json.loads(_anvil(capsys, "inspect", str(bundle), "--json")[1])["operations"]
    }
    assert (rows["status.incidents.list"]["host"], rows["status.incidents.list"]["credential"]) == (
        "status.example.net",
        "withheld",
    )
    assert "host" not in rows["status.items.list"]
    text = _anvil(capsys, "inspect", str(bundle))[1]
    assert "HOST" in text and "status.example.net (credential withheld)" in text
    manifest.write_text(
        drafted.replace(
            "  status.incidents.list:\n    state: review_required\n",
            "  status.incidents.list:\n    state: review_required\n    credential_hosts: [status.example.net]\n",
        ),
        encoding="utf-8",
    )
    code, out, _ = _anvil(capsys, "approve", str(manifest), "status.incidents.list")
    assert code == 0 and '  sets credential_hosts: ["status.example.net"]' in out.splitlines()
    _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    rows = {
        row["operationId"]: row for row in json.loads(_anvil(capsys, "inspect", str(bundle), "--json")[1])["operations"]
    }
    assert rows["status.incidents.list"]["credential"] == "sent"
