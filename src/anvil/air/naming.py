"""Names: casing helpers, the shared action vocabulary and per-operation name derivation (original-core §1.5).

Every surface name of an operation (AIR id, canonical name, CLI command, MCP tool name) comes from
:func:`derive_names`; :func:`resolve_name_collisions` makes them unique across a service.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from anvil._dataclass import dataclass
from anvil.air.model import Operation

if TYPE_CHECKING:
    from anvil.diagnostics import Diagnostic

__all__ = [
    "ACTION_FAMILIES",
    "DECLARED_MUTATION_VERBS",
    "GENERIC_RESOURCES",
    "MUTATION_FAMILIES",
    "READ_FAMILIES",
    "VAGUE_VERBS",
    "VERB_FAMILY",
    "DerivedNames",
    "RoutingNames",
    "cli_flag",
    "collation_key",
    "derive_names",
    "has_word",
    "humanize",
    "is_version_like",
    "kebab",
    "path_segments",
    "post_search_read",
    "project_routing_names",
    "prop_key",
    "resolve_name_collisions",
    "singularize",
    "snake",
    "split_words",
    "title_case",
]

#: Read-intent families, in the order the classifier checks them.
READ_FAMILIES: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("export", ("export", "download", "report", "dump")),
    ("search", ("search", "query", "find", "lookup", "filter")),
    ("poll", ("status", "poll", "wait", "progress", "health")),
)
#: Mutation-intent families, in the order the classifier checks them.
MUTATION_FAMILIES: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("simulate", ("simulate", "preview", "dry_run", "estimate", "quote")),
    ("validate", ("validate", "verify", "check")),
    ("approve", ("approve", "authorize", "accept", "confirm", "grant")),
    ("cancel", ("cancel", "revoke", "terminate")),
    ("send", ("send", "email", "notify", "message", "dispatch", "publish", "sms")),
    ("reserve", ("reserve", "hold", "lock", "allocate")),
    ("execute", ("execute", "run", "trigger", "invoke", "start", "launch")),
)
ACTION_FAMILIES: Final = READ_FAMILIES + MUTATION_FAMILIES
_READ_VERBS: Final = frozenset(word for _, words in READ_FAMILIES for word in words)
#: Each vocabulary verb and the action family it belongs to (``run`` -> ``execute``, ``status`` -> ``poll``).
VERB_FAMILY: Final[dict[str, str]] = {word: family for family, words in ACTION_FAMILIES for word in words}


def _forms(*verbs: str) -> frozenset[str]:
    out: set[str] = {"setting"}  # the one doubled consonant among these verbs
    for verb in verbs:
        out.update({verb, verb + "s", (verb[:-1] if verb.endswith("e") else verb) + "ing"})
    return frozenset(out)


#: Verbs (and their -s/-ing forms) that make an operationId or summary a declared mutation.
DECLARED_MUTATION_VERBS: Final = _forms(
    "create", "save", "persist", "store", "upsert", "update", "delete", "remove", "replace", "register", "submit", "set"
)  # fmt: skip
#: Resource names that say nothing (they lower name confidence).
GENERIC_RESOURCES: Final = frozenset(
    {"object", "objects", "resource", "resources", "item", "items", "entity", "entities", "record", "records"}
    | {"data", "view", "views", "result", "results", "response", "payload"}
)
#: Leading verbs that say nothing (they lower name confidence).
VAGUE_VERBS: Final = frozenset({"do", "run", "exec", "execute", "process", "handle", "call", "post"})

_FORMAT_SUFFIX = re.compile(r"\.(?:json|xml|csv|yaml|yml|txt|html|htm|proto)$", re.IGNORECASE)
_ODATA_KEY = re.compile(r"^([^(]+)\(.*\)$")
_VERSION_LIKE = re.compile(r"^v?\d+(?:\.\d+)*$", re.IGNORECASE)
_CAMEL_1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2 = re.compile(r"([A-Z])([A-Z][a-z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


# --- casing ---------------------------------------------------------------------------------------------


def split_words(text: str) -> list[str]:
    """Lowercase words of ``text``: camelCase boundaries split, any non-alphanumeric run separates."""
    spaced = _CAMEL_2.sub(r"\1 \2", _CAMEL_1.sub(r"\1 \2", text))
    return [word.lower() for word in _NON_ALNUM.split(spaced) if word]


@functools.lru_cache(maxsize=1 << 16)
def snake(text: str) -> str:
    """snake_case: ``snake("HTTPStatusCode") == "http_status_code"``.

    Kept per text (a large API names the same inputs and schema keys thousands of times).
    """
    return "_".join(split_words(text))


@functools.lru_cache(maxsize=1 << 16)
def kebab(text: str) -> str:
    """kebab-case: ``kebab("paymentId") == "payment-id"``."""
    return "-".join(split_words(text))


def cli_flag(text: str) -> str:
    """The CLI flag of an input: ``"--" + kebab(text)``."""
    return "--" + kebab(text)


def prop_key(text: str) -> str:
    """The public input property key of a wire name: ``snake(text)``.

    A name with no ASCII letter or digit (``$``, ``名前``) has an empty snake form; it gets a stable
    ``input_<hex>`` key instead so it still has a public name.
    """
    key = snake(text)
    if key:
        return key
    return "input_" + text.encode("utf-8").hex()[:16]


def humanize(name: str) -> str:
    """``"create_refund"`` -> ``"Create refund"``."""
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def title_case(text: str) -> str:
    """``"payment_methods"`` -> ``"Payment Methods"``."""
    return " ".join(word[:1].upper() + word[1:] for word in split_words(text))


def singularize(word: str) -> str:
    """``ies``->``y``; ``sses``/``uses``->``ss``/``us``; another ``ses`` loses its ``s`` (``releases``->
    ``release``, as github-mini's tool names require); a trailing ``s`` dropped unless the word ends ``ss``/``us``.
    """
    lower = word.lower()
    if lower.endswith("ies") and len(word) > 3:
        return word[:-3] + ("Y" if word[-3:].isupper() else "y")
    if lower.endswith(("sses", "uses")) and len(word) > 4:
        return word[:-2]
    if lower.endswith("ses") and len(word) > 3:
        return word[:-1]
    if lower.endswith("s") and not lower.endswith(("ss", "us")) and len(word) > 1:
        return word[:-1]
    return word


def has_word(snake_text: str, word: str) -> bool:
    """True when ``word`` occurs in snake-cased text bounded by ``_`` or the ends."""
    return re.search(rf"(?:^|_){re.escape(word)}(?:_|$)", snake_text) is not None


def is_version_like(segment: str) -> bool:
    """``v1``, ``v60.0``, ``2.0``, ``2``: a version, not a resource."""
    return _VERSION_LIKE.match(segment) is not None


# --- the POST-search rule (shared with the classifier) ---------------------------------------------------


def _first_word(text: str | None) -> str:
    words = split_words(text or "")
    return words[0] if words else ""


def post_search_read(operation_id: str | None, summary: str | None, path: str) -> bool:
    """True when a POST is a search that reads (original-core §3.4).

    The first read-intent verb in the signal ``"<operationId> <summary> <path>"`` (families checked
    export, search, poll) must be a search word, and neither operationId nor summary may start with a
    declared-mutation verb.
    """
    signal = snake(f"{operation_id or ''} {summary or ''} {path}")
    first_family = None
    for family, words in READ_FAMILIES:
        if any(has_word(signal, word) for word in words):
            first_family = family
            break
    if first_family != "search":
        return False
    return not (_first_word(operation_id) in DECLARED_MUTATION_VERBS or _first_word(summary) in DECLARED_MUTATION_VERBS)


# --- derivation -------------------------------------------------------------------------------------------


def path_segments(path: str) -> list[str]:
    """Path segments with format suffixes stripped (``Messages.json`` -> ``Messages``)."""
    return [_FORMAT_SUFFIX.sub("", seg) for seg in path.split("/") if seg]


def _is_param(segment: str) -> bool:
    return segment.startswith("{")


@dataclass(frozen=True, slots=True, kw_only=True)
class DerivedNames:
    """Every name of one operation, plus what the naming pass learned about it."""

    resource: str
    action: str
    canonical_name: str
    id: str
    command: str
    tool_name: str
    display_name: str
    effect_resource: str
    addresses_item: bool
    confidence: float
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingNames:
    """A re-homed canonical name, CLI command and tool name (the id never moves)."""

    canonical_name: str
    command: str
    tool_name: str


def _resource_and_action(path: str, method: str, search_read: bool) -> tuple[str, str | None, bool, bool]:
    """(resource, rpc-or-trailing action, addresses one item, has a concrete segment)."""
    segments = path_segments(path)
    concrete = [seg for seg in segments if not _is_param(seg)]
    if not concrete:
        return "", None, bool(segments), False
    last = concrete[-1]
    item = bool(segments) and _is_param(segments[-1])
    odata = _ODATA_KEY.match(last)
    if odata:
        last, item = odata.group(1), True
    if "." in last and not is_version_like(last):
        parts = [part for part in last.split(".") if part]
        if len(parts) >= 2:
            return "_".join(parts[:-1]), snake(parts[-1]) or None, item, True
    verb = snake(last)
    if verb in VERB_FAMILY and len(concrete) >= 2 and not _is_param(segments[-1]):
        previous = _ODATA_KEY.sub(r"\1", concrete[-2])
        read_on_write = verb in _READ_VERBS and method not in ("get", "head")
        if not is_version_like(previous) and (not read_on_write or search_read):
            # The id names the action family, the word effect.action carries (``start`` -> ``execute``).
            return previous, VERB_FAMILY[verb], False, True
    return last, None, item, True


def derive_names(
    service_id: str,
    path: str,
    method: str,
    operation_id: str | None,
    summary: str | None,
    *,
    search_read: bool | None = None,
) -> DerivedNames:
    """Derive the names of one source operation (original-core §1.5 steps 1-8).

    Args:
        service_id: the service id (already validated).
        path: the source path template.
        method: the HTTP method (any case).
        operation_id: the source operationId, if any.
        summary: the source summary, if any.
        search_read: whether the classifier made this a read; None applies the POST-search rule.

    Returns:
        The derived names and their confidence.
    """
    method = method.lower()
    if search_read is None:
        search_read = method == "post" and post_search_read(operation_id, summary, path)
    resource, action, item, concrete = _resource_and_action(path, method, search_read)
    if not resource:
        resource = service_id
    op_words = split_words(operation_id or "")
    first = op_words[0] if op_words else ""
    if action is None:
        if method == "post" and search_read:
            action = "search"  # the family of whichever search word made it a read
        elif method == "post" and first in ("update", "edit", "modify", "patch"):
            action = "update"
        elif method == "post" and first in ("delete", "remove", "destroy"):
            action = "delete"
        elif method in ("put", "patch") and first == "upsert":
            action = "upsert"
        else:
            action = _default_action(method, item)
    resource_key = snake(resource) or service_id
    singular = singularize(resource_key)
    canonical = snake(operation_id) if operation_id and snake(operation_id) else snake(f"{action}_{singular}")
    display = summary if summary and summary.strip() else humanize(canonical)
    confidence, reasons = _confidence(canonical, resource_key, has_operation_id=bool(op_words), concrete=concrete)
    return DerivedNames(
        resource=resource,
        action=action,
        canonical_name=canonical,
        id=f"{service_id}.{resource_key}.{action}",
        command=f"{service_id} {resource} {action}",
        tool_name=f"{service_id}_{canonical}",
        display_name=display,
        effect_resource=singularize(resource),
        addresses_item=item,
        confidence=confidence,
        reasons=reasons,
    )


def _default_action(method: str, item: bool) -> str:
    if method in ("get", "head"):
        return "get" if item else "list"
    return {"post": "create", "put": "replace", "patch": "update", "delete": "delete"}.get(method, "other")


def _confidence(
    canonical: str, resource_key: str, *, has_operation_id: bool, concrete: bool
) -> tuple[float, tuple[str, ...]]:
    score = 0.9 if has_operation_id else 0.6
    reasons: list[str] = []
    if not concrete:
        score -= 0.25
        reasons.append("no_resource")
    if resource_key.split("_")[-1] in GENERIC_RESOURCES:
        score -= 0.3
        reasons.append("generic_resource")
    if canonical.split("_")[0] in VAGUE_VERBS:
        score -= 0.45
        reasons.append("vague_verb")
    return round(min(1.0, max(0.0, score)), 2), tuple(reasons)


def project_routing_names(service_id: str, resource: str, verb: str) -> RoutingNames:
    """Re-home an operation's routing names from a manifest ``name: {resource, verb}`` (§2.3).

    Canonical ``<verb>_<singular(resource)>``, command ``<service> <resource> <verb>``, tool
    ``<service>_<canonical>``. The caller keeps the AIR id unchanged.
    """
    canonical = snake(f"{verb}_{singularize(snake(resource) or resource)}")
    return RoutingNames(
        canonical_name=canonical,
        command=f"{service_id} {resource} {verb}",
        tool_name=f"{service_id}_{canonical}",
    )


# --- collision repair ---------------------------------------------------------------------------------

_MAX_SWEEPS: Final = 10


_UNCLEAN = re.compile(r"[^A-Za-z0-9_]+")


def _concrete_token(segment: str) -> str:
    """A concrete segment cleaned for collision repair: placeholders, OData keys and punctuation dropped, case kept."""
    bare = _ODATA_KEY.sub(r"\1", _PLACEHOLDER.sub("", segment))
    return _UNCLEAN.sub("_", bare).strip("_")


def _path_tokens(path: str) -> list[str]:
    """Cleaned concrete tokens (case kept), then ``by_<param>`` pseudo-tokens, each in path order, de-duplicated.

    Concrete tokens come first so a distinguishing pair reads ``<concrete>_by_<param>``.
    """
    concrete: list[str] = []
    params: list[str] = []
    for segment in path_segments(path):
        if not segment.startswith("{"):
            token = _concrete_token(segment)
            if token and token not in concrete:
                concrete.append(token)
        for name in _PLACEHOLDER.findall(segment):
            token = "by_" + (snake(name) or "param")
            if token not in params:
                params.append(token)
    return concrete + params


def _concrete_tokens(path: str) -> list[str]:
    return [t for t in _path_tokens(path) if not t.startswith("by_")] if path else []


def _last_param(path: str) -> str | None:
    """``by_<name>`` when the raw last segment is exactly one placeholder (or an OData key).

    ``{Sid}.json``, ``{id}#frag`` and ``{id}?beta=true`` carry a suffix, so they do not end in a parameter.
    """
    raw = [seg for seg in path.split("/") if seg]
    if not raw:
        return None
    last = raw[-1]
    whole = re.fullmatch(r"\{([^{}]*)\}", last)
    if whole:
        return "by_" + (snake(whole.group(1)) or "key")
    if _ODATA_KEY.match(last):
        names = _PLACEHOLDER.findall(last)
        return "by_" + (snake(names[-1]) if names and snake(names[-1]) else "key")
    return None


def _member_suffix(tokens: list[str], others: list[set[str]], common: set[str], path: str) -> str:
    unique = [t for t in tokens if all(t not in other for other in others)]
    if unique:
        return min(unique, key=lambda t: (len(t), t))
    pairs = [
        f"{a}_{b}"
        for i, a in enumerate(tokens)
        for b in tokens[i + 1 :]
        if all(not (a in other and b in other) for other in others)
    ]
    if pairs:
        return min(pairs, key=lambda t: (len(t), t))
    last = _last_param(path)
    if last is not None:
        return last
    # The subset fallback joins only concrete tokens: a by_<param> pseudo-token names no place in the path.
    distinctive = [t for t in _concrete_tokens(path) if t not in common]
    return "_".join([*distinctive, "direct"])


def _group_suffixes(members: list[Operation]) -> list[str]:
    """One suffix per member (§1.5 a-c); a suffix two members share gets ``_2``, ``_3`` in group order."""
    token_lists = [_path_tokens(op.source_ref.path or "") for op in members]
    token_sets = [set(tokens) for tokens in token_lists]
    common = set.intersection(*token_sets) if token_sets else set()
    suffixes = [
        snake(_member_suffix(tokens, token_sets[:i] + token_sets[i + 1 :], common, members[i].source_ref.path or ""))
        or "direct"
        for i, tokens in enumerate(token_lists)
    ]
    seen: Counter[str] = Counter()
    out: list[str] = []
    for suffix in suffixes:
        seen[suffix] += 1
        out.append(suffix if seen[suffix] == 1 else f"{suffix}_{seen[suffix]}")
    return out


def _rename(op: Operation, suffix: str) -> Operation:
    new_id = f"{op.id}.{suffix}"
    claims = tuple(
        dataclasses.replace(claim, subject=new_id) if claim.subject == op.id else claim for claim in op.evidence.claims
    )
    return dataclasses.replace(
        op,
        id=new_id,
        evidence=dataclasses.replace(op.evidence, claims=claims),
        canonical_name=f"{op.canonical_name}_{suffix}",
        cli=dataclasses.replace(op.cli, command=f"{op.cli.command} {suffix}"),
        mcp=dataclasses.replace(op.mcp, tool_name=f"{op.mcp.tool_name}_{suffix}"),
    )


#: ASCII punctuation in the order of the Unicode root collation (what the original's ``localeCompare`` uses).
_PUNCTUATION_ORDER: Final = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_COLLATION_KEY = tuple[tuple[int, ...], tuple[int, ...]]


def collation_key(text: str) -> _COLLATION_KEY:
    """A sort key approximating the Unicode root collation for ASCII text.

    Punctuation sorts before digits, digits before letters, letters case-insensitively with lowercase
    first on a tie: ``/a/{id}/b`` sorts before ``/a/b``, as the original orders collision groups.
    """
    primary: list[int] = []
    tertiary: list[int] = []
    for char in text:
        rank = _PUNCTUATION_ORDER.find(char)
        if rank >= 0:
            primary.append(rank)
        elif char.isascii() and char.isdigit():
            primary.append(100 + ord(char))
        elif char.isascii() and char.isalpha():
            primary.append(200 + ord(char.lower()))
        else:
            primary.append(1000 + ord(char))
        tertiary.append(1 if char.isupper() else 0)
    return tuple(primary), tuple(tertiary)


def _sort_key(op: Operation) -> tuple[_COLLATION_KEY, _COLLATION_KEY, _COLLATION_KEY, str]:
    ref = op.source_ref
    return (
        collation_key(ref.path or ""),
        collation_key((ref.method or "").lower()),
        collation_key(ref.operation_id or ""),
        op.id,
    )


def resolve_name_collisions(ops: Sequence[Operation]) -> tuple[tuple[Operation, ...], list[Diagnostic]]:
    """Make CLI commands, tool names and ids unique by appending path-derived suffixes (§1.5).

    Surfaces are checked in order CLI command, tool name, id, in repeated sweeps (at most 10) until
    stable. Colliding groups are handled in sorted key order and their members sorted by path, method
    and operationId, so the names do not depend on the order of ``ops``.

    Returns:
        The operations (same order, renamed where needed) and one ``naming_collision_resolved`` info
        per rename.
    """
    current = list(ops)
    from anvil.diagnostics import diagnostic  # a compile's, not a served gateway's (cold start)

    diagnostics: list[Diagnostic] = []
    surfaces: tuple[tuple[str, Callable[[Operation], str]], ...] = (
        ("CLI command", lambda op: op.cli.command),
        ("tool name", lambda op: op.mcp.tool_name),
        ("id", lambda op: op.id),
    )
    for _ in range(_MAX_SWEEPS):
        changed = False
        for label, surface in surfaces:
            groups: dict[str, list[int]] = {}
            for index, op in enumerate(current):
                groups.setdefault(surface(op), []).append(index)
            colliding = (key for key, members in groups.items() if len(members) > 1)
            for key in sorted(colliding, key=collation_key):
                indexes = sorted(groups[key], key=lambda i: _sort_key(current[i]))
                changed = True
                suffixes = _group_suffixes([current[i] for i in indexes])
                for index, suffix in zip(indexes, suffixes, strict=True):
                    before = current[index]
                    current[index] = _rename(before, suffix)
                    diagnostics.append(
                        diagnostic(
                            "naming_collision_resolved",
                            f"{len(indexes)} operations share the {label} {key!r}; "
                            f"{before.id!r} became {current[index].id!r} (suffix {suffix!r}).",
                            operation=current[index].id,
                        )
                    )
        if not changed:
            break
    return tuple(current), diagnostics
