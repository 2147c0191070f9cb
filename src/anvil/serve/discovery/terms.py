"""Words of tools and tasks as the search index reads them: identifier parts, folded, stop words out,
lightly stemmed, a few spellings as one; a task's values left out; generic related words.

Descriptions and tasks are untrusted text: each is read up to a bound, each identifier run in pieces of 80
characters, each term up to :data:`MAX_TERM_CHARS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from itertools import chain, islice
from typing import Final

__all__ = [
    "MAX_FIELD_TERMS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MAX_TERM_CHARS",
    "RELATED_TERMS",
    "RELATED_WEIGHT",
    "RUN",
    "cue_terms",
    "field_terms",
    "plain_terms",
    "query_terms",
    "run_terms",
    "stem",
    "task_words",
]

#: The longest query read (the search tool accepts 500 characters; more is cut, not refused, here).
MAX_QUERY_CHARS: Final = 1000
#: The most distinct terms of a query that are scored (the first ones).
MAX_QUERY_TERMS: Final = 64
#: A term longer than this is cut (a hostile description may hold one word of a megabyte).
MAX_TERM_CHARS: Final = 40
#: The most terms read from one field of one tool.
MAX_FIELD_TERMS: Final = 400

#: Words read as one term on both sides (abbreviations, spellings and generic software synonyms).
_SAME_WORDS: Final[dict[str, str]] = {
    "org": "organization",
    "organisation": "organization",
    "repo": "repository",
    "env": "environment",
    "config": "configuration",
    "info": "information",
    "msg": "message",
    "pic": "image",
    "photo": "image",
    "picture": "image",
    "img": "image",
    "stats": "statistic",
    "ticket": "issue",
    "todo": "task",
    "people": "user",
    "person": "user",
    "mail": "email",
    "perm": "permission",
    "desc": "description",
    "whoami": "myself",
}
#: Groups of words a task may use for one another (generic work-software vocabulary, not any API's words).
#: A query word of a group also searches the group's other words, at :data:`RELATED_WEIGHT`.
_RELATED: Final = (
    "close resolve complete finish done",
    "remove delete erase destroy discard purge kick",
    "add create new insert",
    "update edit change modify alter amend rename",
    "show view display see fetch retrieve read",
    "find search lookup locate query filter",
    "send post notify tell",
    "assign reassign hand owner",
    "mute snooze silence quiet",
    "stop cancel abort halt",
    "disable deactivate suspend offline",
    "enable activate resume online",
    "copy duplicate clone",
    "move transfer relocate",
    "upload attach",
    "download export",
    "remind reminder",
    "watch follow subscribe watcher follower subscriber",
    "unwatch unfollow unsubscribe",
    "approve accept grant",
    "reject deny decline",
    "restore rollback revert undo",
    "lock freeze",
    "react reaction emoji",
    "count total number",
    "spend cost billing usage",
    "log record track",
    "history timeline changelog activity log",
    "member people user person employee staff colleague coworker teammate",
    "team group",
    "channel conversation",
    "bug issue defect problem",
    "task todo",
    "comment note reply",
    "message post chat",
    "result output response",
    "document file attachment",
    "version release",
    "deploy ship publish release",
    "secret credential token key",
    "webhook hook callback",
    "email mail",
    "phone sms mobile",
    "permission access role",
    "setting configuration preference option",
    "payment charge pay",
    "customer client",
    "invoice bill",
    "calendar schedule",
    "presence online status",
    "star favourite favorite",
    "vote upvote",
    "link relation relate",
    "monitor check watch",
    "error exception crash failure",
    "incident outage",
    "label tag",
    "integration app plugin extension addon",
    "domain hostname dns",
    "notification alert",
)
#: What a few turns of phrase ask for, beyond their words (generic, as :data:`_RELATED`): two words in a row,
#: or one word.
_CUES: Final = {
    ("how", "many"): "count total statistic summary",
    ("how", "much"): "count total statistic summary usage cost",
    ("how", "often"): "count frequency statistic",
    # the caller's own identity
    ("am", "i"): "myself me current self identity whoami authenticated",
    ("logged", "in"): "myself me current self identity whoami authenticated",
    ("signed", "in"): "myself me current self identity whoami authenticated",
    ("my", "account"): "myself me current self identity profile",
    # being told when something happens
    ("whenever",): "hook webhook notification subscription event",
    ("every", "time"): "hook webhook notification subscription event",
}
#: "who changed it?": a question of who did something asks for a record's history.
_WHO_DID: Final = "history changelog audit activity log"
#: A related word counts this much of the word the task used.
RELATED_WEIGHT: Final = 0.4

_STOP_WORDS: Final = frozenset(
    "a about above after again also am an and any are as at be been before being below between both but "
    "by can could did do does doing down during each few for from further had has have having he her here "
    "hers him his how i if in into is it its itself just me more most my no nor not of off on once "
    "only or other our ours out over own please same she should so some such than that the their theirs "
    "them then there these they this those through to too under until up very was we were what when where "
    "which while who whom why will with would you your yours yourself".split()
    # conversational filler and contraction leftovers ("we're", "don't")
    + "let know want need like just now right currently already still anything everything something someone "
    "anyone thing things way going gonna thanks hey maybe really actually ok okay us re ve ll im don doesn "
    "didn isn aren wasn won couldn shouldn".split()
    # when a task is to be done is one of its values, not what it is
    + "today yesterday tomorrow tonight morning afternoon evening night week month year hour minute ago".split()
)
#: Letter-and-digit runs (underscores split them too), a very long one in pieces.
RUN: Final = re.compile(r"[^\W_]{1,80}")
#: The parts of an ASCII run: ``HTTPServer2`` -> ``HTTP``, ``Server``, ``2``.
_PARTS: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PLAIN_WORD: Final = re.compile(r"\w+")
#: A word with a trailing version number, read for its letters (``oauth2``, ``base64``).
_VERSIONED: Final = re.compile(r"^[A-Za-z]{2,}[0-9]+$")
#: A quoted value in a task: quotes not inside a word ("don't" holds none).
_QUOTED: Final = re.compile(r"(?<!\w)(['\"`‘“])[^'\"`‘’“”]{1,120}['\"`’”](?!\w)")
#: Words after which a task gives what is to be said, up to the sentence's end ("a note saying we rolled back"):
#: the content of a message is a value.
_SAYING: Final = frozenset("saying says stating reading".split())
#: Words that negate the word after them.
_NEGATIONS: Final = frozenset("without not never no nor don't dont doesn't didn't won't shouldn't".split())
#: A host name or a file name in a task (``docs.acme.dev``, ``report.pdf``): a value, not what the task is.
_DOTTED_VALUE: Final = re.compile(
    r"^[\w-]+(\.[\w-]+)*\.(com|org|net|io|dev|app|co|ai|json|csv|pdf|png|jpe?g|gif|svg|txt"
    r"|ya?ml|xml|html?|md|zip|gz|mp3|mp4|wav|docx?|xlsx?)$",
    re.IGNORECASE,
)
#: Irregular past forms a task uses and the verb an API names ("I sent", "we paid", "the build broke").
_IRREGULAR: Final = {
    "sent": "send", "paid": "pay", "spent": "spend", "built": "build", "wrote": "write", "written": "write",
    "made": "make", "broke": "break", "broken": "break", "froze": "freeze", "frozen": "freeze", "hidden": "hide",
    "chosen": "choose", "sold": "sell", "bought": "buy", "began": "begin", "begun": "begin", "gave": "give",
    "given": "give", "took": "take", "taken": "take", "gotten": "get", "said": "say", "told": "tell",
    "shown": "show", "seen": "see", "thrown": "throw", "drew": "draw", "drawn": "draw", "kept": "keep",
    "lost": "lose", "sang": "sing", "spoke": "speak", "spoken": "speak", "stole": "steal", "stolen": "steal",
    "woke": "wake", "forgot": "forget", "forgotten": "forget", "understood": "understand",
}  # fmt: skip
_BRITISH_ISE: Final = re.compile(r"(?<=[a-z]{3})is(e|es|ed|ing|ation|ations)$")
_BRITISH_TRE: Final = re.compile(r"(?<=[a-z]{3})tre(s|d)?$")
_BRITISH_OUR: Final = re.compile(r"(?<=[a-z]{2})our(?=[a-z]*$)")
#: Doubled final letters a suffix leaves that are undoubled (``getting`` -> ``get``; ``adding`` stays ``add``).
_UNDOUBLE: Final = frozenset("bgmnprt")


@lru_cache(maxsize=1 << 13)
def stem(word: str) -> str:
    """A light suffix stemmer: irregular past forms, British spellings, plurals, ``-ied``/``-ed``/``-ing``,
    ``-ation``, then a final ``e``.

    Not a linguist's stem, only a consistent one: the forms of one word an API and its users write
    ("entries"/"entry", "created"/"creates"/"creation"/"create") meet on one term.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    word = _IRREGULAR.get(word, word)
    if len(word) > 5:  # British spellings meet American ones: "organise", "colour", "centre"
        word = _BRITISH_OUR.sub("or", _BRITISH_TRE.sub(r"ter\1", _BRITISH_ISE.sub(r"iz\1", word)))
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
    if len(word) > 5 and word.endswith("ell"):  # "cancelled", "labelled": British doubling
        return word[:-1]
    return word


#: :data:`_SAME_WORDS`, stem to stem.
_SAME: Final = {stem(word): stem(same) for word, same in _SAME_WORDS.items()}


@lru_cache(maxsize=1 << 13)
def run_terms(run: str) -> tuple[str, ...]:
    """The terms of one letter-and-digit run: its identifier parts, folded, stop words and single
    characters dropped, stemmed, each cut to :data:`MAX_TERM_CHARS`."""
    parts = _PARTS.findall(run) if run.isascii() else [run]
    out = []
    for part in parts:
        word = part.casefold()[:MAX_TERM_CHARS]
        if len(word) < 2 or word in _STOP_WORDS:
            continue
        term = stem(word)
        out.append(_SAME.get(term, term))
    return tuple(out)


def field_terms(text: str, chars: int) -> list[str]:
    """The terms of ``text`` (read up to ``chars`` characters), at most :data:`MAX_FIELD_TERMS`."""
    return list(islice(chain.from_iterable(map(run_terms, RUN.findall(text[:chars]))), MAX_FIELD_TERMS))


def plain_terms(text: str, chars: int) -> list[str]:
    return [word[:MAX_TERM_CHARS] for word in _PLAIN_WORD.findall(text[:chars].casefold())]


def query_terms(query: str, *, plain: bool = False) -> tuple[str, ...]:
    """The distinct terms of ``query`` a search scores, in order of first use (at most :data:`MAX_QUERY_TERMS`).

    Unless ``plain``, the values a task names are left out first: quoted text (``'Send invoices'``),
    ``#channel`` and ``@handle`` mentions, addresses, host and file names (``docs.acme.dev``), and words
    holding a digit (``PROJ-123``, ``$250``, ``1.8.2``) except a word's trailing version (``oauth2`` is read
    as ``oauth``); and a word a negation governs (``without deleting``).
    """
    if plain:
        return tuple(dict.fromkeys(plain_terms(query, MAX_QUERY_CHARS)))[:MAX_QUERY_TERMS]
    return tuple(dict.fromkeys(field_terms(" ".join(task_words(query)), MAX_QUERY_CHARS)))[:MAX_QUERY_TERMS]


def task_words(query: str) -> list[str]:
    """The words of a task without the values it names (see :func:`query_terms`), nor a word a negation
    governs ("without deleting it", "don't close"), nor what a message is to say ("a note saying it is fixed")."""
    text = _QUOTED.sub(" ", query[:MAX_QUERY_CHARS])
    kept = []
    negated = quoting = False
    for word in text.split():
        if quoting:
            quoting = word[-1:] not in ".;!?"
            continue
        if negated:
            negated = False
            continue
        quoting = word.casefold().strip(".,;:!?()") in _SAYING
        negated = word.casefold().replace("’", "'").strip(".,;:!?()") in _NEGATIONS
        if word[:1] in "#@" or ("@" in word or "://" in word):
            continue
        bare = word.strip(".,;:!?()[]{}'\"")
        if any(ch.isdigit() for ch in word) and not _VERSIONED.match(bare):
            continue
        if _DOTTED_VALUE.match(bare):
            continue
        kept.append(word)
    return kept


def cue_terms(words: list[str]) -> Iterator[str]:
    """The terms the turns of phrase in ``words`` (a task's words, values left out) ask for (see :data:`_CUES`):
    "how many" counts, "am I" / "logged in" the caller's identity, "whenever" a hook, "who <did>" history."""
    folded = [word.casefold() for word in words]
    for at, word in enumerate(folded):
        for key in ((word,), (word, folded[at + 1] if at + 1 < len(folded) else "")):
            if key in _CUE_TERMS:
                yield from _CUE_TERMS[key]
    if len(folded) > 1 and folded[0] == "who" and len(folded[1]) > 4 and folded[1].endswith("ed"):
        yield from _WHO_TERMS


def _related_terms() -> dict[str, tuple[str, ...]]:
    related: dict[str, list[str]] = {}
    for group in _RELATED:
        terms = list(dict.fromkeys(term for word in group.split() for term in run_terms(word)))
        for term in terms:
            bucket = related.setdefault(term, [])
            bucket.extend(other for other in terms if other != term and other not in bucket)
    return {term: tuple(others) for term, others in related.items()}


RELATED_TERMS: Final = _related_terms()
_CUE_TERMS: Final = {key: tuple(run_terms(" ".join(words.split()))) for key, words in _CUES.items()}
_WHO_TERMS: Final = tuple(term for word in _WHO_DID.split() for term in run_terms(word))
