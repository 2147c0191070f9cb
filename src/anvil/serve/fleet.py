"""The fleet: several bundles served as one set of tools, composed once per caller (original-gateway §1.4).

Library API::

    sources = discover_bundles([Path("ws")])                  # ids: "github", "payments", "team/x"
    bundles = [FleetBundle(id=s.id, document=read_bundle(s.path), context=ctx_for(s)) for s in sources]
    fleet = Fleet(bundles)                                     # refuses collisions before anything binds
    view = fleet.compose(principal)                            # cached per caller (LRU)
    result = await view.call("github__github_list_issue", {"owner": "o", "repo": "r"}, meta)

Rules:

* **Discovery** (:func:`discover_bundles`): a path holding ``air.json`` is one bundle whose id is the
  one its operator gave (``ID=DIR``), else its AIR service id (``anvil serve``), else its directory
  name; any other directory is searched, and every directory beneath it that holds
  ``air.json`` is a bundle whose id is its POSIX path relative to that directory (``team/github``).
  Hidden directories (``.git``, compile stages) and symbolic links are skipped; a bundle's own
  subdirectories are not searched.
* **Names**: with two or more bundles every tool is prefixed ``fold(id) + "__" + tool``
  (:func:`~anvil.serve.auth.naming.fleet_tool_name`). With one bundle, tools keep their own names (the
  listing is exactly the standalone server's) unless the caller carries a grant, whose composition
  is always prefixed. Prefixed tools gain ``_meta`` ``anvil/fleet_bundle_id`` (the raw id) and
  ``anvil/fleet_tool_name`` (the bundle's own name). Each bundle's :class:`~anvil.serve.gateway.Gateway`
  is built with the prefixed naming, so ``_meta.effect`` (undo, compensate, lookup, staged promote and
  discard) and the listing's ``effect.draft``/``effect.lookup`` already name what callers dial.
* **Refusals at start** (:class:`FleetError`, before any port is bound): ``fleet/no_bundles``,
  ``fleet/duplicate_bundle`` (two bundles with one id), ``fleet/tool_collision`` (two bundles
  producing one wire name; names are never renamed) and ``fleet/resource_collision`` (two bundles whose
  ids fold to one connector both serving skill files under one URI).
* **Resources**: each bundle's skill files (``FleetBundle.skill``, read at start-up) are served as
  ``anvil://skill/<service>/<path>``, ``<connector>`` in place of the service when prefixed; a caller
  with a grant sees a bundle's resources only when an entry names its connector, and reads a
  ``SKILL.md`` and references written for the tools its grant shows (:meth:`Fleet.granted_skill`),
  as ``/openapi`` shows it only those operations. A tool listed with a summarised input schema serves
  its whole one as ``anvil://schema/<tool as the caller dials it>``, to a caller whose listing shows it.
* **Catalog** (``GET /openapi``, :mod:`anvil.serve.catalog`): the runtime manifest of each bundle the
  caller reaches, its operations as the caller's ``tools/list`` shows them (approved ones, prefixed
  names when the tools are prefixed); built once per naming mode for callers without a grant.
* **Forwarding**: only ``idempotency_key`` and ``stage`` cross from the caller's ``_meta`` to a bundle.
* **Grants** (original-gateway §1.6-§1.7): for a caller with a grant, each tool's decision is worked
  out once per composition. ``tools/list`` shows only allowed tools; a hidden tool stays callable and
  answers the structured refusal (:func:`~anvil.serve.auth.grants.refusal_envelope`, with a ``_meta.effect``
  failure report unless staged). The gate runs first, so a refusal comes before ``_meta`` checks,
  argument validation, credentials and any upstream byte, and writes one audit line with its
  ``decision`` and ``rule``. A staged call is judged on the draft operation it performs.
* **Callers**: a verified principal's :meth:`~anvil.serve.auth.principals.Principal.ledger_identity` is bound
  into the ledger fingerprint of every call it makes; its id, attribution, connector and the grant
  decision are bound for the audit line (:func:`anvil.runtime.audit.audit_scope`).
* **Compositions**: one per caller (principal id, issuer, grant, attribution), kept in a bounded LRU
  (:data:`MAX_COMPOSITIONS`) and reused across requests; a call is one dict lookup, then the gateway.

Each bundle keeps its own :class:`~anvil.runtime.context.RuntimeContext` (base URL, allowed hosts, credentials);
the connector is ``fold(id)``. The fleet writes its own audit lines (grant refusals) to that context's audit sink.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, Protocol

from anvil import __version__
from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.model import Document, Operation
from anvil.runtime.audit import AuditScope, audit_scope
from anvil.runtime.context import RuntimeContext
from anvil.serve.answer_store import AnswerKeeper, KeptAnswer, answer_owner
from anvil.serve.auth.grants import GrantDecision, GrantTarget, decide, visible
from anvil.serve.auth.naming import fleet_tool_name, fold_bundle_id
from anvil.serve.auth.principals import ANONYMOUS, Principal
from anvil.serve.budget import DEFAULT_RESULT_TOKEN_BUDGET
from anvil.serve.bundles import BundleSource, FleetError, bundle_argument, check_unique, discover_bundles
from anvil.serve.catalog import CatalogBundle, catalog_bytes
from anvil.serve.controls import IDEMPOTENCY_KEY_META, STAGE_META
from anvil.serve.discovery.meta import META_TOOL_NAMES
from anvil.serve.discovery.modes import DisclosureSettings
from anvil.serve.discovery.surface import CallerSurface, Discovery, DiscoveryTool, served_summary
from anvil.serve.gateway import Gateway, ServedTool
from anvil.serve.grant_refusal import grant_refusal
from anvil.serve.mcp.resources import Resource
from anvil.serve.mcp.results import CallResult
from anvil.serve.skills import granted_skill, skill_table
from anvil.serve.traces import call_tracer, traced

if TYPE_CHECKING:
    from anvil.serve.discovery.ladder import Ladder

__all__ = [
    "MAX_COMPOSITIONS",
    "BundleSource",
    "CallObserver",
    "Composition",
    "Fleet",
    "FleetBundle",
    "FleetError",
    "bundle_argument",
    "discover_bundles",
    "outcome_label",
]

#: Compositions kept per fleet (least recently used dropped first).
MAX_COMPOSITIONS: Final = 256
_FLEET_NAME: Final = "anvil-fleet"


class CallObserver(Protocol):
    """Told about every call a composition answers (metrics)."""

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        """One call of wire tool ``tool`` ended with ``outcome`` after ``seconds``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetBundle:
    """One served bundle: its fleet id, its AIR document, the runtime context its calls run under, and
    its skill files read at start-up ((path inside ``skill/``, text): served as MCP resources)."""

    id: str
    document: Document
    context: RuntimeContext
    skill: tuple[tuple[str, str], ...] = ()

    @property
    def connector(self) -> str:
        """The connector: the folded fleet id (grants, wire names and audit lines use it)."""
        return fold_bundle_id(self.id)


def outcome_label(result: CallResult) -> str:
    """A call's outcome for metrics: ``ok``, ``dry_run`` or the envelope code."""
    if result.kind == "success":
        return "ok"
    if result.kind == "dry_run":
        return "dry_run"
    return result.envelope.code if result.envelope is not None else "unknown_upstream_error"


def _forwarded(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Only ``idempotency_key`` and ``stage`` cross the fleet hop (a progress token stays on its own)."""
    if not meta or not isinstance(meta, Mapping):
        return None
    out = {key: meta[key] for key in (IDEMPOTENCY_KEY_META, STAGE_META) if key in meta}
    return out or None


@dataclass(frozen=True, slots=True)
class _Mounted:
    """One gateway tool as a fleet serves it (per naming mode, shared by every composition)."""

    bundle: FleetBundle
    gateway: Gateway
    tool: ServedTool
    definition: JSONObject
    draft: ServedTool | None


def _catalog_bundles(
    bundles: Sequence[FleetBundle], shown: Iterable[tuple[str, _Mounted]], reached: Callable[[FleetBundle], bool]
) -> list[CatalogBundle]:
    """The catalog parts of the ``reached`` bundles: each one's approved operations among ``shown``."""
    served: dict[str, list[tuple[Operation, str]]] = {bundle.id: [] for bundle in bundles if reached(bundle)}
    for name, mounted in shown:
        found = served.get(mounted.bundle.id)
        if found is not None and mounted.tool.op.is_approved:
            found.append((mounted.tool.op, name))
    return [
        CatalogBundle(bundle.id, bundle.connector, bundle.document, tuple(served[bundle.id]))
        for bundle in bundles
        if bundle.id in served
    ]


@dataclass(frozen=True, slots=True)
class _Entry:
    """One tool in one caller's composition: where it goes and what the grant said (None: no gate)."""

    mounted: _Mounted
    scope: AuditScope
    decision: GrantDecision | None
    staged: GrantDecision | None


class Composition:
    """The fleet as one caller sees it: its tools (narrowed by its grant) and its call entry point.

    Implements :class:`~anvil.serve.mcp.server.ToolProvider`; built by :meth:`Fleet.compose`.
    """

    __slots__ = (
        "__weakref__",
        "_by_uri",
        "_entries",
        "_fleet",
        "_identity",
        "_reads",
        "flat_tools",
        "prefixed",
        "principal",
        "resources",
        "surface",
        "tools",
    )

    def __init__(self, fleet: Fleet, principal: Principal) -> None:
        grants = principal.grants
        self._fleet = fleet
        self.principal = principal
        self.prefixed = fleet.prefixed or grants is not None
        self._identity = principal.ledger_identity()
        attribution = principal.attribution
        entries: dict[str, _Entry] = {}
        listing: list[JSONObject] = []
        for name, mounted in fleet.mounted(self.prefixed).items():
            bundle, op = mounted.bundle, mounted.tool.op
            decision = staged = None
            if grants is not None:
                service = bundle.document.service.id
                decision = decide(grants, bundle.connector, GrantTarget.of(op, service))
                if mounted.draft is not None:
                    staged = decide(grants, bundle.connector, GrantTarget.of(mounted.draft.op, service))
            scope = AuditScope(
                sub=principal.id,
                tenant=attribution.tenant,
                branch=attribution.branch,
                turn=attribution.turn,
                connector=bundle.connector,
                account=decision.account if decision is not None and decision.allowed else None,
                grant=decision.rule if decision is not None and decision.allowed else None,
            )
            entries[name] = _Entry(mounted, scope, decision, staged)
            if decision is None or decision.allowed:
                listing.append(mounted.definition)
        self._entries = entries
        #: Every tool this caller's grant lets it see, as flat mode lists them.
        self.flat_tools: tuple[JSONObject, ...] = tuple(listing)
        self._reads = frozenset(name for name, entry in entries.items() if entry.mounted.tool.op.effect.kind == "read")
        self.surface = self.view(fleet.disclosure)
        #: What this caller's ``tools/list`` shows (its disclosure mode's surface).
        self.tools: tuple[JSONObject, ...] = self.surface.tools
        # A bundle's skill files are shown to a caller whose grant names its connector (as a tool
        # without an operation is), written for the tools its grant shows; a read of any other URI is
        # refused as an unknown one.
        skills: list[Resource] = []
        for bundle, served in fleet.bundle_resources(self.prefixed):
            if not visible(grants, bundle.connector, None):
                continue
            if grants is not None:
                shown = frozenset(
                    entry.mounted.tool.op.id
                    for entry in entries.values()
                    if entry.mounted.bundle is bundle and (entry.decision is None or entry.decision.allowed)
                )
                served = fleet.granted_skill(bundle, self.prefixed, shown)
            skills.extend(served)
        self.resources: tuple[Resource, ...] = (*skills, *self._schema_resources())
        self._by_uri = {resource.uri: resource for resource in self.resources}

    def view(self, settings: DisclosureSettings) -> CallerSurface:
        """This caller's surface under ``settings`` (its own is :attr:`surface`; reports ask for the others)."""
        fleet = self._fleet
        return CallerSurface(
            self.flat_tools,
            self._reads,
            settings,
            lambda: fleet.discovery(self.prefixed),
            served_summary(len(self.flat_tools), [bundle.document.service.id for bundle in fleet.bundles]),
            self._entries.__contains__,
            result_budget=fleet.search_result_budget,
            ladder=lambda by_service: fleet.ladder(self.prefixed, by_service),
        )

    @property
    def lists_change(self) -> bool:
        """True when this caller's listing grows as it opens lane cards (laddered)."""
        return bool(self.surface.cards)

    def is_card(self, name: str) -> bool:
        """True when ``name`` is a lane card this caller's surface serves."""
        return self.surface.is_card(name)

    def tools_with(self, opened: Iterable[str]) -> Sequence[JSONObject]:
        """This caller's listing with the members of the ``opened`` cards (a session that opened them)."""
        return self.surface.tools_with(opened)

    @property
    def server_name(self) -> str:
        """The MCP server name (the fleet's)."""
        return self._fleet.server_name

    @property
    def version(self) -> str:
        """The MCP server version (the fleet's)."""
        return self._fleet.version

    def resource(self, uri: str) -> Resource | None:
        """The resource at ``uri`` when this caller sees it (None for an unknown or hidden one)."""
        return self._by_uri.get(uri)

    async def read_answer(self, uri: str) -> KeptAnswer | None:
        """The whole answer kept at ``uri`` for this caller (its ledger identity), from the fleet's keeper;
        None for another caller's, an expired, an unknown one, or when the fleet keeps none.

        Raises:
            LedgerError: ``ledger/unavailable`` when the keeper's store cannot be read now.
        """
        keeper = self._fleet.keeper
        return None if keeper is None else await keeper.read(uri, answer_owner(self._identity))

    def _schema_resources(self) -> tuple[Resource, ...]:
        """The whole input schema (``anvil://schema/<tool>``) of each tool this caller's listing summarises.

        Only a listed tool's: the schema of a tool the grant hides is read as an unknown resource.
        Built once per gateway and shared by every composition.
        """
        found = (
            entry.mounted.gateway.schema_resource(name)
            for name, entry in self._entries.items()
            if entry.decision is None or entry.decision.allowed
        )
        return tuple(resource for resource in found if resource is not None)

    def tool_names(self) -> tuple[str, ...]:
        """Every tool this caller can dial, listed or hidden by its grant."""
        return tuple(self._entries)

    def catalog(self) -> bytes:
        """The ``GET /openapi`` answer for this caller (:mod:`anvil.serve.catalog`).

        Without a grant it is the fleet's, built once per naming mode; with one, the bundles the grant
        names, each with the operations this caller's listing shows (built per request: a filter and
        an encoding, nothing kept per caller).
        """
        grants = self.principal.grants
        if grants is None:
            return self._fleet.catalog(self.prefixed)
        shown = (
            (name, entry.mounted)
            for name, entry in self._entries.items()
            if entry.decision is None or entry.decision.allowed
        )
        reached = _catalog_bundles(self._fleet.bundles, shown, lambda bundle: visible(grants, bundle.connector, None))
        return catalog_bytes(reached, prefixed=True)

    def input_schema(self, name: str) -> JSONObject | None:
        """The published input schema of tool ``name`` (a served meta-tool's too; None when not mounted)."""
        entry = self._entries.get(name)
        if entry is None:
            return self.surface.meta_schema(name)
        schema: JSONObject = entry.mounted.definition["inputSchema"]
        return schema

    async def call(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None = None,
        *,
        identity: Mapping[str, JSONValue] | None = None,
    ) -> CallResult | None:
        """Call wire tool ``name`` as this caller; None when it is not mounted. Never raises for bad input.

        Args:
            name: The wire tool name.
            arguments: The call's arguments.
            meta: The caller's ``_meta`` (only ``idempotency_key`` and ``stage`` are forwarded).
            identity: Overrides the composition's ledger identity (default: the principal's).
        """
        entry = self._entries.get(name)
        if entry is None:
            if self.surface.handles(name):
                return await self.surface.call_meta(
                    name,
                    arguments,
                    meta,
                    lambda tool, args, controls: self.call(tool, args, controls, identity=identity),
                )
            return None
        if (tracer := call_tracer(entry.mounted.gateway.context)) is not None:  # one server span per call
            again = lambda: self.call(name, arguments, meta, identity=identity)  # noqa: E731 - runs under the span
            return await traced(tracer, name, entry.mounted.tool.op, entry.mounted.bundle.connector, meta, again)
        started = time.perf_counter()
        controls = _forwarded(meta)
        decision, scope = entry.decision, entry.scope
        if decision is not None and entry.staged is not None and controls and controls.get(STAGE_META) is True:
            decision = entry.staged  # a staged call performs (and is judged on) the draft operation
            scope = replace(scope, account=decision.account, grant=decision.rule)
        result: CallResult | None
        if decision is not None and not decision.allowed:
            mounted = entry.mounted
            draft = mounted.draft.op if mounted.draft is not None else None
            result = grant_refusal(
                mounted.tool,
                draft,
                mounted.gateway.context,
                entry.scope,
                decision,
                self.principal.id,
                mounted.bundle.connector,
                arguments,
                controls,
                started,
            )
        else:
            with audit_scope(scope):
                result = await entry.mounted.gateway.call(
                    name, arguments, controls, identity=self._identity if identity is None else identity
                )
            if result is None:  # pragma: no cover - every entry names a tool of its gateway
                return None
        observer = self._fleet.observer
        if observer is not None:
            observer.observe_call(name, outcome_label(result), time.perf_counter() - started)
        return result


def _key(principal: Principal) -> tuple[Any, ...]:
    """What makes two principals one caller: id, issuer, subject, verification, grant and attribution."""
    return (
        principal.id,
        principal.issuer,
        principal.subject,
        principal.verified,
        principal.grants,
        principal.attribution,
    )


def _prefixed_definition(bundle: FleetBundle, definition: JSONObject, own_name: str) -> JSONObject:
    meta = definition.get("_meta")
    extra = {"anvil/fleet_bundle_id": bundle.id, "anvil/fleet_tool_name": own_name}
    return {**definition, "_meta": {**meta, **extra} if isinstance(meta, dict) else extra}


class Fleet:
    """Bundles served together: gateways built once, compositions per caller.

    Args:
        bundles: The bundles, in listing order (ids must be unique).
        include_unapproved: List unapproved operations too (development only; the executor refuses them).
        observer: Told about every call (metrics), or None.
        disclosure: What each caller's ``tools/list`` shows at rest (default: ``auto`` within 20,000 tokens).
        max_compositions: How many caller compositions are kept (LRU).
        result_token_budget: Every gateway's response budget in tokens (0: off; see
            :mod:`anvil.serve.responses`); search answers and lane cards are fitted to it too.
        keeper: Where every gateway keeps the whole answers it cuts, read back with ``resources/read`` of
            ``anvil://answer/<id>`` by the caller that made the call; None when none are kept.

    Raises:
        FleetError: ``fleet/no_bundles``, ``fleet/duplicate_bundle``, ``fleet/tool_collision`` or
            ``fleet/resource_collision``.
    """

    def __init__(
        self,
        bundles: Sequence[FleetBundle],
        *,
        include_unapproved: bool = False,
        observer: CallObserver | None = None,
        max_compositions: int = MAX_COMPOSITIONS,
        disclosure: DisclosureSettings | None = None,
        result_token_budget: int = DEFAULT_RESULT_TOKEN_BUDGET,
        keeper: AnswerKeeper | None = None,
    ) -> None:
        if not bundles:
            raise FleetError("fleet/no_bundles", "A fleet needs at least one bundle.")
        check_unique(bundle.id for bundle in bundles)
        self.bundles: tuple[FleetBundle, ...] = tuple(bundles)
        self.observer = observer
        self.keeper = keeper
        self._include_unapproved = include_unapproved
        self._result_token_budget = result_token_budget
        self._keeper = keeper
        self._max = max(1, max_compositions)
        self._mounted: dict[bool, dict[str, _Mounted]] = {}
        self._resources: dict[bool, tuple[tuple[FleetBundle, tuple[Resource, ...]], ...]] = {}
        self._catalogs: dict[bool, bytes] = {}
        self._cache: OrderedDict[tuple[Any, ...], Composition] = OrderedDict()
        self.disclosure = disclosure or DisclosureSettings()
        self.search_result_budget = result_token_budget  # search answers and lane cards fit the same budget
        self._discovery: dict[bool, Discovery] = {}
        self._ladders: dict[tuple[bool, bool], Ladder] = {}
        self.mounted(self.prefixed)  # builds the gateways and refuses collisions now, before any bind
        if self.disclosure.mode == "laddered":
            self.ladder(self.prefixed)  # refuses a card named like a tool now, before any bind
        self.default = Composition(self, ANONYMOUS)
        self._default_key = _key(ANONYMOUS)

    @property
    def prefixed(self) -> bool:
        """True when every caller dials prefixed names (two or more bundles)."""
        return len(self.bundles) > 1

    @property
    def server_name(self) -> str:
        """``<serviceId>-tools`` for one bundle, else ``anvil-fleet``."""
        return f"{self.bundles[0].document.service.id}-tools" if not self.prefixed else _FLEET_NAME

    @property
    def version(self) -> str:
        """The service version for one bundle, else Anvil's version."""
        return self.bundles[0].document.service.version if not self.prefixed else __version__

    @property
    def service(self) -> str | list[str]:
        """What probes name: the AIR service id for one bundle, else every bundle's, in bundle order."""
        ids = [bundle.document.service.id for bundle in self.bundles]
        return ids[0] if len(ids) == 1 else ids

    @property
    def tools(self) -> tuple[JSONObject, ...]:
        """The anonymous caller's listing."""
        return self.default.tools

    @property
    def resources(self) -> tuple[Resource, ...]:
        """The anonymous caller's resources."""
        return self.default.resources

    def resource(self, uri: str) -> Resource | None:
        """The anonymous caller's resource at ``uri``, if any."""
        return self.default.resource(uri)

    async def read_answer(self, uri: str) -> KeptAnswer | None:
        """The anonymous caller's kept answer at ``uri``, if any (see :meth:`Composition.read_answer`)."""
        return await self.default.read_answer(uri)

    def bundle_resources(self, prefixed: bool) -> tuple[tuple[FleetBundle, tuple[Resource, ...]], ...]:
        """Each bundle's skill resources for one naming mode (built on first use, then shared; see
        :func:`anvil.serve.skills.skill_table`).

        Raises:
            FleetError: ``fleet/resource_collision``.
        """
        found = self._resources.get(prefixed)
        if found is None:
            found = self._resources[prefixed] = tuple(
                zip(self.bundles, skill_table(self.bundles, prefixed), strict=True)
            )
        return found

    def granted_skill(self, bundle: FleetBundle, prefixed: bool, shown: frozenset[str]) -> tuple[Resource, ...]:
        """``bundle``'s skill resources for a caller whose grant shows the operations ``shown``
        (:func:`anvil.serve.skills.granted_skill`)."""
        return granted_skill(bundle, prefixed, shown)

    def catalog(self, prefixed: bool) -> bytes:
        """Every bundle's catalog for one naming mode, as a caller without a grant sees it (built once)."""
        found = self._catalogs.get(prefixed)
        if found is None:
            parts = _catalog_bundles(self.bundles, self.mounted(prefixed).items(), lambda bundle: True)
            found = self._catalogs[prefixed] = catalog_bytes(parts, prefixed=prefixed)
        return found

    def input_schema(self, name: str) -> JSONObject | None:
        """The input schema of tool ``name`` under any naming this fleet serves."""
        for mounted in self._mounted.values():
            found = mounted.get(name)
            if found is not None:
                schema: JSONObject = found.definition["inputSchema"]
                return schema
        return None

    async def call(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None = None,
        *,
        identity: Mapping[str, JSONValue] | None = None,
    ) -> CallResult | None:
        """Call as the anonymous caller (stdio, no inbound auth)."""
        return await self.default.call(name, arguments, meta, identity=identity)

    def mounted(self, prefixed: bool) -> dict[str, _Mounted]:
        """Wire name -> mounted tool for one naming mode (built on first use, then shared).

        Raises:
            FleetError: ``fleet/tool_collision`` when two bundles produce one wire name.
        """
        found = self._mounted.get(prefixed)
        if found is not None:
            return found
        table: dict[str, _Mounted] = {}
        owners: dict[str, str] = {}
        for bundle in self.bundles:
            naming = (lambda op, _id=bundle.id: fleet_tool_name(_id, op.mcp.tool_name)) if prefixed else None
            gateway = Gateway(
                bundle.document,
                bundle.context,
                include_unapproved=self._include_unapproved,
                tool_name=naming,
                result_token_budget=self._result_token_budget,
                keeper=self._keeper,
            )
            for definition in gateway.tools:
                name = definition["name"]
                if name in META_TOOL_NAMES and self.disclosure.mode != "flat":
                    raise FleetError(
                        "fleet/tool_collision",
                        f"Tool '{name}' of bundle '{bundle.id}' collides with the meta-tool of that name that a "
                        "searched surface serves.",
                        hint="Rename the operation (operations.<id>.name in anvil.yaml), or serve --disclosure flat.",
                    )
                if name in table:
                    raise FleetError(
                        "fleet/tool_collision",
                        f"Tool '{name}' of bundle '{bundle.id}' collides with the tool bundle "
                        f"'{owners[name]}' already mounted under that name.",
                        hint="Give one of the bundles a distinct path (its id is its path in the workspace).",
                    )
                tool = gateway.tool(name)
                assert tool is not None  # every listed tool is in the table
                stage = tool.plan.stage
                draft = None
                if stage is not None and stage.draft_operation != tool.op.id:
                    draft = gateway.tool_for(stage.draft_operation)
                shown = _prefixed_definition(bundle, definition, tool.op.mcp.tool_name) if prefixed else definition
                table[name] = _Mounted(bundle, gateway, tool, shown, draft)
                owners[name] = bundle.id
        self._mounted[prefixed] = table
        return table

    def discovery(self, prefixed: bool) -> Discovery:
        """The search index, input suppliers and pins over every tool of one naming mode (built once)."""
        found = self._discovery.get(prefixed)
        if found is None:
            tools = [
                DiscoveryTool(name, mounted.tool.op, mounted.bundle.document)
                for name, mounted in self.mounted(prefixed).items()
                if mounted.tool.op.is_approved
            ]
            found = self._discovery[prefixed] = Discovery(tools)
        return found

    def ladder(self, prefixed: bool, by_service: bool = False) -> Ladder:
        """The lanes over every tool of one naming mode (built once; pinned tools in none); ``by_service``:
        one lane per bundle (the coarser ladder a fleet whose capability cards are over budget serves).

        Raises:
            FleetError: ``fleet/tool_collision`` when a card would carry the name of a tool, a meta-tool or
                another card.
        """
        found = self._ladders.get((prefixed, by_service))
        if found is None:
            from anvil.serve.discovery.ladder import Ladder, LaneTool  # laddered only (cold start)

            mounted = self.mounted(prefixed)
            tools = [
                LaneTool(name, entry.tool.op, entry.bundle.document, entry.bundle.id if prefixed else None)
                for name, entry in mounted.items()
            ]
            pinned = self.discovery(prefixed).pinned
            found = Ladder.build(tools, pinned=pinned, taken=(*mounted, *META_TOOL_NAMES), by_service=by_service)
            if found.collisions:
                raise FleetError(
                    "fleet/tool_collision",
                    f"A lane card collides with another tool: {'; '.join(found.collisions[:3])}.",
                    hint="Rename the operation or the capability in anvil.yaml, or serve another --disclosure mode.",
                )
            self._ladders[(prefixed, by_service)] = found
        return found

    @property
    def lists_change(self) -> bool:
        """True when the anonymous caller's listing grows as it opens lane cards (laddered)."""
        return self.default.lists_change

    def is_card(self, name: str) -> bool:
        """True when ``name`` is a lane card the anonymous caller's surface serves."""
        return self.default.is_card(name)

    def tools_with(self, opened: Iterable[str]) -> Sequence[JSONObject]:
        """The anonymous caller's listing with the members of the ``opened`` cards."""
        return self.default.tools_with(opened)

    def compose(self, principal: Principal) -> Composition:
        """The composition for ``principal``: reused while cached (one per id, issuer, grant and attribution).

        The anonymous caller's composition (:attr:`default`) is never evicted.
        """
        key = _key(principal)
        if key == self._default_key:
            return self.default
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        composition = Composition(self, principal)
        self._cache[key] = composition
        if len(self._cache) > self._max:
            self._cache.popitem(last=False)
        return composition

    @property
    def cached_compositions(self) -> int:
        """How many compositions are cached now."""
        return len(self._cache)
