"""The simulation matrix: every approved operation driven through the real gateway, cell by cell.

:class:`Simulator` runs the dimensions :mod:`anvil.proof.simulate.lane` describes against a seeded
:class:`~anvil.proof.simulate.upstream.SimulatedUpstream`, in process. The mutation battery
(:mod:`anvil.proof.simulate.mutants`) runs the same cells against a mutant.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final, Literal, Protocol

import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.budget_waiver import budget_waivers
from anvil.air.effects import effect_class_of
from anvil.air.inputs import input_bindings, safety_keys
from anvil.air.model import Document, Operation
from anvil.air.servers import own_servers
from anvil.air.values import CannotMake, ValueGenerator
from anvil.bundle.example import EXAMPLE_STYLE, example_input, example_input_or_reason
from anvil.compiler.disclosure import RESPONSE_BUDGET_TOKENS
from anvil.ledger.memory import MemoryLedger
from anvil.proof.contract_inputs import complete_for_contract
from anvil.proof.disclosure import Figure, served_tools, tokens_of, tool_budget
from anvil.proof.scope import LaneScope, select_operations
from anvil.proof.simulate.pages import continuation, items_of, locatable, page_items, page_length
from anvil.proof.simulate.served import PageKeeper, served_page
from anvil.proof.simulate.upstream import Fault, SimulatedUpstream, scope_token
from anvil.runtime.context import RuntimeContext
from anvil.runtime.credentials import credential_profile, expected_env
from anvil.runtime.retry import retry_safe
from anvil.serve.gateway import Gateway
from anvil.serve.mcp.results import CallResult

__all__ = ["DIMENSIONS", "Basis", "Cell", "Simulator"]

#: Where a cell's expectation comes from: the compiled contract, or data the simulator generated.
Basis = Literal["contract", "simulated-data"]

#: The dimensions this simulator covers, in report order.
DIMENSIONS: Final[tuple[str, ...]] = (
    "auth",
    "confirmation",
    "idempotency",
    "fault",
    "pagination",
    "disclosure",
    "effect",
)
_BASE_URL: Final = "https://simulated.anvil.test"
_HOST: Final = "simulated.anvil.test"
_FAULT_CODES: Final[dict[str, tuple[str, int | None]]] = {
    "none": ("ok", None),
    "throttle": ("rate_limited", 429),
    "outage": ("upstream_unavailable", 503),
    "conflict": ("conflict", 409),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One matrix cell: what the contract expects and what running it gave."""

    operation_id: str
    dimension: str
    variant: str
    expected: str
    actual: str
    basis: Basis = "contract"
    figure: Figure | None = None

    @property
    def ok(self) -> bool:
        """True when the actual value is the expected one."""
        return self.expected == self.actual

    @property
    def name(self) -> str:
        """``<dimension>/<variant>``."""
        return f"{self.dimension}/{self.variant}"

    def to_json(self) -> JSONObject:
        """The report's cell object."""
        return {
            "operationId": self.operation_id,
            "dimension": self.dimension,
            "variant": self.variant,
            "expected": self.expected,
            "actual": self.actual,
            "ok": self.ok,
            "basis": self.basis,
            **({"figure": self.figure.to_json()} if self.figure is not None else {}),
        }


async def _no_sleep(_seconds: float) -> None:
    return None


def _attempts(truth: Operation, status: int | None, key_present: bool) -> int:
    if status is None or status == 409:
        return 1
    if retry_safe(truth, key_present=key_present) and f"http_{status}" in truth.retries.retry_on:
        return truth.retries.max_attempts
    return 1


def _outcome(result: CallResult | None, hits: int) -> str:
    if result is None:
        return "no such tool"
    if result.envelope is not None:
        return f"{result.envelope.code} after {hits} attempt(s)"
    return f"ok after {hits} attempt(s)"


class _CellSink(Protocol):
    def __call__(
        self,
        dimension: str,
        variant: str,
        expected: str,
        actual: str,
        *,
        basis: Basis = "contract",
        figure: Figure | None = None,
    ) -> None: ...


def _page_text(page: int, items: int | None, continues: bool | None) -> str:
    """``page 1: 2 item(s), continues`` (None: the contract does not locate the items or the continuation)."""
    held = "items unlocated" if items is None else f"{items} item(s)"
    then = "continuation unlocated" if continues is None else "continues" if continues else "ends"
    return f"page {page}: {held}, {then}"


def _budget_text(figure: Figure) -> str:
    if figure.within:
        return f"within {figure.budget_tokens} tokens"
    return f"{figure.tokens} tokens, over {figure.budget_tokens}"


def _tool_surface_cell(doc: Document, op: Operation, cell: _CellSink, tool: JSONObject | None) -> None:
    """``disclosure/tool-surface``: the tool within the budget, or over it with its capability's waiver.

    A waived tool over the budget expects (and finds) the waiver said with its capability and note
    (:mod:`anvil.air.budget_waiver`); every other tool is expected within the budget.
    """
    budget = tool_budget(doc)
    within = f"within {budget} tokens"
    if tool is None:
        cell("disclosure", "tool-surface", within, "no such tool")
        return
    figure = Figure(tokens_of(tool), budget)
    waiver = budget_waivers(doc).get(op.id)
    if waiver is not None and not figure.within:
        within = f"{_budget_text(figure)}, waived by {waiver.said()}"
        cell("disclosure", "tool-surface", within, within, figure=figure)
        return
    cell("disclosure", "tool-surface", within, _budget_text(figure), figure=figure)


def _served_text(figure: Figure) -> str:
    """A response page's actual value: within the budget, or over it and why (the gateway could not cut it)."""
    if figure.within or not figure.cut:
        return _budget_text(figure)
    return (
        f"{_budget_text(figure)}: the gateway's smallest cut of the {figure.raw_tokens}-token answer is still "
        "over the budget"
    )


def _continuation_argument(op: Operation, wire: str | None, value: str | None) -> tuple[str, JSONValue] | None:
    """The tool argument that carries the continuation input ``wire``, with ``value`` typed for its schema."""
    if wire is None or value is None:
        return None
    for binding in input_bindings(op):
        if binding.wire_name == wire and binding.location in ("query", "body_field"):
            kind = binding.schema.get("type")
            if kind in ("integer", "number") and value.isdigit():
                return binding.property, int(value)
            return binding.property, value
    return None


def example_problem(op: Operation) -> str | None:
    """Why no valid example input can be made for ``op`` (None: one can)."""
    return example_input_or_reason(op)[1]


def answer_problem(op: Operation, schemas: JSONObject) -> str | None:
    """Why no answer for ``op`` can be made within the generator's bounds (None: one can, or the contract
    contradicts itself, which the cells that check the answer report)."""
    if op.output.schema is None:
        return None
    try:
        ValueGenerator(schemas).make(op.output.schema, name=op.canonical_name, direction="response", published=True)
    except CannotMake as refused:
        return f"no answer can be made within the generator's bounds: {refused.reason}" if refused.bounded else None
    return None


def related_operations(op: Operation) -> set[str]:
    """The ids a gateway serving ``op`` must know: ``op`` and every operation its effect contract names."""
    effect = op.effect
    named = {op.id}
    for step in (effect.inverse, effect.compensate, effect.lookup, effect.draft):
        if step is not None:
            named.add(step.operation)
    if effect.draft is not None:
        named.update(step.operation for step in (effect.draft.promote, effect.draft.discard) if step is not None)
    return named


def _narrowed(doc: Document, op: Operation) -> Document:
    """``doc`` cut down to what serving ``op`` needs (its own tool and the tools its report names).

    A gateway builds every listed tool's definition, validator and output check when it starts, so
    one over the whole document costs time in proportion to the document; cells are per operation.
    """
    wanted = related_operations(op)
    return replace(doc, operations=tuple(o for o in doc.operations if o.id in wanted))


class Simulator:
    """Runs cells for one document under test against the reference's upstream.

    Args:
        reference: The compiled AIR: the source of every expectation and of the upstream's behaviour.
        seed: The seed of the upstream's generated data.
        response_budget: The response budget a ``response-page`` cell's answer is served and judged within.
    """

    def __init__(self, reference: Document, *, seed: int = 1, response_budget: int = RESPONSE_BUDGET_TOKENS) -> None:
        self.reference = reference
        self.seed = seed
        self.response_budget = response_budget
        self.upstream = SimulatedUpstream(reference, seed=seed)
        self._keys = 0
        #: Operation id -> why no valid example input can be made for it (its cells are not run).
        self.skipped: dict[str, str] = {}
        #: How many operations the last :meth:`matrix` ran to the end.
        self.finished = 0

    def _key(self) -> str:
        self._keys += 1
        return f"sim-{self.seed}-{self._keys}"

    def _gateway(
        self, doc: Document, op: Operation, client: httpx.AsyncClient, scopes: tuple[str, ...] | None
    ) -> Gateway:
        credentials: dict[str, str] = {}
        if scopes is not None and op.auth.type != "none":
            for name in expected_env(op.auth, credential_profile("default", op.auth)):
                credentials[name] = scope_token(scopes)
        context = RuntimeContext(
            service_id=doc.service.id,
            base_url=_BASE_URL,
            server_urls=dict.fromkeys(own_servers(doc), _BASE_URL),  # an operation's own server is simulated too
            client=client,
            env="dev",
            allowed_hosts=(_HOST,),
            credentials=credentials,
            ledger=MemoryLedger(),
            sleep=_no_sleep,
            rng=lambda: 0.0,
        )
        # The response budget off: the pages requested are the contract's own and answers are compared whole;
        # the response-page cell serves its answer through a gateway with the budget on (_disclosure_cells).
        return Gateway(_narrowed(doc, op), context, result_token_budget=0)

    async def _call(
        self,
        gateway: Gateway,
        op: Operation,
        arguments: JSONObject,
        *,
        fault: Fault = "none",
        meta: dict[str, Any] | None = None,
    ) -> tuple[CallResult | None, int]:
        self.upstream.fault = fault
        before = self.upstream.hits[op.id]
        try:
            result = await gateway.call(op.mcp.tool_name, arguments, meta)
        finally:
            self.upstream.fault = "none"
        return result, self.upstream.hits[op.id] - before

    def _arguments(self, op: Operation) -> JSONObject:
        arguments = example_input(op)
        complete_for_contract(op, arguments, ValueGenerator(style=EXAMPLE_STYLE))  # what its undo or lookup reads
        key = safety_keys(op).idempotency
        if key is not None:
            arguments[key] = self._key()
        return arguments

    async def cells(
        self,
        doc: Document,
        op: Operation,
        truth: Operation,
        client: httpx.AsyncClient,
        *,
        tool: JSONObject | None = None,
    ) -> list[Cell]:
        """Every cell of ``op`` (from ``doc``, the document under test) with ``truth``'s expectations.

        ``tool`` is the ``tools/list`` entry ``doc`` publishes for ``op`` (measured when omitted).
        """
        if tool is None:
            tool = served_tools(doc).get(op.id)
        cells: list[Cell] = []
        scopes = tuple(op.auth.scopes)

        def cell(
            dimension: str,
            variant: str,
            expected: str,
            actual: str,
            *,
            basis: Basis = "contract",
            figure: Figure | None = None,
        ) -> None:
            cells.append(
                Cell(
                    operation_id=truth.id,
                    dimension=dimension,
                    variant=variant,
                    expected=expected,
                    actual=actual,
                    basis=basis,
                    figure=figure,
                )
            )

        authorized = self._gateway(doc, op, client, scopes)
        if truth.auth.type != "none":
            result, hits = await self._call(self._gateway(doc, op, client, None), op, self._arguments(op))
            cell("auth", "no-principal", "auth_required after 0 attempt(s)", _outcome(result, hits))
            if truth.auth.scopes:
                fewer = tuple(s for s in scopes if s != truth.auth.scopes[0])
                result, hits = await self._call(self._gateway(doc, op, client, fewer), op, self._arguments(op))
                cell("auth", "missing-scope", "permission_denied after 1 attempt(s)", _outcome(result, hits))
            result, hits = await self._call(authorized, op, self._arguments(op))
            cell("auth", "authorized", "ok after 1 attempt(s)", _outcome(result, hits))
        truth_keys = safety_keys(truth)
        if truth.confirmation.required:
            arguments = self._arguments(op)
            arguments.pop(truth_keys.confirm or "confirm", None)
            result, hits = await self._call(authorized, op, arguments)
            cell("confirmation", "without-confirm", "confirmation_required after 0 attempt(s)", _outcome(result, hits))
            result, hits = await self._call(authorized, op, self._arguments(op))
            cell("confirmation", "with-confirm", "ok after 1 attempt(s)", _outcome(result, hits))
        key_present = truth_keys.idempotency is not None
        if truth.idempotency.mode == "required":
            await self._idempotency_cells(authorized, op, truth, cell)
        for fault, (code, status) in _FAULT_CODES.items():
            attempts = _attempts(truth, status, key_present)
            result, hits = await self._call(authorized, op, self._arguments(op), fault=fault)  # type: ignore[arg-type]
            cell("fault", fault, f"{code} after {attempts} attempt(s)", _outcome(result, hits))
        if truth.is_read and truth.pagination is not None:
            await self._pagination_cells(authorized, op, truth, cell)
        await self._disclosure_cells(authorized, op, truth, cell, tool)
        if not truth.is_read and truth.effect.declares_contract:
            await self._effect_cells(authorized, op, truth, cell)
        return cells

    async def _pagination_cells(self, gateway: Gateway, op: Operation, truth: Operation, cell: _CellSink) -> None:
        paging = truth.pagination
        assert paging is not None  # the caller checked
        item = self.upstream.item_schema(truth)
        claims_next = locatable(paging, item)
        served = self.upstream.pages.setdefault(truth.id, [])
        agent = op.pagination  # the contract the surface under test states: what an agent reads
        expected = _page_text(1, page_items(paging, 1) if item is not None else None, True if claims_next else None)
        before = len(served)
        first, hits = await self._call(gateway, op, self._arguments(op))
        if agent is None or first is None or first.envelope is not None or len(served) == before:
            cell("pagination", "first-page", expected, "not paginated" if agent is None else _outcome(first, hits))
            return
        value = continuation(agent, first.data, page=1, length=page_length(agent))
        found = items_of(agent, first.data)
        actual = _page_text(
            served[-1].page, len(found) if found is not None else None, (value is not None) if claims_next else None
        )
        cell("pagination", "first-page", expected, actual)
        if not claims_next:
            return
        expected = f"page 2 requested with {paging.cursor_param}={served[-1].handed_out}"
        argument = _continuation_argument(op, agent.cursor_param, value)
        if argument is None:
            missing = "no continuation in page 1" if value is None else f"no input carries {agent.cursor_param}"
            cell("pagination", "next-page", expected, missing)
            return
        before = len(served)
        second, hits = await self._call(gateway, op, {**self._arguments(op), argument[0]: argument[1]})
        if second is None or second.envelope is not None or len(served) == before:
            cell("pagination", "next-page", expected, _outcome(second, hits))
            return
        page = served[-1]
        cell(
            "pagination",
            "next-page",
            expected,
            f"page {page.page} requested with {paging.cursor_param}={page.received}",
        )
        found = items_of(agent, second.data)
        after = continuation(agent, second.data, page=page.page, length=page_length(agent))
        cell(
            "pagination",
            "last-page",
            _page_text(2, page_items(paging, 2) if item is not None else None, False),
            _page_text(page.page, len(found) if found is not None else None, after is not None),
        )

    async def _disclosure_cells(
        self, gateway: Gateway, op: Operation, truth: Operation, cell: _CellSink, tool: JSONObject | None
    ) -> None:
        _tool_surface_cell(gateway.document, op, cell, tool)
        if truth.output.schema is None:
            return  # nothing comes back to measure
        # The answer as `anvil serve` hands it to the agent: the same gateway, its response budget on.
        budget = self.response_budget
        within = f"within {budget} tokens"
        keeper = PageKeeper()
        served = Gateway(gateway.document, gateway.context, result_token_budget=budget, keeper=keeper)
        result, hits = await self._call(served, op, self._arguments(op))
        if result is None or result.envelope is not None:
            cell("disclosure", "response-page", within, _outcome(result, hits), basis="simulated-data")
            return
        page = served_page(result, keeper)
        figure = Figure(page.tokens, budget, seed=self.seed, raw_tokens=page.raw_tokens, cut=page.cut)
        cell("disclosure", "response-page", within, _served_text(figure), basis="simulated-data", figure=figure)

    async def _idempotency_cells(self, gateway: Gateway, op: Operation, truth: Operation, cell: _CellSink) -> None:
        derived = truth.idempotency.key_derivation == "request_fingerprint"
        arguments = self._arguments(op)
        for name in (safety_keys(op).idempotency, safety_keys(truth).idempotency):
            if name is not None:
                arguments.pop(name, None)
        result, hits = await self._call(gateway, op, arguments)
        expected = "ok after 1 attempt(s)" if derived else "idempotency_required after 0 attempt(s)"
        cell("idempotency", "without-key", expected, _outcome(result, hits))
        result, hits = await self._call(gateway, op, self._arguments(op))
        cell("idempotency", "with-key", "ok after 1 attempt(s)", _outcome(result, hits))
        arguments = self._arguments(op)
        first, first_hits = await self._call(gateway, op, dict(arguments))
        second, second_hits = await self._call(gateway, op, dict(arguments))
        total = first_hits + second_hits
        both_ok = first is not None and second is not None and first.envelope is None and second.envelope is None
        actual = f"two answers from {total} upstream request(s)" if both_ok else f"{_outcome(second, total)}"
        cell("idempotency", "replay", "two answers from 1 upstream request(s)", actual)

    async def _effect_cells(self, gateway: Gateway, op: Operation, truth: Operation, cell: _CellSink) -> None:
        effect = truth.effect
        kind = "inverse" if effect.inverse is not None else "compensate" if effect.compensate is not None else "none"
        lookup = "declared" if effect.lookup is not None else "none"
        expected = f"class={effect_class_of(truth)} undo={kind} lookup={lookup}"
        result, _hits = await self._call(gateway, op, self._arguments(op))
        report = result.report if result is not None else None
        if isinstance(report, dict):
            undo = report.get("undo")
            actual_kind = undo.get("kind") if isinstance(undo, dict) else "none"
            actual_lookup = "declared" if report.get("lookup") else "none"
            actual = f"class={report.get('class')} undo={actual_kind} lookup={actual_lookup}"
        else:
            actual = _outcome(result, _hits)
        cell("effect", "report", expected, actual)
        if effect.draft is not None:
            result, hits = await self._call(gateway, op, self._arguments(op), meta={"stage": True})
            staged = result.report.get("staged") if result is not None and isinstance(result.report, dict) else None
            draft_op = staged.get("draft_operation") if isinstance(staged, dict) else None
            actual = f"staged {draft_op}" if draft_op else _outcome(result, hits)
            cell("effect", "stage", f"staged {effect.draft.operation}", actual)

    async def matrix(self, doc: Document, *, only: str | None = None, scope: LaneScope | None = None) -> list[Cell]:
        """Every cell of every approved operation of ``doc`` (or of operation ``only``, or those ``scope`` selects).

        With a ``scope``, each operation prints its progress line and the run stops starting operations
        once the scope says so (a signal or the time cap); :attr:`finished` counts the operations done.
        """
        truth_by_id = {op.id: op for op in self.reference.operations}
        tools = served_tools(doc)
        cells: list[Cell] = []
        selected = select_operations(doc.operations, scope.operations if scope is not None else ())
        if scope is not None:
            scope.begin(len(selected))
        self.finished = 0
        async with httpx.AsyncClient(transport=self.upstream.transport(), follow_redirects=False) as client:
            for op in selected:
                truth = truth_by_id.get(op.id)
                if truth is None or (only is not None and op.id != only):
                    continue
                if scope is not None:
                    if scope.should_stop():
                        break
                    scope.step("simulate", op)
                reason = (
                    example_problem(op)
                    or answer_problem(truth, self.reference.schemas)
                    or complete_for_contract(op, example_input(op), ValueGenerator(style=EXAMPLE_STYLE))
                )
                if reason is not None and scope is not None and scope.should_stop():
                    break  # stopped while the example was being made: no finding about the operation
                if reason is not None:  # a call the gateway would refuse proves nothing: skipped, saying why
                    self.skipped[op.id] = reason
                    self.finished += 1
                    continue
                cells.extend(await self.cells(doc, op, truth, client, tool=tools.get(op.id)))
                self.finished += 1
        return cells
