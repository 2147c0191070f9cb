"""``make demo``: an agent changes two systems through the Anvil gateway, then undoes what can be undone.

It compiles both examples (github-mini and payments) into a temporary workspace, starts their mock
upstreams and the gateway on loopback (a SQLite ledger in the temporary folder, no inbound auth), and
plays a scripted agent session: each call is printed with its outcome and its effect (what class it is,
and which call would undo it). It then prints the undo plan (what can be undone, compensated, or not),
performs it, and shows the mocks' memory before and after. It exits non-zero as soon as anything
behaves otherwise than the story says, so it doubles as a smoke test, and it always stops everything it
started and removes its temporary folder.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _demo_support import (
    DemoFailure,
    Printer,
    Stage,
    compile_example,
    format_call,
    load_mock,
    render_table,
)

from anvil.client import AnvilClient, CallResult
from anvil.errors import AnvilError

OWNER_REPO = {"owner": "octo", "repo": "hello"}
UPSTREAM_TOKEN = "demo-upstream-token"


@dataclass
class Write:
    """A write the agent made, and what the gateway said about undoing it."""

    tool: str
    arguments: dict[str, Any]
    effect: dict[str, Any]
    label: str


@dataclass
class Mocks:
    """The two mock upstreams' memories (read directly: they run in this process)."""

    github: Any
    payments: Any

    def snapshot(self) -> dict[str, str]:
        """One line per thing worth watching, in the order the table shows them."""
        issues = ", ".join(
            f"#{i['number']} {i['state']}" for i in sorted(self.github.issues, key=lambda i: i["number"])
        )
        comments = ", ".join(f"{c['id']} on #{c['issue']}" for c in self.github.comments) or "none"
        releases = ", ".join(
            f"{r['id']} {r['tag_name']}{' (draft)' if r['draft'] else ''}" for r in self.github.releases
        )
        payment = self.payments.payments["pay_123"]
        refunds = ", ".join(f"{r['id']} {r['amount']} {r['currency']}" for r in self.payments.refunds.values())
        return {
            "github issues": issues,
            "github comments": comments,
            "github releases": releases or "none",
            "payments pay_123": f"{payment['status']}, {payment['refunded_amount']} of {payment['amount']} refunded",
            "payments refunds": refunds or "none",
        }


@dataclass
class Agent:
    """The scripted agent's side of the gateway: one MCP session, and plain HTTP for the REST route."""

    mcp: AnvilClient
    rest: httpx.AsyncClient
    printer: Printer
    writes: list[Write] = field(default_factory=list)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys_sent: set[str] = field(default_factory=set)

    async def load_tools(self) -> list[str]:
        """List the gateway's tools over MCP and keep their input schemas."""
        for tool in await self.mcp.list_tools():
            self.schemas[tool["name"]] = tool.get("inputSchema", {})
        return list(self.schemas)

    def needs_confirm(self, tool: str) -> bool:
        """True when ``tool`` takes a ``confirm`` input (the caller's own confirmation)."""
        return "confirm" in self.schemas.get(tool, {}).get("properties", {})

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        key: str | None = None,
        stage: bool = False,
        rest: bool = False,
    ) -> CallResult:
        """One call over MCP, or over ``POST /call/<tool>`` when ``rest``; the same answer either way."""
        if key is not None:
            self.keys_sent.add(key)
        if not rest:
            return await self.mcp.call_result(tool, dict(arguments), idempotency_key=key, stage=stage)
        body: dict[str, Any] = {"arguments": dict(arguments)}
        if stage:
            body["stage"] = True
        response = await self.rest.post(
            f"/call/{tool}", json=body, headers={"Idempotency-Key": key} if key is not None else None
        )
        header = response.headers.get("x-anvil-effect")
        effect = json.loads(header) if header else None
        data = response.json() if response.content else None
        if response.status_code == 200:
            return CallResult(data=data, effect=effect, is_error=False)
        return CallResult(data=data, effect=effect, is_error=True, envelope=data if isinstance(data, dict) else {})


def describe_effect(effect: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(label, text)`` lines: the effect class, and which calls would undo, promote or discard it."""
    if effect is None:
        return [("effect", "no report")]
    klass = effect.get("class")
    staged = effect.get("staged")
    if staged:
        lines = [("effect", f"staged: a draft of {effect.get('operation')}; the real {klass} effect has not happened")]
        for verb in ("promote", "discard"):
            follow_up = staged.get(verb)
            if follow_up:
                lines.append((verb, format_call(follow_up["tool"], follow_up["arguments"])))
        return lines
    undo = effect.get("undo")
    if klass == "read":
        return [("effect", "read; changes nothing")]
    if undo and undo["kind"] == "inverse":
        return [("effect", f"{klass}; can be undone"), ("undo", format_call(undo["tool"], undo["arguments"]))]
    if undo:
        return [
            ("effect", f"{klass}; can be compensated (not undone: it leaves a trace)"),
            ("compensate", format_call(undo["tool"], undo["arguments"])),
        ]
    reason = effect.get("undo_unavailable")
    return [("effect", f"{klass}; cannot be undone" + (f" ({reason})" if reason else ""))]


def summarize(data: Any) -> str:
    """A short human reading of an answer."""
    if isinstance(data, list):
        return f"{len(data)} item{'s' if len(data) != 1 else ''}"
    if not isinstance(data, dict):
        return "no content" if data is None else str(data)
    if "tag_name" in data:
        return f"release {data['id']} {data['tag_name']}" + (" (draft)" if data.get("draft") else " (published)")
    if "title" in data and "number" in data:
        return f'issue #{data["number"]} "{data["title"]}" ({data["state"]})'
    if "payment_id" in data:
        return f"refund {data['id']}: {data['amount']} {data['currency']} {data['status']}"
    if "status" in data and "amount" in data:
        return f"payment {data['id']}: {data['amount']} {data['currency']} {data['status']}"
    if "body" in data and "id" in data:
        return f'comment {data["id"]}: "{data["body"]}"'
    return ", ".join(f"{key}={value}" for key, value in list(data.items())[:4])


def _meta(key: str | None, stage: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"idempotency_key": key} if key else {}
    if stage:
        meta["stage"] = True
    return meta


def expect(condition: bool, what: str) -> None:
    """Stop the demo (exit 1) when the story and the system disagree."""
    if not condition:
        raise DemoFailure(what)


async def perform(
    agent: Agent,
    tool: str,
    arguments: dict[str, Any],
    *,
    key: str | None = None,
    stage: bool = False,
    label: str = "",
    klass: str | None = None,
    check: Callable[[Any], bool] | None = None,
    rest: bool = False,
) -> CallResult:
    """Make one call the story expects to succeed; print it and its effect; remember writes."""
    agent.printer.call(tool, arguments, meta=_meta(key, stage), rest=rest)
    result = await agent.call(tool, arguments, key=key, stage=stage, rest=rest)
    if result.is_error:
        error = (result.envelope or {}).get("error", {})
        agent.printer.outcome(f"refused: {error.get('code')}: {error.get('message')}", ok=False)
        raise DemoFailure(f"{tool} was refused")
    agent.printer.outcome(summarize(result.data))
    for name, text in describe_effect(result.effect):
        agent.printer.detail(name, text)
    effect = result.effect or {}
    expect(klass is None or effect.get("class") == klass, f"{tool} reported class {effect.get('class')}")
    expect(check is None or check(result.data), f"{tool} answered {result.data!r}")
    if effect.get("class") not in (None, "read") and label:
        agent.writes.append(Write(tool, arguments, effect, label))
    return result


async def session(agent: Agent, mocks: Mocks) -> None:
    """The scripted agent session."""
    printer = agent.printer
    printer.step("Look before changing anything (reads)")
    await perform(agent, "github__github_list_issue", {**OWNER_REPO, "state": "all"}, klass="read")
    await perform(agent, "payments__payments_get_payment", {"payment_id": "pay_123"}, klass="read")

    printer.step("A reversible write: comment on issue #2, with a ledger id")
    comment = {**OWNER_REPO, "issue_number": 2, "body": "Reproduced on main; fix incoming."}
    first = await perform(
        agent, "github__github_create_comment", comment, key="demo-ledger-0001", label="comment", klass="reversible"
    )

    printer.step("The agent retries the same call with the same ledger id")
    requests_before = len(mocks.github.requests)
    printer.call("github__github_create_comment", comment, meta=_meta("demo-ledger-0001", False))
    again = await agent.call("github__github_create_comment", comment, key="demo-ledger-0001")
    expect(not again.is_error, "the retry was refused")
    printer.outcome(summarize(again.data))
    sent = len(mocks.github.requests) - requests_before
    printer.detail("replay", f"same comment, {len(mocks.github.comments)} comment on the issue, {sent} upstream calls")
    expect(again.data == first.data, "the retry answered a different comment")
    expect(len(mocks.github.comments) == 1, "the retry created a second comment")

    printer.step("A compensable write: open an issue (needs confirm)")
    issue = {**OWNER_REPO, "title": "Flaky release job", "body": "Seen twice this week.", "confirm": True}
    await perform(agent, "github__github_create_issue", issue, label="issue", klass="compensable")

    printer.step("An irreversible write, staged: a release as a draft first")
    release = {**OWNER_REPO, "tag_name": "v1.4.0", "name": "v1.4.0", "confirm": True}
    await perform(
        agent,
        "github__github_create_release",
        release,
        stage=True,
        label="release (draft)",
        klass="irreversible",
        check=lambda data: isinstance(data, dict) and data.get("draft") is True,
    )

    printer.step("Staging a write that has no draft form is refused")
    requests_before = len(mocks.github.requests)
    printer.call("github__github_create_comment", comment, meta=_meta(None, True))
    refused = await agent.call("github__github_create_comment", comment, stage=True)
    error = (refused.envelope or {}).get("error", {})
    expect(refused.is_error, "staging a comment was not refused")
    printer.outcome(f"refused: {error.get('code')} ({error.get('details', {}).get('code')})", ok=False)
    printer.detail("upstream", f"{len(mocks.github.requests) - requests_before} calls: nothing was sent")
    expect(error.get("details", {}).get("code") == "effect/no_draft_form", f"unexpected refusal {error}")
    expect(len(mocks.github.requests) == requests_before, "a refused staging reached the upstream")

    printer.step("An irreversible write: refund part of a payment (needs a ledger id and confirm)")
    refund = {"payment_id": "pay_123", "amount": 1200, "currency": "EUR", "reason": "duplicate", "confirm": True}
    await perform(
        agent, "payments__payments_create_refund", refund, key="demo-ledger-0002", label="refund", klass="irreversible"
    )


def undo_plan(writes: list[Write]) -> list[tuple[Write, str, dict[str, Any] | None]]:
    """Each write with what can be done about it: undo, compensate, discard the draft, or nothing."""
    plan: list[tuple[Write, str, dict[str, Any] | None]] = []
    for write in writes:
        staged = write.effect.get("staged")
        undo = write.effect.get("undo")
        if staged and staged.get("discard"):
            plan.append((write, "discard the draft", staged["discard"]))
        elif undo and undo["kind"] == "inverse":
            plan.append((write, "undo", undo))
        elif undo:
            plan.append((write, "compensate", undo))
        else:
            plan.append((write, "cannot be undone", None))
    return plan


async def unwind(agent: Agent, plan: list[tuple[Write, str, dict[str, Any] | None]]) -> None:
    """Print the plan, then perform it newest first; each follow-up is an ordinary call."""
    printer = agent.printer
    printer.step("Undo plan (from each call's _meta.effect)")
    rows = [
        (str(index), write.label, write.effect["class"], action, format_call(f["tool"], f["arguments"]) if f else "-")
        for index, (write, action, f) in enumerate(plan, 1)
    ]
    printer.out(render_table(("#", "write", "class", "plan", "follow-up call"), rows))
    final = sum(follow_up is None for _, _, follow_up in plan)
    printer.note(f"{len(plan) - final} of {len(plan)} writes can be reverted; {final} cannot be undone and will stay.")

    printer.step("Performing the plan, newest first, over the REST route (undo is an ordinary call)")
    for write, action, follow_up in reversed(plan):
        if follow_up is None:
            printer.note(f"{write.label}: {action}; it stays.")
            continue
        arguments = dict(follow_up["arguments"])
        if agent.needs_confirm(follow_up["tool"]):
            arguments["confirm"] = True
        await perform(agent, follow_up["tool"], arguments, klass="irreversible", rest=True)


def show_state(printer: Printer, before: dict[str, str], during: dict[str, str], after: dict[str, str]) -> None:
    printer.step("The upstreams' memory")
    rows = [(name, before[name], during[name], after[name]) for name in before]
    printer.out(render_table(("", "before", "after the session", "after the undo plan"), rows))


def verify(before: dict[str, str], after: dict[str, str], mocks: Mocks) -> None:
    """The undoable writes are gone, the compensated issue is closed, the refund stands."""
    for name in ("github comments", "github releases"):
        expect(after[name] == before[name], f"{name} were not restored: {after[name]}")
    opened = [issue for issue in mocks.github.issues if issue["number"] >= 3]
    expect(len(opened) == 1 and opened[0]["state"] == "closed", "the opened issue was not closed")
    expect(len(mocks.payments.refunds) == 1, "the refund should stand")


def show_audit(printer: Printer, audit: Path, keys_sent: set[str]) -> None:
    """The gateway's audit file: one line per executed call."""
    printer.step("What the gateway's audit file recorded (one line per executed call)")
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [
        (
            line["operation"],
            line["decision"],
            line["effect_class"],
            str(line["upstream_status"] or "-"),
            line["ledger_id"] or "-",
            line["staged_for"] or "-",
        )
        for line in lines
    ]
    printer.out(render_table(("operation", "decision", "class", "upstream", "ledger id", "staged for"), rows))
    printer.note(
        "The ledger id is the caller's idempotency key, recorded as sent (auditors join on it; a key alone "
        "replays nothing); arguments only as a sha256 of the redacted input."
    )
    expect(all(isinstance(line["effect_class"], str) for line in lines), "an audit line has no effect class")
    recorded = {line["ledger_id"] for line in lines if line["ledger_id"]}
    expect(bool(recorded) and recorded <= keys_sent, f"the audit's ledger ids {recorded} are not the keys sent")
    expect(all(line["input_sha256"].startswith("sha256:") for line in lines), "an audit line holds no input hash")


async def play(printer: Printer, url: str, mocks: Mocks, audit: Path) -> None:
    """Connect, play the session, unwind it, and show what changed."""
    failure: DemoFailure | None = None
    async with (
        AnvilClient.http(url, timeout=20) as mcp,
        httpx.AsyncClient(base_url=url.removesuffix("/mcp"), timeout=20) as rest,
    ):
        agent = Agent(mcp, rest, printer)
        tools = await agent.load_tools()
        printer.note(f"The gateway serves {len(tools)} tools from both bundles, e.g. {tools[0]} and {tools[-1]}.")
        before = mocks.snapshot()
        try:
            await session(agent, mocks)
            during = mocks.snapshot()
            await unwind(agent, undo_plan(agent.writes))
        except DemoFailure as caught:
            # Raised outside the client's block: the MCP client reports an exception raised inside
            # its block as the gateway being unreachable, which would hide what went wrong.
            failure = caught
        after = mocks.snapshot()
    if failure is not None:
        raise failure
    show_state(printer, before, during, after)
    verify(before, after, mocks)
    show_audit(printer, audit, agent.keys_sent)
    printer.out()
    printer.out("github-mini is back where it started (the closed issue is the compensation's trace);", "green")
    printer.out("the refund stands: it was irreversible, and the plan said so before anything was undone.", "green")


def _gateway_env(workspace: Path, mocks: dict[str, str], scratch: Path) -> dict[str, str]:
    """No inherited ``ANVIL_*``; prod rules, loopback egress, SQLite, an audit file, the mocks as upstreams."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env.update(
        {
            "ANVIL_ENV": "prod",
            "ANVIL_INBOUND_AUTH_MODE": "none",
            "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
            "ANVIL_LEDGER": f"sqlite:///{scratch / 'ledger.db'}",
            "ANVIL_AUDIT_FILE": str(scratch / "audit.jsonl"),
        }
    )
    for service, url in mocks.items():
        env[f"ANVIL_BASE_URL_{service.upper()}"] = url
        env[_token_variable(workspace / service)] = UPSTREAM_TOKEN
    return env


def _token_variable(bundle: Path) -> str:
    from anvil.bundle.read import read_bundle
    from anvil.runtime.credentials import credential_profile, expected_env

    for op in read_bundle(bundle).operations:
        names = expected_env(op.auth, credential_profile("default", op.auth))
        if names:
            return names[0]
    raise DemoFailure(f"{bundle.name} names no credential variable")


def run(printer: Printer, scratch: Path) -> None:
    """Compile, start everything, play; everything started is stopped on the way out."""
    started = time.monotonic()
    printer.title("Anvil demo: an agent acts through the gateway, and what it did can be undone")
    printer.step("Compile both examples into one workspace")
    workspace = scratch / "workspace"
    for example, service in (("github-mini", "github"), ("payments", "payments")):
        printer.note(compile_example(example, service, workspace / service))
    github_mock, payments_mock = load_mock("github-mini"), load_mock("payments")
    github_app, github_state = github_mock.create_app(token=UPSTREAM_TOKEN)
    payments_state = payments_mock.State()
    mocks = Mocks(github=github_state, payments=payments_state)
    with Stage() as stage:
        printer.step("Start the mock upstreams and one gateway for both bundles, on loopback")
        mock_urls = {
            "github": stage.mock(github_app, "github-mini").url,
            "payments": stage.mock(payments_mock.create_app(payments_state), "payments").url,
        }
        env = _gateway_env(workspace, mock_urls, scratch)
        argv = [sys.executable, "-m", "anvil", "serve", str(workspace), "--http", "127.0.0.1:0"]
        gateway = stage.child(argv, env=env, log=scratch / "gateway.log", name="the gateway")
        printer.note(f"mocks: github-mini at {mock_urls['github']}, payments at {mock_urls['payments']}")
        printer.note(f"gateway: anvil serve workspace/ --http 127.0.0.1:0 -> {gateway.url}")
        printer.note("ledger: SQLite in the temporary folder; inbound auth: none (loopback only)")
        anyio.run(play, printer, gateway.url, mocks, scratch / "audit.jsonl")
    printer.out(f"Done in {time.monotonic() - started:.1f} s; everything stopped, temporary folder removed.", "dim")


def main() -> int:
    """Play the demo; 0 when every step behaved as the story says."""
    printer = Printer()
    try:
        with tempfile.TemporaryDirectory(prefix="anvil-demo-") as scratch:
            run(printer, Path(scratch))
    except (DemoFailure, AnvilError) as failure:
        printer.out()
        printer.out(f"demo failed: {failure}", "bold red")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
