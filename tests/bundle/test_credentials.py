"""``deploy/credentials.required.yaml``: outbound credential variable names, never values."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from anvil.air.credential_names import auth_profile
from anvil.air.model import Auth, Document
from anvil.bundle.credentials import credential_variables
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation
from anvil.cli.serve_config import credential_variables as serve_reads
from anvil.compiler import build
from anvil.runtime.credentials import client_credentials_env, credential_env, credential_profile, expected_env
from tests.cli.fixtures.upstreams import VAULT_MANIFEST, VAULT_SPEC
from tests.conftest import EXAMPLES


def _required(files: dict[str, bytes]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(files["deploy/credentials.required.yaml"])
    return data


def test_a_client_credentials_requirement_lists_the_client_the_runtime_exchanges_and_its_static_token(
    payments_doc: Document,
) -> None:
    data = _required(emit_bundle(payments_doc))
    assert (data["serviceId"], data["authProfile"]) == ("payments", "prod")
    assert data["credentials"] == [
        {
            "type": "oauth2_client_credentials",
            "credentialProfile": None,
            "variables": [
                {"name": "ANVIL_PROD_CLIENT_ID", "recommendedSecretId": "payments-anvil-prod-client-id"},
                {"name": "ANVIL_PROD_CLIENT_SECRET", "recommendedSecretId": "payments-anvil-prod-client-secret"},
            ],
            "tokenEndpoint": {"declared": None, "oneOf": [{"name": "ANVIL_PROD_TOKEN_ENDPOINT"}]},
            "optional": [{"name": "ANVIL_PROD_AUDIENCE"}, {"name": "ANVIL_PROD_SCOPES"}],
            "staticToken": {"name": "ANVIL_PROD_TOKEN", "recommendedSecretId": "payments-anvil-prod-token"},
            "operations": [
                "payments.customers.get",
                "payments.payments.get",
                "payments.refunds.create",
                "payments.capture.create",
            ],
        }
    ]


def test_the_payments_example_lists_the_names_the_runtime_reads_and_its_declared_token_endpoint() -> None:
    folder = EXAMPLES / "payments"
    result = build(folder / "openapi.yaml", manifest=folder / "anvil.yaml", service_id="payments")
    assert result.document is not None
    [entry] = _required(emit_bundle(result.document))["credentials"]
    auth = result.document.operations[0].auth
    profile = credential_profile("prod", auth)
    client_id, secret, endpoint, audience, scopes = client_credentials_env(profile)
    assert [variable["name"] for variable in entry["variables"]] == [client_id, secret]
    assert client_id == "ANVIL_PROD_OAUTH2_D8AD572D2FB1B3F6C47061C8A5B64A62_CLIENT_ID"
    assert entry["tokenEndpoint"] == {
        "declared": "https://payments.internal.example.com/oauth/token",
        "oneOf": [{"name": endpoint}, {"name": "ANVIL_CREDENTIAL_HOSTS", "naming": "payments.internal.example.com"}],
    }
    assert entry["optional"] == [{"name": audience}, {"name": scopes}]
    assert [entry["staticToken"]["name"]] == list(expected_env(auth, profile))


def test_the_file_says_which_variable_chooses_the_profile_and_a_serve_with_it_reads_exactly_the_listed_names(
    payments_doc: Document,
) -> None:
    basic = Auth(type="basic", credential_profile="partner")
    doc = replace(payments_doc, operations=(*payments_doc.operations, replace(payments_doc.operations[0], auth=basic)))
    text = emit_bundle(doc)["deploy/credentials.required.yaml"].decode()
    data = yaml.safe_load(text)
    assert (data["authProfile"], data["profileEnvVar"], data["localProfileDefault"]) == (
        "prod",
        "ANVIL_AUTH_PROFILE",
        "default",
    )
    assert "only with ANVIL_AUTH_PROFILE=prod exported" in text
    assert '"default" (ANVIL_DEFAULT_* instead of ANVIL_PROD_*)' in text
    listed = {v["name"] for entry in data["credentials"] for v in [*entry["variables"], entry.get("staticToken")] if v}
    profile = auth_profile({data["profileEnvVar"]: data["authProfile"]})  # as a serve with it exported
    reads = {n for op in doc.operations for n in credential_env(op.auth, credential_profile(profile, op.auth))}
    assert listed <= reads and set(serve_reads(doc, profile)) <= listed
    local = serve_reads(doc, auth_profile({}))
    assert auth_profile({}) == data["localProfileDefault"] and all(n.startswith("ANVIL_DEFAULT_") for n in local)


def test_recommended_secret_ids_carry_the_deployment_namespace(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc, Generation(deployment_namespace="payments-eu"))
    [entry] = _required(files)["credentials"]
    assert entry["variables"][0]["recommendedSecretId"] == "payments-eu-anvil-prod-client-id"
    assert entry["staticToken"]["recommendedSecretId"] == "payments-eu-anvil-prod-token"


def test_a_bearer_requirement_other_than_client_credentials_lists_its_static_token_only(
    payments_doc: Document,
) -> None:
    bearer = Auth(type="jwt_bearer", credential_profile="partner")
    operations = tuple(replace(op, auth=bearer) for op in payments_doc.operations)
    [entry] = _required(emit_bundle(replace(payments_doc, operations=operations)))["credentials"]
    assert entry["variables"] == [
        {"name": "ANVIL_PROD_PARTNER_TOKEN", "recommendedSecretId": "payments-anvil-prod-partner-token"}
    ]
    assert not {"tokenEndpoint", "optional", "staticToken"} & set(entry)


def test_variable_names_follow_the_runtime_convention() -> None:
    assert credential_variables(Auth(type="api_key", credential_profile="github"), "prod") == (
        "ANVIL_PROD_GITHUB_API_KEY",
    )
    assert credential_variables(Auth(type="basic"), "staging-eu") == (
        "ANVIL_STAGING_EU_USERNAME",
        "ANVIL_STAGING_EU_PASSWORD",
    )
    assert credential_variables(Auth(type="oauth2_client_credentials"), "prod") == (
        "ANVIL_PROD_CLIENT_ID",
        "ANVIL_PROD_CLIENT_SECRET",
    )
    assert credential_variables(Auth(type="none"), "prod") == ()


def test_each_composite_factor_is_an_entry_with_the_variables_the_runtime_reads_shared_across_operations() -> None:
    result = build(VAULT_SPEC, manifest=VAULT_MANIFEST, service_id="vault")
    document = replace(result.document, service=replace(result.document.service, environment="prod"))
    data = _required(emit_bundle(document))
    composite = next(op.auth for op in document.operations if op.auth.type == "composite")
    runtime = expected_env(composite, credential_profile(data["authProfile"], composite))
    assert [variable["name"] for entry in data["credentials"] for variable in entry["variables"]] == sorted(runtime)
    assert credential_variables(composite, data["authProfile"]) == runtime
    credentialed = sorted(op.id for op in document.operations if op.auth.type == "composite")
    for entry in data["credentials"]:
        assert entry["type"] == "api_key"
        assert sorted(entry["operations"]) == credentialed  # one entry per factor, each naming every operation
        [variable] = entry["variables"]
        expected = f"{data['serviceId']}-{variable['name'].lower().replace('_', '-')}"
        assert variable["recommendedSecretId"] == expected  # the deploy output names each factor's secret
    assert {entry["credentialProfile"] for entry in data["credentials"]} == {
        factor.credential_profile for factor in composite.factors or ()
    }
