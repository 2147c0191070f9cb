"""``deploy/cloudbuild.yaml``: found from wherever it is submitted, required inputs, build, push, a kept plan.

The shell steps run here for real, with bash, after the substitutions Cloud Build would make: the first step
against a workspace laid out as seed 001 has it (``generated/payments`` under the root the build is
submitted from), and the build step with a stand-in ``docker`` that records what it was asked to build.
:func:`_submit` runs seed 001's own command line through every step in order, as Cloud Build would, with
stand-in ``docker``, ``gcloud`` and ``terraform`` that record their arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from anvil.air.model import Document
from anvil.bundle.cloudbuild import BUNDLE_DIR_FILE, REQUIRED_SUBSTITUTIONS, bundle_identity, cloudbuild
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation

PATH = "deploy/cloudbuild.yaml"
#: Cloud Build's built-in substitutions (the ones a config may use without declaring them).
BUILTINS = {"PROJECT_ID": "acme-prod-1", "BUILD_ID": "b-0001", "PROJECT_NUMBER": "1234", "LOCATION": "global"}
_TOKEN = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
#: The seed's command supplies only _TFVARS_URI.
SEED_SUBSTITUTIONS = {"_TFVARS_URI": "gs://PRIVATE_INPUT_BUCKET/operator.auto.tfvars.json"}
#: Seed 001's Cloud Build command, verbatim.
SEED_COMMAND = """\
gcloud builds submit --project acme-prod-1 \\
  --config generated/payments/deploy/cloudbuild.yaml \\
  --substitutions _TFVARS_URI=gs://PRIVATE_INPUT_BUCKET/operator.auto.tfvars.json
"""
#: What each builder image runs when a step names no entrypoint.
_ENTRYPOINTS = {"gcr.io/cloud-builders/docker": "docker", "gcr.io/cloud-builders/gcloud": "gcloud"}
#: Stand-ins that record every call (tool name, then one bracketed argument each) and do the least the next
#: step needs: gcloud copies the operator inputs, terraform writes the plan its -out names.
_FAKES = {
    "docker": "",
    "gcloud": 'if [ "$1 $2 $#" = "storage cp 4" ] && [ "${3#gs://}" != "$3" ]; then echo "{}" > "$4"; fi\n',
    "terraform": (
        'dir=.; for a in "$@"; do\n'
        'case "$a" in -chdir=*) dir=${a#-chdir=};; -out=*) : > "$dir/${a#-out=}";; esac; done\n'
        'case " $* " in *" show "*) echo "Plan: 9 to add, 0 to change, 0 to destroy.";; esac\n'
    ),
}


def _substitute(text: str, values: dict[str, str]) -> str:
    """Cloud Build's substitution: ``$$`` is a literal ``$``; every other ``$NAME``/``${NAME}`` must be known."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(2)
        if name not in values:
            raise KeyError(f"${name} is neither a built-in nor a declared substitution")
        return values[name]

    return _TOKEN.sub(one, text)


def _config(doc: Document, generation: Generation | None = None) -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load(emit_bundle(doc, generation)[PATH])
    return parsed


def _step(config: dict[str, Any], step_id: str, given: dict[str, str]) -> dict[str, Any]:
    values = {**BUILTINS, **config["substitutions"], **given}
    step = next(step for step in config["steps"] if step["id"] == step_id)
    resolved: dict[str, Any] = json.loads(_substitute(json.dumps(step), values))
    return resolved


def _workspace(tmp_path: Path, doc: Document) -> tuple[Path, Path]:
    """A workspace root holding the compiled bundle at generated/payments (and an unrelated file)."""
    root = tmp_path / "workspace"
    bundle = root / "generated" / "payments"
    for rel, data in emit_bundle(doc).items():
        (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
        (bundle / rel).write_bytes(data)
    (root / "README.md").write_text("the operator's workspace\n", encoding="utf-8")
    return root, bundle


def _bash(step: dict[str, Any], cwd: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    assert step["entrypoint"] == "bash"
    env = {"PATH": path or os.environ["PATH"], "LC_ALL": "C"}
    return subprocess.run(["bash", *step["args"]], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _submit(command: str, root: Path, bin_dir: Path) -> tuple[list[tuple[str, subprocess.CompletedProcess[str]]], str]:
    """Run a ``gcloud builds submit`` command line's config through its steps, from ``root`` as the upload.

    Cloud Build mounts the upload at /workspace; here ``root`` stands in for it. Stops at the first failing
    step. Returns each step run with its result, and the stand-ins' call log.
    """
    words = shlex.split(command.replace("\\\n", " "))
    assert words[:3] == ["gcloud", "builds", "submit"]
    flags = dict(zip(words[3::2], words[4::2], strict=True))
    given = dict(pair.split("=", 1) for pair in flags.get("--substitutions", "").split(",") if pair)
    config: dict[str, Any] = yaml.safe_load((root / flags["--config"]).read_text(encoding="utf-8"))
    builtins = {**BUILTINS, "PROJECT_ID": flags["--project"]}
    bin_dir.mkdir(exist_ok=True)
    log = bin_dir / "calls.log"
    for tool, body in _FAKES.items():
        record = f'{{ printf %s {tool}; for a in "$@"; do printf " [%s]" "$a"; done; echo; }} >> "{log}"\n'
        (bin_dir / tool).write_text("#!/bin/sh\n" + record + body, encoding="utf-8")
        (bin_dir / tool).chmod(0o755)
    ran: list[tuple[str, subprocess.CompletedProcess[str]]] = []
    for step in config["steps"]:
        values = {**builtins, **config["substitutions"], **given}
        resolved = json.loads(_substitute(json.dumps(step), values).replace("/workspace", str(root)))
        entry = resolved.get("entrypoint") or _ENTRYPOINTS[resolved["name"]]
        env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LC_ALL": "C"}
        env.update(item.split("=", 1) for item in resolved.get("env", []))
        done = subprocess.run([entry, *resolved["args"]], cwd=root, env=env, capture_output=True, text=True, timeout=60)
        ran.append((resolved["id"], done))
        if done.returncode != 0:
            break
    return ran, log.read_text(encoding="utf-8") if log.exists() else ""


def test_seed_001s_command_as_written_runs_every_step_with_state_in_the_bucket_its_inputs_are_in(
    payments_doc: Document, tmp_path: Path
) -> None:
    root, _bundle = _workspace(tmp_path, payments_doc)
    ran, calls = _submit(SEED_COMMAND, root, tmp_path / "bin")
    failed = [(step, done.stderr) for step, done in ran if done.returncode != 0]
    assert failed == []
    assert [step for step, _ in ran] == ["locate-bundle", "build", "push", "operator-inputs", "plan", "keep-plan"]
    said = ran[0][1].stdout
    assert "Terraform state in gs://PRIVATE_INPUT_BUCKET/anvil/payments-tools (the bucket _TFVARS_URI names" in said
    assert "[-backend-config=bucket=PRIVATE_INPUT_BUCKET] [-backend-config=prefix=anvil/payments-tools]" in calls
    assert "[-var=project_id=acme-prod-1]" in calls and "[-out=tfplan]" in calls
    assert "gcloud [storage] [cp] [gs://PRIVATE_INPUT_BUCKET/operator.auto.tfvars.json]" in calls
    assert "[gs://PRIVATE_INPUT_BUCKET/plans/b-0001/]" in calls
    assert (root / "tf-work" / "tfplan.txt").read_text(encoding="utf-8").startswith("Plan: 9 to add")
    assert "apply" not in calls


def test_a_named_state_bucket_is_used_instead_of_the_inputs_bucket(payments_doc: Document, tmp_path: Path) -> None:
    root, _bundle = _workspace(tmp_path, payments_doc)
    command = SEED_COMMAND.rstrip() + ",_TF_STATE_BUCKET=acme-tf-state\n"
    ran, calls = _submit(command, root, tmp_path / "bin")
    assert [done.returncode for _, done in ran] == [0] * 6
    assert "Terraform state in gs://acme-tf-state/anvil/payments-tools (_TF_STATE_BUCKET)" in ran[0][1].stdout
    assert "[-backend-config=bucket=acme-tf-state]" in calls and "[gs://acme-tf-state/plans/b-0001/]" in calls
    assert "PRIVATE_INPUT_BUCKET/plans" not in calls


def test_the_file_parses_as_yaml_and_equals_the_configuration_data(payments_doc: Document) -> None:
    parsed = _config(payments_doc)
    assert parsed == cloudbuild(payments_doc, Generation())
    assert [step["id"] for step in parsed["steps"]] == [
        "locate-bundle",
        "build",
        "push",
        "operator-inputs",
        "plan",
        "keep-plan",
    ]


def test_every_dollar_is_a_builtin_a_declared_substitution_or_an_escaped_shell_dollar(payments_doc: Document) -> None:
    config = _config(payments_doc)
    values = {**BUILTINS, **config["substitutions"]}
    _substitute(json.dumps(config), values)  # raises on an undeclared name, e.g. a shell $var left unescaped
    with pytest.raises(KeyError):
        _substitute("echo $dir", values)


def test_the_seed_command_from_the_workspace_root_finds_the_bundle_and_builds_its_image(
    payments_doc: Document, tmp_path: Path
) -> None:
    root, _bundle = _workspace(tmp_path, payments_doc)
    config = _config(payments_doc)
    given = {**SEED_SUBSTITUTIONS, "_TF_STATE_BUCKET": "acme-tf-state"}
    located = _bash(_step(config, "locate-bundle", given), root)
    assert located.returncode == 0, located.stderr
    assert (root / BUNDLE_DIR_FILE).read_text(encoding="utf-8") == "./generated/payments\n"
    assert sorted(p.name for p in (root / "tf-work").glob("*.tf")) == ["main.tf", "variables.tf"]
    assert (root / "tf-work" / "main.tf").read_bytes() == emit_bundle(payments_doc)["deploy/terraform/main.tf"]
    fakes = tmp_path / "bin"
    fakes.mkdir()
    (fakes / "docker").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$PWD/docker.args"\n', encoding="utf-8")
    (fakes / "docker").chmod(0o755)
    built = _bash(_step(config, "build", given), root, path=f"{fakes}:{os.environ['PATH']}")
    assert built.returncode == 0, built.stderr
    args = (root / "docker.args").read_text(encoding="utf-8").splitlines()
    image = "us-central1-docker.pkg.dev/acme-prod-1/anvil/payments-tools:b-0001"
    assert args == ["build", "-f", "./generated/payments/deploy/Dockerfile", "-t", image, "./generated/payments"]
    assert (root / args[2]).is_file() and (root / args[-1] / "air.json").is_file()
    step = next(step for step in config["steps"] if step["id"] == "build")
    assert step["env"] == ["DOCKER_BUILDKIT=1"]  # BuildKit reads deploy/Dockerfile.dockerignore


def test_submitted_from_inside_the_bundle_it_finds_the_bundle_too(payments_doc: Document, tmp_path: Path) -> None:
    _root, bundle = _workspace(tmp_path, payments_doc)
    given = {**SEED_SUBSTITUTIONS, "_TF_STATE_BUCKET": "acme-tf-state"}
    located = _bash(_step(_config(payments_doc), "locate-bundle", given), bundle)
    assert located.returncode == 0, located.stderr
    assert (bundle / BUNDLE_DIR_FILE).read_text(encoding="utf-8") == ".\n"


def test_without_the_inputs_uri_the_build_stops_first_and_says_which_substitution_to_pass(
    payments_doc: Document, tmp_path: Path
) -> None:
    root, _bundle = _workspace(tmp_path, payments_doc)
    config = _config(payments_doc)
    assert {name: config["substitutions"][name] for name in REQUIRED_SUBSTITUTIONS} == {"_TFVARS_URI": ""}
    assert config["substitutions"]["_TF_STATE_BUCKET"] == ""  # optional: the inputs' bucket by default
    assert "REPLACE_WITH" not in emit_bundle(payments_doc)[PATH].decode()
    no_inputs = _bash(_step(config, "locate-bundle", {"_TF_STATE_BUCKET": "acme-tf-state"}), root)
    assert no_inputs.returncode == 1
    assert "substitution _TFVARS_URI is required: pass --substitutions _TFVARS_URI=" in no_inputs.stderr
    assert not (root / "tf-work").exists()
    uri = _bash(_step(config, "locate-bundle", {**SEED_SUBSTITUTIONS, "_TF_STATE_BUCKET": "gs://acme"}), root)
    assert (uri.returncode, "_TF_STATE_BUCKET must be a bucket name" in uri.stderr) == (1, True)


def test_two_copies_of_the_bundle_in_the_upload_are_refused_by_name(payments_doc: Document, tmp_path: Path) -> None:
    root, bundle = _workspace(tmp_path, payments_doc)
    shutil.copytree(bundle, root / "old" / "payments")
    other = replace(payments_doc, service=replace(payments_doc.service, version="2026-08-01-prod"))
    assert bundle_identity(other, Generation()) != bundle_identity(payments_doc, Generation())
    given = {**SEED_SUBSTITUTIONS, "_TF_STATE_BUCKET": "acme-tf-state"}
    refused = _bash(_step(_config(payments_doc), "locate-bundle", given), root)
    assert refused.returncode == 1
    assert "expected exactly one copy of this bundle in the uploaded source, found 2" in refused.stderr
    assert "./generated/payments" in refused.stderr and "./old/payments" in refused.stderr
    missing = _bash(_step(_config(other), "locate-bundle", given), root)
    assert "found 0." in missing.stderr and ".gcloudignore" in missing.stderr
    (root / "old" / "payments" / "air.json").unlink()
    (root / "tf-work").mkdir()
    stale = _bash(_step(_config(payments_doc), "locate-bundle", given), root)
    assert "already holds tf-work/" in stale.stderr and stale.returncode == 1


def test_it_plans_only_and_keeps_the_plan_in_the_state_bucket(payments_doc: Document) -> None:
    text = emit_bundle(payments_doc)[PATH].decode()
    parsed = yaml.safe_load(text)
    steps = {step["id"]: step for step in parsed["steps"]}
    assert steps["operator-inputs"]["args"] == [
        "storage",
        "cp",
        "${_TFVARS_URI}",
        "/workspace/tf-work/operator.auto.tfvars.json",
    ]
    script = steps["plan"]["args"][1]
    assert "plan -input=false -out=tfplan" in script and "show -no-color tfplan" in script
    assert '-backend-config="prefix=${_TF_STATE_PREFIX}"' in script and "project_id=$PROJECT_ID" in script
    commands = json.dumps(parsed["steps"])
    assert "apply" not in commands and "-auto-approve" not in text and "SHORT_SHA" not in text
    kept = _step(parsed, "keep-plan", {"_TF_STATE_BUCKET": "acme-tf-state"})["args"][1]
    assert kept == (
        "gcloud storage cp tf-work/tfplan tf-work/tfplan.txt tf-work/.terraform.lock.hcl "
        '"gs://$(cat tf-work/anvil-state-bucket)/plans/b-0001/"'
    )
    assert parsed["substitutions"]["_TF_STATE_PREFIX"] == "anvil/payments-tools"
    assert parsed["options"] == {"logging": "CLOUD_LOGGING_ONLY"}
    image = "${_REGION}-docker.pkg.dev/${PROJECT_ID}/${_AR_REPO}/payments-tools:$BUILD_ID"
    assert steps["push"]["args"] == ["push", image] and parsed["images"] == [image]


def test_the_air_environment_propagates_to_anvil_env(payments_doc: Document) -> None:
    staging = replace(payments_doc, service=replace(payments_doc.service, environment="test"))
    assert _config(staging)["substitutions"]["_ANVIL_ENV"] == "test"
    assert _config(payments_doc)["substitutions"]["_ANVIL_ENV"] == "prod"


def test_the_identity_is_the_bundles_air_and_generation_bytes(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc, Generation(deployment_namespace="payments-eu"))
    expected = hashlib.sha256(files["air.json"] + files["generation.json"]).hexdigest()
    assert bundle_identity(payments_doc, Generation(deployment_namespace="payments-eu")) == expected
    assert expected in files[PATH].decode()
