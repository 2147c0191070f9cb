"""``deploy/cloudbuild.yaml``: build and push the gateway image, then a reviewed ``terraform plan`` only.

The pipeline never applies: the rendered plan, the binary plan and the provider lock file are kept in the
state bucket, and the reviewed plan is applied separately (original-ledger §5.7). The project comes only
from Cloud Build's ``$PROJECT_ID``; ledger tfvars carry the *expected* project, which the plan compares.

Paths are relative to the bundle, wherever the build is submitted from. ``gcloud builds submit --config
<bundle>/deploy/cloudbuild.yaml`` uploads the *current* directory (the workspace root, the bundle, or
anything in between), so the first step finds this config's bundle in the upload by its identity - the
sha256 of its ``air.json`` followed by its ``generation.json``, written into the config - and every later
step works from there. It also refuses to start without the one input only the operator has,
``_TFVARS_URI``, with a message saying what to pass: a required substitution, never a placeholder default.

Terraform state goes where the operator's inputs already are: unless ``_TF_STATE_BUCKET`` names another
bucket, the first step takes the bucket ``_TFVARS_URI`` names, and the state lives there under
``_TF_STATE_PREFIX`` (``anvil/<deployment namespace>-tools``, so two deployments sharing the bucket never
share state); the plans are kept in the same bucket under ``plans/<BUILD_ID>/``. The step writes the
bucket it chose to :data:`STATE_BUCKET_FILE` and says it in the build log; the later steps read it there.

The YAML is written by a small fixed serializer (JSON-quoted scalars are valid YAML), so the bytes do not
depend on a YAML library's version. Cloud Build substitutes ``$NAME`` and ``${NAME}`` everywhere, so the
shell's own variables are written ``$$name``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from anvil.air.model import Document
from anvil.bundle.airfile import air_file
from anvil.bundle.container import DOCKERFILE_PATH
from anvil.bundle.coordinates import coordinates
from anvil.bundle.encoding import json_file, text_file
from anvil.bundle.generation import Generation

__all__ = [
    "BUNDLE_DIR_FILE",
    "CLOUDBUILD_PATH",
    "REQUIRED_SUBSTITUTIONS",
    "STATE_BUCKET_FILE",
    "TERRAFORM_IMAGE",
    "bundle_identity",
    "cloudbuild",
    "emit_cloudbuild",
]

CLOUDBUILD_PATH = "deploy/cloudbuild.yaml"
#: The Terraform image of the plan step, pinned by version.
TERRAFORM_IMAGE = "hashicorp/terraform:1.11.4"
#: Inputs without a usable default: the build stops at its first step when one is empty.
REQUIRED_SUBSTITUTIONS: dict[str, str] = {
    "_TFVARS_URI": "the gs://BUCKET/OBJECT URI of your reviewed operator tfvars JSON",
}
_DOCKER = "gcr.io/cloud-builders/docker"
_GCLOUD = "gcr.io/cloud-builders/gcloud"
_WORK = "/workspace/tf-work"
#: Every step starts in /workspace (the uploaded source); the shell steps use paths relative to it.
_WORK_REL = "tf-work"
#: Written by the first step: the bundle directory, relative to /workspace.
BUNDLE_DIR_FILE = f"{_WORK_REL}/anvil-bundle-dir"
#: Written by the first step: the bucket holding Terraform state and the kept plans (``_TF_STATE_BUCKET``,
#: else the bucket ``_TFVARS_URI`` names), relative to /workspace.
STATE_BUCKET_FILE = f"{_WORK_REL}/anvil-state-bucket"


def bundle_identity(doc: Document, generation: Generation) -> str:
    """sha256 hex of the bundle's ``air.json`` bytes followed by its ``generation.json`` bytes."""
    return hashlib.sha256(air_file(doc) + json_file(generation.to_json())).hexdigest()


#: The first step. ``@CHECKS@`` and ``@IDENTITY@`` are filled in; ``$$`` is the shell's ``$`` to Cloud Build.
_LOCATE = """\
@CHECKS@case "${_TF_STATE_BUCKET}" in
  *[!a-z0-9._-]*) echo "cloudbuild: _TF_STATE_BUCKET must be a bucket name, not a URI or a path." >&2; exit 1;;
esac
case "${_TFVARS_URI}" in
  gs://?*/?*) ;;
  *) echo "cloudbuild: _TFVARS_URI must be a gs://BUCKET/OBJECT URI." >&2; exit 1;;
esac
state="${_TF_STATE_BUCKET}"
chosen="_TF_STATE_BUCKET"
if [ -z "$$state" ]; then
  inputs="${_TFVARS_URI}"
  inputs=$${inputs#gs://}
  state=$${inputs%%/*}
  chosen="the bucket _TFVARS_URI names; pass _TF_STATE_BUCKET to choose another"
fi
want=@IDENTITY@
found=()
while IFS= read -r -d '' air; do
  dir=$${air%/air.json}
  test -f "$$dir/generation.json" || continue
  got=$$(cat "$$air" "$$dir/generation.json" | sha256sum | cut -c1-64)
  if [ "$$got" = "$$want" ]; then found+=("$$dir"); fi
done < <(find . -name node_modules -prune -o -name air.json -type f -print0)
if [ "$${#found[@]}" -ne 1 ]; then
  echo "cloudbuild: expected exactly one copy of this bundle in the uploaded source," \\
    "found $${#found[@]}$${found[*]:+: $${found[*]}}." >&2
  echo "Submit from the workspace root or the bundle directory, and check that" \\
    ".gcloudignore (or .gitignore) keeps the bundle." >&2
  exit 1
fi
if [ -e @WORK@ ]; then
  echo "cloudbuild: the uploaded source already holds @WORK@/; remove it or list it in .gcloudignore." >&2
  exit 1
fi
mkdir @WORK@
printf '%s\\n' "$${found[0]}" > @DIR_FILE@
printf '%s\\n' "$$state" > @STATE_FILE@
cp "$${found[0]}"/deploy/terraform/*.tf @WORK@/
echo "cloudbuild: bundle $${found[0]}"
echo "cloudbuild: Terraform state in gs://$$state/${_TF_STATE_PREFIX} ($$chosen)"
"""


def _locate_script(identity: str) -> str:
    checks = "".join(
        f'test -n "${{{name}}}" || {{ echo "cloudbuild: substitution {name} is required: pass '
        f'--substitutions {name}=... ({meaning})." >&2; exit 1; }}\n'
        for name, meaning in REQUIRED_SUBSTITUTIONS.items()
    )
    values = {
        "CHECKS": checks,
        "IDENTITY": identity,
        "WORK": _WORK_REL,
        "DIR_FILE": BUNDLE_DIR_FILE,
        "STATE_FILE": STATE_BUCKET_FILE,
    }
    script = _LOCATE
    for key, value in values.items():
        script = script.replace(f"@{key}@", value)
    return script


def cloudbuild(doc: Document, generation: Generation) -> dict[str, Any]:
    """The Cloud Build configuration as data (key order as written)."""
    coords = coordinates(doc, generation)
    image = f"${{_REGION}}-docker.pkg.dev/${{PROJECT_ID}}/${{_AR_REPO}}/{coords.service_name}:$BUILD_ID"
    tf = f"terraform -chdir={_WORK}"
    plan = " && ".join(
        (
            f'{tf} init -input=false -backend-config="bucket=$$(cat /workspace/{STATE_BUCKET_FILE})"'
            ' -backend-config="prefix=${_TF_STATE_PREFIX}"',
            f'{tf} plan -input=false -out=tfplan -var="project_id=$PROJECT_ID" -var="region=${{_REGION}}"'
            ' -var="ar_repo=${_AR_REPO}" -var="image_tag=$BUILD_ID" -var="anvil_env=${_ANVIL_ENV}"',
            f"{tf} show -no-color tfplan > {_WORK}/tfplan.txt",
        )
    )
    build = f'bundle=$$(cat {BUNDLE_DIR_FILE}) && docker build -f "$$bundle/{DOCKERFILE_PATH}" -t "{image}" "$$bundle"'
    kept = " ".join(f"{_WORK_REL}/{name}" for name in ("tfplan", "tfplan.txt", ".terraform.lock.hcl"))
    return {
        "steps": [
            {
                "id": "locate-bundle",
                "name": "ubuntu",
                "entrypoint": "bash",
                "args": ["-ceu", _locate_script(bundle_identity(doc, generation))],
            },
            {
                "id": "build",
                "name": _DOCKER,
                "entrypoint": "bash",
                "env": ["DOCKER_BUILDKIT=1"],
                "args": ["-ceu", build],
            },
            {"id": "push", "name": _DOCKER, "args": ["push", image]},
            {
                "id": "operator-inputs",
                "name": _GCLOUD,
                "args": ["storage", "cp", "${_TFVARS_URI}", f"{_WORK}/operator.auto.tfvars.json"],
            },
            {"id": "plan", "name": TERRAFORM_IMAGE, "entrypoint": "sh", "args": ["-c", plan]},
            {
                "id": "keep-plan",
                "name": _GCLOUD,
                "entrypoint": "bash",
                "args": ["-ceu", f'gcloud storage cp {kept} "gs://$$(cat {STATE_BUCKET_FILE})/plans/$BUILD_ID/"'],
            },
        ],
        "images": [image],
        "substitutions": {
            "_REGION": "us-central1",
            "_AR_REPO": "anvil",
            "_ANVIL_ENV": coords.environment,
            "_TFVARS_URI": "",
            "_TF_STATE_BUCKET": "",
            "_TF_STATE_PREFIX": coords.state_prefix,
        },
        "options": {"logging": "CLOUD_LOGGING_ONLY"},
    }


def _yaml(value: Any, indent: str, out: list[str]) -> None:
    """Block-style YAML: mappings and sequences nest; every string is a JSON (double-quoted) scalar."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list):
                out.append(f"{indent}{key}:")
                _yaml(item, indent + "  ", out)
            else:
                out.append(f"{indent}{key}: {json.dumps(item)}")
    else:
        for item in value:
            if isinstance(item, dict):
                first = True
                for key, inner in item.items():
                    lead = indent + ("- " if first else "  ")
                    first = False
                    if isinstance(inner, dict | list):
                        out.append(f"{lead}{key}:")
                        _yaml(inner, indent + "    ", out)
                    else:
                        out.append(f"{lead}{key}: {json.dumps(inner)}")
            else:
                out.append(f"{indent}- {json.dumps(item)}")


def emit_cloudbuild(doc: Document, generation: Generation) -> dict[str, bytes]:
    """``{"deploy/cloudbuild.yaml": bytes}``."""
    out = [
        "# Generated by Anvil; compiler-owned. Builds and pushes the gateway image and writes a reviewed",
        "# Terraform plan. It never applies: apply the archived, reviewed plan separately. Submit it from the",
        "# workspace root or the bundle directory; _TFVARS_URI is a required substitution. Terraform state goes",
        "# to the bucket _TFVARS_URI names under _TF_STATE_PREFIX (keyed by the deployment namespace), unless",
        "# _TF_STATE_BUCKET names another bucket; the first step says which in the build log.",
    ]
    _yaml(cloudbuild(doc, generation), "", out)
    return {CLOUDBUILD_PATH: text_file("\n".join(out))}
