"""Servers: a URL template resolved with its variables' defaults, an operation's own server, operator names."""

from __future__ import annotations

import pytest

from anvil.air.model import Cli, Document, Effect, Idempotency, Mcp, Operation, RetryPolicy, Server, Service
from anvil.air.servers import (
    operation_server,
    own_servers,
    repoint_all,
    resolve_server,
    server_hosts,
    server_key,
    server_variable,
)

REGION = {"region": {"default": "us", "enum": ["us", "de"], "description": "Where the data lives."}}


def _op(op_id: str, servers: tuple[Server, ...] | None = None, state: str = "approved") -> Operation:
    return Operation(
        id=op_id,
        canonical_name=op_id.replace(".", "_"),
        display_name=op_id,
        effect=Effect(kind="mutation", action="create"),
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(mode="none"),
        cli=Cli(command=op_id.replace(".", " ")),
        mcp=Mcp(tool_name=op_id.replace(".", "_")),
        servers=servers,
        state=state,  # type: ignore[arg-type]
    )


def test_a_server_resolves_with_each_variable_at_its_default() -> None:
    server = Server(url="https://{region}.api.example.com:{port}/v1", variables={**REGION, "port": {"default": "8443"}})
    assert resolve_server(server).url == "https://us.api.example.com:8443/v1"
    assert resolve_server(Server(url="https://api.example.com")).url == "https://api.example.com"


@pytest.mark.parametrize(
    ("server", "issue"),
    [
        (Server(url="https://{region}.example.com"), "the server variable {region} is not declared"),
        (Server(url="https://{region}.example.com", variables={"region": {"enum": ["us"]}}), "has no default"),
        (
            Server(url="https://{region}.example.com", variables={"region": {"default": "eu", "enum": ["us", "de"]}}),
            "the default 'eu' of the server variable {region} is not one of its enum",
        ),
        (Server(url="/v2"), "is not an absolute http(s) URL"),
        (Server(url="ftp://files.example.com"), "is not an absolute http(s) URL"),
        (Server(url="https://api.example.com:99999"), "is not an absolute http(s) URL"),
    ],
)
def test_a_server_without_an_absolute_url_says_why(server: Server, issue: str) -> None:
    resolved = resolve_server(server)
    assert resolved.url is None and resolved.issue is not None
    assert issue in resolved.issue and resolved.issue.startswith(f"server {server.url!r}")


def test_an_operation_uses_the_first_of_its_own_servers_else_the_services() -> None:
    upload = Server(url="https://upload.example.com")
    assert operation_server(_op("svc.files.upload", (upload, Server(url="https://other.example.com")))) == upload
    assert operation_server(_op("svc.files.get")) is None


def test_a_server_is_named_by_its_host_and_explicit_port_for_the_operator() -> None:
    assert server_key("https://upload.example.com/api/2.0") == "UPLOAD_EXAMPLE_COM"
    assert server_key("http://127.0.0.2:9000") == "127_0_0_2_9000"
    assert server_variable("https://upload-eu.example.com") == "ANVIL_BASE_URL__UPLOAD_EU_EXAMPLE_COM"
    assert server_hosts(["https://A.example.com/x", "https://a.example.com/y", "not a url", "http://b:1"]) == (
        "a.example.com",
        "b",
    )


def test_own_servers_lists_each_server_with_the_approved_operations_sent_there() -> None:
    upload = Server(url="https://{zone}.example.com", variables={"zone": {"default": "upload"}})
    document = Document(
        service=Service(id="svc", version="1", display_name="Svc", servers=(Server(url="https://api.example.com"),)),
        operations=(
            _op("svc.files.get"),
            _op("svc.files.upload", (upload,)),
            _op("svc.files.draft", (Server(url="https://drafts.example.com"),), state="review_required"),
            _op("svc.files.broken", (Server(url="/relative"),)),
            _op("svc.files.version", (Server(url="https://upload.example.com"),)),
        ),
    )
    assert own_servers(document) == {
        "https://upload.example.com": ["svc.files.upload", "svc.files.version"],
        "https://drafts.example.com": [],
    }
    assert repoint_all(document, "http://127.0.0.1:8") == {
        "ANVIL_BASE_URL__UPLOAD_EXAMPLE_COM": "http://127.0.0.1:8",
        "ANVIL_BASE_URL__DRAFTS_EXAMPLE_COM": "http://127.0.0.1:8",
    }


def test_a_comma_host_is_no_server_and_never_reaches_a_host_list() -> None:
    """The reviewer's host: ``status.example.net,com,net,io`` joined into a list admits every .com."""
    resolved = resolve_server(Server(url="https://status.example.net,com,net,io/v1"))
    assert resolved.url is None and resolved.bad_host
    assert resolved.issue is not None and "status.example.net,com,net,io" in resolved.issue
    hosts = server_hosts(["https://api.example.com", "https://status.example.net,com,net,io", "https://a b.example"])
    assert hosts == ("api.example.com",)
    templated = Server(url="https://{zone}.example.com", variables={"zone": {"default": "a,com"}})
    assert resolve_server(templated).bad_host  # a variable's default cannot smuggle one in either
