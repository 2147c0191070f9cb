"""Lexical tool search: which approved tools answer a task phrased in words (no model, no network).

:class:`SearchIndex` is built once per served surface (a bundle, or a fleet with its prefixed names) from
one :class:`IndexEntry` per tool, and shared by every caller: :meth:`SearchIndex.search` takes the
caller's grant filter and never returns a name it refuses.

Ranking, best first:

1. **Exact matches**: a query equal (trimmed, case-folded, runs of blanks as one space) to a tool's
   name, its operation id, ``METHOD /path`` or the path alone finds that tool first.
2. **BM25F** over the tool's fields, each with its own weight and length normalisation: the name and
   operation id, the title, the description, the resource and action words (the action with the words
   users say for it: ``replace`` is also "update", "edit", "change"), the path, the input names and
   the input descriptions, and the lane (first tag). Text is cut into identifier parts (camelCase,
   snake_case, kebab-case, dotted ids and path segments), folded, stripped of English stop words and
   lightly stemmed (plural, ``-ed``, ``-ing``, final ``e``: "creating", "created", "creates" and
   "create" are one term), so "delete the issue comment" meets ``deleteComment`` on
   ``/issue/{issueIdOrKey}/comment/{id}``.

Ties are broken by name. Every term's contribution to every tool (idf, field weights and length norms
folded in) is computed at build time into postings (term -> tools and weights); a query adds up the
postings of its terms (at most :data:`MAX_QUERY_TERMS`), and a term found in many tools is kept as a
dense row added in one C-level pass, so no query loops in Python over every tool.

Descriptions are untrusted text: each field is read up to a bound, and each term is cut to
:data:`MAX_TERM_CHARS` characters.

``plain=True`` builds the baseline the benchmark compares with: plain BM25 over one bag of every
field's words (lower-cased ``\\w+`` runs), without weights, stemming, stop words or identifier splitting.
"""

from __future__ import annotations

import heapq
import math
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from operator import add
from typing import Final

from anvil.air.inputs import input_bindings
from anvil.air.model import Operation

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MAX_TERM_CHARS",
    "IndexEntry",
    "SearchIndex",
    "query_terms",
]

#: The longest query read (the search tool accepts 500 characters; more is cut, not refused, here).
MAX_QUERY_CHARS: Final = 1000
#: The most distinct terms of a query that are scored (the first ones).
MAX_QUERY_TERMS: Final = 64
#: A term longer than this is cut (a hostile description may hold one word of a megabyte).
MAX_TERM_CHARS: Final = 40
#: The most inputs of one tool that are read.
MAX_INPUTS: Final = 64
#: The most terms read from one field of one tool.
MAX_FIELD_TERMS: Final = 400

#: BM25 saturation.
_K1: Final = 1.2
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
    "description": _Field(1.0, 0.75, 4000),
    "resource": _Field(2.5, 0.3, 300),
    "path": _Field(1.5, 0.3, 500),
    "inputs": _Field(0.6, 0.5, 2000),
    "input_text": _Field(0.25, 0.75, 6000),
    "lane": _Field(1.0, 0.3, 200),
}
#: The baseline: one bag, one weight.
_PLAIN: Final = _Field(1.0, 0.75, 20000)

#: What users say for each action (indexed with the action itself, in the resource/action field).
_ACTION_WORDS: Final[dict[str, str]] = {
    "list": "list all show browse",
    "get": "get show fetch read view retrieve details",
    "search": "search find query look",
    "export": "export download dump",
    "simulate": "simulate preview test",
    "validate": "validate check verify",
    "poll": "poll status check",
    "create": "create add new make",
    "update": "update edit change modify set",
    "replace": "update edit change modify set replace",
    "delete": "delete remove erase destroy",
    "send": "send post notify",
    "execute": "execute run trigger",
    "approve": "approve accept confirm",
    "cancel": "cancel stop abort",
    "reserve": "reserve hold",
}

_STOP_WORDS: Final = frozenset(
    "a about above after again all also am an and any are as at be been before being below between both but "
    "by can could did do does doing down during each few for from further had has have having he her here "
    "hers him his how i if in into is it its itself just me more most my myself no nor not of off on once "
    "only or other our ours out over own please same she should so some such than that the their theirs "
    "them then there these they this those through to too under until up very was we were what when where "
    "which while who whom why will with would you your yours yourself".split()
)
#: Letter-and-digit runs (underscores split them too).
_RUN: Final = re.compile(r"[^\W_]+")
#: The parts of an ASCII run: ``HTTPServer2`` -> ``HTTP``, ``Server``, ``2``.
_PARTS: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PLAIN_WORD: Final = re.compile(r"\w+")
#: Doubled final letters a suffix leaves that are undoubled (``getting`` -> ``get``; ``adding`` stays ``add``).
_UNDOUBLE: Final = frozenset("bgmnprt")


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A light suffix stemmer: plurals, ``-ied``/``-ed``/``-ing``, ``-ation``, then a final ``e``.

    Not a linguist's stem, only a consistent one: the forms of one word an API and its users write
    ("entries"/"entry", "created"/"creates"/"creation"/"create") meet on one term.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) >= 6:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) >= 5:
        word = _undouble(word[:-2])
    elif word.endswith("ation") and len(word) >= 8:
        word = word[:-3]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    if len(word) >= 3 and word[-1] == word[-2] and word[-1] in _UNDOUBLE:
        return word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def _run_terms(run: str) -> tuple[str, ...]:
    """The terms of one letter-and-digit run: its identifier parts, folded, stop words and single
    characters dropped, stemmed, each cut to :data:`MAX_TERM_CHARS`."""
    parts = _PARTS.findall(run) if run.isascii() else [run]
    out = []
    for part in parts:
        word = part.casefold()[:MAX_TERM_CHARS]
        if len(word) < 2 or word in _STOP_WORDS:
            continue
        out.append(_stem(word))
    return tuple(out)


def _terms(text: str, chars: int) -> list[str]:
    """The terms of ``text`` (read up to ``chars`` characters), at most :data:`MAX_FIELD_TERMS`."""
    out: list[str] = []
    for run in _RUN.findall(text[:chars]):
        out.extend(_run_terms(run[:200]))
        if len(out) >= MAX_FIELD_TERMS:
            return out[:MAX_FIELD_TERMS]
    return out


def _plain_terms(text: str, chars: int) -> list[str]:
    return [word[:MAX_TERM_CHARS] for word in _PLAIN_WORD.findall(text[:chars].casefold())]


def query_terms(query: str, *, plain: bool = False) -> tuple[str, ...]:
    """The distinct terms of ``query`` a search scores, in order of first use (at most :data:`MAX_QUERY_TERMS`)."""
    analyse = _plain_terms if plain else _terms
    return tuple(dict.fromkeys(analyse(query, MAX_QUERY_CHARS)))[:MAX_QUERY_TERMS]


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

    @classmethod
    def of(cls, op: Operation, name: str) -> IndexEntry:
        """The entry of ``op`` served as the tool ``name``."""
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
        )

    def fields(self) -> dict[str, str]:
        """The text of each ranked field (the action with the words users say for it)."""
        action = _ACTION_WORDS.get(self.action, self.action)
        return {
            "name": self.name,
            "operation_id": self.operation_id,
            "title": self.title,
            "description": self.description,
            "resource": f"{self.resource} {action}",
            "path": self.path,
            "inputs": " ".join(name for name, _ in self.inputs),
            "input_text": " ".join(text[:300] for _, text in self.inputs),
            "lane": self.lane or "",
        }


class SearchIndex:
    """A BM25F index over a surface's tools (see the module docstring); immutable once built."""

    __slots__ = ("_dense", "_exact", "_names", "_plain", "_sparse")

    def __init__(
        self,
        names: tuple[str, ...],
        sparse: dict[str, tuple[array[int], array[float]]],
        dense: dict[str, array[float]],
        exact: dict[str, tuple[int, ...]],
        plain: bool,
    ) -> None:
        self._names = names
        self._sparse = sparse
        self._dense = dense
        self._exact = exact
        self._plain = plain

    @classmethod
    def build(cls, entries: Iterable[IndexEntry], *, plain: bool = False) -> SearchIndex:
        """Index ``entries`` (a name seen twice keeps its first entry); ``plain`` builds the baseline."""
        unique: dict[str, IndexEntry] = {}
        for entry in entries:
            unique.setdefault(entry.name, entry)
        ordered = [unique[name] for name in sorted(unique)]  # index order is name order: ties go by name
        count = len(ordered)
        fields: dict[str, _Field] = {"all": _PLAIN} if plain else _FIELDS
        # Per tool, per field: its term counts and length.
        bags: list[list[tuple[Counter[str], int]]] = []
        totals = dict.fromkeys(fields, 0)
        for entry in ordered:
            texts = entry.fields()
            if plain:
                texts = {"all": " ".join(texts.values())}
            row = []
            for key, spec in fields.items():
                words = _plain_terms(texts[key], spec.chars) if plain else _terms(texts[key], spec.chars)
                row.append((Counter(words), len(words)))
                totals[key] += len(words)
            bags.append(row)
        averages = [max(totals[key] / count, 1.0) if count else 1.0 for key in fields]
        specs = list(fields.values())
        frequencies: list[dict[str, float]] = []
        document_counts: Counter[str] = Counter()
        for row in bags:
            weighted: dict[str, float] = {}
            for (counts, length), spec, average in zip(row, specs, averages, strict=True):
                norm = spec.weight / (1.0 - spec.b + spec.b * length / average)
                for term, tf in counts.items():
                    weighted[term] = weighted.get(term, 0.0) + tf * norm
            frequencies.append(weighted)
            document_counts.update(weighted.keys())
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for doc, weighted in enumerate(frequencies):
            for term, tf in weighted.items():
                df = document_counts[term]
                idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
                docs, weights = postings.setdefault(term, ([], []))
                docs.append(doc)
                weights.append(idf * tf * (_K1 + 1.0) / (tf + _K1))
        sparse: dict[str, tuple[array[int], array[float]]] = {}
        dense: dict[str, array[float]] = {}
        threshold = count * _DENSE_SHARE if count >= _DENSE_MIN else float("inf")
        for term, (docs, weights) in postings.items():
            if len(docs) > threshold:
                row_weights = array("d", bytes(8 * count))
                for doc, weight in zip(docs, weights, strict=True):
                    row_weights[doc] = weight
                dense[term] = row_weights
            else:
                sparse[term] = (array("I", docs), array("d", weights))
        exact: dict[str, list[int]] = {}
        # Exact keys in order of precedence: the name, the operation id, METHOD /path, the path alone.
        for getter in (
            lambda e: e.name,
            lambda e: e.operation_id,
            lambda e: f"{e.method} {e.path}" if e.method and e.path else "",
            lambda e: e.path,
        ):
            for doc, entry in enumerate(ordered):
                key = _exact_key(getter(entry))
                if key and doc not in exact.get(key, ()):
                    exact.setdefault(key, []).append(doc)
        names = tuple(entry.name for entry in ordered)
        return cls(names, sparse, dense, {key: tuple(docs) for key, docs in exact.items()}, plain)

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
        scores = self._scores(text)
        if scores is not None:
            yield from _ranked(scores, limit)

    def _scores(self, text: str) -> list[float] | None:
        """Each tool's score for the terms of ``text``, or None when no term is indexed."""
        terms = query_terms(text, plain=self._plain)
        scores: list[float] | None = None
        for term in terms:
            dense = self._dense.get(term)
            if dense is not None:
                scores = list(map(add, scores, dense)) if scores is not None else list(dense)
                continue
            posting = self._sparse.get(term)
            if posting is None:
                continue
            if scores is None:
                scores = [0.0] * len(self._names)
            for doc, weight in zip(*posting, strict=True):
                scores[doc] += weight
        return scores


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
