"""``anvil run BUNDLE RESOURCE ACTION [--flag value ...]``: call one operation of a compiled bundle.

The generated CLI of original-core §7, over a bundle directory (or an ``air.json`` path). Only approved
operations are callable. ``RESOURCE ACTION`` is matched as the longest tail of an operation's
``cli.command`` (``payments refunds create`` answers to ``refunds create``); an id, canonical name or
tool name works too. No words lists the operations.

Grammar: ``--flag value``, ``--flag=value``, bare ``--flag`` = true (also before another ``--x`` or at
the end). ``confirm dry-run json trace help no-retries stage`` are always boolean. The views
``--help``/``--explain``, ``--schema``, ``--examples``, ``--errors`` and ``--policy`` apply only when
bare (``--schema x`` sets a business input named ``schema``).

Inputs: one ``--<kebab(property)>`` per input of the op's schema (``--input-<name>`` when it collides
with a control flag), values coerced by the schema type (integer, number, boolean, JSON for objects
and arrays; an array also takes a comma list or a repeated flag); ``--body '<json>'`` for a whole
body; ``--input file.json`` for a base object the flags override. Controls: ``--confirm``,
``--idempotency-key K``, ``--dry-run``, ``--projection EXPR``, ``--stage``, ``--json``, ``--trace``, ``--no-retries``,
``--auth-profile P``, ``--base-url URL``, ``--timeout MS`` (direct only), ``--validate-input`` (check
the arguments against the runtime's schema and key contract, print ``{"valid": true, ...}`` or the
refusal, and call nothing), ``--mcp stdio|URL|direct``
(bare = stdio; default from ``ANVIL_MCP_TARGET``), ``--mcp-token-env VAR`` (HTTP only; default from
``ANVIL_MCP_TOKEN_ENV``). An unknown flag is a ``validation_error`` with a did-you-mean.

Direct mode executes in-process with a context built from the environment: ``ANVIL_ENV``,
``ANVIL_BASE_URL__<SERVER>`` (re-points an operation's own server, as ``anvil serve`` reads it),
``ANVIL_ALLOWED_HOSTS`` (pinned to the ``--base-url``/``ANVIL_BASE_URL`` host and the re-pointed
servers' hosts when unset),
``ANVIL_LEDGER`` (default ``memory:``, which is not durable: required-key writes then run only in
dev), ``ANVIL_AUTH_PROFILE``, ``ANVIL_UPSTREAM_TIMEOUT_MS``, ``ANVIL_AUDIT_FILE`` and the credential
variables (``ANVIL_<PROFILE>_*``), as ``anvil serve`` reads them. ``--mcp stdio`` spawns ``<this
python> -m anvil serve BUNDLE --stdio`` with this environment (``--base-url``/``--auth-profile``
passed as ``ANVIL_BASE_URL``/``ANVIL_AUTH_PROFILE``);
``--mcp http(s)://...`` connects over Streamable HTTP (``sse:<url>`` over legacy SSE). Through MCP,
``--confirm`` sets the op's confirm input, ``--idempotency-key`` travels as ``_meta.idempotency_key``,
``--stage`` as ``_meta.stage``, ``--dry-run`` as ``anvil_dry_run`` and ``--projection`` as
``anvil_projection``. ``--stage`` needs ``--mcp``: only the gateway resolves a draft form.

``--projection EXPR`` is the reserved ``anvil_projection`` argument (:mod:`anvil.serve.projection`): a
JMESPath view of a successful answer, printed instead of the whole answer, in every mode. The expression
is checked before anything is called (``validation_error``, exit 2); a view that cannot be taken from a
successful answer is an error too (exit 2) whose effect report still says what the call did. The ledger
keeps the whole answer, so a replay prints the view its own ``--projection`` asks for.

Output: stdout carries only the data (pretty JSON with ``--json``; without it, ``OK`` for null, a
string as is, anything else as pretty JSON) or the dry-run plan, the same in every mode, so scripts
can pipe it. The effect report (``_meta.effect`` through MCP; the same report built in-process in
direct mode) is printed to **stderr** as one line ``effect: <compact JSON>`` (after the envelope on a
failed call), so the CLI always says what a write did and how to undo it. An error prints its envelope
as pretty JSON on stderr. Through MCP, a JSON-RPC error (an unknown tool, invalid params) is reported
as what it is, never as an unreachable gateway, and against a fleet the bundle's tool is found under
its prefixed name (``github__github_create_comment``).

Exit status: 0 success, dry run or view; 1 usage (unknown operation, unreadable bundle, a group
listing without ``--help``); otherwise the envelope code's (original-core §5.7): 2 validation, 3
confirmation/idempotency required, 4 auth, 5 policy/unsupported, 6 not found/conflict, 7 upstream.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import anyio

from anvil._types import JSONObject, JSONValue
from anvil.air.credential_names import auth_profile
from anvil.air.model import Document, Operation
from anvil.cli.run_args import (
    CONTROL_FLAGS,
    VIEW_FLAGS,
    Invocation,
    Refused,
    Target,
    coerce_flag,
    parse_target,
    parse_tokens,
    refusal,
    suggest,
)
from anvil.errors import AnvilError

if TYPE_CHECKING:
    import httpx

    from anvil.runtime import RuntimeContext
    from anvil.serve.projection import Projection

__all__ = ["register", "run", "run_command"]

#: A call through MCP may retry upstream with backoff: bound the wait above the gateway's own worst case.
_CALL_TIMEOUT_S: Final = 300.0


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``run`` arguments: the bundle, then everything else verbatim (parsed by this module)."""
    parser.add_argument("bundle", metavar="BUNDLE", help="the compiled bundle directory (or its air.json)")
    parser.add_argument(
        "rest",
        nargs=argparse.REMAINDER,
        metavar="RESOURCE ACTION [--flag value ...]",
        help="the operation and its flags; `anvil run BUNDLE RESOURCE ACTION --help` explains one",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``anvil run`` and return its exit status."""
    return run_command(str(args.bundle), list(args.rest), environ=os.environ, stdout=sys.stdout, stderr=sys.stderr)


def _pretty(value: JSONValue) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


# --- the command -----------------------------------------------------------------------------------


#: The last bundle read, by its directory and the digest of its ``air.json``: a process that runs many
#: calls (conformance's CLI worker) parses a large bundle once, and a changed byte reads it again.
_LAST_READ: dict[tuple[str, str], Document] = {}


def _read_bundle_cached(path: Path) -> Document:
    import hashlib

    from anvil.bundle.read import read_bundle

    try:
        digest = hashlib.sha256((path / "air.json").read_bytes()).hexdigest()
    except OSError:
        return read_bundle(path)  # raises the coded error for a missing or unreadable bundle
    key = (str(path.resolve()), digest)
    found = _LAST_READ.get(key)
    if found is None:
        found = read_bundle(path)
        _LAST_READ.clear()
        _LAST_READ[key] = found
    return found


def _load_document(path: Path) -> Document:

    if path.is_file():
        import yaml

        from anvil.air.codec import load_document
        from anvil.errors import BundleError

        try:
            text = path.read_text(encoding="utf-8")
            return load_document(yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text))
        except (OSError, ValueError, AnvilError, yaml.YAMLError) as exc:
            raise BundleError("bundle/invalid", f"{path} is not a readable AIR document") from exc
    return _read_bundle_cached(path)


def _tail(op: Operation) -> str:
    words = op.cli.command.split()
    return " ".join(words[1:]) if len(words) > 1 else op.cli.command


def _commands(op: Operation) -> list[list[str]]:
    return [op.cli.command.split(), *(alias.split() for alias in op.cli.aliases)]


def _contains(command: list[str], words: list[str]) -> bool:
    span = len(words)
    return any(command[start : start + span] == words for start in range(len(command) - span + 1))


class _Command:
    """One ``anvil run`` invocation: lookup, views, input assembly and the call."""

    def __init__(self, bundle: str, inv: Invocation, environ: Mapping[str, str], out: TextIO, err: TextIO) -> None:
        self.bundle = bundle
        self.inv = inv
        self.environ = environ
        self.out = out
        self.err = err

    # lookup -----------------------------------------------------------------------------------

    def main(self) -> int:
        from anvil.errors import BundleError

        try:
            doc = _load_document(Path(self.bundle))
        except BundleError as exc:
            print(f"error[{exc.code}]: {exc.message}", file=self.err)
            return 1
        self.doc = doc
        words = self.inv.words
        if not words:
            return self._listing([op for op in doc.operations if op.is_approved], "Operations:")
        found = self._match(words)
        if isinstance(found, int):
            return found
        self.op = found
        self.usage = f"anvil run {self.bundle} {' '.join(words)}"
        try:
            view = next((name for name in VIEW_FLAGS if self.inv.bare(name)), None)
            if view is not None:
                return self._view("help" if view == "explain" else view)
            return self._invoke()
        except Refused as refused:
            return self._fail(refused.envelope, None)

    def _match(self, words: list[str]) -> Operation | int:
        ops = self.doc.operations
        tails = [(op, len(cmd) - len(words)) for op in ops for cmd in _commands(op) if cmd[-len(words) :] == words]
        if not tails and len(words) == 1:
            tails = [(op, 0) for op in ops if words[0] in (op.id, op.canonical_name, op.mcp.tool_name)]
        if tails:
            shortest = min(extra for _, extra in tails)
            best = list({op.id: op for op, extra in tails if extra == shortest}.values())
            if len(best) == 1:
                op = best[0]
                if op.is_approved:
                    return op
                envelope = refusal(
                    op.id,
                    "unsupported_operation",
                    f"Operation '{op.id}' is not approved for execution (state: {op.state}).",
                    {"state": op.state, "required_action": f"anvil approve <bundle> {op.id}"},
                )
                return self._fail(envelope, None)
            return self._listing(best, f"'{' '.join(words)}' matches several operations:")
        group = [op for op in ops if any(_contains(cmd, words) for cmd in _commands(op))]
        if group:
            approved = [op for op in group if op.is_approved]
            if not approved:
                envelope = refusal(
                    group[0].id,
                    "unsupported_operation",
                    f"No operation under '{' '.join(words)}' is approved for execution.",
                    {"operations": [op.id for op in group]},
                )
                return self._fail(envelope, None)
            return self._listing(approved, f"'{' '.join(words)}' is a group:")
        phrase = " ".join(words)
        hint = suggest(phrase, sorted({_tail(op) for op in ops if op.is_approved}))
        print(f"error[cli/unknown_operation]: no operation answers to '{phrase}'.", file=self.err)
        if hint:
            print(f"Did you mean '{hint}'?", file=self.err)
        return 1

    def _listing(self, ops: list[Operation], title: str) -> int:
        stream = self.out if self.inv.bare("help") else self.err
        print(title, file=stream)
        width = max((len(_tail(op)) for op in ops), default=0)
        for op in sorted(ops, key=_tail):
            print(f"  {_tail(op).ljust(width)}  {op.display_name}", file=stream)
        return 0 if self.inv.bare("help") else 1

    # views --------------------------------------------------------------------------------------

    def _view(self, name: str) -> int:
        from anvil.cli import run_views

        op = self.op
        if name == "help":
            print(run_views.help_text(op, self._flags(), self.usage), file=self.out)
        elif name == "policy":
            print(_pretty(run_views.policy(op)), file=self.out)
        elif name == "schema":
            from anvil.air.tools import operation_input_schema

            print(_pretty(operation_input_schema(op)), file=self.out)
        elif name == "examples":
            from anvil.bundle.example import example_input

            print(_pretty(example_input(op)), file=self.out)
        else:
            print(_pretty(run_views.errors_view(op)), file=self.out)
        return 0

    # inputs -------------------------------------------------------------------------------------

    def _flags(self) -> dict[str, str]:
        """Business property -> flag (``--input-<name>`` where it would shadow a control flag)."""
        from anvil.air.inputs import cli_flags

        return cli_flags(self.op)

    def _arguments(self) -> JSONObject:
        op = self.op
        from anvil.air.tools import operation_input_schema

        schema = operation_input_schema(op)
        properties: JSONObject = schema.get("properties") or {}
        found_defs = schema.get("$defs")
        defs: JSONObject = found_defs if isinstance(found_defs, dict) else {}
        by_flag = {flag[2:]: prop for prop, flag in self._flags().items()}
        unknown = [name for name in self.inv.flags if name not in by_flag and name not in CONTROL_FLAGS]
        if unknown:
            known = sorted({*by_flag, *CONTROL_FLAGS})
            parts = []
            for name in unknown:
                hint = suggest(name, known)
                parts.append(f"--{name}" + (f" (did you mean --{hint}?)" if hint else ""))
            raise Refused(
                refusal(
                    op.id,
                    "validation_error",
                    f"Unknown flag(s): {', '.join(parts)}",
                    {"unknown_flags": [f"--{name}" for name in unknown]},
                )
            )
        arguments: JSONObject = self._base_input()
        for name, values in self.inv.flags.items():
            prop = by_flag.get(name)
            if prop is None or (name in VIEW_FLAGS and values[-1] is True):
                continue
            found = properties.get(prop)
            arguments[prop] = coerce_flag(op.id, f"--{name}", values, found if isinstance(found, dict) else {}, defs)
        return arguments

    def _base_input(self) -> JSONObject:
        given = self.inv.flag("input")
        if given is None:
            return {}
        if given is True:
            raise Refused(self._needs_value("input"))
        try:
            data = json.loads(Path(str(given)).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise Refused(
                refusal(self.op.id, "validation_error", "--input must name a readable JSON file.", {"field": "--input"})
            ) from None
        if not isinstance(data, dict):
            raise Refused(
                refusal(self.op.id, "validation_error", "--input must hold a JSON object.", {"field": "--input"})
            )
        return data

    def _needs_value(self, name: str) -> JSONObject:
        return refusal(self.op.id, "validation_error", f"--{name} needs a value.", {"field": f"--{name}"})

    def _text_flag(self, name: str) -> str | None:
        value = self.inv.flag(name)
        if value is True:
            raise Refused(self._needs_value(name))
        return value if isinstance(value, str) else None

    # the call -----------------------------------------------------------------------------------

    def _invoke(self) -> int:
        from anvil.air.enums import KEYED_MODES
        from anvil.cli.run_validate import argument_refusal

        op = self.op
        arguments = self._arguments()
        key = self._text_flag("idempotency-key")
        self.projection = self._check_projection()
        if self.inv.bare("validate-input"):
            return self._validate(arguments, key)
        refused = argument_refusal(op, arguments)
        if refused is not None:
            return self._fail(refused, None)
        target = parse_target(self.inv.flag("mcp") if "mcp" in self.inv.flags else self.environ.get("ANVIL_MCP_TARGET"))
        if target is None:
            raise Refused(
                refusal(op.id, "validation_error", "--mcp must be stdio, direct or an http(s) URL.", {"field": "--mcp"})
            )
        if target.kind == "direct":
            if self.inv.bare("stage"):
                raise Refused(
                    refusal(
                        op.id,
                        "validation_error",
                        "--stage needs --mcp: only the gateway performs a draft form.",
                        {"field": "--stage"},
                    )
                )
            keyed = op.idempotency.mode in KEYED_MODES
            return anyio.run(self._direct, arguments, key if keyed else None, key)
        for name in ("timeout", "no-retries"):
            if name in self.inv.flags:
                raise Refused(
                    refusal(op.id, "validation_error", f"--{name} applies to direct mode only.", {"field": f"--{name}"})
                )
        return anyio.run(self._through_mcp, target, arguments, key)

    def _check_projection(self) -> Projection | None:
        """``--projection`` compiled, or None without one; a malformed expression is refused before anything runs."""
        from anvil.serve.projection import ProjectionRefusal, compile_projection

        text = self._text_flag("projection")
        if text is None:
            return None
        compiled = compile_projection(text)
        if isinstance(compiled, ProjectionRefusal):
            raise Refused(refusal(self.op.id, "validation_error", compiled.message, dict(compiled.details)))
        return compiled

    def _validate(self, arguments: JSONObject, key: str | None) -> int:
        from anvil.air.inputs import safety_keys
        from anvil.cli.run_validate import validate_arguments

        confirm = safety_keys(self.op).confirm
        if confirm is not None and self.inv.bare("confirm"):
            arguments[confirm] = True
        answer, valid = validate_arguments(self.op, arguments, confirm=self.inv.bare("confirm"), idempotency_key=key)
        if not valid:
            return self._fail(answer, None)
        print(_pretty(answer), file=self.out)
        return 0

    def _report(self, outcome: Any, arguments: JSONObject) -> JSONObject:
        """The effect report of a direct call: the one the gateway attaches as ``_meta.effect``."""
        import time

        from anvil.serve.pages import resolved_schema
        from anvil.serve.report import EffectPlan, call_report, lookup_found

        served = {op.id: op.mcp.tool_name for op in self.doc.operations if op.is_approved}
        lookups = {
            op.effect.lookup.operation
            for op in self.doc.operations
            if op.is_approved and op.effect.lookup is not None and op.effect.lookup.operation in served
        }
        confirming = {op.id for op in self.doc.operations if op.is_approved and op.confirmation.required}
        plan = EffectPlan.of(self.op, served.get, lookups, confirming, resolved_schema(self.op.output.schema, self.doc))
        succeeded = outcome.kind == "success"
        found = lookup_found(succeeded, outcome.data, outcome.code, plan.lists) if plan.answers_lookup else None
        return call_report(
            plan,
            succeeded=succeeded,
            request=arguments,
            response=outcome.data if succeeded else None,
            idempotency_key=None if outcome.replayed else outcome.idempotency_key,
            answered_at_ms=int(time.time() * 1000),
            found=found,
            replayed=outcome.replayed,
            replay_unavailable=outcome.replay_unavailable,
        )

    async def _direct(self, arguments: JSONObject, key: str | None, ledger_id: str | None) -> int:
        import httpx

        from anvil.runtime import CallOptions, execute

        options = CallOptions(
            dry_run=self.inv.bare("dry-run"),
            confirm=self.inv.bare("confirm"),
            idempotency_key=key,
            ledger_id=ledger_id,
        )
        async with httpx.AsyncClient(follow_redirects=False, timeout=httpx.Timeout(35.0)) as client:
            context = self._context(client)
            try:
                outcome = await execute(self.op, arguments, context, options)
            finally:
                if context.ledger is not None:
                    await context.ledger.close()
        if outcome.kind == "dry_run":
            print(_pretty(outcome.plan), file=self.out)
            return 0
        report = self._report(outcome, arguments)
        if outcome.kind == "error" and outcome.envelope is not None:
            return self._fail(outcome.envelope.to_json(), report)
        data = outcome.data
        if self.projection is not None:
            from anvil.serve.projection import ProjectionFailed, failure_envelope

            try:
                data = self.projection.apply(data)
            except ProjectionFailed as failed:
                envelope = failure_envelope(self.op.id, failed, outcome.trace_id, outcome.status)
                return self._fail(envelope.to_json(), report)
        self._print_data(data)
        if outcome.replayed:
            print("anvil: replayed: the ledger answered with an earlier call's result", file=self.err)
        if outcome.replay_unavailable is not None:
            print(f"anvil: warning: this answer cannot be replayed: {outcome.replay_unavailable}", file=self.err)
        print("effect: " + json.dumps(report, ensure_ascii=False, separators=(",", ":")), file=self.err)
        if self.inv.bare("trace"):
            print(f"trace_id={outcome.trace_id}", file=self.err)
        return 0

    def _context(self, client: httpx.AsyncClient) -> RuntimeContext:
        """The runtime context of original-core §7 direct mode, from flags and the environment."""
        from anvil.air.servers import resolve_server, server_hosts
        from anvil.cli.serve_config import server_urls
        from anvil.ledger.registry import open_ledger
        from anvil.runtime import RuntimeContext, normalize_env, parse_allowed_hosts
        from anvil.runtime.audit import FileAuditSink
        from anvil.runtime.context import DEFAULT_DERIVED_KEY_WINDOW_SECONDS, DEFAULT_TIMEOUT_MS

        env = self.environ
        override = self._text_flag("base-url") or env.get("ANVIL_BASE_URL")
        servers = self.doc.service.servers
        base_url = override or ((resolve_server(servers[0]).url or "") if servers else "")
        if not base_url:
            raise Refused(
                refusal(
                    self.op.id,
                    "validation_error",
                    "The bundle names no server: pass --base-url.",
                    {"field": "--base-url"},
                )
            )
        try:
            repointed = server_urls(env, self.doc, None)
        except AnvilError as exc:
            raise Refused(refusal(self.op.id, "validation_error", exc.message, {"field": "ANVIL_BASE_URL__"})) from None
        try:
            hosts = parse_allowed_hosts(env.get("ANVIL_ALLOWED_HOSTS"))
        except ValueError as exc:
            raise Refused(refusal(self.op.id, "policy_denied", f"{exc}.", {"field": "ANVIL_ALLOWED_HOSTS"})) from None
        if not hosts and override:
            hosts = server_hosts([override, *repointed.values()])
        timeout_ms: int = DEFAULT_TIMEOUT_MS
        given = self._text_flag("timeout") or env.get("ANVIL_UPSTREAM_TIMEOUT_MS")
        if given:
            try:
                timeout_ms = int(given)
            except ValueError:
                timeout_ms = -1  # the executor refuses it with the bounds in the envelope
        try:
            ledger = open_ledger(env.get("ANVIL_LEDGER", ""))
        except AnvilError as exc:
            raise Refused(
                refusal(
                    self.op.id,
                    "idempotency_ledger_unavailable",
                    "ANVIL_LEDGER does not open a ledger.",
                    {"ledger_phase": "open", "cause": exc.code},
                )
            ) from None
        audit_path = env.get("ANVIL_AUDIT_FILE")
        from anvil.cli.serve_config import derived_key_window

        window = derived_key_window(env)
        return RuntimeContext(
            service_id=self.doc.service.id,
            base_url=base_url,
            client=client,
            env=normalize_env(env.get("ANVIL_ENV")),
            allowed_hosts=hosts,
            server_urls=repointed,
            timeout_ms=timeout_ms,
            auth_profile=auth_profile(env, self._text_flag("auth-profile")),
            credentials={name: value for name, value in env.items() if name.startswith("ANVIL_")},
            ledger=ledger,
            audit=FileAuditSink(Path(audit_path)) if audit_path else None,
            retries=not self.inv.bare("no-retries"),
            derived_key_window_seconds=DEFAULT_DERIVED_KEY_WINDOW_SECONDS if window is None else window,
        )

    async def _through_mcp(self, target: Target, arguments: JSONObject, key: str | None) -> int:
        from anvil.air.inputs import safety_keys
        from anvil.air.tools import DRY_RUN_ARGUMENT, PROJECTION_ARGUMENT
        from anvil.client import GatewayUnavailable

        op = self.op
        confirm = safety_keys(op).confirm
        if confirm is not None and self.inv.bare("confirm"):
            arguments[confirm] = True
        if self.inv.bare("dry-run"):
            arguments[DRY_RUN_ARGUMENT] = True
        projection = self._text_flag("projection")
        if projection is not None:
            arguments[PROJECTION_ARGUMENT] = projection
        client = self._client(target)
        try:
            async with client as gateway:
                answer = await gateway.call_result(
                    op.mcp.tool_name, arguments, idempotency_key=key, stage=self.inv.bare("stage")
                )
        except GatewayUnavailable as exc:
            exc.envelope["error"]["operation"] = op.id
            return self._fail(exc.envelope, None)
        if answer.is_error:
            return self._fail(answer.envelope or {}, answer.effect)
        if self.inv.bare("dry-run"):
            print(_pretty(answer.data), file=self.out)
        else:
            self._print_data(answer.data)
        if answer.effect is not None:
            print("effect: " + json.dumps(answer.effect, ensure_ascii=False, separators=(",", ":")), file=self.err)
        return 0

    def _client(self, target: Target) -> Any:
        from anvil.client import AnvilClient

        if target.kind == "stdio":
            child = dict(self.environ)
            base = self._text_flag("base-url")
            if base:  # the gateway pins its allowlist to the URLs the operator gave, as anvil serve always does
                child["ANVIL_BASE_URL"] = base
            profile = self._text_flag("auth-profile")
            if profile:
                child["ANVIL_AUTH_PROFILE"] = profile
            return AnvilClient.stdio(Path(self.bundle), env=child, timeout=_CALL_TIMEOUT_S, errlog=self.err)
        for name in ("base-url", "auth-profile"):
            if name in self.inv.flags:
                raise Refused(
                    refusal(
                        self.op.id,
                        "validation_error",
                        f"--{name} applies to direct mode and --mcp stdio only.",
                        {"field": f"--{name}"},
                    )
                )
        headers: dict[str, str] = {}
        variable = self._text_flag("mcp-token-env") or self.environ.get("ANVIL_MCP_TOKEN_ENV")
        if variable:
            token = self.environ.get(variable)
            if not token:
                raise Refused(
                    refusal(
                        self.op.id,
                        "auth_required",
                        "The MCP bearer token variable is not set.",
                        {"expected_env": [variable]},
                    )
                )
            headers["Authorization"] = f"Bearer {token}"
        assert target.url is not None
        if target.kind == "sse":
            return AnvilClient.sse(target.url, headers=headers, timeout=_CALL_TIMEOUT_S)
        return AnvilClient.http(target.url, headers=headers, timeout=_CALL_TIMEOUT_S)

    # output -------------------------------------------------------------------------------------

    def _print_data(self, data: JSONValue) -> None:
        if self.inv.bare("json"):
            print(_pretty(data), file=self.out)
        elif data is None:
            print("OK", file=self.out)
        elif isinstance(data, str):
            print(data, file=self.out)
        else:
            print(_pretty(data), file=self.out)

    def _fail(self, envelope: JSONObject, effect: JSONObject | None) -> int:
        from anvil.client import exit_code_for

        error = envelope.get("error")
        if not isinstance(error, dict):
            envelope = refusal("", "unknown_upstream_error", "The answer carried no error envelope.")
            error = envelope["error"]
        details = error.get("details")
        if error.get("code") == "validation_error" and isinstance(details, dict) and details.get("missing"):
            names = [str(name) for name in details["missing"]]
            flags = self._flags()
            missing_flags = [flags.get(name, "--" + name.replace("_", "-")) for name in names]
            error["message"] = (
                f"Missing required flag(s): {', '.join(missing_flags)}. "
                f"See `{self.usage} --examples` for a complete invocation."
            )
            error["details"] = {**details, "missing_flags": missing_flags}
        print(_pretty(envelope), file=self.err)
        if effect is not None:
            print("effect: " + json.dumps(effect, ensure_ascii=False, separators=(",", ":")), file=self.err)
        return exit_code_for(str(error.get("code")))


def run_command(
    bundle: str,
    tokens: list[str],
    *,
    environ: Mapping[str, str],
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Run ``anvil run BUNDLE TOKENS...`` against ``environ`` and return the exit status (the testable seam)."""
    return _Command(bundle, parse_tokens(tokens), environ, stdout, stderr).main()
