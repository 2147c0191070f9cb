"""What a task searches beyond its own words, and how much each term counts: query expansion.

A :class:`Vocabulary` is the set of terms one index holds; :meth:`Vocabulary.weighted_terms` turns a task into
the indexed terms it scores, each with its weight:

* the task's own terms fully; but a capitalised code the index does not hold ("the PAY project") is a value
  and left out, a verb pointing at what the task is about ("the message I just posted") counts
  :data:`DESCRIBED_WEIGHT`, and generic operation verbs ("get", "create"...) :data:`GENERIC_VERB_WEIGHT`
  (the second stage weighs the kind of operation) unless a determiner makes one a noun ("an update");
* two adjacent words joined ("on call": ``oncall``) and the initials of three or four ("out of office":
  ``ooo``, where a name or path holds them) fully;
* a word with a repeating prefix read without it where the index holds only that ("rebuild": build);
* what a turn of phrase asks for (:func:`~anvil.serve.discovery.terms.cue_terms`,
  :func:`~anvil.serve.discovery.thesaurus.phrase_terms`), a person when the task names someone, a channel when
  it mentions one (``#general``);
* the words related to one of its own (:data:`~anvil.serve.discovery.terms.RELATED_TERMS` and the thesaurus),
  more when the task's own word is one the index does not hold (the related word is then the only way the
  task's word counts), a word of many relatives sharing its weight among them;
* the indexed forms of one of its words by a suffix ("attach": ``attachment``).

An expansion never replaces what set a term first: the task's own words come first.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from itertools import chain, islice, pairwise
from typing import Final

from anvil.serve.discovery.terms import (
    MAX_QUERY_TERMS,
    MAX_TERM_CHARS,
    RELATED_TERMS,
    RELATED_WEIGHT,
    RUN,
    cue_terms,
    query_terms,
    run_terms,
    stem,
    task_words,
)
from anvil.serve.discovery.thesaurus import GROUP_WEIGHT, PHRASE_WEIGHT, phrase_terms, related_terms

__all__ = ["DERIVED_WEIGHT", "GENERIC_VERBS", "GENERIC_VERB_WEIGHT", "UNHELD_WEIGHT", "Vocabulary"]

#: A word formed from a task's word by a suffix counts this much (see :meth:`Vocabulary.derived`).
DERIVED_WEIGHT: Final = 0.5
_DERIVED_MIN: Final = 5
_DERIVED_SUFFIX: Final = 5
_DERIVED_SCAN: Final = 64
#: Two task words also read as one (``on call`` -> ``oncall``, ``roll back`` -> ``rollback``).
_JOINED_WEIGHT: Final = 1.0
#: A related word of a task's word the index does not hold counts this much.
UNHELD_WEIGHT: Final = 0.7
#: A word's related words share its weight past this many (a word of many relatives counts no more in all).
_SHARED: Final = 6.0
#: Prefixes a task's word may carry that the API's word does not ("rebuild": build, "unfollow" is kept).
_PREFIXES: Final = ("re",)
_PREFIX_WEIGHT: Final = 0.7

#: Verbs that say what kind of change or read a task is and nothing of what it is about: the second stage
#: weighs the kind (a tool's shape), so their words count this much.
GENERIC_VERBS: Final = frozenset(
    term
    for word in "create add new make get show list find search fetch retrieve view display delete remove update "
    "edit change modify set give mark".split()
    for term in run_terms(word)
)
GENERIC_VERB_WEIGHT: Final = 0.3

#: A verb that points at what a task is about ("the message I just posted") counts this much.
DESCRIBED_WEIGHT: Final = 0.5
_SUBJECTS: Final = frozenset("i we you they he she".split())
_ADVERBS: Final = frozenset("just already recently accidentally previously earlier originally mistakenly".split())
#: Past forms, regular and a few common irregular ones.
_PAST: Final = ("ed", "made", "took", "sent", "wrote", "set", "put", "got", "began", "ran", "built", "left", "did")

#: What a task naming someone also searches: a person is a user or a member of something.
_PEOPLE: Final = ("user", "member")
#: What a task mentioning a channel (``#general``) also searches.
_CHANNELS: Final = ("channel", "conversat")
#: Words after which a capitalised word names a thing, not a person ("the Website board").
_DETERMINERS: Final = frozenset("the a an our my your their its this that these those".split())


def _acronyms(words: list[str]) -> Iterator[str]:
    """The initials of each run of 3 or 4 words ("out of office" -> ``ooo``): an API may name a thing by the
    acronym a task spells out (searched only where a tool's name or path holds it)."""
    for size in (3, 4):
        for at in range(len(words) - size + 1):
            yield "".join(word[0] for word in words[at : at + size]).casefold()


class Vocabulary:
    """The terms one index holds (sorted, for prefix scans) and the terms of its names and paths."""

    __slots__ = ("_held", "_identifiers", "_sorted")

    def __init__(self, terms: Iterable[str], identifiers: frozenset[str]) -> None:
        self._held = frozenset(terms)
        self._sorted = sorted(self._held)
        self._identifiers = identifiers

    def __contains__(self, term: object) -> bool:
        return term in self._held

    def weighted_terms(self, text: str) -> dict[str, float]:
        """The terms ``text`` scores and how much each counts (see the module docstring), at most
        ``2 * MAX_QUERY_TERMS``."""
        codes = self._codes(text)
        own = tuple(term for term in query_terms(text) if term not in codes)
        weights = dict.fromkeys(own, 1.0)
        kept = task_words(text)
        for term in self._described(kept):
            weights[term] = min(weights.get(term, 1.0), DESCRIBED_WEIGHT)
        words = [word for word in RUN.findall(" ".join(kept)) if word.isalpha()]
        after = (word for before, word in pairwise(words) if before.casefold() in _DETERMINERS)
        nouns = {term for word in after for term in run_terms(word)}
        for term in own:
            if term in GENERIC_VERBS and term not in nouns:
                weights[term] = GENERIC_VERB_WEIGHT
        folded = [word.casefold() for word in words]

        def add(terms: Iterable[str], weight: float) -> None:
            for other in terms:
                if other not in weights:
                    weights[other] = weight

        joined = (stem((first + second)[:MAX_TERM_CHARS]) for first, second in pairwise(folded))
        add((term for term in joined if term in self._held), _JOINED_WEIGHT)
        add((initials for initials in _acronyms(words) if initials in self._identifiers), _JOINED_WEIGHT)
        add(self._unprefixed(own), _PREFIX_WEIGHT)
        add(cue_terms(words), RELATED_WEIGHT)
        if self._names_someone(kept):
            add(_PEOPLE, RELATED_WEIGHT)
        if any(word.startswith("#") and len(word) > 1 for word in text.split()):
            add(_CHANNELS, RELATED_WEIGHT)
        add(phrase_terms(folded), PHRASE_WEIGHT)
        for term in own:
            weight = GROUP_WEIGHT if term in self._held else UNHELD_WEIGHT
            others = chain(RELATED_TERMS.get(term, ()), related_terms(term))
            related = [other for other in others if other in self._held]
            add(related, weight * min(1.0, _SHARED / len(related)) if related else weight)
            add(self.derived(term), DERIVED_WEIGHT)
        return dict(list(weights.items())[: 2 * MAX_QUERY_TERMS])

    @staticmethod
    def _described(words: list[str]) -> Iterator[str]:
        """The terms of a verb a clause uses to point at the thing a task is about, not to say the task ("the
        message I just posted", "the site we made"): a verb after a subject pronoun and an optional adverb."""
        folded = [word.casefold().strip(".,;:!?()'\"") for word in words]
        for at, word in enumerate(folded):
            if word not in _SUBJECTS:
                continue
            after = at + 1
            while after < len(folded) and folded[after] in _ADVERBS:
                after += 1
            if after < len(folded) and after - at <= 2 and folded[after].endswith(_PAST):
                yield from run_terms(folded[after])

    def _codes(self, text: str) -> frozenset[str]:
        """The terms of capitalised codes a task names that the index does not hold ("the PAY project", "in
        ENG"): a key, not a word of the task (an acronym the API uses, "SMS", "DNS", is held and kept)."""
        found: set[str] = set()
        for word in text.split():
            bare = word.strip(".,;:!?()[]{}'\"")
            if 2 <= len(bare) <= 8 and bare.isalpha() and bare.isupper():
                found.update(term for term in run_terms(bare) if term not in self._held)
        return frozenset(found)

    def _unprefixed(self, terms: Iterable[str]) -> Iterator[str]:
        """A term read without a repeating prefix, where the index holds the rest but not the term."""
        for term in terms:
            for prefix in _PREFIXES:
                rest = term.removeprefix(prefix)
                if rest != term and len(rest) > 3 and rest in self._held and term not in self._held:
                    yield rest

    def _names_someone(self, words: list[str]) -> bool:
        """Whether a task names someone: a capitalised word ("Carol", "Bob's") not opening a sentence nor
        after a determiner ("the Website board"), that the index does not hold as a term."""
        for before, word in pairwise(words):
            bare = word.removesuffix("'s").removesuffix("’s").strip(".,;:!?()\"'")
            if before[-1:] not in ".!?:" and before.casefold() not in _DETERMINERS and self._is_name(bare):
                return True
        return False

    def _is_name(self, word: str) -> bool:
        """Whether ``word`` reads as someone's name: capitalised, not an acronym, not a term the index holds."""
        return (
            len(word) > 2
            and word.isalpha()
            and word[0].isupper()
            and word[1:].islower()
            and not any(term in self._held for term in run_terms(word))
        )

    def derived(self, term: str) -> Iterator[str]:
        """Indexed words formed from ``term`` by a suffix, or ``term`` from them ("attach" and "attachment",
        "follower" and "follow"): at most :data:`_DERIVED_SUFFIX` letters apart, neither under
        :data:`_DERIVED_MIN` letters."""
        if len(term) < _DERIVED_MIN or not term.isalpha():
            return
        vocabulary = self._sorted
        at = bisect.bisect_right(vocabulary, term)
        for other in islice(vocabulary, at, at + _DERIVED_SCAN):
            if not other.startswith(term):
                break
            if len(other) - len(term) <= _DERIVED_SUFFIX:
                yield other
        for size in range(max(_DERIVED_MIN, len(term) - _DERIVED_SUFFIX), len(term)):
            prefix = term[:size]
            if prefix in self._held:
                yield prefix
