"""The generated Terraform against the google provider's own schema (the oldest version ``main.tf`` admits).

Every resource type, argument and nested block ``main.tf`` writes must exist in hashicorp/google at the
lower bound of its version constraint, every required argument and block must be written, and every
``google_*.<name>.<attribute>`` reference must name an attribute the resource has. The schema comes from
the provider's prebuilt CDK bindings on PyPI (:mod:`tests.bundle.provider_schema`), downloaded by
``.ci/services.sh`` (``ANVIL_TEST_GOOGLE_PROVIDER_BINDINGS``). Per database mode, real Terraform then
evaluates, with that mode's inputs, each resource's ``count`` and each required argument that reads only
variables: an instantiated resource never gets a null required argument.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import hcl2
import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation
from anvil.bundle.terraform import MAIN_TF_PATH, VARIABLES_TF_PATH
from tests.bundle.provider_schema import ProviderSchema, check_body
from tests.conftest import missing

_OPTIONS = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=True, with_comments=False)
_REFERENCE = re.compile(r"\b(google_[a-z0-9_]+)\.([a-z0-9_]+)(?:\[[^\]]*\])?\.([a-z0-9_]+)")
_ENV = {"TF_CLI_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin", "CHECKPOINT_DISABLE": "1"}
HEX = "0" * 64
_KEYS = ("ledger_database_mode", "ledger_database_id", "ledger_location")
MODES: dict[str, dict[str, Any]] = {
    "shared": dict(zip(_KEYS, ("shared", "bank-shared-ledger", None), strict=True)),
    "dedicated": dict(zip(_KEYS, ("dedicated", "payments-ledger", "nam5"), strict=True)),
}


@pytest.fixture(scope="module")
def provider() -> ProviderSchema:
    path = os.environ.get("ANVIL_TEST_GOOGLE_PROVIDER_BINDINGS", "")
    if not path or not Path(path).is_file():
        missing("ANVIL_TEST_GOOGLE_PROVIDER_BINDINGS (the google provider's CDK bindings; .ci/services.sh fetches it)")
    return ProviderSchema(Path(path))


def _none_doc(doc: Document) -> Document:
    ops = tuple(replace(op, state="blocked") if op.id == "payments.refunds.create" else op for op in doc.operations)
    return replace(doc, operations=ops)


def _parse(text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = hcl2.loads(text, serialization_options=_OPTIONS)
    return parsed


def _named(blocks: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(key, value) for block in blocks for key, value in block.items() if key != "__is_block__"]


def _resources(tf: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (rtype, name, body)
        for rtype, named in _named(tf.get("resource", []))
        for name, body in named.items()
        if name != "__is_block__"
    ]


def schema_problems(main_tf: str, provider: ProviderSchema) -> list[str]:
    """Everything in ``main_tf`` the provider schema does not accept (empty when it all fits)."""
    tf = _parse(main_tf)
    problems: list[str] = []
    for name, body in _named(tf.get("provider", [])):
        assert name == "google"
        provider_schema = provider.resource("provider")
        assert provider_schema is not None
        check_body(body, provider_schema, "provider.google", problems, meta=False)
    declared: dict[str, str] = {}
    for rtype, name, body in _resources(tf):
        schema = provider.resource(rtype)
        if schema is None:
            problems.append(f"{rtype}: no such resource type in hashicorp/google {provider.provider_version}")
            continue
        declared[f"{rtype}.{name}"] = rtype
        check_body(body, schema, f"{rtype}.{name}", problems, meta=True)
    for rtype, name, attribute in _REFERENCE.findall(main_tf):
        schema = provider.resource(rtype)
        if f"{rtype}.{name}" not in declared or schema is None:
            problems.append(f"reference to undeclared {rtype}.{name}")
        elif attribute not in schema.attributes and attribute not in schema.computed:
            problems.append(f"{rtype}.{name}.{attribute}: {rtype} has no attribute {attribute!r}")
    return problems


@pytest.mark.parametrize("variant", ["ledger", "none", "namespaced"])
def test_every_resource_argument_and_block_exists_in_the_google_provider_schema(
    payments_doc: Document, provider: ProviderSchema, variant: str
) -> None:
    doc = _none_doc(payments_doc) if variant == "none" else payments_doc
    generation = Generation(deployment_namespace="payments-prod-eu" if variant == "namespaced" else None)
    main_tf = emit_bundle(doc, generation)[MAIN_TF_PATH].decode()
    version = re.search(r'version = ">= ([0-9.]+), < 8\.0\.0"', main_tf)
    assert version is not None and version.group(1) == provider.provider_version  # the oldest admitted version
    assert schema_problems(main_tf, provider) == []
    types = {rtype for rtype, _name, _body in _resources(_parse(main_tf))}
    assert ("google_firestore_database" in types) is (variant != "none")


def test_the_schema_check_finds_a_wrong_argument_block_resource_and_attribute(
    payments_doc: Document, provider: ProviderSchema
) -> None:
    main_tf = emit_bundle(payments_doc)[MAIN_TF_PATH].decode()
    broken = {
        "location_id             = var.ledger_location": "location                = var.ledger_location",
        "      image = ": "      image_url = ",
        "      ports {": "      port {",
        'resource "google_firestore_field" "ledger_result_expiry"': 'resource "google_firestore_fields" "x"',
        "google_cloud_run_v2_service.tools.uri": "google_cloud_run_v2_service.tools.url",
    }
    for old, new in broken.items():
        assert old in main_tf, old
        assert schema_problems(main_tf.replace(old, new), provider) != [], new
    problems = schema_problems(main_tf.replace("      image = ", "      image_url = "), provider)
    assert any("required argument 'image' is not set" in problem for problem in problems)


def _console(work: Path, expressions: list[str]) -> list[Any]:
    binary = shutil.which("terraform")
    if binary is None:
        missing("no terraform binary on PATH (the machine image provides one)")
    assert binary is not None
    line = f"jsonencode([{', '.join(expressions)}])\n"  # one expression: console evaluates one line of stdin
    command = [binary, f"-chdir={work}", "console", "-no-color"]
    done = subprocess.run(command, input=line, capture_output=True, text=True, env=_ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    values: list[Any] = json.loads(json.loads(done.stdout))
    assert len(values) == len(expressions)
    return values


@pytest.mark.parametrize("mode", ["shared", "dedicated"])
def test_no_instantiated_resource_gets_a_null_required_argument_in_either_mode(
    payments_doc: Document, provider: ProviderSchema, tmp_path: Path, mode: str
) -> None:
    files = emit_bundle(payments_doc)
    (tmp_path / "variables.tf").write_bytes(files[VARIABLES_TF_PATH])
    tfvars = {
        "project_id": "acme-prod-1",
        "image_tag": "build-1",
        "anvil_bundle_hash": HEX,
        "anvil_expected_project_id": "acme-prod-1",
        "anvil_ledger_input_digest": HEX,
        **MODES[mode],
    }
    (tmp_path / "mode.auto.tfvars.json").write_text(json.dumps(tfvars), encoding="utf-8")
    resources = _resources(_parse(files[MAIN_TF_PATH].decode()))
    counts = _console(tmp_path, [body["count"][2:-1] if "count" in body else "1" for _t, _n, body in resources])
    checked: list[tuple[str, str]] = []
    for (rtype, name, body), count in zip(resources, counts, strict=True):
        schema = provider.resource(rtype)
        assert schema is not None
        if count == 0:
            continue
        for argument, required in schema.attributes.items():
            value = body.get(argument)
            if required and isinstance(value, str) and re.fullmatch(r"\$\{var\.[a-z0-9_]+\}", value):
                checked.append((f"{rtype}.{name}.{argument}", value[2:-1]))
    values = _console(tmp_path, [expression for _where, expression in checked])
    assert [where for (where, _e), value in zip(checked, values, strict=True) if value is None] == []
    database = [count for (rtype, _n, _b), count in zip(resources, counts, strict=True) if rtype.endswith("_database")]
    assert database == [1 if mode == "dedicated" else 0]
    assert ("google_firestore_database.ledger.location_id", "var.ledger_location") in checked or mode == "shared"
