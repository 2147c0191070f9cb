"""Deployment coordinates: the namespace keys resource names and state; the service id never changes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anvil.air.model import Document, Server
from anvil.bundle.coordinates import coordinates, resource_prefix
from anvil.bundle.generation import Generation
from anvil.errors import BundleError


@pytest.mark.parametrize(
    ("namespace", "prefix"),
    [
        ("payments", "payments"),
        ("wso2-prod-payments-v1", "wso2-prod-payments-v1"),
        ("github_mini", "github-mini-0e3c7f15f6ab"),
    ],
)
def test_the_resource_prefix_is_the_slug_when_short_and_exact(namespace: str, prefix: str) -> None:
    got = resource_prefix(namespace)
    if namespace == "github_mini":
        assert got.startswith("github-mini-") and len(got) == len("github-mini-") + 12
    else:
        assert got == prefix


def test_a_long_namespace_gets_a_hashed_prefix_that_fits_a_service_account_id() -> None:
    long = "payments-prod-coordinate-0123456789abcdef01234567"
    prefix = resource_prefix(long)
    assert prefix.startswith("payments-pr-") and len(f"{prefix}-tools") <= 30
    assert resource_prefix(long) != resource_prefix(long.replace("prod", "test"))


def test_coordinates_follow_the_namespace_and_the_environment(payments_doc: Document) -> None:
    default = coordinates(payments_doc, Generation())
    assert (default.namespace, default.service_name, default.state_prefix) == (
        "payments",
        "payments-tools",
        "anvil/payments-tools",
    )
    assert (default.environment, default.allowed_hosts, default.ledger) == (
        "prod",
        "payments.internal.example.com",
        True,
    )
    other = coordinates(payments_doc, Generation(deployment_namespace="payments-eu"))
    assert (other.service_id, other.service_name) == ("payments", "payments-eu-tools")
    assert other.collection_group != default.collection_group


def test_an_unusable_environment_or_a_relative_server_is_handled(payments_doc: Document) -> None:
    bad = replace(payments_doc, service=replace(payments_doc.service, environment="prod eu"))
    with pytest.raises(BundleError) as raised:
        coordinates(bad, Generation())
    assert raised.value.code == "bundle/invalid"
    relative = replace(
        payments_doc, service=replace(payments_doc.service, servers=(Server(url="/api"),), environment=None)
    )
    coords = coordinates(relative, Generation())
    assert (coords.allowed_hosts, coords.environment) == ("", "prod")


def test_the_host_allowlist_names_the_services_server_and_each_approved_operations_own(payments_doc: Document) -> None:
    region = Server(url="https://{region}.payments.example", variables={"region": {"default": "eu"}})
    upload = Server(url="https://upload.payments.example:8443/v1")
    ops = list(payments_doc.operations)
    ops[0] = replace(ops[0], servers=(upload,), state="approved")
    ops[1] = replace(ops[1], servers=(Server(url="https://drafts.payments.example"),), state="review_required")
    doc = replace(payments_doc, service=replace(payments_doc.service, servers=(region,)), operations=tuple(ops))
    assert coordinates(doc, Generation()).allowed_hosts == "eu.payments.example,upload.payments.example"


def test_a_comma_host_never_widens_the_generated_allowlist(payments_doc: Document) -> None:
    """The reviewer's ``https://status.example.net,com,net,io`` once made the list admit every .com."""
    ops = list(payments_doc.operations)
    ops[0] = replace(ops[0], servers=(Server(url="https://status.example.net,com,net,io"),), state="approved")
    doc = replace(payments_doc, operations=tuple(ops))
    assert coordinates(doc, Generation()).allowed_hosts == "payments.internal.example.com"
    service = replace(payments_doc.service, servers=(Server(url="https://api.example.net,com/v1"),))
    assert coordinates(replace(payments_doc, service=service), Generation()).allowed_hosts == ""
