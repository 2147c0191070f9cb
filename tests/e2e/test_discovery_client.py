"""An agent that lists tools once and never again does everything through search and the two proxies.

The official MCP client (``mcp.ClientSession`` over Streamable HTTP, no Anvil wrapper) talks to a real
``anvil serve --disclosure search`` process on two stages:

* ``lob``: the corpus's Lob spec compiled with every operation approved and the effects ``anvil init
  --propose-effects`` proposes (creates keyed by an ``Idempotency-Key`` header, undone by their delete),
  served against the stateful mock Anvil generates from the bundle (:mod:`anvil.proof.mock`, in a thread);
* ``fleet``: github-mini and payments behind one gateway with JWT callers (``search_fleet``).

Each session lists tools exactly once (three meta-tools) and then only calls ``anvil_search_tools``,
``anvil_call_read`` and ``anvil_call_write``; every request the client sends is recorded on the wire and
checked when the session closes. A proxied call must leave the audit line, ledger row and metrics a
direct call to the same tool leaves (a searched surface still serves every tool by its name).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import RequestParamsMeta
from prometheus_client.parser import text_string_to_metric_families

from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.proof.mock import MockApi, create_mock_app
from anvil.runtime.credentials import credential_profile, expected_env
from anvil.serve.discovery.meta import CALL_READ_TOOL, CALL_WRITE_TOOL, META_TOOL_NAMES, SEARCH_TOOL
from tests.conftest import corpus_dir, missing
from tests.e2e.conftest import Fleet, local_gateway_env
from tests.e2e.support import OWNER_REPO, GatewayProcess, ThreadedMock

pytestmark = pytest.mark.anyio

TIMEOUT_S = 30
LOB_SPEC = Path("lob") / "lob-api-public.yml"
#: A postcard to an address id, both sides as HTML (what Lob's create requires).
POSTCARD = {"to": "adr_e2e0001", "front": "<html>Front</html>", "back": "<html>Back</html>", "use_type": "marketing"}
ADDRESS = {
    "name": "Harry Zhang",
    "address_line1": "210 King St",
    "address_city": "San Francisco",
    "address_state": "CA",
    "address_zip": "94107",
}
COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Found by search."}
#: Audit fields that differ between any two calls (the time, the trace, how long it took).
PER_CALL = frozenset({"time", "trace_id", "latency_ms"})


# --- the Lob stage: the corpus spec compiled all-approved, its generated mock, a searched gateway -------------


@dataclass
class LobGateway:
    process: GatewayProcess
    api: MockApi
    folder: Path


@pytest.fixture(scope="session")
def lob_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LobGateway]:
    spec = corpus_dir() / LOB_SPEC
    if not spec.is_file():
        missing(f"the Lob spec is not at {spec} (set ANVIL_CORPUS)")
    folder = tmp_path_factory.mktemp("lob")
    manifest, bundle = folder / "anvil.yaml", folder / "lob"
    init = ["init", str(spec), "--service", "lob", "--out", str(manifest), "--approve", "all", "--propose-effects"]
    assert main(init) == 0
    assert main(["compile", str(spec), "--manifest", str(manifest), "--out", str(bundle)]) == 0
    document = read_bundle(bundle)
    api = MockApi(document)
    mock = ThreadedMock(create_mock_app(api), "lob").start()
    env = local_gateway_env(folder)
    for op in document.operations:  # Lob's basic auth: any user and password reach the mock
        env.update(dict.fromkeys(expected_env(op.auth, credential_profile("default", op.auth)), "e2e-lob"))
    args = [str(bundle), "--http", "127.0.0.1:0", "--auth", "none", "--base-url", mock.url, "--disclosure", "search"]
    try:
        process = GatewayProcess(args, env=env, log=folder / "gateway.log").start()
    except BaseException:
        mock.stop()
        raise
    try:
        yield LobGateway(process, api, folder)
    finally:
        process.stop()
        mock.stop()


# --- one stage as the tests see it ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Use:
    """A tool a test finds and calls: by a plain query (None: by its exact name), with these arguments."""

    query: str | None
    tool: str
    arguments: dict[str, Any]
    operation: str


@dataclass(frozen=True)
class Undoable(Use):
    """A keyed write whose ``_meta.effect.undo`` names ``undo`` (an AIR id) served as ``undo_tool``."""

    undo: str = ""
    undo_tool: str = ""


@dataclass
class Stage:
    """A searched gateway and its upstream, read from the start of one test on."""

    name: str
    process: GatewayProcess
    headers: dict[str, str]
    audit_path: Path
    requests: Callable[[], list[tuple[str, str]]]  # (method, path) the upstream received since the test began
    holds: Callable[[Any], bool]  # True while the upstream stores an item with this id
    read: Use
    write: Undoable
    refused: Use
    audit_offset: int = field(init=False)

    def __post_init__(self) -> None:
        self.audit_offset = self.audit_path.stat().st_size if self.audit_path.exists() else 0

    @property
    def ledger_path(self) -> Path:
        return self.audit_path.with_name("ledger.db")

    def audit(self) -> list[dict[str, Any]]:
        """The audit lines written since the test began."""
        if not self.audit_path.exists():
            return []
        with self.audit_path.open("rb") as handle:
            handle.seek(self.audit_offset)
            return [json.loads(line) for line in handle.read().decode("utf-8").splitlines() if line.strip()]


def _lob_stage(lob: LobGateway) -> Stage:
    lob.api.reset()
    log = lob.api.state.log

    def holds(item_id: Any) -> bool:
        return any(item.data.get("id") == item_id for kind in lob.api.state.items.values() for item in kind.values())

    return Stage(
        name="lob",
        process=lob.process,
        headers={},
        audit_path=lob.folder / "audit.jsonl",
        requests=lambda: [(str(entry["method"]), str(entry["path"])) for entry in log],
        holds=holds,
        read=Use("list postcards", "lob_postcards_list", {}, "lob.postcards.list"),
        write=Undoable(
            "create a postcard",
            "lob_postcard_create",
            {"body": POSTCARD},
            "lob.postcards.create",
            undo="lob.postcards.delete",
            undo_tool="lob_postcard_delete",
        ),
        refused=Use("create an address", "lob_address_create", {"body": ADDRESS}, "lob.addresses.create"),
    )


def _fleet_stage(fleet: Fleet) -> Stage:
    def requests() -> list[tuple[str, str]]:
        return [(r["method"], r["path"]) for r in (*fleet.github.requests, *fleet.payments.requests)]

    return Stage(
        name="fleet",
        process=fleet.process,
        headers=fleet.auth(),
        audit_path=fleet.audit_path,
        requests=requests,
        holds=lambda item_id: any(comment["id"] == item_id for comment in fleet.github.comments),
        read=Use("list issues", "github__github_list_issue", dict(OWNER_REPO), "github.issues.list"),
        write=Undoable(
            "comment on an issue",
            "github__github_create_comment",
            COMMENT,
            "github.comments.create",
            undo="github.comments.delete",
            undo_tool="github__github_delete_comment",
        ),
        refused=Use(
            "delete a comment",
            "github__github_delete_comment",
            {**OWNER_REPO, "comment_id": 1},
            "github.comments.delete",
        ),
    )


@pytest.fixture(params=[pytest.param("lob", marks=pytest.mark.corpus), "fleet"])
def stage(request: pytest.FixtureRequest) -> Stage:
    """Each searched gateway, its upstream back at its seed state and its audit read from here on."""
    if request.param == "lob":
        return _lob_stage(request.getfixturevalue("lob_gateway"))
    return _fleet_stage(request.getfixturevalue("search_fleet"))


# --- the official client, recorded on the wire ------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One ``tools/call`` result: its data (the first text block, parsed), ``_meta.effect``, and whether it failed."""

    is_error: bool
    data: Any
    effect: dict[str, Any] | None
    structured: Any

    @property
    def error(self) -> dict[str, Any]:
        assert self.is_error, self.data
        return dict(self.data["error"])


@dataclass
class Agent:
    """An MCP session and every JSON-RPC request it sent (method, and the tool name of each ``tools/call``)."""

    session: ClientSession
    listed: list[str]
    sent: list[tuple[str, str | None]]

    async def call(self, tool: str, arguments: Mapping[str, Any], meta: dict[str, Any] | None = None) -> Answer:
        with anyio.fail_after(TIMEOUT_S):
            result = await self.session.call_tool(tool, dict(arguments), meta=cast(RequestParamsMeta | None, meta))
        text = next(block.text for block in result.content if block.type == "text")
        effect = (result.meta or {}).get("effect")
        return Answer(bool(result.is_error), json.loads(text), effect, result.structured_content)

    async def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        answer = await self.call(SEARCH_TOOL, {"query": query, "limit": limit})
        assert not answer.is_error, answer.data
        assert answer.structured is not None
        tools: list[dict[str, Any]] = answer.structured["tools"]
        return tools

    async def find(self, use: Use) -> dict[str, Any]:
        """The search entry of ``use.tool``: among the answers to its plain query, else first for its exact name."""
        if use.query is not None:
            found = [entry for entry in await self.search(use.query) if entry["name"] == use.tool]
            assert found, f"{use.query!r} did not find {use.tool}"
            return found[0]
        entries = await self.search(use.tool, limit=1)
        assert [entry["name"] for entry in entries] == [use.tool]
        return entries[0]

    async def proxy(
        self, entry: Mapping[str, Any], arguments: Mapping[str, Any], *, key: str | None = None, stage: bool = False
    ) -> Answer:
        """Call a found tool through the proxy its annotations call for (a read-only tool: ``anvil_call_read``)."""
        read_only = entry["annotations"]["readOnlyHint"]
        meta: dict[str, Any] = {}
        if key is not None:
            meta["idempotency_key"] = key
        if stage:
            meta["stage"] = True
        proxy = CALL_READ_TOOL if read_only else CALL_WRITE_TOOL
        return await self.call(proxy, {"tool": entry["name"], "arguments": dict(arguments)}, meta or None)


def _rpc(request: httpx2.Request) -> tuple[str, str | None] | None:
    if request.method != "POST" or not request.content:
        return None
    message = json.loads(request.content)
    if not isinstance(message, dict) or "method" not in message:
        return None  # a response the client sends back (none here) or a batch (never sent)
    params = message.get("params") or {}
    return str(message["method"]), params.get("name") if message["method"] == "tools/call" else None


@asynccontextmanager
async def agent(stage: Stage, *, lists_once: bool = True) -> AsyncIterator[Agent]:
    """A session with the stage's gateway that has listed tools once.

    With ``lists_once`` (the agent's contract), closing it checks what it sent: one ``tools/list`` and then
    only ``tools/call`` of the meta-tools. An assertion failing in the block is re-raised as it was (the
    SDK's task groups would wrap it).
    """
    sent: list[tuple[str, str | None]] = []

    async def record(request: httpx2.Request) -> None:
        rpc = _rpc(request)
        if rpc is not None:
            sent.append(rpc)

    failure: Exception | None = None
    hooks = {"request": [record]}
    with anyio.fail_after(TIMEOUT_S * 4):
        async with httpx2.AsyncClient(headers=stage.headers, timeout=TIMEOUT_S, event_hooks=hooks) as http:
            async with streamable_http_client(stage.process.url, http_client=http) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=TIMEOUT_S) as session:
                    await session.initialize()
                    listed = [tool.name for tool in (await session.list_tools()).tools]
                    try:
                        yield Agent(session, listed, sent)
                    except Exception as exc:
                        failure = exc
    if failure is not None:
        raise failure
    if lists_once:
        assert [method for method, _ in sent].count("tools/list") == 1
        assert {method for method, _ in sent} <= {"initialize", "notifications/initialized", "tools/list", "tools/call"}
        assert {name for method, name in sent if method == "tools/call"} <= set(META_TOOL_NAMES)


# --- an agent that lists once -----------------------------------------------------------------------------------


async def test_a_searched_surface_lists_exactly_the_three_meta_tools(stage: Stage) -> None:
    async with agent(stage) as client:
        assert client.listed == list(META_TOOL_NAMES)


async def test_a_read_found_by_search_answers_through_the_read_proxy(stage: Stage) -> None:
    async with agent(stage) as client:
        entry = await client.find(stage.read)
        assert entry["annotations"]["readOnlyHint"] is True
        answer = await client.proxy(entry, stage.read.arguments)
    assert not answer.is_error, answer.data
    assert answer.effect is not None
    assert (answer.effect["class"], answer.effect["operation"]) == ("read", stage.read.operation)
    assert [method for method, _ in stage.requests()] == ["GET"]


async def test_a_keyed_write_found_by_search_lands_once_replays_on_retry_and_is_undone_through_the_proxy(
    stage: Stage,
) -> None:
    key = f"e2e-search-{uuid.uuid4().hex[:12]}"  # the gateway's ledger outlives one test
    write = stage.write
    async with agent(stage) as client:
        entry = await client.find(write)
        assert entry["annotations"]["readOnlyHint"] is False
        first = await client.proxy(entry, write.arguments, key=key)
        again = await client.proxy(entry, write.arguments, key=key)
        assert not first.is_error and not again.is_error, (first.data, again.data)
        assert first.effect is not None and again.effect is not None
        created = first.data["id"]
        assert stage.holds(created)
        undo = first.effect["undo"]
        # The undo tool is found by the name the report gives; its schema says whether it needs confirm.
        undo_entry = await client.find(Use(None, undo["tool"], undo["arguments"], write.undo))
        arguments = dict(undo["arguments"])
        if "confirm" in undo_entry["inputSchema"].get("required", ()):
            arguments["confirm"] = True
        undone = await client.proxy(undo_entry, arguments)
    assert (first.effect["class"], first.effect["operation"], first.effect["idempotency_key"]) == (
        "reversible",
        write.operation,
        key,
    )
    assert "replayed" not in first.effect
    assert (again.effect["replayed"], again.effect["idempotency_key"], again.data) == (True, key, first.data)
    assert (undo["kind"], undo["operation"], undo["tool"]) == ("inverse", write.undo, write.undo_tool)
    assert created in undo["arguments"].values()
    assert not undone.is_error, undone.data
    assert undone.effect is not None
    assert (undone.effect["operation"], undone.effect["undo"]) == (write.undo, None)
    sent = stage.requests()
    assert [method for method, _ in sent if method == "POST"] == ["POST"]  # the retry was answered by the ledger
    assert [(method, path.rsplit("/", 1)[-1]) for method, path in sent if method == "DELETE"] == [
        ("DELETE", str(created))
    ]
    assert not stage.holds(created)
    lines = [(line["operation"], line["ledger"], line["ledger_id"]) for line in stage.audit()]
    assert lines == [(write.operation, "reserved", key), (write.operation, "replay", key), (write.undo, "none", None)]


async def test_an_unconfirmed_write_through_the_write_proxy_is_refused_before_the_upstream(stage: Stage) -> None:
    async with agent(stage) as client:
        entry = await client.find(stage.refused)
        assert "confirm" in entry["inputSchema"]["required"]
        refused = await client.proxy(entry, stage.refused.arguments, key=f"e2e-unconfirmed-{uuid.uuid4().hex[:8]}")
        misrouted = await client.call(CALL_READ_TOOL, {"tool": stage.refused.tool, "arguments": {}})
    assert refused.error["code"] == "confirmation_required"
    assert refused.error["operation"] == stage.refused.operation
    assert (misrouted.error["code"], misrouted.error["details"]["code"]) == (
        "validation_error",
        "discovery/write_through_read",
    )
    assert stage.requests() == []
    assert [(line["operation"], line["error_code"]) for line in stage.audit()] == [
        (stage.refused.operation, "confirmation_required")
    ]


async def test_a_release_staged_through_the_write_proxy_is_a_draft_until_its_promote_goes_through_it(
    search_fleet: Fleet,
) -> None:
    stage = _fleet_stage(search_fleet)
    release = Use("create a release", "github__github_create_release", {**OWNER_REPO, "tag_name": "v2.0.0"}, "")
    async with agent(stage) as client:
        entry = await client.find(release)
        arguments = {**release.arguments, "confirm": True}
        staged = await client.proxy(entry, arguments, key=f"e2e-search-stage-{uuid.uuid4().hex[:8]}", stage=True)
        assert not staged.is_error, staged.data
        assert staged.effect is not None
        report = staged.effect["staged"]
        assert [(r["tag_name"], r["draft"]) for r in search_fleet.github.releases] == [("v2.0.0", True)]
        promote = report["promote"]
        promote_entry = await client.find(Use(None, promote["tool"], promote["arguments"], promote["operation"]))
        promoted_arguments = dict(promote["arguments"])
        if "confirm" in promote_entry["inputSchema"].get("required", ()):
            promoted_arguments["confirm"] = True
        promoted = await client.proxy(promote_entry, promoted_arguments)
    assert set(report) == {"draft_operation", "handle", "promote", "discard"}
    assert (report["draft_operation"], report["handle"]) == ("github.releases.create", staged.data["id"])
    assert (promote["operation"], promote["tool"]) == ("github.releases.update", "github__github_update_release")
    assert report["discard"]["tool"] == "github__github_delete_release"
    assert not promoted.is_error, promoted.data
    assert promoted.data["draft"] is False
    assert [(r["tag_name"], r["draft"]) for r in search_fleet.github.releases] == [("v2.0.0", False)]
    lines = [(line["operation"], line["staged_for"]) for line in stage.audit()]
    assert lines == [("github.releases.create", "github.releases.create"), ("github.releases.update", None)]


# --- a proxied call is the direct call --------------------------------------------------------------------------


def _ledger_rows(path: Path) -> dict[str, dict[str, Any]]:
    """Every idempotency row of the gateway's SQLite ledger, by document id."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'anvil_idempotency_%'")]
        rows = [dict(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"')]
    db.close()
    return {row["doc_id"]: row for row in rows}


def _metrics(text: str) -> Counter[tuple[str, ...]]:
    """``anvil_tool_calls_total`` by (tool, outcome) and ``anvil_ledger_outcomes_total`` by ("ledger", outcome)."""
    counts: Counter[tuple[str, ...]] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "anvil_tool_calls_total":
                counts[sample.labels["tool"], sample.labels["outcome"]] += int(sample.value)
            elif sample.name == "anvil_ledger_outcomes_total":
                counts["ledger", sample.labels["outcome"]] += int(sample.value)
    return counts


async def _scrape(stage: Stage) -> str:
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        response = await http.get(f"{stage.process.base}/metrics")
    assert response.status_code == 200
    return response.text


def _without(line: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {name: value for name, value in line.items() if name not in PER_CALL and name not in fields}


async def test_a_proxied_read_and_keyed_write_leave_the_audit_lines_ledger_rows_and_metrics_of_direct_calls(
    stage: Stage,
) -> None:
    read, write = stage.read, stage.write
    direct_key, proxied_key = (f"e2e-{side}-{uuid.uuid4().hex[:12]}" for side in ("direct", "proxied"))
    rows_before, metrics_before = _ledger_rows(stage.ledger_path), _metrics(await _scrape(stage))
    async with agent(stage, lists_once=False) as direct, agent(stage) as client:
        # Neither tool is listed (only the meta-tools are), and both are still served by their names.
        assert read.tool not in direct.listed and write.tool not in direct.listed
        direct_read = await direct.call(read.tool, read.arguments)
        proxied_read = await client.proxy(await client.find(read), read.arguments)
        direct_write = await direct.call(write.tool, write.arguments, {"idempotency_key": direct_key})
        entry = await client.find(write)
        proxied_write = await client.proxy(entry, write.arguments, key=proxied_key)
        replayed = await client.proxy(entry, write.arguments, key=direct_key)  # the direct call's key
    metrics_after = _metrics(await _scrape(stage))
    answers = (direct_read, proxied_read, direct_write, proxied_write, replayed)
    assert not any(answer.is_error for answer in answers), [answer.data for answer in answers]
    assert proxied_read.data == direct_read.data
    assert proxied_read.effect == direct_read.effect
    assert replayed.data == direct_write.data  # one ledger: the proxy's retry is the direct call's replay
    assert replayed.effect is not None and replayed.effect["replayed"] is True

    lines = stage.audit()
    assert [(line["operation"], line["ledger"]) for line in lines] == [
        (read.operation, "none"),
        (read.operation, "none"),
        (write.operation, "reserved"),
        (write.operation, "reserved"),
        (write.operation, "replay"),
    ]  # search and the proxies write no line of their own
    line_of_direct_read, line_of_proxied_read, line_of_direct_write, line_of_proxied_write, line_of_replay = lines
    assert _without(line_of_proxied_read) == _without(line_of_direct_read)
    # The two writes differ only in their keys (the key is among the hashed input when it is forwarded) ...
    keyed = ("ledger_id", "input_sha256")
    assert _without(line_of_proxied_write, *keyed) == _without(line_of_direct_write, *keyed)
    assert (line_of_direct_write["ledger_id"], line_of_proxied_write["ledger_id"]) == (direct_key, proxied_key)
    # ... and the proxied retry under the direct call's key is that call, answered by the ledger.
    replay = ("ledger", "attempts")
    assert _without(line_of_replay, *replay) == _without(line_of_direct_write, *replay)
    assert (line_of_replay["ledger"], line_of_replay["attempts"]) == ("replay", 0)

    added = [row for doc_id, row in _ledger_rows(stage.ledger_path).items() if doc_id not in rows_before]
    assert sorted((row["operation_id"], row["status"], row["trace_id"]) for row in added) == sorted(
        (write.operation, "completed", line["trace_id"]) for line in (line_of_direct_write, line_of_proxied_write)
    )
    assert len({row["response_status"] for row in added}) == 1

    delta = metrics_after - metrics_before
    assert delta == Counter(
        {
            (read.tool, "ok"): 2,
            (write.tool, "ok"): 3,
            **{("ledger", outcome): count for outcome, count in Counter(line["ledger"] for line in lines).items()},
        }
    )
    assert not any(name in key for key in metrics_after for name in META_TOOL_NAMES)
