"""Lexical tool search: which approved tools answer a task phrased in words (no model, no network).

:class:`SearchIndex` is built once per served surface (a bundle, or a fleet with its prefixed names) from
one :class:`IndexEntry` per tool, and shared by every caller: :meth:`SearchIndex.search` takes the
caller's grant filter and never returns a name it refuses.

Ranking, best first:

1. **Exact matches**: a query equal (trimmed, case-folded, runs of blanks as one space) to a tool's
   name, its operation id, ``METHOD /path`` or the path alone finds that tool first.
2. **BM25F** over the tool's fields, each with its own weight and length normalisation: the name and
   operation id, the title, the description and its first sentence (its summary: later sentences often
   describe the resource, or any tool), the resource and action words (the action with the verbs users say
   for it: ``replace`` is also "update", "edit", "rename"), the path (``/me`` read as "myself"), the input
   names (a whole body's top-level property names among them) and descriptions, the lane (first tag), and
   what the tool answers with (:mod:`anvil.serve.discovery.returns`: "a section ... is a column in a board
   view"). A term's rarity is judged per field. Text is cut into identifier parts (camelCase, snake_case,
   kebab-case, dotted ids, path segments), folded, stripped of English stop words and conversational filler,
   and lightly stemmed ("creating", "created", "creates" and "create" are one term; "sent" is "send",
   "organise" "organize"), so "delete the issue comment" meets ``deleteComment`` on
   ``/issue/{issueIdOrKey}/comment/{id}``. A few abbreviations and spellings are one term ("org",
   "organisation" and "organization").
3. **The task, not its values**: quoted text, ``#channel``/``@handle`` mentions, addresses, host and file
   names, words holding a digit (``PROJ-123``, ``$250``), a capitalised code the index does not hold ("the
   PAY project"), what a message is to say ("a note saying ...") and a word a negation governs ("without
   deleting") are left out of a query. A query also searches, each at a fraction of a word's weight, what
   :mod:`anvil.serve.discovery.expansion` adds: joined words and initials ("on call": ``oncalls``; "out of
   office": ``ooo_entries``), the words a hand-written thesaurus of API work relates to its own
   (:mod:`anvil.serve.discovery.thesaurus`: "column"/"section", "fold into"/"merge", "knowledge
   base"/"vector store"; more where the task's own word is not indexed), turns of phrase ("how many":
   counts; "am I": the caller's identity; "whenever": a hook), a user or member when it names someone, and
   the indexed forms of its words by a suffix ("attach"/"attachment"). Generic operation verbs ("get",
   "list", "create"...) count for less unless a determiner makes them nouns ("an update"), and a verb
   pointing at what the task is about ("the message I just posted") counts half: the second stage weighs
   the kind of operation a task asks for.
4. **A second stage** reorders the best :data:`_RERANK` by what the task asks (see
   :mod:`anvil.serve.discovery.intent`), each feature a share of the best score: the task's intent (read
   from its verb or question) against the tool's shape (read from its own verbs, so ``POST /accounts/get``
   reads), agreeing or contradicting; a task's word naming what the tool acts on (its head); the task's own
   verb naming it ("remind me": a reminder; the verb's indexed forms then count fully); and a deprecated
   tool, or one of a side surface (admin, internal, analytics, sandbox, beta, experimental), ranked lower
   unless the task says so. The rest follow by score, so a longer answer begins with a shorter one.

Ties are broken by name. Every term's contribution to every tool is computed at build time into
postings (term -> tools and weights); a query adds up the postings of its terms (at most
:data:`MAX_QUERY_TERMS`, and as many related ones), and a term found in many tools is kept as a dense
row added in one C-level pass, so no query loops in Python over every tool; the second stage reads a
hundred tools' precomputed traits.

Descriptions and tasks are untrusted text: each field is read up to a bound, each identifier run in pieces
of 80 characters, each term up to :data:`MAX_TERM_CHARS`; every query-side pass is linear in the task's
(bounded) words.

``plain=True`` builds the baseline the benchmark compares with: plain BM25 over one bag of every
field's words (lower-cased ``\\w+`` runs), without weights, stemming, stop words, identifier splitting,
query rewriting or second stage (exact matches still come first).
"""

from __future__ import annotations

import gc
import heapq
import math
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain, islice, repeat
from operator import add, mul
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil.air.inputs import input_bindings
from anvil.air.model import Operation
from anvil.serve.discovery.expansion import GENERIC_VERBS, Vocabulary
from anvil.serve.discovery.intent import QUESTIONS, agreement, head_terms, task_intent, tool_shape
from anvil.serve.discovery.returns import returns_text
from anvil.serve.discovery.terms import (
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_TERM_CHARS,
    RUN,
    field_terms,
    plain_terms,
    query_terms,
    stem,
    task_words,
)

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MAX_TERM_CHARS",
    "IndexEntry",
    "SearchIndex",
    "query_terms",
]

#: The most inputs of one tool that are read.
MAX_INPUTS: Final = 64

#: BM25 saturation.
_K1: Final = 1.5
#: A term found in more than this share of the tools (of a surface of at least _DENSE_MIN tools) is
#: scored as a dense row: one C-level pass instead of a Python loop over its postings.
_DENSE_SHARE: Final = 0.08
_DENSE_MIN: Final = 200


@dataclass(frozen=True, slots=True)
class _Field:
    """One field of a tool as the ranking reads it: its weight, its length normalisation, its bound."""

    weight: float
    b: float
    chars: int


#: Field name -> how it counts. The title and the resource/action words say what a tool does in few
#: words; the description says more, less precisely; inputs mostly say what a tool needs.
_FIELDS: Final[dict[str, _Field]] = {
    "name": _Field(2.0, 0.3, 300),
    "operation_id": _Field(1.5, 0.3, 300),
    "title": _Field(3.0, 0.5, 300),
    "description": _Field(1.0, 0.75, 2000),
    "lead": _Field(1.0, 0.5, 300),
    "resource": _Field(2.5, 0.3, 300),
    "path": _Field(1.5, 0.3, 500),
    "inputs": _Field(0.6, 0.5, 2000),
    "input_text": _Field(0.25, 0.75, 2000),
    "lane": _Field(1.0, 0.3, 200),
    "returns": _Field(0.5, 0.75, 800),
}
#: The baseline: one bag, one weight.
_PLAIN: Final = _Field(1.0, 0.75, 20000)

#: What users say for each action (indexed with the action itself, in the resource/action field): generic
#: English verbs, not any API's own words.
_ACTION_WORDS: Final[dict[str, str]] = {
    "list": "list all show browse enumerate every",
    "get": "get show fetch read view retrieve detail look see pull open check describe",
    "search": "search find query look lookup filter",
    "export": "export download dump",
    "simulate": "simulate preview test",
    "validate": "validate check verify",
    "poll": "poll status check",
    "create": "create add new make register submit file log leave write start",
    "update": "update edit change modify set rename mark move assign adjust",
    "replace": "update edit change modify set rename mark move assign adjust replace",
    "delete": "delete remove erase destroy drop purge rid",
    "send": "send post notify tell",
    "execute": "execute run trigger start launch",
    "approve": "approve accept confirm grant allow",
    "cancel": "cancel stop abort halt",
    "reserve": "reserve hold lock",
}


def _exact_key(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One tool as the search index reads it.

    Attributes:
        name: the tool name as the caller dials it (a fleet's prefixed name included).
        operation_id: its AIR operation id, e.g. ``jira-platform.issue.get``.
        method: the upper-case HTTP method.
        path: the path template, e.g. ``/rest/api/3/issue/{issueIdOrKey}``.
        title: the tool's title (the operation's display name).
        description: the operation's own description (without the safety sentences every tool carries).
        resource: the effect's resource (``issue``), empty when unknown.
        action: the effect's action (``get``).
        inputs: ``(name, description)`` of each business input, as the input schema names it.
        lane: the first tag, else the capability id, if known.
        deprecated: whether the operation is marked deprecated.
    """

    name: str
    operation_id: str
    method: str
    path: str
    title: str
    description: str
    resource: str
    action: str
    inputs: tuple[tuple[str, str], ...]
    lane: str | None = None
    deprecated: bool = False
    returns: str = ""

    @classmethod
    def of(cls, op: Operation, name: str, schemas: Mapping[str, Any] | None = None) -> IndexEntry:
        """The entry of ``op`` served as the tool ``name`` (``schemas``: its document's, to read what it
        answers with)."""
        described: dict[str, str] = {}
        for param in op.input.params:
            described.setdefault(param.agent_name or param.name, param.description or "")
            described.setdefault(param.name, param.description or "")
        if op.input.body is not None:
            for body_field in op.input.body.fields:
                described.setdefault(body_field.agent_name or body_field.name, body_field.description or "")
                described.setdefault(body_field.name, body_field.description or "")
        inputs = []
        for binding in input_bindings(op)[:MAX_INPUTS]:
            text = described.get(binding.property) or described.get(binding.wire_name) or ""
            inputs.append((binding.property, text))
        if op.input.body is not None and not op.input.body.fields:
            inputs.extend(_body_properties(op.input.body.schema, MAX_INPUTS - len(inputs)))
        return cls(
            name=name,
            operation_id=op.id,
            method=(op.source_ref.method or "").upper(),
            path=op.source_ref.path or "",
            title=op.display_name,
            description=op.description,
            resource=op.effect.resource or "",
            action=op.effect.action,
            inputs=tuple(inputs),
            lane=op.tags[0] if op.tags else op.capability_id,
            deprecated=op.deprecated,
            returns=returns_text(op, schemas or {}),
        )

    def fields(self) -> dict[str, str]:
        """The text of each ranked field (the action with the words users say for it)."""
        action = _ACTION_WORDS.get(self.action, self.action)
        return {
            "name": self.name,
            "operation_id": self.operation_id,
            "title": self.title,
            "description": self.description,
            "lead": _lead(self.description),
            "resource": f"{self.resource} {action}",
            "path": _ME.sub("/myself", self.path),
            "inputs": " ".join(name for name, _ in self.inputs),
            "input_text": " ".join(text[:300] for _, text in self.inputs),
            "lane": self.lane or "",
            "returns": self.returns,
        }


#: A path's ``/me`` segment: the caller (a REST convention), indexed as "myself" ("me" is a stop word).
_ME: Final = re.compile(r"/me(?=/|$)", re.IGNORECASE)


def _lead(description: str) -> str:
    """A description's first sentence (its summary: later ones often describe the resource, or any tool)."""
    head = description[:300]
    cut = min((at for at in (head.find(". "), head.find(".\n"), head.find("\n\n")) if at >= 0), default=len(head))
    return head[:cut]


def _body_properties(schema: object, most: int) -> list[tuple[str, str]]:
    """The names of a whole body's top-level properties (at most ``most``), as inputs without descriptions:
    a body's field names say what a tool takes as its own fields would (their prose is left out: it is long,
    and says more of the field than of the tool)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    return [(str(key), "") for key in islice(properties, max(most, 0))]


class SearchIndex:
    """A BM25F index over a surface's tools (see the module docstring); immutable once built."""

    __slots__ = ("_dense", "_exact", "_names", "_plain", "_sparse", "_traits", "_vocabulary")

    def __init__(
        self,
        names: tuple[str, ...],
        sparse: dict[str, tuple[array[int], array[float]]],
        dense: dict[str, array[float]],
        exact: dict[str, tuple[int, ...]],
        traits: list[_Traits] | None,
        identifiers: frozenset[str],
    ) -> None:
        self._names = names
        self._sparse = sparse
        self._dense = dense
        self._exact = exact
        self._traits = traits
        self._plain = traits is None
        self._vocabulary = Vocabulary(chain(sparse, dense), identifiers)

    @classmethod
    def build(cls, entries: Iterable[IndexEntry], *, plain: bool = False) -> SearchIndex:
        """Index ``entries`` (a name seen twice keeps its first entry); ``plain`` builds the baseline.

        The cyclic garbage collector is paused while building: the build makes many small objects and no
        cycles, and a full collection over a gateway's loaded documents costs more than the build itself.
        """
        paused = gc.isenabled()
        gc.disable()
        try:
            return cls._build(entries, plain)
        finally:
            if paused:
                gc.enable()

    @classmethod
    def _build(cls, entries: Iterable[IndexEntry], plain: bool) -> SearchIndex:
        unique: dict[str, IndexEntry] = {}
        for entry in entries:
            unique.setdefault(entry.name, entry)
        ordered = [unique[name] for name in sorted(unique)]  # index order is name order: ties go by name
        fields: dict[str, _Field] = {"all": _PLAIN} if plain else _FIELDS
        bags = _bags(ordered, fields, plain)
        postings = _postings(bags, list(fields.values()))
        count = len(ordered)
        sparse: dict[str, tuple[array[int], array[float]]] = {}
        dense: dict[str, array[float]] = {}
        threshold = count * _DENSE_SHARE if count >= _DENSE_MIN else float("inf")
        for term, (docs, weights) in postings.items():
            if len(docs) > threshold:
                row = array("d", bytes(8 * count))
                for doc, weight in zip(docs, weights, strict=True):
                    row[doc] = weight
                dense[term] = row
            else:
                sparse[term] = (array("I", docs), array("d", weights))
        names = tuple(entry.name for entry in ordered)
        traits = None if plain else [_Traits.of(entry) for entry in ordered]
        # the terms of names and paths, where an API spells its acronyms
        named = [index for index, key in enumerate(fields) if key in ("name", "path")]
        identifiers = frozenset(term for row in bags for index in named for term in row[index][0])
        return cls(names, sparse, dense, _exact_keys(ordered), traits, identifiers)

    def __len__(self) -> int:
        return len(self._names)

    @property
    def names(self) -> tuple[str, ...]:
        """Every indexed tool name, sorted."""
        return self._names

    def search(self, query: str, limit: int = 5, *, allowed: Callable[[str], bool] | None = None) -> list[str]:
        """The names of the tools that best answer ``query``, best first, at most ``limit``.

        Args:
            query: words, a tool name, an operation id, ``METHOD /path`` or a path (read up to
                :data:`MAX_QUERY_CHARS` characters; nothing in it is refused).
            limit: the most names returned.
            allowed: the caller's filter (its grants); a name it refuses is never returned.

        Returns:
            Exact matches first, then by score; equal scores in name order. Empty when nothing matches.
        """
        if limit <= 0 or not self._names:
            return []
        text = query[:MAX_QUERY_CHARS]
        found: list[str] = []
        taken: set[int] = set()
        for doc in self._candidates(text, limit):
            if doc in taken:
                continue
            taken.add(doc)
            name = self._names[doc]
            if allowed is None or allowed(name):
                found.append(name)
                if len(found) >= limit:
                    break
        return found

    def _candidates(self, text: str, limit: int) -> Iterator[int]:
        yield from self._exact.get(_exact_key(text), ())
        weights = self._weighted_terms(text)
        if self._traits is None:
            scores = self._scores(weights)
            if scores is not None:
                yield from _ranked(scores, limit)
            return
        task = self._task(text, weights)
        scores = self._scores(weights)
        if scores is not None:
            yield from self._reranked(scores, task)

    def _reranked(self, scores: list[float], task: _Task) -> Iterator[int]:
        """The first :data:`_RERANK` tools by score reordered by how their shape, head and marks agree with the
        task (a share of the best score each), then the rest by score."""
        assert self._traits is not None
        head = _RERANK
        top = [doc for doc in heapq.nlargest(head, range(len(scores)), key=scores.__getitem__) if scores[doc] > 0.0]
        if not top:
            return
        best = scores[top[0]]
        adjusted = {doc: scores[doc] + best * self._traits[doc].bonus(task) for doc in top}
        yield from sorted(top, key=lambda doc: (-adjusted[doc], doc))
        if len(top) < head:
            return
        seen = set(top)
        yield from sorted(
            (doc for doc in range(len(scores)) if scores[doc] > 0.0 and doc not in seen), key=lambda d: -scores[d]
        )

    def _task(self, text: str, weights: dict[str, float]) -> _Task:
        """What the second stage reads of a task: its intent, its terms and the forms of its verb.

        A task's verb names what it acts on as often as its nouns do ("remind" me: a reminder): unless it is
        a generic one, the indexed forms of it count fully in ``weights`` (updated here).
        """
        words = [word.casefold() for word in RUN.findall(" ".join(task_words(text))) if word.isalpha()]
        words = [word for word in words if len(word) > 1]
        intent, at = task_intent(words)
        verb = stem(words[at]) if at >= 0 and words[at] not in QUESTIONS else ""
        acts = frozenset((verb, *self._vocabulary.derived(verb))) if verb else frozenset()
        if verb not in GENERIC_VERBS:
            for form in acts & weights.keys():
                weights[form] = 1.0
        terms = frozenset(term for term, weight in weights.items() if weight >= 1.0)
        return _Task(intent, terms, dict(weights), acts)

    def _weighted_terms(self, text: str) -> dict[str, float]:
        """The indexed terms a query scores and how much each counts (``plain``: its own terms only; else
        see :mod:`anvil.serve.discovery.expansion`)."""
        if self._plain:
            return dict.fromkeys(query_terms(text, plain=True), 1.0)
        return self._vocabulary.weighted_terms(text)

    def _scores(self, weights: dict[str, float]) -> list[float] | None:
        """Each tool's score for the weighted terms of a query, or None when no term is indexed."""
        scores: list[float] | None = None
        for term, factor in weights.items():
            dense = self._dense.get(term)
            if dense is not None:
                row = dense if factor == 1.0 else map(mul, dense, repeat(factor))
                scores = list(map(add, scores, row)) if scores is not None else list(row)
                continue
            posting = self._sparse.get(term)
            if posting is None:
                continue
            if scores is None:
                scores = [0.0] * len(self._names)
            for doc, weight in zip(*posting, strict=True):
                scores[doc] += weight * factor
        return scores


#: How many of the best-scored tools the second stage reorders.
_RERANK: Final = 100
#: The second stage's weights, each a share of the best score: a shape agreeing with the task's intent
#: (or contradicting it, below 0), a head the task names, a deprecated tool, a marked one.
_AGREE: Final = 0.3
_HEAD: Final = 0.3
_ACTS: Final = 0.3
_DEPRECATED: Final = 0.3
_MARKED: Final = 0.2
#: Words marking a side surface of an API, ranked lower unless the task says them.
_MARKS: Final = frozenset(stem(word) for word in "admin internal analytics sandbox beta experimental".split())
_DEPRECATION: Final = frozenset(stem(word) for word in "deprecated legacy old".split())


@dataclass(frozen=True, slots=True)
class _Task:
    """What the second stage reads of a task (see :meth:`SearchIndex._task`)."""

    intent: int | None
    terms: frozenset[str]
    weights: dict[str, float]
    acts: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Traits:
    """What the second stage knows of a tool (see :mod:`anvil.serve.discovery.intent`)."""

    shape: int
    head: frozenset[str]
    marks: frozenset[str]
    deprecated: bool

    @classmethod
    def of(cls, entry: IndexEntry) -> _Traits:
        words = field_terms(f"{entry.name} {entry.path} {entry.title}", 900)
        return cls(
            shape=tool_shape(entry.path, entry.title, entry.action),
            head=head_terms(entry.path, entry.title, entry.resource),
            marks=_MARKS.intersection(words),
            deprecated=entry.deprecated or "deprecat" in field_terms(entry.title, 300),
        )

    def bonus(self, task: _Task) -> float:
        """This tool's share of the best score for ``task``."""
        bonus = _AGREE * agreement(task.intent, self.shape)
        named = [task.weights[term] for term in self.head if term in task.weights]
        if named:
            bonus += _HEAD * min(max(named), 1.0)
        if self.head & task.acts:
            bonus += _ACTS
        if self.deprecated and not _DEPRECATION & task.terms:
            bonus -= _DEPRECATED
        if self.marks and not self.marks & task.terms:
            bonus -= _MARKED
        return bonus


_Bag = tuple[dict[str, int], int]


def _bags(entries: list[IndexEntry], fields: dict[str, _Field], plain: bool) -> list[list[_Bag]]:
    """Per tool, per field: its term counts and its length in terms."""
    bags = []
    for entry in entries:
        texts = entry.fields()
        if plain:
            texts = {"all": " ".join(text for key, text in texts.items() if key != "lead")}  # lead: a repeat
        row = []
        for key, spec in fields.items():
            words = plain_terms(texts[key], spec.chars) if plain else field_terms(texts[key], spec.chars)
            counts: dict[str, int] = {}
            for word in words:
                counts[word] = counts.get(word, 0) + 1
            row.append((counts, len(words)))
        bags.append(row)
    return bags


def _postings(bags: list[list[_Bag]], specs: list[_Field]) -> dict[str, tuple[list[int], list[float]]]:
    """Term -> (tools, weights): BM25F, each field's term frequency weighted and length-normalised, the
    sum saturated once; each field's share weighted by the term's rarity *in that field* ("project" is
    in most paths of an API but in the resource of few tools, where it says what a tool is about)."""
    count = len(bags)
    averages = [max(sum(row[i][1] for row in bags) / count, 1.0) if count else 1.0 for i in range(len(specs))]
    held: list[Counter[str]] = [Counter() for _ in specs]
    for row in bags:
        for (counts, _), found in zip(row, held, strict=True):
            found.update(counts.keys())
    idfs = [{term: math.log(1.0 + (count - df + 0.5) / (df + 0.5)) for term, df in found.items()} for found in held]
    postings: dict[str, tuple[list[int], list[float]]] = {}
    saturate = _K1 + 1.0
    for doc, row in enumerate(bags):
        # term -> [weighted frequency, rarity-weighted frequency], summed over fields
        sums: dict[str, list[float]] = {}
        for (counts, length), spec, average, idf in zip(row, specs, averages, idfs, strict=True):
            norm = spec.weight / (1.0 - spec.b + spec.b * length / average)
            for term, occurrences in counts.items():
                part = occurrences * norm
                slot = sums.get(term)
                if slot is None:
                    sums[term] = [part, part * idf[term]]
                else:
                    slot[0] += part
                    slot[1] += part * idf[term]
        for term, (frequency, rarity) in sums.items():
            posting = postings.get(term)
            if posting is None:
                posting = postings[term] = ([], [])
            posting[0].append(doc)
            posting[1].append(rarity * saturate / (frequency + _K1))
    return postings


def _exact_keys(entries: list[IndexEntry]) -> dict[str, tuple[int, ...]]:
    """Exact query -> tools, in order of precedence: the name, the operation id, ``METHOD /path``, the path."""
    exact: dict[str, dict[int, None]] = {}
    for key_of in (
        lambda e: e.name,
        lambda e: e.operation_id,
        lambda e: f"{e.method} {e.path}" if e.method and e.path else "",
        lambda e: e.path,
    ):
        for doc, entry in enumerate(entries):
            key = _exact_key(key_of(entry))
            if key:
                exact.setdefault(key, {})[doc] = None
    return {key: tuple(docs) for key, docs in exact.items()}


def _ranked(scores: list[float], limit: int) -> Iterator[int]:
    """Tools with a positive score, best first (ties in index, so name, order).

    The first ``4 * limit + 16`` come from a partial selection; the rest, needed only when the caller's
    filter refuses most of those, from a full sort.
    """
    size = len(scores)
    head = min(size, 4 * limit + 16)
    # nlargest is stable: among equal scores the lower index (the earlier name) comes first.
    top = heapq.nlargest(head, range(size), key=scores.__getitem__)
    for doc in top:
        if scores[doc] <= 0.0:
            return
        yield doc
    if head >= size:
        return
    seen = set(top)
    rest = sorted((doc for doc in range(size) if scores[doc] > 0.0 and doc not in seen), key=lambda d: -scores[d])
    yield from rest
