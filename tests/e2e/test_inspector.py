"""MCP Inspector (a stock TypeScript client) against a real ``anvil serve``.

Each test runs Inspector's CLI (``node ENTRY --cli URL --transport http ...``) as a child process against
three real gateways over Streamable HTTP: the payments bundle alone, the github-mini bundle alone (auth
none) and the fleet of both (JWT inbound auth, the e2e stack of ``conftest.py``). Two pinned Inspectors
run: the current line (``ANVIL_TEST_MCP_INSPECTOR``, built on the TypeScript SDK v2 client, both its
``legacy`` and ``auto`` protocol eras) and the v1 line (``ANVIL_TEST_MCP_INSPECTOR_V1``, the TypeScript
SDK v1 client). ``legacy`` speaks a handshake protocol version in stateless JSON, which the gateway's
hot path answers; ``auto`` negotiates the 2026-07-28 protocol, which the SDK's own path answers. Both
lines validate ``structuredContent`` against the tool's ``outputSchema`` on tools/call and
refuse the result when it does not match (even on an error result), so a call that succeeds here is one
a stock client accepts. A fourth gateway serves the fleet ``--disclosure search``: Inspector lists its three
meta-tools and calls search and the read proxy. ``.ci/services.sh start`` installs both and exports their
entry points; without them the tests skip with a reason, and fail under ``ANVIL_TEST_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.read import read_bundle
from anvil.serve.discovery.meta import CALL_READ_TOOL, META_TOOL_NAMES, SEARCH_TOOL
from tests.conftest import missing
from tests.e2e.conftest import SERVICES, WRITE_GRANTS, Fleet
from tests.e2e.support import OWNER_REPO, GatewayProcess

#: Every Inspector run is bounded (node start-up, connect, one request).
RUN_TIMEOUT_S = 60.0
#: Inspector's exit codes (its CLI's EXIT_CODES): a usage/protocol error, and a tool-level failure.
EXIT_OK, EXIT_ERROR, EXIT_TOOL_ERROR = 0, 1, 5
#: The JSON-RPC code the gateway answers an unknown tool with.
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Inspector:
    """One installed Inspector CLI: its entry script, its line, and the extra flags of one mode."""

    entry: Path
    line: str  # "v2" (current) or "v1"
    flags: tuple[str, ...] = ()

    def run(self, url: str, args: Sequence[str], *, headers: dict[str, str], home: Path) -> Answer:
        """``node ENTRY --cli URL --transport http ARGS...``; its exit code and parsed output."""
        argv = ["node", str(self.entry), "--cli", url, "--transport", "http", *args, *self.flags]
        for name, value in headers.items():
            argv += ["--header", f"{name}: {value}"]
        if self.line == "v2":
            argv += ["--format", "json", "--quiet"]
        # A private HOME: Inspector keeps its catalog and any secret store under ~/.mcp-inspector.
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1", "CI": "1"}
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL
        )
        return Answer(self.line, done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Answer:
    """What one Inspector run printed."""

    line: str
    code: int
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The method's result (v2 wraps it as ``{"result": ...}``; v1 prints it bare)."""
        assert self.code in (EXIT_OK, EXIT_TOOL_ERROR), (self.code, self.stdout[-2000:], self.stderr[-2000:])
        parsed = json.loads(self.stdout)
        return dict(parsed["result"] if self.line == "v2" else parsed)

    def error(self) -> dict[str, Any]:
        """v2's error envelope (``{"error": {"code", "message"}}``, the last line on stderr)."""
        assert self.line == "v2"
        lines = [line for line in self.stderr.splitlines() if line.startswith("{")]
        assert lines, self.stderr[-2000:]
        return dict(json.loads(lines[-1])["error"])


@dataclass(frozen=True)
class Target:
    """One gateway the Inspector dials: URL, headers, how it names tools, and what it must list."""

    name: str
    url: str
    headers: dict[str, str]
    fleet: bool
    expected: dict[str, bool]  # listed tool name -> has an outputSchema

    def tool(self, service: str, name: str) -> str:
        """The listed name of ``service``'s tool ``name`` (prefixed on the fleet)."""
        return f"{service}__{name}" if self.fleet else name


def _entry(variable: str) -> Path:
    value = os.environ.get(variable)
    if not value:
        missing(f'{variable} is not set; install MCP Inspector with eval "$(bash .ci/services.sh start)"')
    path = Path(str(value))
    if not path.is_file():
        missing(f"{variable} names no file: {path}")
    if shutil.which("node") is None:
        missing("node is not on PATH (MCP Inspector runs on Node.js)")
    return path


@pytest.fixture(scope="session")
def inspector_v2() -> Path:
    return _entry("ANVIL_TEST_MCP_INSPECTOR")


@pytest.fixture(scope="session")
def inspector_v1() -> Path:
    return _entry("ANVIL_TEST_MCP_INSPECTOR_V1")


def _mode(request: pytest.FixtureRequest) -> Inspector:
    if request.param == "v1":
        return Inspector(request.getfixturevalue("inspector_v1"), "v1")
    era = str(request.param).removeprefix("v2-")
    return Inspector(request.getfixturevalue("inspector_v2"), "v2", ("--protocol-era", era))


@pytest.fixture(params=["v2-legacy", "v2-auto", "v1"])
def inspector(request: pytest.FixtureRequest) -> Inspector:
    """Each Inspector mode: the current line in its ``legacy`` and ``auto`` protocol eras, and v1."""
    return _mode(request)


@pytest.fixture(params=["v2-legacy", "v1"])
def either_inspector(request: pytest.FixtureRequest) -> Inspector:
    """Each Inspector line in its default era (for what the protocol era cannot change: tool errors)."""
    return _mode(request)


def _expected(bundles: dict[str, Path], services: Sequence[str], fleet: bool) -> dict[str, bool]:
    """Every approved operation's tool name -> whether its success response has a schema (outputSchema)."""
    out = {}
    for service in services:
        for op in read_bundle(bundles[service]).operations:
            if op.is_approved:
                name = f"{service}__{op.mcp.tool_name}" if fleet else op.mcp.tool_name
                out[name] = op.output.schema is not None
    return out


@pytest.fixture(params=["payments", "github", "fleet"])
def target(
    request: pytest.FixtureRequest,
    fleet: Fleet,
    single_gateways: dict[str, GatewayProcess],
    bundles: dict[str, Path],
) -> Target:
    """One gateway, its upstream mocks reset (the ``fleet`` fixture resets both)."""
    if request.param == "fleet":
        headers = {"Authorization": f"Bearer {fleet.token(WRITE_GRANTS)}"}
        return Target("fleet", fleet.url, headers, True, _expected(bundles, SERVICES, True))
    service = str(request.param)
    return Target(service, single_gateways[service].url, {}, False, _expected(bundles, (service,), False))


def _tool_error_envelope(result: dict[str, Any]) -> dict[str, Any]:
    """The Anvil envelope of an ``isError`` result, from its text (errors carry no structuredContent)."""
    assert result["isError"] is True
    assert "structuredContent" not in result
    return dict(json.loads(result["content"][0]["text"])["error"])


def test_inspector_lists_every_tool_with_an_output_schema_where_the_response_has_one(
    inspector: Inspector, target: Target, tmp_path: Path
) -> None:
    answer = inspector.run(target.url, ["--method", "tools/list"], headers=target.headers, home=tmp_path)
    assert answer.code == EXIT_OK, answer.stderr[-2000:]
    tools = {tool["name"]: tool for tool in answer.result()["tools"]}
    assert set(tools) == set(target.expected)
    for name, has_schema in target.expected.items():
        assert ("outputSchema" in tools[name]) is has_schema, name
        if has_schema:
            assert tools[name]["outputSchema"]["type"] == "object"
            assert "#/components" not in json.dumps(tools[name]["outputSchema"])
        meta = tools[name]["_meta"]
        assert meta.get("anvil/effect_class") == meta.get("effect", {}).get("class")
    # The two deletes answer 204 (no body, so no schema); every other tool publishes one.
    deletes = [target.tool("github", name) for name in ("github_delete_comment", "github_delete_release")]
    assert [name for name, has in target.expected.items() if not has] == ([] if target.name == "payments" else deletes)


#: The skill files every example bundle serves as resources, in listing order.
SKILL_PATHS = ("SKILL.md", "reference/idempotency.md", "reference/operations.md")


def test_inspector_lists_each_bundles_skill_files_as_resources_and_reads_one(
    inspector: Inspector, target: Target, bundles: dict[str, Path], tmp_path: Path
) -> None:
    listed = inspector.run(target.url, ["--method", "resources/list"], headers=target.headers, home=tmp_path)
    assert listed.code == EXIT_OK, listed.stderr[-2000:]
    services = tuple(sorted(SERVICES)) if target.fleet else (target.name,)  # a fleet lists bundles by id
    uris = [resource["uri"] for resource in listed.result()["resources"]]
    assert uris == [f"anvil://skill/{service}/{path}" for service in services for path in SKILL_PATHS]
    uri = f"anvil://skill/{services[0]}/SKILL.md"
    read = inspector.run(
        target.url, ["--method", "resources/read", "--uri", uri], headers=target.headers, home=tmp_path
    )
    assert read.code == EXIT_OK, read.stderr[-2000:]
    [content] = read.result()["contents"]
    expected = (bundles[services[0]] / "skill" / "SKILL.md").read_text(encoding="utf-8")
    assert (content["uri"], content["mimeType"], content["text"]) == (uri, "text/markdown", expected)


def _read(target: Target) -> tuple[str, list[str], str]:
    """A read per target: (tool, --tool-arg pairs, the effect's operation)."""
    if target.name == "payments":
        return "payments_get_customer", ["customer_id=cus_123"], "payments.customers.get"
    return target.tool("github", "github_list_issue"), ["owner=octo", "repo=hello"], "github.issues.list"


def test_a_read_through_inspector_returns_structured_content_it_accepts_and_the_effect_report(
    inspector: Inspector, target: Target, tmp_path: Path
) -> None:
    tool, pairs, operation = _read(target)
    args = ["--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs]
    answer = inspector.run(target.url, args, headers=target.headers, home=tmp_path)
    # Inspector exits non-zero (and prints no result) when structuredContent breaks the outputSchema.
    assert answer.code == EXIT_OK, answer.stderr[-2000:]
    result = answer.result()
    assert result["isError"] is False
    assert result["_meta"]["effect"]["class"] == "read"
    # auto negotiated the 2026-07-28 protocol (its results name the server): the SDK path answered.
    modern = inspector.flags == ("--protocol-era", "auto")
    assert ("io.modelcontextprotocol/serverInfo" in result["_meta"]) is modern
    assert result["_meta"]["effect"]["operation"] == operation
    assert result["structuredContent"] is not None
    data = json.loads(result["content"][0]["text"])
    if isinstance(data, dict):
        assert result["structuredContent"] == data and data["id"] == "cus_123"
    else:  # a list response is wrapped, and the published schema says so
        assert result["structuredContent"] == {"result": data} and data


def _keyed_write(target: Target, key: str) -> tuple[str, list[str]]:
    """A keyed write per target: a confirmed refund (payments, fleet) or a keyed comment (github)."""
    if target.name == "github":
        pairs = [*(f"{k}={v}" for k, v in OWNER_REPO.items()), "issue_number=2", "body=inspected"]
        return "github_create_comment", [*pairs, f"idempotency_key={key}"]
    pairs = ["payment_id=pay_123", "amount=100", "currency=usd", f"idempotency_key={key}", "confirm=true"]
    return target.tool("payments", "payments_create_refund"), pairs


def test_a_keyed_confirmed_write_through_inspector_lands_once_and_its_retry_replays(
    inspector: Inspector, target: Target, fleet: Fleet, tmp_path: Path
) -> None:
    key = f"inspector-{uuid.uuid4().hex[:12]}"  # the gateways' ledgers outlive one test
    tool, pairs = _keyed_write(target, key)
    args = ["--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs]
    first = inspector.run(target.url, args, headers=target.headers, home=tmp_path)
    again = inspector.run(target.url, args, headers=target.headers, home=tmp_path)
    assert first.code == EXIT_OK and again.code == EXIT_OK, (first.stderr[-2000:], again.stderr[-2000:])
    landed, replayed = first.result(), again.result()
    assert landed["isError"] is False and replayed["isError"] is False
    assert landed["_meta"]["effect"]["idempotency_key"] == key
    assert "replayed" not in landed["_meta"]["effect"]
    assert replayed["_meta"]["effect"]["replayed"] is True
    assert replayed["structuredContent"] == landed["structuredContent"]
    if target.name == "github":
        assert landed["_meta"]["effect"]["class"] == "reversible"
        assert landed["structuredContent"]["body"] == "inspected"
        sent = fleet.github_requests("POST", "/comments")
    else:
        assert landed["_meta"]["effect"]["class"] == "irreversible"
        assert landed["structuredContent"]["status"] == "succeeded"
        sent = [r for r in fleet.payments.requests if r["method"] == "POST" and r["path"].endswith("/refunds")]
    assert len(sent) == 1  # the retry was answered from the ledger


def test_a_write_without_its_confirm_reaches_inspector_as_a_coded_tool_error(
    either_inspector: Inspector, target: Target, fleet: Fleet, tmp_path: Path
) -> None:
    inspector = either_inspector
    if target.name == "github":
        tool = "github_delete_comment"
        pairs = [*(f"{k}={v}" for k, v in OWNER_REPO.items()), "comment_id=1"]
    else:
        tool = target.tool("payments", "payments_create_refund")
        pairs = ["payment_id=pay_123", "amount=100", "currency=usd", "idempotency_key=inspector-unconfirmed"]
    args = ["--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs]
    answer = inspector.run(target.url, args, headers=target.headers, home=tmp_path)
    # v2 exits 5 for an isError result; v1 prints it and exits 0. Neither refuses it as a schema failure.
    assert answer.code == (EXIT_TOOL_ERROR if inspector.line == "v2" else EXIT_OK), answer.stderr[-2000:]
    envelope = _tool_error_envelope(answer.result())
    assert envelope["code"] == "confirmation_required"
    assert "--confirm" in envelope["required_flags"]
    assert fleet.github_requests("DELETE") == []
    assert [r for r in fleet.payments.requests if r["method"] == "POST"] == []


def test_an_unknown_tool_is_a_json_rpc_error_inspector_v1_reports_as_such(
    inspector_v1: Path, target: Target, fleet: Fleet, tmp_path: Path
) -> None:
    v1 = Inspector(inspector_v1, "v1")
    args = ["--method", "tools/call", "--tool-name", target.tool("github", "github_no_such_tool")]
    answer = v1.run(target.url, args, headers=target.headers, home=tmp_path)
    assert answer.code == EXIT_ERROR
    assert f"MCP error {INVALID_PARAMS}" in answer.stderr
    assert answer.stdout.strip() == ""
    assert fleet.github.requests == [] and fleet.payments.requests == []


def test_inspector_v2_names_an_unknown_tool_from_the_listing_before_calling(
    inspector_v2: Path, target: Target, fleet: Fleet, tmp_path: Path
) -> None:
    v2 = Inspector(inspector_v2, "v2")
    args = ["--method", "tools/call", "--tool-name", target.tool("github", "github_no_such_tool")]
    answer = v2.run(target.url, args, headers=target.headers, home=tmp_path)
    assert answer.code == EXIT_TOOL_ERROR
    assert answer.error()["code"] == "tool_not_found"
    assert fleet.github.requests == [] and fleet.payments.requests == []


def test_an_upstream_answer_that_breaks_the_schema_reaches_inspector_as_schema_mismatch(
    either_inspector: Inspector, fleet: Fleet, tmp_path: Path
) -> None:
    """A customer the upstream stores without its required ``name`` (``Customer.required: [id, name]``):
    the gateway checks before sending and answers ``schema_mismatch``, never a result the client refuses."""
    inspector = either_inspector
    fleet.payments.customers["cus_nameless"] = {"id": "cus_nameless", "email": "x@example.com"}
    headers = {"Authorization": f"Bearer {fleet.token(WRITE_GRANTS)}"}
    args = ["--method", "tools/call", "--tool-name", "payments__payments_get_customer"]
    answer = inspector.run(fleet.url, [*args, "--tool-arg", "customer_id=cus_nameless"], headers=headers, home=tmp_path)
    assert answer.code == (EXIT_TOOL_ERROR if inspector.line == "v2" else EXIT_OK), answer.stderr[-2000:]
    assert _tool_error_envelope(answer.result())["code"] == "schema_mismatch"


def test_inspector_lists_the_meta_tools_of_a_searched_fleet_and_finds_and_reads_through_them(
    inspector: Inspector, search_fleet: Fleet, tmp_path: Path
) -> None:
    headers = {"Authorization": f"Bearer {search_fleet.token(WRITE_GRANTS)}"}
    listed = inspector.run(search_fleet.url, ["--method", "tools/list"], headers=headers, home=tmp_path)
    assert listed.code == EXIT_OK, listed.stderr[-2000:]
    assert [tool["name"] for tool in listed.result()["tools"]] == list(META_TOOL_NAMES)
    tool = "github__github_list_issue"
    search = ["--method", "tools/call", "--tool-name", SEARCH_TOOL, "--tool-arg", f"query={tool}", "limit=2"]
    found = inspector.run(search_fleet.url, search, headers=headers, home=tmp_path)
    # Inspector checks structuredContent against the search tool's outputSchema before printing it.
    assert found.code == EXIT_OK, found.stderr[-2000:]
    result = found.result()
    assert result["isError"] is False
    entries = result["structuredContent"]["tools"]
    assert 1 <= len(entries) <= 2 and entries[0]["name"] == tool
    assert entries[0]["inputSchema"]["required"] == ["owner", "repo"]
    arguments = json.dumps(OWNER_REPO)
    call = [
        "--method",
        "tools/call",
        "--tool-name",
        CALL_READ_TOOL,
        "--tool-arg",
        f"tool={tool}",
        f"arguments={arguments}",
    ]
    read = inspector.run(search_fleet.url, call, headers=headers, home=tmp_path)
    assert read.code == EXIT_OK, read.stderr[-2000:]
    answered = read.result()
    assert answered["isError"] is False
    assert answered["_meta"]["effect"]["operation"] == "github.issues.list"
    assert [r["method"] for r in search_fleet.github_requests()] == ["GET"]
