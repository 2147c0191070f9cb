"""The selftest's effect-contract proofs: every declared inverse, compensation, draft and lookup is
carried out against the upstream and the state it leaves is read back (ADR-0030 §1-§7, beyond it).

State is observed through MCP reads when the bundle approves one: the contract's lookup when it can be
resolved, else a read of the same resource (the list at the operation's own path, or the get of the
item its answer names); basis ``api-read``. When no approved read observes the resource and the
upstream is the generated mock, the state is read from the mock itself (``GET /__anvil/items``, the
items of the operation's kind, or the one its answer names); basis ``mock-state``. Every proof says
which basis it used; a skip remains only where neither can see the effect.

* ``effect-inverse``: observe, call, call the reported undo (``undo.tool`` with ``undo.arguments``,
  confirm added), observe again; pass only when the state equals what it was before. A failure names
  the operation, the field that differed and both values.
* ``effect-compensate``: call, call the reported compensation, then the resource must still be there
  and show the trace the compensation declares (each literal argument it sets, e.g. ``state: closed``).
* ``effect-draft``: stage (``_meta.stage``), then the draft must exist as a draft (the draft form's
  literal arguments hold, e.g. ``draft: true``) and not as the real effect; promote must perform the
  real effect (the draft is still there and the promote call's literals hold); a second draft,
  discarded, must be gone. Each step looks for its own draft by the identity its staging answered
  (in a list, the entry with that id; a read that answers another item does not count), and the
  discarded draft is read by that identity first (a get or list of its kind, else the mock's state).
* ``effect-lookup``: after a real call, the reported lookup must answer ``found: true``; for an effect
  that never happened (fresh request values, a fresh key) it must answer ``found: false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import input_bindings
from anvil.air.model import Operation
from anvil.air.paths import Const, parse_source, resolve_mapping
from anvil.client import CallResult
from anvil.proof.contract_inputs import complete_for_contract
from anvil.proof.mock.routes import Route
from anvil.proof.selftest.checks import Driver, identity_value, typed_for
from anvil.proof.selftest.support import ABSENT, Check, Difference, confirm_added, first_difference, show

__all__ = ["EffectProofs"]

_ID_FIELDS: Final = ("id", "gid", "number", "uuid", "key", "name")


@dataclass(frozen=True, slots=True)
class _Read:
    """One observing read: an approved read with its arguments, or the mock's state of one kind
    (``op`` None; the item whose ``identity`` field has that value, or every item of the kind)."""

    op: Operation | None
    arguments: JSONObject
    listing: bool
    kind: str | None = None
    identity: tuple[str, JSONValue] | None = None

    @property
    def basis(self) -> str:
        return "mock-state" if self.op is None else "api-read"

    @property
    def name(self) -> str:
        if self.op is not None:
            return self.op.mcp.tool_name
        return f"the mock's state of {self.kind}"


@dataclass(frozen=True, slots=True)
class _Seen:
    """What a read saw: ``present`` with data, ``absent`` (not found / an empty answer), or unknown."""

    state: str
    data: JSONValue = None

    def shown(self) -> JSONValue:
        return self.data if self.state == "present" else ABSENT


def _code(result: CallResult) -> str | None:
    error = (result.envelope or {}).get("error")
    return error.get("code") if isinstance(error, dict) else None


class _Effects:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.document = driver.document
        self.routes = driver.routes
        self.route_of = driver.route_of

    # --- calls ------------------------------------------------------------------------------------

    def served(self, op_id: str) -> Operation | None:
        op = self.document.operation(op_id)
        return op if op is not None and op.is_approved else None

    async def follow_up(self, call: JSONValue) -> tuple[CallResult | None, str]:
        """Call a reported follow-up ``{operation, tool, arguments}``, confirm added where it needs one."""
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            return None, "no follow-up was reported"
        target = self.driver.tool_op(call["tool"])
        arguments = confirm_added(target, call.get("arguments") or {})
        key = self.driver.example.fresh_key("follow-up", target) if target is not None and _keyed(target) else None
        result = await self.driver.client.call_result(call["tool"], arguments, idempotency_key=key)
        return result, call["tool"]

    async def observe(self, read: _Read | None) -> _Seen:
        if read is None:
            return _Seen("unknown")
        if read.op is None:
            return await self._observe_state(read)
        result = await self.driver.client.call_result(read.op.mcp.tool_name, read.arguments)
        if result.is_error:
            return _Seen("absent") if _code(result) == "not_found" else _Seen("unknown", _code(result))
        if result.data is None or (result.data == [] and not read.listing):
            return _Seen("absent")
        return _Seen("present", result.data)

    async def _observe_state(self, read: _Read) -> _Seen:
        """The mock's own items of ``read.kind`` (one of them, when ``read.identity`` names it)."""
        try:
            answer = await self.driver.wire.http.get("/__anvil/items", params={"kind": read.kind or ""})
            listed = answer.json().get("items") if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            listed = None
        if not isinstance(listed, list):
            return _Seen("unknown", "the mock's state is not readable")
        data = [entry.get("data") for entry in listed if isinstance(entry, dict)]
        if read.identity is None:
            return _Seen("present", data)
        name, value = read.identity
        found = next((item for item in data if isinstance(item, dict) and item.get(name) == value), None)
        return _Seen("absent") if found is None else _Seen("present", found)

    def state_read(self, op: Operation, response: JSONValue, *, collection: bool = False) -> _Read | None:
        """The mock's state of ``op``'s kind: the item ``response`` names, or (``collection``) every item.

        None when the upstream is not the generated mock (no other upstream shows its state).
        """
        route = self.route_of.get(op.id)
        if route is None or self.driver.wire.log != "anvil":
            return None
        if collection:
            return _Read(None, {}, listing=True, kind=route.kind)
        item = response
        if route.envelope is not None and isinstance(response, dict) and isinstance(response.get(route.envelope), dict):
            item = response[route.envelope]
        if not isinstance(item, dict):
            return None
        name = next((f for f in _ID_FIELDS if isinstance(item.get(f), str | int)), None)
        if name is None:
            return _Read(None, {}, listing=True, kind=route.kind)
        return _Read(None, {}, listing=False, kind=route.kind, identity=(name, item[name]))

    # --- finding the read that observes an effect -------------------------------------------------

    def _arguments_for(
        self, read: Operation, request: Mapping[str, JSONValue], response: JSONValue
    ) -> JSONObject | None:
        route = self.route_of.get(read.id)
        schema = read.input.schema or {}
        required = set(schema.get("required") or ())
        out: JSONObject = {}
        last = route.item_param if route is not None else None
        # The call's own values carry over only where the read needs them (its path, its required
        # inputs): an optional filter such as ``expand`` would narrow what the read observes.
        paths = {b.property for b in input_bindings(read) if b.location == "path"}
        for name in schema.get("properties") or {}:
            if last is not None and last in (name, _wire_name(read, name)) and isinstance(response, dict):
                value = identity_value(name, response, wire=_wire_name(read, name))
                if value is not ABSENT:
                    sub = (schema.get("properties") or {}).get(name)
                    out[name] = typed_for(sub, value) if isinstance(sub, dict) else value
                    continue
            if name in request and name not in ("confirm", "idempotency_key") and (name in required or name in paths):
                out[name] = request[name]
        if not required <= set(out):
            return None
        return out

    def reads_for(self, op: Operation) -> list[Operation]:
        """Approved reads of the same kind: the list at the same path first, then gets."""
        route = self.route_of.get(op.id)
        if route is None:
            return []
        same: list[Route] = [r for r in self.routes if r.kind == route.kind and r.op.is_read and r.op.is_approved]
        lists = [r.op for r in same if r.role == "list" and r.template == route.template]
        gets = [r.op for r in same if r.role == "get"]
        return lists + gets

    def lookup_read(
        self, op: Operation, request: Mapping[str, JSONValue], response: JSONValue, key: str | None
    ) -> _Read | None:
        lookup = op.effect.lookup
        if lookup is None:
            return None
        target = self.served(lookup.operation)
        if target is None:
            return None
        resolved = resolve_mapping(lookup.arguments, request=dict(request), response=response, idempotency_key=key)
        if resolved.arguments is None:
            return None
        return _Read(target, resolved.arguments, listing=False)

    def item_read(self, op: Operation, request: Mapping[str, JSONValue], response: JSONValue) -> _Read | None:
        """The get that reads the item ``response`` names, else the list it appears in."""
        reads = self.reads_for(op)
        if isinstance(response, dict):  # the item itself, when the answer wraps it in an envelope
            response = dict(self.driver.made_item(op, response))
        for read in sorted(reads, key=lambda r: self.route_of[r.id].role != "get"):
            arguments = self._arguments_for(read, request, response)
            if arguments is not None:
                return _Read(read, arguments, listing=self.route_of[read.id].role == "list")
        return None

    def collection_read(self, op: Operation, request: Mapping[str, JSONValue]) -> _Read | None:
        """The list at the operation's own path (readable before the call), if one is served."""
        for read in self.reads_for(op):
            if self.route_of[read.id].role == "list":
                arguments = self._arguments_for(read, request, None)
                if arguments is not None:
                    return _Read(read, arguments, listing=True)
        return None

    # --- the proofs -------------------------------------------------------------------------------

    async def _call(self, op: Operation, *, stage: bool = False) -> tuple[JSONObject, str | None, CallResult]:
        arguments, key = self.driver.arguments(op)
        result, _sent = await self.driver.call(op, arguments, key=key, stage=stage)
        return arguments, key, result

    async def inverse(self, op: Operation) -> Check:
        check_id = "effect-inverse"
        arguments, key = self.driver.arguments(op)
        before_read = (
            self.lookup_read(op, arguments, None, key)
            or self.collection_read(op, arguments)
            or self._state_fallback(op)
        )
        before = await self.observe(before_read)
        result, _sent = await self.driver.call(op, arguments, key=key)
        if result.is_error:
            return _fail(check_id, op, f"the call failed ({_code(result)}), so there is nothing to undo")
        effect = result.effect or {}
        undo = effect.get("undo")
        if not isinstance(undo, dict) or undo.get("kind") != "inverse":
            return _fail(check_id, op, f"the report offers no inverse ({effect.get('undo_unavailable')})")
        read = (
            before_read
            or self.lookup_read(op, arguments, result.data, key)
            or self.item_read(op, arguments, result.data)
        )
        if read is None:
            return _skip(
                check_id,
                op,
                "no approved read observes the resource this operation changes, and the "
                "upstream is not the generated mock whose state could show it",
            )
        if before_read is None:
            before = _Seen("absent")  # the item the call created did not exist before it
        during = await self.observe(read)
        if during.state == "unknown":
            return _fail(check_id, op, f"{read.name} could not read the state after the call", read)
        if first_difference(before.shown(), during.shown()) is None:
            return _skip(check_id, op, f"the call changed nothing {read.name} can see", read)
        undone, tool = await self.follow_up(undo)
        if undone is None or undone.is_error:
            code = _code(undone) if undone is not None else None
            return _fail(check_id, op, f"the inverse {tool} failed ({code})", read)
        after = await self.observe(read)
        diff = first_difference(before.shown(), after.shown())
        if diff is not None:
            field, was, now = diff
            difference = Difference(operation=op.id, field=field, before=was, after=now)
            detail = (
                f"{op.id}: after {tool} the state differs from before the call at {field}: "
                f"before {show(was)}, after {show(now)}"
            )
            changed = first_difference(_item(during.shown(), result.data), _item(after.shown(), result.data))
            if was is ABSENT and changed is not None:
                detail += f"; the inverse changed {changed[0]} from {show(changed[1])} to {show(changed[2])} instead"
            return Check(
                id=check_id, operation=op.id, status="fail", detail=detail, difference=difference, basis=read.basis
            )
        detail = f"{read.name} reads the same before the call and after the inverse {tool}"
        return Check(id=check_id, operation=op.id, status="pass", detail=detail, basis=read.basis)

    async def compensate(self, op: Operation) -> Check:
        check_id = "effect-compensate"
        declared = op.effect.compensate
        arguments, key, result = await self._call(op)
        if result.is_error:
            return _fail(check_id, op, f"the call failed ({_code(result)}), so there is nothing to compensate")
        effect = result.effect or {}
        undo = effect.get("undo")
        if not isinstance(undo, dict) or undo.get("kind") != "compensate":
            return _fail(check_id, op, f"the report offers no compensation ({effect.get('undo_unavailable')})")
        read = (
            self.lookup_read(op, arguments, result.data, key)
            or self.item_read(op, arguments, result.data)
            or self.state_read(op, result.data)
        )
        done, tool = await self.follow_up(undo)
        if done is None or done.is_error:
            return _fail(check_id, op, f"the compensation {tool} failed ({_code(done) if done else None})", read)
        if read is None:
            return _skip(check_id, op, f"{tool} ran, but neither an approved read nor the mock's state observes it")
        after = await self.observe(read)
        if after.state != "present":
            return _fail(
                check_id, op, f"after {tool} the resource is gone ({after.state}); a compensation leaves a trace", read
            )
        item = _item(after.data, result.data)
        trace = _literals(declared.arguments if declared is not None else {})
        for name, wanted in trace.items():
            if not isinstance(item, dict) or name not in item:
                continue
            if item[name] != wanted:
                difference = Difference(operation=op.id, field=name, before=wanted, after=item[name])
                detail = (
                    f"{op.id}: after {tool}, {name} is {show(item[name])}; the compensation declares {show(wanted)}"
                )
                return Check(
                    id=check_id, operation=op.id, status="fail", detail=detail, difference=difference, basis=read.basis
                )
        shown = ", ".join(f"{k} = {show(v)}" for k, v in trace.items() if isinstance(item, dict) and k in item)
        detail = f"{tool} ran and {read.name} shows the trace ({shown or 'the resource is still there'})"
        return Check(id=check_id, operation=op.id, status="pass", detail=detail, basis=read.basis)

    async def draft(self, op: Operation) -> Check:
        check_id = "effect-draft"
        declared = op.effect.draft
        if declared is None:
            return _skip(check_id, op, "no draft form is declared")
        draft_op = self.served(declared.operation)
        arguments, key, result = await self._call(op, stage=True)
        staged = (result.effect or {}).get("staged")
        if result.is_error or not isinstance(staged, dict):
            return _fail(check_id, op, f"staging failed ({_code(result)})")
        if staged.get("handle") is None:
            return _fail(check_id, op, "staging reported no draft handle")
        read = self._draft_read(op, draft_op, arguments, result.data, key)
        if read is None:
            return _skip(check_id, op, "staged, but neither an approved read nor the mock's state observes the draft")
        seen = await self.observe(read)
        own = _own(seen, result.data)
        wrong = _mismatch(own, _literals(declared.arguments))
        if own is None or wrong is not None:
            detail = f"after staging, {read.name} sees {wrong or _absence(seen)}; expected the draft"
            return _fail(check_id, op, detail, read)
        promoted, promote_tool = await self.follow_up(staged.get("promote"))
        if promoted is None or promoted.is_error:
            detail = f"promote {promote_tool} failed ({_code(promoted) if promoted else None})"
            return _fail(check_id, op, detail, read)
        promote = declared.promote
        seen = await self.observe(read)
        own = _own(seen, result.data)
        wrong = _mismatch(own, _literals(promote.arguments if promote else {}))
        if own is None or wrong is not None:
            return _fail(check_id, op, f"after {promote_tool}, {read.name} sees {wrong or _absence(seen)}", read)
        steps = f"staged {declared.operation} (handle {show(staged['handle'])}), promoted with {promote_tool}"
        if declared.discard is None:
            detail = steps + "; no discard is declared"
            return Check(id=check_id, operation=op.id, status="pass", detail=detail, basis=read.basis)
        arguments, key, result = await self._call(op, stage=True)
        staged = (result.effect or {}).get("staged")
        if result.is_error or not isinstance(staged, dict):
            return _fail(check_id, op, f"{steps}; staging a second draft failed ({_code(result)})", read)
        # The second draft is read by its own identity first: a read by request values (a tag) may
        # answer the first, published one, and must not pass for the discarded draft being gone.
        second = self._own_read(draft_op, arguments, result.data) or self._draft_read(
            op, draft_op, arguments, result.data, key
        )
        if second is None or _own(await self.observe(second), result.data) is None:
            detail = f"{steps}; the second draft cannot be observed before its discard"
            return _fail(check_id, op, detail, second or read)
        discarded, discard_tool = await self.follow_up(staged.get("discard"))
        if discarded is None or discarded.is_error:
            code = _code(discarded) if discarded else None
            return _fail(check_id, op, f"{steps}; discard {discard_tool} failed ({code})", read)
        seen = await self.observe(second)
        if seen.state == "unknown" or _own(seen, result.data) is not None:
            detail = f"{steps}; after {discard_tool} the draft is still there ({seen.state})"
            return _fail(check_id, op, detail, second)
        detail = f"{steps}; a second draft discarded with {discard_tool} is gone"
        return Check(id=check_id, operation=op.id, status="pass", detail=detail, basis=second.basis)

    def _own_read(
        self, draft_op: Operation | None, arguments: Mapping[str, JSONValue], answer: JSONValue
    ) -> _Read | None:
        """A read that addresses the draft ``answer`` names by its identity (a get by id, a list, the mock's state)."""
        if draft_op is None:
            return None
        return self.item_read(draft_op, arguments, answer) or self.state_read(draft_op, answer)

    def _draft_read(
        self,
        op: Operation,
        draft_op: Operation | None,
        arguments: Mapping[str, JSONValue],
        answer: JSONValue,
        key: str | None,
    ) -> _Read | None:
        read = self.lookup_read(op, arguments, answer, key)
        if read is None and draft_op is not None:
            read = self.item_read(draft_op, arguments, answer) or self.state_read(draft_op, answer)
        return read

    def _state_fallback(self, op: Operation) -> _Read | None:
        """Every item of ``op``'s kind in the mock, when no approved read of the API observes them."""
        if self.reads_for(op):
            return None  # an approved read exists: it is found after the call (it may need the answer)
        return self.state_read(op, None, collection=True)

    async def lookup(self, op: Operation) -> Check:
        check_id = "effect-lookup"
        declared = op.effect.lookup
        if declared is None:
            return _skip(check_id, op, "no lookup is declared")
        _arguments, _key, result = await self._call(op)
        if result.is_error:
            return _fail(check_id, op, f"the call failed ({_code(result)}), so there is no effect to look up")
        reported = (result.effect or {}).get("lookup")
        if not isinstance(reported, dict):
            return _fail(check_id, op, "the report carries no resolved lookup")
        found = await self._found(reported)
        if found is not True:
            detail = f"{op.id}: {reported.get('tool')} did not find the effect it looks up (found: {show(found)})"
            return _fail(check_id, op, detail)
        never_request = self.driver.example.arguments(op)
        complete_for_contract(op, never_request, self.driver.example.generator)
        never_key = self.driver.example.fresh_key("never", op)
        resolved = resolve_mapping(declared.arguments, request=never_request, response=None, idempotency_key=never_key)
        if resolved.arguments is None:
            detail = (
                f"found the effect with {reported.get('tool')}; a never-made call cannot be looked up without an answer"
            )
            return Check(id=check_id, operation=op.id, status="pass", detail=detail)
        never = await self._found({"tool": reported.get("tool"), "arguments": resolved.arguments})
        if never is not False:
            detail = f"{reported.get('tool')} reports found: {show(never)} for an effect that never happened"
            return _fail(check_id, op, detail)
        detail = f"{reported.get('tool')} finds the effect by {declared.by} and reports found: false for one never made"
        return Check(id=check_id, operation=op.id, status="pass", detail=detail)

    async def _found(self, call: Mapping[str, JSONValue]) -> JSONValue:
        tool = call.get("tool")
        if not isinstance(tool, str):
            return None
        result = await self.driver.client.call_result(tool, dict(call.get("arguments") or {}))
        report = (result.effect or {}).get("lookup")
        return report.get("found") if isinstance(report, dict) else None


def _wire_name(op: Operation, name: str) -> str | None:
    """The wire name of ``op``'s input ``name`` (``entityId`` for ``entity_id``), if it has one."""
    return next((b.wire_name for b in input_bindings(op) if b.property == name), None)


def _keyed(op: Operation) -> bool:
    from anvil.air.effects import forwards_idempotency_key
    from anvil.air.inputs import idempotency_key_required

    return forwards_idempotency_key(op) or idempotency_key_required(op)


def _item(observed: JSONValue, answer: JSONValue) -> JSONValue:
    """The observed item: the data itself, or the entry of a list with the answer's identity."""
    if not isinstance(observed, list):
        return observed
    answer = _unwrapped(answer)
    if isinstance(answer, dict):
        for name in _ID_FIELDS:
            if name in answer:
                return next((x for x in observed if isinstance(x, dict) and x.get(name) == answer[name]), None)
    return None


def _unwrapped(answer: JSONValue) -> JSONValue:
    """An answer's item: itself, or the one object inside its envelope when it names no identity."""
    if isinstance(answer, dict) and not any(name in answer for name in _ID_FIELDS):
        wrapped = [value for value in answer.values() if isinstance(value, dict)]
        return wrapped[0] if len(wrapped) == 1 else answer  # an item answered in its envelope
    return answer


def _literals(mapping: Mapping[str, object]) -> JSONObject:
    """The arguments a mapping sets to a literal (``{const: v}``): the trace or marker it declares."""
    out: JSONObject = {}
    for name, source in mapping.items():
        parsed = parse_source(source)
        if isinstance(parsed, Const):
            out[name] = parsed.value
    return out


def _own(seen: _Seen, answer: JSONValue) -> JSONObject | None:
    """The item ``answer`` names in what a read saw, or None when it is not there: a list's entry with
    the answer's identity, or the one item read unless it carries another identity than the answer's."""
    if seen.state != "present":
        return None
    if isinstance(seen.data, list):
        found = _item(seen.data, answer)
        return found if isinstance(found, dict) else None
    if not isinstance(seen.data, dict):
        return None
    named = _unwrapped(answer)
    for name in _ID_FIELDS:
        if isinstance(named, dict) and name in named and name in seen.data:
            return seen.data if seen.data[name] == named[name] else None
    return seen.data


def _mismatch(item: JSONObject | None, literals: Mapping[str, JSONValue]) -> str | None:
    if item is None:
        return None
    for name, wanted in literals.items():
        if name in item and item[name] != wanted:
            return f"{name} = {show(item[name])} (expected {show(wanted)})"
    return None


def _absence(seen: _Seen) -> str:
    """What a read saw instead of the item: nothing, or something else."""
    return "no such item" if seen.state == "present" else seen.state


def _fail(check_id: str, op: Operation, detail: str, read: _Read | None = None) -> Check:
    return Check(id=check_id, operation=op.id, status="fail", detail=detail, basis=read.basis if read else None)


def _skip(check_id: str, op: Operation, detail: str, read: _Read | None = None) -> Check:
    return Check(id=check_id, operation=op.id, status="skipped", detail=detail, basis=read.basis if read else None)


class EffectProofs:
    """The effect-contract proofs of one run (module docstring), one operation at a time."""

    def __init__(self, driver: Driver) -> None:
        """Args: driver: the run's gateway session, wire log and example arguments."""
        self._effects = _Effects(driver)
        self.driver = driver

    async def of(self, op: Operation) -> list[Check]:
        """One proof per declared contract piece of ``op`` (none when it declares none).

        When the generator cannot make a valid example for ``op``, nothing can be called: the lane's
        one skip for the operation (its fidelity check) already says why, and no proof is counted.
        """
        effect = op.effect
        if self.driver.problem(op) is not None or op.id in self.driver.refused:
            return []
        checks: list[Check] = []
        if effect.class_ == "reversible" and effect.inverse is not None:
            checks.append(await self._effects.inverse(op))
        if effect.class_ == "compensable" and effect.compensate is not None:
            checks.append(await self._effects.compensate(op))
        if effect.draft is not None:
            checks.append(await self._effects.draft(op))
        if effect.lookup is not None:
            checks.append(await self._effects.lookup(op))
        return checks
