"""Kept answers read back with ``resources/read`` (``anvil://answer/<id>``): only by the caller that made the call."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.skillpack import read_skill_package
from anvil.bundle.writer import install_bundle
from anvil.ledger.answers import ANSWER_TTL_SECONDS, LedgerAnswers
from anvil.ledger.base import Ledger, LedgerOptions
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import RuntimeContext
from anvil.serve.answer_store import AnswerKeeper, MemoryAnswers, answer_owner
from anvil.serve.auth.principals import STATIC_ISSUER, Principal, hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.fleet import Fleet, FleetBundle
from anvil.serve.gateway import Gateway
from anvil.serve.listener import create_listener
from anvil.serve.mcp.http import listen, serve_http
from anvil.serve.mcp.resources import RESOURCE_NOT_FOUND
from anvil.serve.mcp.server import build_server
from tests.serve.mcp.test_resources import rpc

pytestmark = pytest.mark.anyio

TOKENS = {"ops": "ops-token-0123456789", "reader": "reader-token-0123456789"}
ANSWER = json.dumps({"items": [{"id": n, "name": f"item {n}", "note": "é" * 8} for n in range(20_000)]}).encode()


class Clock:
    """Wall-clock seconds that move only when the test says so (the ledger's clock)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, github: Document) -> Path:
    root = tmp_path_factory.mktemp("answers")
    install_bundle(root / github.service.id, emit_bundle(github))
    return root


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def ledger(tmp_path: Path, clock: Clock) -> AsyncIterator[Ledger]:
    opened = open_ledger(f"sqlite:///{tmp_path}/ledger.db", options=LedgerOptions(clock=clock))
    await opened.initialize()
    yield opened
    await opened.close()


def _fleet(workspace: Path, docs: Sequence[Document], client: httpx.AsyncClient, keeper: AnswerKeeper) -> Fleet:
    bundles = []
    for doc in docs:
        context = RuntimeContext(service_id=doc.service.id, base_url="http://127.0.0.1:9", client=client, env="dev")
        skill = read_skill_package(workspace / doc.service.id)
        bundles.append(FleetBundle(id=doc.service.id, document=doc, context=context, skill=skill))
    return Fleet(bundles, keeper=keeper)


def _principal(name: str) -> Principal:
    return Principal(id=name, issuer=STATIC_ISSUER, subject=name, verified=True)


async def _read_as(fleet: Fleet, principal: Principal, uri: str) -> Any:
    composition = fleet.compose(principal)
    async with Client(build_server(fleet, select=lambda _request: composition)) as client:
        return await client.read_resource(uri)


async def _refusal(fleet: Fleet, principal: Principal, uri: str) -> MCPError:
    composition = fleet.compose(principal)
    async with Client(build_server(fleet, select=lambda _request: composition)) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
    return raised.value


async def test_the_caller_that_made_the_call_reads_its_kept_answer_and_another_caller_finds_nothing(
    workspace: Path, github: Document, http: httpx.AsyncClient, ledger: Ledger
) -> None:
    keeper = LedgerAnswers(ledger)
    fleet = _fleet(workspace, [github], http, keeper)
    owner, other = _principal("owner"), _principal("other")
    uri = await keeper.keep(answer_owner(owner.ledger_identity()), ANSWER)
    assert uri is not None

    read = await _read_as(fleet, owner, uri)
    [content] = read.contents
    assert (str(content.uri), content.mime_type) == (uri, "application/json")
    assert getattr(content, "text", None) == ANSWER.decode("utf-8")

    foreign = await _refusal(fleet, other, uri)
    unknown = await _refusal(fleet, owner, "anvil://answer/" + "0" * 32)
    assert foreign.error.code == RESOURCE_NOT_FOUND
    assert (foreign.error.code, foreign.error.message) == (unknown.error.code, unknown.error.message)
    composition = fleet.compose(owner)
    async with Client(build_server(fleet, select=lambda _request: composition)) as client:
        listed = await client.list_resources()
    assert uri not in {str(item.uri) for item in listed.resources}  # answers are never listed


async def test_an_expired_answer_is_not_found_even_for_its_owner(
    workspace: Path, github: Document, http: httpx.AsyncClient, ledger: Ledger, clock: Clock
) -> None:
    keeper = LedgerAnswers(ledger)
    fleet = _fleet(workspace, [github], http, keeper)
    owner = _principal("owner")
    uri = await keeper.keep(answer_owner(owner.ledger_identity()), b'{"a":1}')
    assert uri is not None
    clock.now += ANSWER_TTL_SECONDS
    assert (await _refusal(fleet, owner, uri)).error.code == RESOURCE_NOT_FOUND


async def test_a_store_that_cannot_be_read_answers_an_internal_error_naming_the_ledger_code(
    workspace: Path, github: Document, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/gone.db", options=LedgerOptions(lock_timeout_seconds=0.5))
    await ledger.initialize()
    try:
        keeper = LedgerAnswers(ledger)
        fleet = _fleet(workspace, [github], http, keeper)
        owner = _principal("owner")
        uri = await keeper.keep(answer_owner(owner.ledger_identity()), ANSWER)
        assert uri is not None
        (tmp_path / "gone.db").unlink()
        refused = await _refusal(fleet, owner, uri)
    finally:
        await ledger.close()
    assert refused.error.code == -32603
    assert refused.error.data == {"uri": uri, "code": "ledger/unavailable"}
    assert "item 1" not in json.dumps(refused.error.model_dump())


async def test_a_fleet_without_a_keeper_and_a_gateway_read_answers_as_the_anonymous_caller(
    workspace: Path, github: Document, http: httpx.AsyncClient
) -> None:
    keeper = MemoryAnswers()
    uri = await keeper.keep(answer_owner(None), b"\xff\x00binary", "application/octet-stream")
    assert uri is not None
    context = RuntimeContext(service_id="github", base_url="http://127.0.0.1:9", client=http, env="dev")
    async with Client(build_server(Gateway(github, context, keeper=keeper))) as client:
        read = await client.read_resource(uri)
    [content] = read.contents
    assert (content.mime_type, getattr(content, "blob", None)) == ("application/octet-stream", "/wBiaW5hcnk=")
    keepless = Fleet(_fleet(workspace, [github], http, keeper).bundles)
    async with Client(build_server(keepless)) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
    assert raised.value.error.code == RESOURCE_NOT_FOUND


async def test_the_listener_serves_a_kept_answer_to_the_token_that_made_the_call_only(
    workspace: Path, github: Document, http: httpx.AsyncClient, ledger: Ledger
) -> None:
    records = parse_principals(
        {"principals": [{"id": name, "token_sha256": hash_token(token)} for name, token in TOKENS.items()]}
    )
    authenticator = StaticTokenAuthenticator(records)
    keeper = LedgerAnswers(ledger)
    ops = await authenticator.authenticate(f"Bearer {TOKENS['ops']}")
    uri = await keeper.keep(answer_owner(ops.ledger_identity()), ANSWER)
    assert uri is not None
    app = create_listener(
        _fleet(workspace, [github], http, keeper), authenticator=authenticator, stateless=True, json_response=True
    )
    sock = listen("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_http(app, sock=sock))
            async with httpx.AsyncClient() as client:
                mine = await rpc(client, url, TOKENS["ops"], "resources/read", {"uri": uri})
                theirs = await rpc(client, url, TOKENS["reader"], "resources/read", {"uri": uri})
            group.cancel_scope.cancel()
    sock.close()
    assert mine["result"]["contents"][0]["text"] == ANSWER.decode("utf-8")
    assert theirs["error"]["code"] == RESOURCE_NOT_FOUND and "result" not in theirs
