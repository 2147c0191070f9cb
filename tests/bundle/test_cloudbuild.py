"""``deploy/cloudbuild.yaml``: build, push, copy the operator's tfvars and a kept plan; never apply."""

from __future__ import annotations

import json
from dataclasses import replace

import yaml

from anvil.air.model import Document
from anvil.bundle.cloudbuild import cloudbuild
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation

PATH = "deploy/cloudbuild.yaml"


def test_the_file_parses_as_yaml_and_equals_the_configuration_data(payments_doc: Document) -> None:
    parsed = yaml.safe_load(emit_bundle(payments_doc)[PATH])
    assert parsed == cloudbuild(payments_doc, Generation())
    assert [step["id"] for step in parsed["steps"]] == ["build", "push", "terraform-workdir", "operator-inputs", "plan"]


def test_it_builds_and_pushes_one_image_tagged_by_build_id(payments_doc: Document) -> None:
    parsed = yaml.safe_load(emit_bundle(payments_doc)[PATH])
    image = "${_REGION}-docker.pkg.dev/${PROJECT_ID}/${_AR_REPO}/payments-tools:$BUILD_ID"
    build, push = parsed["steps"][0], parsed["steps"][1]
    assert build["args"] == ["build", "-f", "deploy/Dockerfile", "-t", image, "."]
    assert push["args"] == ["push", image]
    assert parsed["images"] == [image]


def test_it_plans_only_and_keeps_the_plan_as_artifacts(payments_doc: Document) -> None:
    text = emit_bundle(payments_doc)[PATH].decode()
    parsed = yaml.safe_load(text)
    inputs, plan = parsed["steps"][3], parsed["steps"][4]
    assert inputs["args"] == ["storage", "cp", "${_TFVARS_URI}", "/workspace/tf-work/operator.auto.tfvars.json"]
    script = plan["args"][1]
    assert "plan -input=false -out=tfplan" in script and "show -no-color tfplan" in script
    assert '-backend-config="prefix=${_TF_STATE_PREFIX}"' in script and "project_id=$PROJECT_ID" in script
    commands = json.dumps(parsed["steps"])
    assert "apply" not in commands and "-auto-approve" not in text and "SHORT_SHA" not in text
    assert parsed["artifacts"]["objects"]["paths"] == [
        "tf-work/tfplan",
        "tf-work/tfplan.txt",
        "tf-work/.terraform.lock.hcl",
    ]
    assert parsed["substitutions"]["_TF_STATE_PREFIX"] == "anvil/payments-tools"
    assert parsed["options"] == {"logging": "CLOUD_LOGGING_ONLY"}


def test_the_air_environment_propagates_to_anvil_env(payments_doc: Document) -> None:
    staging = replace(payments_doc, service=replace(payments_doc.service, environment="test"))
    assert yaml.safe_load(emit_bundle(staging)[PATH])["substitutions"]["_ANVIL_ENV"] == "test"
    assert yaml.safe_load(emit_bundle(payments_doc)[PATH])["substitutions"]["_ANVIL_ENV"] == "prod"
