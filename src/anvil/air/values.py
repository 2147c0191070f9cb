"""One value generator for every lane: example inputs, mock answers and simulated answers.

:class:`ValueGenerator` makes, from a JSON Schema (2020-12 as input schemas publish it, or OpenAPI
3.0 / Swagger 2.0 as response schemas keep it), a value that validates, or says why it cannot
(:class:`CannotMake`): a lane then reports ``skipped`` with that reason instead of sending a value the
API would refuse. It honours

* ``$ref`` into ``$defs`` / ``#/components/schemas`` (and pointers into them), cycles bounded by depth;
* ``const``, ``enum`` (a value that also fits the rest of the schema), declared ``examples``/``example``/
  ``default`` when they validate (an upstream's seed data is usually named by them);
* ``format`` (date-time, date, time, email, uri, url, uuid, ipv4, ipv6, hostname, byte, binary; an
  unknown format is a plain string), ``pattern`` (:mod:`anvil.air.regex_values`), length bounds;
* number bounds in either spelling and ``multipleOf``; item and property counts, ``uniqueItems``;
* ``allOf`` (merged), ``oneOf``/``anyOf`` (the first branch whose value validates, ``oneOf`` matching
  exactly one; an answer made ``published`` is judged as its published schema states it,
  :func:`anvil.air.value_check.answer_node`, when no value matches exactly one), OpenAPI
  ``discriminator`` (the branch's mapping key), ``not``;
* ``nullable`` and type lists (a non-null type first), ``additionalProperties``, ``readOnly`` /
  ``writeOnly`` by direction (an optional read-only field is not sent, a write-only one not answered).

Values are deterministic for a seed and the sequence of calls. ``fresh=True`` (and any property whose
name says it is an idempotency key or request id) never reuses a declared example: every call gets a
new value, so an idempotency key is never one the spec printed. Each value is checked with
:func:`anvil.air.value_check.fits` before it is handed out.

Every value is bounded: strings to :data:`MAX_STRING` characters, arrays and added properties to 64
items, nesting to 64 levels, and the whole make (nodes made and judgements on the way) to
:data:`MAX_STEPS`; a schema asking for more gets :class:`CannotMake`, which a lane reports as its
"cannot make a value" skip. Nothing here calls ``re`` on a schema's pattern (:mod:`anvil.air.patterns`).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.patterns import schema_pattern
from anvil.air.regex_values import pattern_string
from anvil.air.value_budget import CHARS_PER_STEP, MAX_STEPS, MAX_STRING, STOP_EVERY, current_stop, stopping_when
from anvil.air.value_check import (
    COMPOSITIONS,
    SchemaRoot,
    combine,
    discriminate,
    fits,
    format_fits,
    json_equal,
)
from anvil.air.value_formats import FORMAT_VALUES, NUMERIC_FORMATS
from anvil.air.value_numbers import number_for

__all__ = [
    "FORMAT_VALUES",
    "MAX_STEPS",
    "MAX_STRING",
    "CannotMake",
    "Direction",
    "Style",
    "ValueGenerator",
    "stopping_when",
]

Direction = Literal["request", "response"]

_FRESH_NAME: Final = re.compile(r"idempoten|request[-_]?id$", re.IGNORECASE)
_ID_NAME: Final = re.compile(r"^id$|[-_]id$|[a-z]Id$")
_MAX_LEVEL: Final = 12
_MAX_DEPTH: Final = 64
_MAX_NODES: Final = 4000
_MAX_ITEMS: Final = 64
_MAX_BRANCHES: Final = 12
_ALLOWED: Final = "\x00allowed"  # merged allOf: the names every closed branch allows
_OBJECT_HINTS: Final = ("properties", "required", "additionalProperties", "patternProperties", "minProperties")
_ARRAY_HINTS: Final = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains")
_STRING_HINTS: Final = ("pattern", "format", "minLength", "maxLength")
_NUMBER_HINTS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


class CannotMake(Exception):
    """No value satisfying the schema could be made; ``reason`` says where and why (one sentence).

    ``bounded`` is True when a bound of the generator was met on the way (length, items, depth, work, a
    stop): the schema may well admit a value, only not one made within the bounds.
    """

    def __init__(self, reason: str, *, bounded: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.bounded = bounded


class _Fail(Exception):
    pass


def _bound(run: _Run, reason: str) -> _Fail:
    """A failure at one of the generator's bounds (the make says so: :attr:`CannotMake.bounded`)."""
    run.bounded = True
    return _Fail(reason)


@dataclass(frozen=True, slots=True)
class Style:
    """How plain strings and booleans look.

    Attributes:
        label: ``selftest`` gives ``selftest-title-3`` when numbered, ``example`` alone when not; None
            gives ``title-<seeded token>``.
        numbered: number plain strings and integer ids per call (two calls never send the same
            request by accident).
        boolean: the boolean a schema without enum, const or example gets.
    """

    label: str | None = None
    numbered: bool = False
    boolean: bool = False


@dataclass(slots=True)
class _Run:
    root: SchemaRoot
    rng: random.Random
    call: int
    fresh: bool
    optional_level: int
    direction: Direction | None
    nodes: int = 0
    errors: list[str] = field(default_factory=list)
    #: what is left of the value's work budget, shared by every node made and every judgement on the way
    steps: list[int] = field(default_factory=lambda: [MAX_STEPS])
    stop: Callable[[], bool] | None = None
    #: a bound of the generator was met (the failure may not be the schema's)
    bounded: bool = False
    #: the step count at which ``stop`` is asked next
    next_look: int = MAX_STEPS


class ValueGenerator:
    """Makes values from schemas (see the module docstring); one instance per lane run."""

    def __init__(
        self,
        schemas: Mapping[str, JSONValue] | None = None,
        *,
        seed: int = 0,
        style: Style | None = None,
        prefer_declared: bool = True,
    ) -> None:
        """Args: schemas: ``Document.schemas`` (where component refs lead); seed: varies the values;
        style: how plain strings and booleans look; prefer_declared: use a valid declared example first.
        """
        self.schemas: Mapping[str, JSONValue] = schemas or {}
        self.seed = seed
        self.style = style or Style()
        self.prefer_declared = prefer_declared
        #: How many values were made so far (numbers plain strings when the style says so).
        self.counter = 0

    # --- public -----------------------------------------------------------------------------------

    def make(
        self,
        schema: JSONValue,
        *,
        name: str = "value",
        fresh: bool = False,
        optional_level: int = 2,
        direction: Direction | None = None,
        published: bool = False,
    ) -> JSONValue:
        """A value for ``schema`` (its own ``$defs`` and the shared schemas resolve its refs).

        Args:
            schema: the schema; None or ``{}`` accepts anything (a plain string is made).
            name: what the value is (a property name), used in plain strings.
            fresh: never a declared example; a new value on every call (idempotency keys).
            optional_level: optional properties are filled down to this object nesting level
                (0: the top level only; -1: none, required properties only).
            direction: ``request`` leaves optional read-only properties out, ``response`` write-only ones.
            published: resolve refs as the published output schema does (an answer is judged by it).

        Raises:
            CannotMake: no value satisfying the schema could be made (the reason names the property).
        """
        self.counter += 1
        root = SchemaRoot(self.schemas, schema if isinstance(schema, dict) else None, published=published)
        rng = random.Random(f"{self.seed}:{self.counter}")
        run = _Run(root, rng, self.counter, fresh, optional_level, direction, stop=current_stop())
        if run.stop is not None and run.stop():
            raise CannotMake(f"{name}: the run was stopped before the value was made", bounded=True)
        try:
            value = self._make(run, schema, name, 0, 0, 0)
        except _Fail as failure:
            raise CannotMake(f"{name}: {failure}", bounded=run.bounded) from None
        except RecursionError:
            raise CannotMake(f"{name}: the schema nests too deeply", bounded=True) from None
        if not fits(value, schema, root):
            raise CannotMake(f"{name}: no value satisfies every keyword of the schema together")
        return value

    def attempt(
        self, schema: JSONValue, *, name: str = "value", direction: Direction | None = None, published: bool = False
    ) -> JSONValue:
        """:meth:`make`, or None when no value can be made (for callers to whom absent is an answer)."""
        try:
            return self.make(schema, name=name, direction=direction, published=published)
        except CannotMake:
            return None

    def fits(self, value: JSONValue, schema: JSONValue) -> bool:
        """True when ``value`` satisfies ``schema`` (refs resolved as :meth:`make` resolves them)."""
        return fits(value, schema, SchemaRoot(self.schemas, schema if isinstance(schema, dict) else None))

    def fresh_key(self, label: str, schema: JSONValue = None) -> str:
        """A new idempotency key, distinct per call: ``<label>-<n>`` when that fits ``schema``, else made from it."""
        self.counter += 1
        plain = f"{label}-{self.counter}"
        if schema is None or self.fits(plain, schema):
            return plain
        made = self.make(schema, name=label, fresh=True)
        return made if isinstance(made, str) else plain

    # --- the walk ---------------------------------------------------------------------------------

    def _make(
        self, run: _Run, schema: JSONValue, name: str, level: int, depth: int, index: int, hint: str | None = None
    ) -> JSONValue:
        run.nodes += 1
        run.steps[0] -= 1
        if run.steps[0] < 0:
            raise _bound(run, "the value takes more work to make than a generated value may")
        if run.stop is not None and run.steps[0] <= run.next_look:
            run.next_look = run.steps[0] - STOP_EVERY
            if run.stop():
                raise _bound(run, "the run was stopped while the value was made")
        if depth > _MAX_DEPTH or level > _MAX_LEVEL:
            raise _bound(run, "the schema nests deeper than a value can be made (a required cycle)")
        resolved, ref_name = run.root.resolve(schema)
        ref_name = ref_name or hint
        if resolved is False:
            raise _Fail("the schema accepts no value (false)")
        node: JSONObject = resolved if isinstance(resolved, dict) else {}
        if not run.root.exact and node.get("additionalProperties") is False and _composed(node):
            # an answer's closed composition means the branches' properties (see value_check.answer_node)
            node = {k: v for k, v in node.items() if k != "additionalProperties"}
        if "const" in node:
            return copy.deepcopy(node["const"])
        fresh = run.fresh or bool(_FRESH_NAME.search(name))
        if self.prefer_declared and not fresh:
            for declared in _declared(node):
                declared = self._directed(run, node, declared, 0)
                if fits(declared, node, run.root, run.steps):
                    return self._server_fields(run, node, copy.deepcopy(declared), level, depth)
        enum = node.get("enum")
        if isinstance(enum, list):
            rest = {k: v for k, v in node.items() if k != "enum"}
            options = [v for v in enum if fits(v, rest, run.root, run.steps)]
            if not options:
                raise _Fail("no enum value fits the rest of the schema")
            non_null = [v for v in options if v is not None] or options
            return copy.deepcopy(non_null[index % len(non_null)])
        if isinstance(node.get("allOf"), list):
            merged = self._merged(run, node)
            value = self._make(run, merged, name, level, depth + 1, index, ref_name)
            if run.nodes < _MAX_NODES and not fits(value, node, run.root, run.steps):
                raise _Fail("the allOf branches contradict each other")
            return value
        for keyword in ("oneOf", "anyOf"):
            if isinstance(node.get(keyword), list) and node[keyword]:
                return self._branch(run, node, keyword, name, level, depth, index, ref_name)
        return self._typed(run, node, name, level, depth, index, ref_name, fresh)

    def _typed(
        self,
        run: _Run,
        node: JSONObject,
        name: str,
        level: int,
        depth: int,
        index: int,
        ref_name: str | None,
        fresh: bool,
    ) -> JSONValue:
        problems: list[str] = []
        for kind in _kinds(node):
            try:
                if kind == "object":
                    value: JSONValue = self._object(run, node, name, level, depth, ref_name)
                elif kind == "array":
                    value = self._array(run, node, name, level, depth)
                elif kind in ("string", "file"):
                    value = self._string(run, node, name, index, fresh)
                elif kind in ("integer", "number"):
                    # A numbered style numbers ids too: two creates naming their item never send one id.
                    numbered = (self.style.numbered or fresh) and bool(_ID_NAME.search(name))
                    number = number_for(node, kind == "integer", run.call - 1 if numbered else index)
                    if number is None:
                        raise _Fail("no number satisfies the bounds and multipleOf together")
                    value = number
                elif kind == "boolean":
                    value = self.style.boolean != bool(index % 2)
                elif kind == "null":
                    value = None
                else:
                    continue
            except _Fail as failure:
                problems.append(str(failure))
                continue
            if "not" in node and fits(value, node["not"], run.root, run.steps):
                problems.append("the value made is one the schema's 'not' excludes")
                continue
            return value
        raise _Fail(problems[0] if problems else "the schema names no type a value can have")

    def _branch(
        self,
        run: _Run,
        node: JSONObject,
        keyword: str,
        name: str,
        level: int,
        depth: int,
        index: int,
        ref_name: str | None,
    ) -> JSONValue:
        rest = {k: v for k, v in node.items() if k not in (keyword, "discriminator")}
        branches = list(node[keyword])[:_MAX_BRANCHES]
        nulls = [b for b in branches if _is_null(run.root.resolve(b)[0])]
        ordered = [b for b in branches if b not in nulls] + nulls
        discriminator = node.get("discriminator")
        problems: list[str] = []
        # A value of exactly one branch first; an answer (published) takes one that fits any branch when
        # the branches overlap so that none can be told apart, as its published schema states it.
        exact = run.root.exactly()
        loose: tuple[JSONValue] | None = None
        for branch in ordered:
            _, branch_name = run.root.resolve(branch)
            combined = self._merged(run, {**rest, "allOf": [branch]}) if rest else branch
            usual = run.optional_level
            for fuller in (False, True):
                # a value too sparse to tell the branches apart is made again with its optional fields filled
                run.optional_level = max(usual, level + 2) if fuller else usual
                try:
                    value = self._make(run, combined, name, level, depth + 1, index, branch_name)
                except _Fail as failure:
                    problems.append(str(failure))
                    break
                finally:
                    run.optional_level = usual
                settled = self._settle(run, exact, node, value, branch, branches, discriminator, branch_name)
                if settled is not None:
                    return settled[0]
                if loose is None and exact is not run.root:
                    loose = self._settle(run, run.root, node, value, branch, branches, discriminator, branch_name)
                problems.append(f"a value of one {keyword} branch also satisfies another or breaks the rest")
        if loose is not None:
            return loose[0]
        raise _Fail(problems[0] if problems else f"no {keyword} branch can be made")

    def _settle(
        self,
        run: _Run,
        root: SchemaRoot,
        node: JSONObject,
        value: JSONValue,
        branch: JSONValue,
        branches: list[JSONValue],
        discriminator: JSONValue,
        branch_name: str | None,
    ) -> tuple[JSONValue] | None:
        """``(value,)`` made to fit ``node`` (judged from ``root``) as a value of ``branch`` (tagged, or
        trimmed), else None."""
        if isinstance(discriminator, dict) and isinstance(value, dict):
            tagged = dict(value)
            discriminate(tagged, discriminator, branch_name, branch, run.root)
            if fits(tagged, node, root, run.steps):
                return (tagged,)
        if fits(value, node, root, run.steps):
            return (value,)
        if isinstance(value, dict):
            # an optional field another branch requires makes the value fit both: leave those out
            own = _required(self._merged(run, {"allOf": [branch]}))
            others = {n for b in branches if b is not branch for n in _required(self._merged(run, {"allOf": [b]}))}
            trimmed = {k: v for k, v in value.items() if k in own or k not in others}
            if trimmed != value and fits(trimmed, node, root, run.steps):
                return (trimmed,)
        return None

    def _merged(self, run: _Run, node: JSONObject) -> JSONObject:
        """``node`` with its ``allOf`` branches folded in (properties joined, bounds tightened)."""
        out: JSONObject = {k: v for k, v in node.items() if k != "allOf"}
        if node.get("additionalProperties") is False and _ALLOWED not in node:
            own = node.get("properties")
            out[_ALLOWED] = frozenset(own) if isinstance(own, dict) else frozenset()
        for branch in node.get("allOf") or ():
            part, _ = run.root.resolve(branch)
            if part is False:
                raise _Fail("an allOf branch accepts no value (false)")
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("allOf"), list):
                part = self._merged(run, part)
            try:
                combine(out, part, _ALLOWED)
            except ValueError as contradiction:
                raise _Fail(str(contradiction)) from None
        return out

    # --- kinds ------------------------------------------------------------------------------------

    def _object(
        self, run: _Run, node: JSONObject, name: str, level: int, depth: int, ref_name: str | None
    ) -> JSONObject:
        props = node.get("properties")
        props = props if isinstance(props, dict) else {}
        required = [key for key in node.get("required") or () if isinstance(key, str)]
        allowed = node.get(_ALLOWED)
        extra = node.get("additionalProperties", True)
        patterns = node.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        limit = node.get("maxProperties")
        optional = level <= run.optional_level and run.nodes < _MAX_NODES
        out: JSONObject = {}
        for key in list(props) + [key for key in required if key not in props]:
            needed = key in required
            if isinstance(allowed, frozenset) and key not in allowed:
                if needed:
                    raise _Fail(f"'{key}' is required but a closed allOf branch does not allow it")
                continue
            sub = props.get(key)
            if sub is None:
                sub = next((s for p, s in patterns.items() if schema_pattern(p).search(key)), None)
            if sub is None:
                if extra is False:
                    raise _Fail(f"'{key}' is required but additionalProperties is false")
                sub = extra if isinstance(extra, dict) else {}
            if not needed:
                if not optional or (isinstance(limit, int) and len(out) >= limit) or self._hidden(run, sub):
                    continue
            try:
                out[key] = self._make(run, sub, key, level + 1, depth + 1, 0)
            except _Fail as failure:
                if needed:
                    raise _Fail(f"'{key}': {failure}") from None
        low = node.get("minProperties")
        count = 0
        while isinstance(low, int) and len(out) < low:
            count += 1
            if count > _MAX_ITEMS:
                raise _bound(run, f"minProperties {low} is more properties than a generated value holds")
            if extra is False or isinstance(allowed, frozenset):
                raise _Fail(f"minProperties {low} cannot be reached with the declared properties")
            key = f"{name}_{count}"
            out[key] = self._make(run, extra if isinstance(extra, dict) else {}, key, level + 1, depth + 1, count)
        discriminator = node.get("discriminator")
        if isinstance(discriminator, dict) and ref_name is not None:
            discriminate(out, discriminator, ref_name, None, run.root, props)
        return out

    def _directed(self, run: _Run, node: JSONValue, value: JSONValue, depth: int) -> JSONValue:
        """A declared example without the optional properties this direction does not carry.

        A spec's example of a whole object shows the server's fields (a read-only ``id``): sent in a
        request it names an item the server would make, and every call would send the same one.
        """
        if run.direction is None or depth > _MAX_DEPTH or not isinstance(value, dict | list):
            return value
        resolved, _ = run.root.resolve(node)
        if not isinstance(resolved, dict):
            return value
        if isinstance(resolved.get("allOf"), list):
            try:
                resolved = self._merged(run, resolved)
            except _Fail:
                return value
        if isinstance(value, list):
            items = resolved.get("items")
            return [self._directed(run, items, item, depth + 1) for item in value] if items else value
        props = resolved.get("properties")
        if not isinstance(props, dict):
            return value
        required = _required(resolved)
        out: JSONObject = {}
        for key, item in value.items():
            sub = props.get(key)
            if sub is not None and key not in required and self._hidden(run, sub):
                continue
            out[key] = self._directed(run, sub, item, depth + 1) if sub is not None else item
        return out

    def _server_fields(self, run: _Run, node: JSONObject, value: JSONValue, level: int, depth: int) -> JSONValue:
        """An answer's declared example with the read-only fields it leaves out made and added.

        A spec's example of an item often omits what the server sets (``id``, ``created_at``): an
        answer without its ``id`` names no item to undo or look up. A field that would break the
        example's validity is left out again.
        """
        if run.direction != "response" or not isinstance(value, dict) or run.nodes >= _MAX_NODES:
            return value
        merged = node
        if isinstance(node.get("allOf"), list):
            try:
                merged = self._merged(run, node)
            except _Fail:
                return value
        props = merged.get("properties")
        if not isinstance(props, dict):
            return value
        for key, sub in props.items():
            if key in value or not isinstance(sub, dict | bool):
                continue
            resolved, _ = run.root.resolve(sub)
            if not isinstance(resolved, dict) or resolved.get("readOnly") is not True:
                continue
            try:
                made = self._make(run, sub, key, level + 1, depth + 1, 0)
            except _Fail:
                continue
            trial = {**value, key: made}
            if fits(trial, node, run.root, run.steps):
                value = trial
        return value

    def _hidden(self, run: _Run, sub: JSONValue) -> bool:
        """An optional property this direction does not carry (read-only in a request, write-only in an answer)."""
        if run.direction is None:
            return False
        resolved, _ = run.root.resolve(sub)
        if not isinstance(resolved, dict):
            return False
        flag = "readOnly" if run.direction == "request" else "writeOnly"
        return resolved.get(flag) is True

    def _array(self, run: _Run, node: JSONObject, name: str, level: int, depth: int) -> list[JSONValue]:
        low = node.get("minItems")
        low = low if isinstance(low, int) and low > 0 else 0
        high = node.get("maxItems")
        if low > _MAX_ITEMS:
            raise _bound(run, f"minItems {low} is more items than a generated value holds")
        wanted = low if level > run.optional_level else max(low, 1)
        if isinstance(high, int):
            wanted = min(wanted, high)
        prefix = node.get("prefixItems")
        items = node.get("items", {})
        if isinstance(items, list):
            prefix, items = items, node.get("additionalItems", {})
        heads = prefix if isinstance(prefix, list) else []
        unique = node.get("uniqueItems") is True
        out: list[JSONValue] = []
        contains = node.get("contains")
        if contains is not None and wanted > 0:
            out.append(self._make(run, contains, name, level + 1, depth + 1, 0))
        position = len(out)
        while len(out) < wanted:
            sub = heads[position] if position < len(heads) else items
            if sub is False:
                break
            made: JSONValue = None
            problem: str | None = "its items repeat"
            for retry in range(4 if unique else 1):
                try:
                    made = self._make(run, sub, f"{name}{position or ''}", level + 1, depth + 1, position + retry)
                except _Fail as failure:
                    problem = str(failure)
                    break
                if not unique or not any(json_equal(made, other) for other in out):
                    problem = None
                    break
            if problem is not None:
                if len(out) >= low:
                    break
                raise _Fail(f"item {position}: {problem}")
            out.append(made)
            position += 1
        return out

    def _string(self, run: _Run, node: JSONObject, name: str, index: int, fresh: bool) -> str:
        text = self._text(run, node, name, index, fresh)
        run.steps[0] -= len(text) // CHARS_PER_STEP  # long strings count towards the value's work
        return text

    def _text(self, run: _Run, node: JSONObject, name: str, index: int, fresh: bool) -> str:
        low = node.get("minLength")
        low = low if isinstance(low, int) and low > 0 else 0
        high = node.get("maxLength")
        high = high if isinstance(high, int) and high >= 0 else None
        if high is not None and high < low:
            raise _Fail(f"maxLength {high} is below minLength {low}")
        if low > MAX_STRING:
            raise _bound(run, f"minLength {low} is longer than a generated string may be ({MAX_STRING})")
        fmt = node.get("format") if isinstance(node.get("format"), str) else None
        pattern = node.get("pattern") if isinstance(node.get("pattern"), str) else None
        candidates = self._formatted(run, fmt, name, low) if fmt is not None else []
        for text in candidates:
            if low <= len(text) <= (high if high is not None else len(text)) and _matches(pattern, text):
                return text
        if pattern is not None:
            for _ in range(3):
                found = pattern_string(pattern, run.rng, min_length=low, max_length=high)
                if found is not None and (fmt is None or format_fits(fmt, found)):
                    return found
            raise _Fail(f"no string matching pattern {pattern!r} within the length bounds could be made")
        if candidates and fmt not in ("binary", "password"):
            raise _Fail(f"no {fmt} value fits the length bounds {low}..{high}")
        return self._plain(run, name, low, high, fresh)

    def _formatted(self, run: _Run, fmt: str, name: str, low: int) -> list[str]:
        key = fmt.lower().replace("_", "-")
        if key == "uuid":
            digest = hashlib.sha256(f"{self.seed}:{run.call}:{name}:uuid".encode()).hexdigest()
            return [f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"]
        if key == "byte":
            raw = f"{self.style.label or name}-{run.call}".encode()
            return [base64.b64encode(raw).decode(), "AA=="]
        if key in NUMERIC_FORMATS:
            return ["1", "1" * max(1, low)]
        if key in ("date-time", "datetime") or fmt == "dateTime":
            return list(FORMAT_VALUES["date-time"])
        return list(FORMAT_VALUES.get(key, ()))

    def _plain(self, run: _Run, name: str, low: int, high: int | None, fresh: bool) -> str:
        style = self.style
        token = hashlib.sha256(f"{self.seed}:{name}:{run.call if fresh or style.numbered else ''}".encode())
        if style.numbered and style.label:
            text = f"{style.label}-{name}-{run.call}"
        elif style.label and not fresh:
            text = style.label
        else:
            text = f"{name}-{token.hexdigest()[:8]}" + (f"-{run.call}" if fresh else "")
        if high is not None and len(text) > high:
            digest = token.hexdigest()
            text = (digest * (high // len(digest) + 1))[:high]
        if len(text) < low:
            text += "x" * (low - len(text))
        return text


def _required(node: JSONObject) -> set[str]:
    names = node.get("required")
    return {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()


def _declared(node: JSONObject) -> list[JSONValue]:
    out: list[JSONValue] = []
    examples = node.get("examples")
    if isinstance(examples, list):
        out.extend(examples[:3])
    out.extend(node[key] for key in ("example", "default") if key in node)
    return out


def _kinds(node: JSONObject) -> list[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        kinds = [declared]
    elif isinstance(declared, list):
        kinds = [k for k in declared if isinstance(k, str)]
    elif any(k in node for k in _OBJECT_HINTS):
        kinds = ["object"]
    elif any(k in node for k in _ARRAY_HINTS):
        kinds = ["array"]
    elif any(k in node for k in _STRING_HINTS):
        kinds = ["string"]
    elif any(k in node for k in _NUMBER_HINTS):
        kinds = ["number"]
    else:
        kinds = ["string"]  # anything goes: a plain string is the least surprising value
    if node.get("nullable") is True or node.get("x-nullable") is True:
        kinds.append("null")
    return [k for k in kinds if k != "null"] + (["null"] if "null" in kinds else [])


def _composed(node: JSONObject) -> bool:
    return any(isinstance(node.get(key), list) for key in COMPOSITIONS)


def _is_null(schema: JSONValue) -> bool:
    return isinstance(schema, dict) and (schema.get("type") == "null" or schema.get("const", 0) is None)


def _matches(pattern: str | None, text: str) -> bool:
    return pattern is None or schema_pattern(pattern).search(text)
