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
            "variables": ["ANVIL_PROD_TOKEN"],
            "operations": [
                "payments.customers.get",
                "payments.payments.get",
                "payments.refunds.create",
                "payments.capture.create",
            ],
        }
    ]


def test_variable_names_follow_the_runtime_convention() -> None:
    assert credential_variables(Auth(type="api_key", credential_profile="github"), "prod") == (
        "ANVIL_PROD_GITHUB_API_KEY",
    )
    assert credential_variables(Auth(type="basic"), "staging-eu") == (
        "ANVIL_STAGING_EU_USERNAME",
        "ANVIL_STAGING_EU_PASSWORD",
    )
    assert credential_variables(Auth(type="none"), "prod") == ()
