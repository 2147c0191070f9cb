"""Input schemas too large for any context, summarised for the listing (the whole one is a resource).

A tool whose published input schema alone is over :data:`INPUT_SCHEMA_BUDGET_TOKENS` (estimated as
the surface estimates, compact JSON over four) is listed with a summary of it:

* **required properties whole**: a property on a required chain (required at its own object, and
  every object above it required too, up to the root; a branch of ``anyOf``/``oneOf`` breaks the
  chain, since it is required only when chosen) is kept, its own optional parts cut as below;
  so are the reserved ``anvil_dry_run`` and ``anvil_projection`` and the operation's ``confirm`` and
  idempotency inputs (``keep``);
* **optional nested structure past a depth**: an optional property nested deeper than the level
  (a root input is at depth 1; only ``properties`` nest, ``items``, compositors and references do
  not) whose schema holds structure (properties or a reference) becomes
  ``{"type": <its type>, "description": "<Name or property> (summarised: read anvil://schema/<tool>)"}``
  (its type only when the schema states one, the name of the schema it references when it names one);
  optional scalar inputs stay whole;
* the **deepest level that fits** is published: levels are tried from 0 up and the last that fits is
  kept; when not even level 0 fits, every optional input (scalars too, where the stub is shorter) is
  a stub; when not even the stubs fit, and they exceed the budget by more than the schema's required
  part (:func:`required_part`: optional inputs left out, the objects that lost some accepting any
  other property and saying where the whole schema is) or that part fits, it is that part: so a
  summary exceeds the budget by at most its required part;
* the root ``description`` is left out: it is the operation's description, which the tool's own
  description already carries (Jira's workflow create repeats 24,800 characters there);
* ``$defs`` only the cut parts referenced are dropped: a reference is inlined where something below
  it is cut, and kept (its definition with it) where nothing is, or where it recurses on a required
  chain (which no depth bounds).

A summary only **accepts more** than the whole schema, so a stock client that validates a call
against the listed schema never refuses a call the gateway accepts; the gateway validates every call
against the whole schema. A stub accepts every value of the type its schema states (no ``enum``,
``const`` or ``additionalProperties: false`` is added, none is tightened); a ``oneOf`` whose branches
were loosened becomes ``anyOf`` (loosened branches may overlap); ``not``, ``if``/``then``/``else``,
``contains``, ``propertyNames`` and ``dependentSchemas`` are copied whole (loosening inside them
could refuse more). A schema this module cannot rewrite safely (a reference other than
``#/$defs/<name>``, an ``$id``, an anchor or a dynamic reference, nesting too deep to walk) is not
summarised: it is published whole, as before.

Why 4,000 tokens and not the tool budget (1,200): the tool budget bounds what one listed tool costs,
and an input schema was always published whole beyond it (``disclosure/input_over_budget``). Against
the corpus with every operation approved, 1,200 would summarise 43 of Jira's 465 tools, 82 of
Asana's 247 and 55 of Plaid's 329 (an agent would read a resource before a third of Asana's calls),
while 4,000 (about 16 KB, the issue's measure) summarises 10, 14 and 3: the schemas no agent can read
in passing (Jira's filter create at 46,000, PayPal's order create at 39,600, OpenAI's response create
at 59,700 estimated tokens). A document whose tool budget is above 4,000 summarises at its tool budget.

The summary is made where the tool definition is (:meth:`anvil.air.surface.ToolSurface.published`),
not at serve time, so ``tools.json``, ``anvil certify`` and every server list the same bytes; its
stubs name the tool as it is served (a fleet's prefixed name), and every other tool's bytes are
unchanged. Everything is deterministic: the same schema, budget and tool name give the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.outputs import compact_size

__all__ = [
    "INPUT_SCHEMA_BUDGET_TOKENS",
    "INPUT_SCHEMA_META",
    "LEFT_OUT",
    "SCHEMA_URI_PREFIX",
    "SUMMARISED_INPUT",
    "InputSummary",
    "required_part",
    "schema_uri",
    "summarise_input_schema",
]

#: The budget of one tool's input schema, in estimated tokens (chars/4): over it, the listing summarises it.
INPUT_SCHEMA_BUDGET_TOKENS: Final = 4000
#: The ``_meta`` key saying a tool's ``inputSchema`` is summarised (its one value: ``summarised``).
INPUT_SCHEMA_META: Final = "anvil/input_schema"
#: Where a summarised tool's whole input schema is read: ``anvil://schema/<tool as the caller dials it>``.
SCHEMA_URI_PREFIX: Final = "anvil://schema/"
#: A stub's description: the schema's or the property's name, then where the whole schema is.
SUMMARISED_INPUT: Final = "{name} (summarised: read {uri})"
#: What an object whose properties are left out (the last resort: optional ones, and those of an
#: ``anyOf``/``oneOf`` branch) adds to its description.
LEFT_OUT: Final = "Properties left out (summarised: read {uri})."

_LEFT_OUT: Final[JSONObject] = {}  # the marker of a property left out (compared by identity)
_DEFS_REF: Final = re.compile(r"^#/\$defs/([^/]+)$")
#: The deepest level tried; a schema nests far less (the walk stops earlier at the budget).
_MAX_LEVEL: Final = 64
#: Keywords whose value is one schema, walked in place (no depth: they do not name a property).
_ONE: Final = frozenset(
    {"items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentSchema"}
)
#: Keywords whose value is a list of schemas, walked in place.
_MANY: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
#: Keywords holding schemas that are copied whole: loosening inside them could refuse more.
_WHOLE_ONE: Final = frozenset({"not", "if", "then", "else", "contains", "propertyNames"})
_WHOLE_MAPS: Final = frozenset({"dependentSchemas"})
#: Keywords that would make a rewritten schema resolve differently: such a schema is published whole.
_UNSUPPORTED: Final = frozenset(
    {"$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "definitions"}
)
#: Keywords that say something about a schema without constraining it (merged over an inlined reference).
_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "example", "deprecated", "readOnly", "writeOnly", "$comment"}
)


def schema_uri(tool: str) -> str:
    """The resource URI of ``tool``'s whole input schema."""
    return f"{SCHEMA_URI_PREFIX}{tool}"


@dataclass(frozen=True, slots=True)
class InputSummary:
    """A summarised input schema.

    Attributes:
        schema: the summary (a new object; unchanged parts are shared with the whole schema).
        level: the depth kept for optional structure, or None when every optional input is summarised
            (not even level 0 fitted).
        chars: its compact JSON characters.
        optional_left_out: True when even the stubs did not fit: the summary is the required part alone.
    """

    schema: JSONObject
    level: int | None
    chars: int
    optional_left_out: bool = False


class _Unsupported(Exception):
    """The schema holds something a rewrite could change the meaning of."""


class _TooLarge(Exception):
    """The candidate being built already holds more nodes than the budget has characters."""


def summarise_input_schema(
    schema: JSONObject, budget_chars: int, *, tool: str, keep: Collection[str] = ()
) -> InputSummary | None:
    """``schema`` summarised within ``budget_chars`` (module docstring), or None when it is published whole.

    None when the schema fits the budget, or holds something a rewrite could change the meaning of.

    Args:
        schema: The tool's whole published input schema (treated as immutable).
        budget_chars: The budget in characters of compact JSON.
        tool: The tool name as the caller dials it (the stubs name its schema resource).
        keep: Root inputs never summarised (the reserved, confirm and idempotency inputs).
    """
    if compact_size(schema) <= budget_chars:
        return None
    defs = schema.get("$defs")
    defs = defs if isinstance(defs, dict) else {}
    shared = _Shared(defs, schema_uri(tool), frozenset(keep))
    try:
        best: InputSummary | None = None
        for level in range(_MAX_LEVEL + 1):
            cut = _Cut(shared, level, limit=budget_chars)
            try:
                built = cut.root(schema)
            except _TooLarge:
                break
            size = compact_size(built)
            if size > budget_chars:
                if best is None:
                    best = InputSummary(built, level, size)  # level 0 over: weighed against the last resort
                break
            best = InputSummary(built, level, size)
            if cut.stubs == 0:
                break  # nothing left to cut
        if best is not None and best.chars <= budget_chars:
            return best
        built = _Cut(shared, None, limit=None).root(schema)
        stubbed = InputSummary(built, None, compact_size(built))
        if best is not None and best.chars < stubbed.chars:
            stubbed = best
        if stubbed.chars <= budget_chars:
            return stubbed
        required = _Cut(shared, None, limit=None, drop=True).root(schema)
        size = compact_size(required)
        if size <= budget_chars or stubbed.chars > budget_chars + size:
            return InputSummary(required, None, size, optional_left_out=True)
        return stubbed
    except (_Unsupported, RecursionError):
        return None


def required_part(schema: JSONObject, *, tool: str, keep: Collection[str] = ()) -> JSONObject | None:
    """``schema``'s required part: every optional input left out (``keep`` kept), or None as above.

    What a summary may exceed its budget by: objects that lost properties no longer refuse unknown
    ones (``additionalProperties`` and ``unevaluatedProperties`` are dropped there) and say where the
    whole schema is.
    """
    defs = schema.get("$defs")
    shared = _Shared(defs if isinstance(defs, dict) else {}, schema_uri(tool), frozenset(keep))
    try:
        return _Cut(shared, None, limit=None, drop=True).root(schema)
    except (_Unsupported, RecursionError):
        return None


class _Shared:
    """What every level's cut of one schema shares: its definitions, the stub text, the structure memo."""

    def __init__(self, defs: JSONObject, uri: str, keep: frozenset[str]) -> None:
        self.defs = defs
        self.uri = uri
        self.keep = keep
        self._structured: dict[int, bool] = {}

    def target(self, ref: JSONValue) -> str:
        """The definition a ``$ref`` names; anything else cannot be rewritten safely."""
        match = _DEFS_REF.match(ref) if isinstance(ref, str) else None
        name = match.group(1).replace("~1", "/").replace("~0", "~") if match else None
        if name is None or name not in self.defs:
            raise _Unsupported(str(ref))
        return name

    def structured(self, node: JSONValue) -> bool:
        """True when ``node`` holds named structure (properties, or a reference) anywhere inside."""
        if not isinstance(node, dict):
            return False
        found = self._structured.get(id(node))
        if found is None:
            found = any(key in node for key in ("properties", "patternProperties", "$ref")) or any(
                self.structured(child) for child in _subschemas(node)
            )
            self._structured[id(node)] = found
        return found

    def kind(self, node: JSONValue) -> JSONValue:
        """The ``type`` ``node`` states (through references), or None when it states none."""
        for _ in range(16):
            if not isinstance(node, dict):
                return None
            if "type" in node:
                return node["type"]
            ref = node.get("$ref")
            if ref is None:
                return None
            node = self.defs.get(self.target(ref))
        return None

    def label(self, name: str, node: JSONValue) -> str:
        """What a stub names: the definition ``node`` references, else the property."""
        ref = node.get("$ref") if isinstance(node, dict) else None
        return self.target(ref) if ref is not None else name

    def stub(self, name: str, node: JSONValue) -> JSONObject:
        """``{"type": ..., "description": "<Name> (summarised: read <uri>)"}``: accepts every value of its type."""
        out: JSONObject = {}
        kind = self.kind(node)
        if kind is not None:
            out["type"] = kind
        out["description"] = SUMMARISED_INPUT.format(name=self.label(name, node), uri=self.uri)
        return out


def _subschemas(node: JSONObject) -> Iterator[JSONValue]:
    """Every schema directly inside ``node`` (by keyword; data such as ``examples`` is not a schema)."""
    for key, value in node.items():
        if key in _MANY or key == "items":
            if isinstance(value, list):
                yield from value
            elif key == "items":
                yield value
        elif key in _ONE or key in _WHOLE_ONE:
            yield value
        elif (key in ("properties", "patternProperties", "$defs") or key in _WHOLE_MAPS) and isinstance(value, dict):
            yield from value.values()


class _Cut:
    """One candidate: optional structure past ``level`` stubbed (``level`` None: every optional input)."""

    def __init__(self, shared: _Shared, level: int | None, *, limit: int | None, drop: bool = False) -> None:
        self.shared = shared
        self.level = level
        self.limit = limit
        self.drop = drop
        self.nodes = 0
        self.stubs = 0
        self.needed: set[str] = set()

    def root(self, schema: JSONObject) -> JSONObject:
        """The candidate: the root walked, ``$defs`` narrowed to the definitions still referenced.

        The root ``description`` is left out: it is the operation's description, which the tool's own
        description already carries (only the note on inputs left out stays).
        """
        walked = self.schema({key: value for key, value in schema.items() if key != "$defs"}, 0, True, {})
        assert isinstance(walked, dict)
        note = walked.pop("description", None)
        if note is not None and note != schema.get("description"):
            walked["description"] = LEFT_OUT.format(uri=self.shared.uri)
        out: JSONObject = {}
        for key in schema:
            if key != "$defs":
                if key in walked:  # (``additionalProperties`` may be gone with the inputs left out)
                    out[key] = walked.pop(key)
            elif self.needed:
                out[key] = {name: value for name, value in self.shared.defs.items() if name in self.needed}
        out.update(walked)  # a keyword the walk added (allOf, the note)
        return out

    def need(self, name: str) -> None:
        """Keep definition ``name`` whole, and every definition it references."""
        pending = [name]
        while pending:
            found = pending.pop()
            if found not in self.needed:
                self.needed.add(found)
                self._references(self.shared.defs[found], pending)

    def whole(self, node: JSONValue) -> JSONValue:
        """``node`` copied whole: the definitions it references are kept."""
        pending: list[str] = []
        self._references(node, pending)
        for name in pending:
            self.need(name)
        return node

    def _references(self, node: JSONValue, out: list[str]) -> None:
        if not isinstance(node, dict):
            return
        if any(key in node for key in _UNSUPPORTED):
            raise _Unsupported("keyword")
        if "$ref" in node:
            out.append(self.shared.target(node["$ref"]))
        for child in _subschemas(node):
            self._references(child, out)

    def schema(self, node: JSONValue, depth: int, chain: bool, entered: dict[str, int]) -> JSONValue:
        """A schema position: a reference inlined where something below it is cut, else the node walked."""
        if not isinstance(node, dict):
            return node
        self.nodes += 1
        if self.limit is not None and self.nodes > self.limit:
            raise _TooLarge
        if any(key in node for key in _UNSUPPORTED):
            raise _Unsupported("keyword")
        if "$ref" not in node:
            return self.keywords(node, depth, chain, entered)
        name = self.shared.target(node["$ref"])
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        walked = self.keywords(siblings, depth, chain, entered)
        target = self.shared.defs[name]
        # Re-entering a definition is a cycle unless a property was crossed off the required chain since
        # (the depth then bounds it); a cycle keeps the reference and the definition whole.
        again = entered.get(name)
        if not isinstance(target, dict) or (again is not None and (chain or again == depth)):
            self.need(name)
            return {"$ref": node["$ref"], **walked}
        inlined = self.schema(target, depth, chain, {**entered, name: depth})
        if inlined == target:
            self.need(name)  # nothing below is cut: the reference stays shared
            return {"$ref": node["$ref"], **walked}
        if all(key in _ANNOTATIONS for key in siblings) and isinstance(inlined, dict):
            return {**inlined, **walked}
        return {**walked, "allOf": [*walked.get("allOf", []), inlined]}

    def keywords(self, node: JSONObject, depth: int, chain: bool, entered: dict[str, int]) -> JSONObject:
        """``node``'s keywords, each schema in them walked (properties one level deeper)."""
        required = node.get("required")
        wanted = set(required) if isinstance(required, list) else set()
        out: JSONObject = {}
        overlapping: list[JSONValue] = []
        dropped = False
        for key, value in node.items():
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                named = key == "properties"
                kept = {
                    name: self.property(name, item, depth + 1, chain and named and name in wanted, entered)
                    for name, item in value.items()
                }
                out[key] = {name: item for name, item in kept.items() if item is not _LEFT_OUT}
                dropped = dropped or len(out[key]) < len(kept)
            elif (key in _MANY or key == "items") and isinstance(value, list):
                # one alternative of several is not required: what it requires is so only when chosen
                on_chain = chain and key not in ("anyOf", "oneOf")
                walked = [self.schema(item, depth, on_chain, entered) for item in value]
                if key == "oneOf" and walked != value:  # loosened branches may overlap: any of them, not one
                    overlapping.append({"anyOf": walked})
                else:
                    out[key] = walked
            elif key in _ONE:
                out[key] = self.schema(value, depth, chain, entered)
            elif key in _WHOLE_ONE:
                out[key] = self.whole(value)
            elif key in _WHOLE_MAPS and isinstance(value, dict):
                out[key] = {name: self.whole(item) for name, item in value.items()}
            else:
                out[key] = value
        if overlapping:
            out["allOf"] = [*out.get("allOf", []), *overlapping]
        if dropped:  # the inputs left out must still be accepted, and the caller told where they are
            out.pop("additionalProperties", None)
            out.pop("unevaluatedProperties", None)
            note = LEFT_OUT.format(uri=self.shared.uri)
            described = out.get("description")
            out["description"] = f"{described} {note}" if isinstance(described, str) and described else note
        return out

    def property(self, name: str, node: JSONValue, depth: int, chain: bool, entered: dict[str, int]) -> JSONValue:
        """One property: kept and walked, or a stub when it is optional and past the level."""
        if depth == 1 and name in self.shared.keep:
            return self.whole(node)
        if not chain and self.drop:
            return _LEFT_OUT
        if not chain and self._cuts(name, node, depth):
            self.stubs += 1
            return self.shared.stub(name, node)
        return self.schema(node, depth, chain, entered)

    def _cuts(self, name: str, node: JSONValue, depth: int) -> bool:
        if self.level is None:  # the last resort: every optional input, a scalar only where the stub is shorter
            if self.shared.structured(node):
                return True
            return compact_size(self.shared.stub(name, node)) < compact_size(node)
        return depth > self.level and self.shared.structured(node)
