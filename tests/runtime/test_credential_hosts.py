"""An operation's own server on another host gets the service's credential only with consent.

The reviewer's finding: ``servers:`` on one operation sent the service's API key to another host (the
generated allowlist admitted it by itself, nothing a reviewer read showed it). The loopback upstream
here records every header it receives; the service itself is at ``api.example.com`` (never called), the
operation's own server at the loopback 127.0.0.1.
"""

from __future__ import annotations

import dataclasses

import pytest
from runtime_support import ContextFactory, Scripted, UpstreamState, read_op

from anvil.air.model import Auth, AuthCarrier, Operation, Server
from anvil.runtime.context import CallOptions
from anvil.runtime.executor import execute

pytestmark = pytest.mark.anyio

SERVICE = "https://api.example.com/v1"
SECRET = "service-api-key-7f3a"
CREDENTIALS = {"ANVIL_DEFAULT_API_KEY": SECRET}
API_KEY = Auth(type="api_key", carrier=AuthCarrier(in_="header", name="x-api-key"))


def _elsewhere(url: str, credential_hosts: tuple[str, ...] | None = None) -> Operation:
    op = read_op()
    return dataclasses.replace(
        op, auth=API_KEY, servers=(Server(url=url + "/status"),), credential_hosts=credential_hosts
    )


async def test_an_operation_server_on_another_host_receives_no_credential_without_consent(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    op = _elsewhere(upstream_url)
    outcome = await execute(op, {"payment_id": "p1"}, make_context(base_url=SERVICE, credentials=CREDENTIALS))
    assert outcome.kind == "success" and upstream.count == 1
    assert "x-api-key" not in upstream.calls[0].headers
    assert SECRET not in str(upstream.calls[0])


@pytest.mark.parametrize(
    ("manifest", "operator"),
    [(("127.0.0.1",), ""), (None, "127.0.0.1"), (None, "other.example, 127.0.0.1")],
    ids=["manifest-credential-hosts", "ANVIL_CREDENTIAL_HOSTS", "ANVIL_CREDENTIAL_HOSTS-list"],
)
async def test_a_host_the_reviewer_or_the_operator_named_receives_the_credential(
    make_context: ContextFactory,
    upstream: UpstreamState,
    upstream_url: str,
    manifest: tuple[str, ...] | None,
    operator: str,
) -> None:
    op = _elsewhere(upstream_url, credential_hosts=manifest)
    credentials = {**CREDENTIALS, "ANVIL_CREDENTIAL_HOSTS": operator} if operator else CREDENTIALS
    outcome = await execute(op, {"payment_id": "p1"}, make_context(base_url=SERVICE, credentials=credentials))
    assert outcome.kind == "success"
    assert upstream.calls[0].headers["x-api-key"] == SECRET


async def test_an_operation_server_on_the_services_own_host_receives_the_credential(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    op = _elsewhere(upstream_url)
    outcome = await execute(op, {"payment_id": "p1"}, make_context(base_url=upstream_url, credentials=CREDENTIALS))
    assert outcome.kind == "success" and upstream.calls[0].headers["x-api-key"] == SECRET


async def test_consent_for_the_declared_host_follows_the_server_the_operator_re_points(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    op = _elsewhere("https://status.example.net", credential_hosts=("status.example.net",))
    context = make_context(
        base_url=SERVICE,
        credentials=CREDENTIALS,
        server_urls={"https://status.example.net/status": upstream_url + "/status"},
    )
    outcome = await execute(op, {"payment_id": "p1"}, context)
    assert outcome.kind == "success" and upstream.calls[0].headers["x-api-key"] == SECRET


async def test_a_dry_run_shows_the_credential_is_withheld_and_a_401_says_why(
    make_context: ContextFactory, upstream: UpstreamState, upstream_url: str
) -> None:
    op = _elsewhere(upstream_url)
    context = make_context(base_url=SERVICE, credentials=CREDENTIALS)
    planned = await execute(op, {"payment_id": "p1"}, context, CallOptions(dry_run=True))
    assert planned.plan is not None and planned.plan["credentialWithheld"] == "127.0.0.1"
    upstream.answer(Scripted(status=401, body={"error": "unauthorized"}))
    refused = await execute(op, {"payment_id": "p1"}, context)
    assert refused.code == "auth_required" and refused.envelope is not None
    assert refused.envelope.details is not None
    assert refused.envelope.details["code"] == "auth/credential_withheld"
    assert refused.envelope.details["credential_withheld"] == "127.0.0.1"
    assert "x-api-key" not in upstream.calls[0].headers
