"""What ``anvil init`` tells a reviewer, never decides: POSTs that read, and browser pages.

The classifier stays conservative (original-core §3.4): a POST is a write unless its signal says
search. Some POSTs only read (``Get a list of available payment methods``, ``Calculate the cost``);
:func:`read_hints` finds them (a summary or operationId that starts with a reading verb, and no word
of its id, summary or first sentence of its description that describes a state change) so ``anvil
init`` can write a commented ``side_effect: read`` a reviewer accepts by uncommenting it.

Some GETs are not data at all: an OAuth authorize page answers ``text/html`` for a person's browser.
:func:`page_hints` finds every read whose success answers are HTML only, so ``--approve reads`` leaves
it unapproved, with a comment saying why.

Both read the source spec as loaded (its summaries and media types; AIR keeps neither), matched to
AIR operations by method and path. Pure functions: no I/O, bounded by the spec's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.model import Operation
from anvil.air.naming import DECLARED_MUTATION_VERBS, split_words
from anvil.compiler.schemas import lookup_pointer

__all__ = ["READ_VERBS", "STATE_CHANGE_WORDS", "SourceFacts", "page_hints", "read_hints", "source_facts"]

#: Leading verbs that say an operation reads (the first word of its summary or operationId), and
#: their third-person forms (``Returns input token counts``).
READ_VERBS: Final = frozenset(
    {
        *("get", "list", "search", "retrieve", "check", "calculate", "fetch", "find", "lookup", "query", "read"),
        *("gets", "lists", "searches", "retrieves", "checks", "calculates", "fetches", "finds", "queries", "reads"),
        *("count", "counts", "returns"),
    }
)
#: Words that describe a state change in an operation's id, summary or first sentence of its
#: description: any of them and no read is proposed (``getOrCreate``, ``Retrieve and cancel``).
STATE_CHANGE_WORDS: Final = DECLARED_MUTATION_VERBS | frozenset(
    {
        *("add", "adds", "cancel", "cancels", "charge", "charges", "capture", "captures", "refund", "refunds"),
        *("pay", "pays", "send", "sends", "start", "starts", "stop", "stops", "enable", "enables", "disable"),
        *("disables", "revoke", "revokes", "approve", "approves", "publish", "publishes", "transfer", "transfers"),
        *("assign", "assigns", "reset", "resets", "generate", "generates", "modify", "modifies"),
        *("change", "changes", "write", "writes", "mark", "marks", "lock", "locks", "unlock", "archive", "archives"),
        *("move", "moves", "upload", "uploads", "import", "imports", "execute", "executes", "trigger", "triggers"),
    }
)
_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_HTML: Final = ("text/html", "application/xhtml+xml")
_MAX_SENTENCE: Final = 400
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|\n")


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """What the source spec says of one operation that AIR does not keep."""

    operation_id: str | None
    summary: str | None
    description: str | None
    #: The media types its success (2xx) answers declare, in spec order (empty: none declared).
    answers: tuple[str, ...]


def _resolve(document: JSONObject, node: JSONValue) -> JSONValue:
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
        node = lookup_pointer(document, node["$ref"])
        seen += 1
    return node


def _text(value: JSONValue) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _answers(document: JSONObject, responses: JSONValue) -> tuple[str, ...]:
    out: list[str] = []
    if not isinstance(responses, dict):
        return ()
    for status, raw in responses.items():
        if not str(status).startswith("2"):
            continue
        response = _resolve(document, raw)
        content = response.get("content") if isinstance(response, dict) else None
        if isinstance(content, dict):
            out.extend(str(media).split(";")[0].strip().lower() for media in content)
    return tuple(dict.fromkeys(out))


def _walk(document: JSONObject) -> Iterator[tuple[tuple[str, str], SourceFacts]]:
    paths = document.get("paths")
    if not isinstance(paths, dict):
        return
    for path, raw_item in paths.items():
        item = _resolve(document, raw_item)
        if not isinstance(path, str) or not isinstance(item, dict):
            continue
        for method in _METHODS:
            raw = item.get(method)
            if not isinstance(raw, dict):
                continue
            facts = SourceFacts(
                _text(raw.get("operationId")),
                _text(raw.get("summary")),
                _text(raw.get("description")),
                _answers(document, raw.get("responses")),
            )
            yield (method, path), facts


def source_facts(document: JSONObject) -> dict[tuple[str, str], SourceFacts]:
    """The :class:`SourceFacts` of every operation of a loaded (OpenAPI-3-shaped) spec, by ``(method, path)``."""
    return dict(_walk(document))


def _facts(op: Operation, facts: Mapping[tuple[str, str], SourceFacts]) -> SourceFacts | None:
    return facts.get(((op.source_ref.method or "").lower(), op.source_ref.path or ""))


def _first_sentence(text: str | None) -> str:
    """What a description says first (its first sentence or line, at most 400 characters): what the
    operation does, before notes on scopes, limits and permissions that name other verbs."""
    head = _SENTENCE_END.split((text or "")[:_MAX_SENTENCE].strip(), maxsplit=1)
    return head[0] if head else ""


def read_hints(operations: Sequence[Operation], facts: Mapping[tuple[str, str], SourceFacts]) -> dict[str, str]:
    """Why each POST the classifier made a write may only read, by AIR id: its summary (or operationId)
    starts with a reading verb and none of its words describes a state change. A reason, never a
    decision: ``anvil init`` writes it beside a commented ``side_effect: read``."""
    out: dict[str, str] = {}
    for op in operations:
        found = _facts(op, facts) if op.source_ref.method == "post" and not op.is_read else None
        if found is None:
            continue
        leading = None
        for label, text in (("summary", _first_sentence(found.summary)), ("operationId", found.operation_id)):
            first = split_words(text or "")[:1]
            if text and first and first[0] in READ_VERBS:
                leading = (label, text, first[0])
                break
        if leading is None:
            continue
        summary = _first_sentence(found.summary)
        said = " ".join(t for t in (found.operation_id, summary, _first_sentence(found.description)) if t)
        if any(word in STATE_CHANGE_WORDS for word in split_words(said)):
            continue
        label, text, verb = leading
        out[op.id] = f"its {label} '{text}' says {verb} and it describes no state change"
    return out


def page_hints(operations: Sequence[Operation], facts: Mapping[tuple[str, str], SourceFacts]) -> dict[str, str]:
    """Why each read that answers only HTML is a browser page, not data for an agent, by AIR id (an
    OAuth authorize page): ``--approve reads`` leaves it unapproved."""
    out: dict[str, str] = {}
    for op in operations:
        found = _facts(op, facts) if op.is_read else None
        if found is None or not found.answers:
            continue
        if all(media in _HTML for media in found.answers):
            out[op.id] = f"it answers {', '.join(found.answers)}: a page for a person's browser, not data"
    return out
