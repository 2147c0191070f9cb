"""``deploy/credentials.required.yaml``: outbound credential variable names, never values."""

from __future__ import annotations

import yaml

from anvil.air.model import Auth, Document
from anvil.bundle.credentials import credential_variables
from anvil.bundle.emit import emit_bundle


def test_each_auth_requirement_lists_its_variables_and_operations(payments_doc: Document) -> None:
    data = yaml.safe_load(emit_bundle(payments_doc)["deploy/credentials.required.yaml"])
    assert (data["serviceId"], data["authProfile"]) == ("payments", "prod")
    assert data["credentials"] == [
        {
            "type": "oauth2_client_credentials",
            "credentialProfile": None,
            "variables": [{"name": "ANVIL_PROD_TOKEN", "recommendedSecretId": "payments-anvil-prod-token"}],
            "operations": [
                "payments.customers.get",
                "payments.payments.get",
                "payments.refunds.create",
                "payments.capture.create",
            ],
        }
    ]


def test_recommended_secret_ids_carry_the_deployment_namespace(payments_doc: Document) -> None:
    from anvil.bundle.generation import Generation

    files = emit_bundle(payments_doc, Generation(deployment_namespace="payments-eu"))
    data = yaml.safe_load(files["deploy/credentials.required.yaml"])
    assert data["credentials"][0]["variables"][0]["recommendedSecretId"] == "payments-eu-anvil-prod-token"


def test_variable_names_follow_the_runtime_convention() -> None:
    assert credential_variables(Auth(type="api_key", credential_profile="github"), "prod") == (
        "ANVIL_PROD_GITHUB_API_KEY",
    )
    assert credential_variables(Auth(type="basic"), "staging-eu") == (
        "ANVIL_STAGING_EU_USERNAME",
        "ANVIL_STAGING_EU_PASSWORD",
    )
    assert credential_variables(Auth(type="none"), "prod") == ()
