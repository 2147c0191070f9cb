"""What a task asks to do, what each tool does, and how well the two agree: the second ranking stage.

A task's **intent** is read from its verbs (:func:`task_intent`): "add", "file", "open", "set up" create;
"remove", "get rid of", "take ... off", "cancel", "stop" delete; "change", "rename", "close", "assign" update;
"show", "find", "list", a question ("who is on call?") read; "get", "give me" obtain (a read, or something made
for the asker: an embedding, a hook's URL); "check whether", "verify", "screen" check (a tool that computes or
checks, else a read). The first such verb wins (a verb a negation
governs, "without deleting it", is not among a task's words); a question word counts only where it opens the
task.

A tool's **shape** (create, delete, update, get, list, or other: computing or checking) is read from the
tool's own words (:func:`tool_shape`): the verb opening its title ("Remove a user from a team"), else the verb
opening its path's last segment (``/teams/{gid}/removeUser``, ``/accounts/get``, ``/chat.update``; a plural
such as ``/runs`` is a collection, not a verb), else its AIR action (``replace`` updates). The AIR action alone
misleads on RPC-style APIs, where every operation is a ``POST``.

Its **head** (:func:`head_terms`) is what it acts on: the last path segment that is not a parameter, less its
verb (``removeUser`` -> ``user``; ``/accounts/get`` -> ``account``), the word after its title's verb, and its
AIR resource less a verb.

Every word list here is generic English for work software, not any API's own vocabulary.
"""

from __future__ import annotations

import re
from typing import Final

from anvil.serve.discovery.terms import run_terms, stem

__all__ = [
    "CHECK",
    "CREATE",
    "DELETE",
    "GET",
    "LIST",
    "OBTAIN",
    "OTHER",
    "QUESTIONS",
    "READ",
    "UPDATE",
    "agreement",
    "head_terms",
    "task_intent",
    "tool_shape",
]

#: The first identifier part of a path segment (``removeUser`` -> ``remove``, ``add_members`` -> ``add``).
_IDENTIFIER_PART: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")

#: Shapes of a tool, and intents of a task (``READ`` is an intent only: a task that reads, one or many).
CREATE: Final = 0
DELETE: Final = 1
UPDATE: Final = 2
GET: Final = 3
LIST: Final = 4
OTHER: Final = 5
READ: Final = 6
#: "get me ...", "give me ...": a read, or something made for the asker (an embedding, a hook's URL).
OBTAIN: Final = 7
#: "check whether ...", "verify ...": a tool that computes or checks, else a read.
CHECK: Final = 8

#: How well a tool of each shape answers a task of each intent: 1 agrees, below 0 contradicts.
_AGREEMENT: Final[dict[int, tuple[float, ...]]] = {
    #          CREATE DELETE UPDATE  GET   LIST  OTHER
    CREATE: (1.0, -1.0, -0.3, -1.0, -1.0, 0.0),
    DELETE: (-1.0, 1.0, -0.3, -1.0, -1.0, 0.0),
    UPDATE: (-0.3, -0.7, 1.0, -1.0, -1.0, 0.0),
    READ: (-1.0, -1.0, -1.0, 1.0, 1.0, 0.0),
    OBTAIN: (-0.2, -1.0, -1.0, 1.0, 1.0, 0.3),
    CHECK: (0.0, -1.0, -0.5, 0.5, 0.3, 1.0),
}


def _stems(words: str) -> frozenset[str]:
    return frozenset(term for word in words.split() for term in run_terms(word))


#: The verbs tools are named with, by shape (``OTHER``: tools that compute or check, neither reading a
#: record nor changing one).
_TOOL_VERBS: Final = {
    CREATE: _stems(
        "create add new post insert register invite upload submit generate make import send attach start launch "
        "trigger run execute begin clone copy duplicate fork request schedule enroll provision enqueue"
    ),
    DELETE: _stems(
        "delete remove destroy erase purge revoke unlink unassign uninstall unsubscribe kick end stop cancel abort "
        "terminate detach disconnect deregister unregister dismiss discard clear"
    ),
    UPDATE: _stems(
        "update edit set change modify replace patch rename move assign mark close resolve enable disable archive "
        "unarchive restore reorder reset transfer rotate merge activate deactivate acknowledge snooze escalate "
        "pause resume lock unlock approve reject accept decline toggle upgrade downgrade extend renew refresh "
        "regenerate reschedule reassign"
    ),
    GET: _stems("get retrieve fetch read info view show describe lookup download"),
    LIST: _stems("list browse enumerate search find query filter"),
    OTHER: _stems(
        "evaluate validate simulate calculate estimate preview test check verify compute score predict analyze "
        "classify detect compare match moderate"
    ),
}
_TOOL_VERB: Final = {verb: shape for shape, verbs in _TOOL_VERBS.items() for verb in verbs}

#: AIR action -> shape.
_ACTION_SHAPES: Final = {
    "list": LIST,
    "search": LIST,
    "export": LIST,
    "get": GET,
    "poll": GET,
    "create": CREATE,
    "send": CREATE,
    "execute": CREATE,
    "update": UPDATE,
    "replace": UPDATE,
    "approve": UPDATE,
    "delete": DELETE,
    "cancel": DELETE,
}

#: The verbs users ask with, by intent.
_TASK_VERBS: Final = {
    CREATE: _stems(
        "create add new make start write register submit save send invite put schedule book upload attach "
        "generate build raise draft compose publish follow watch subscribe star pin join grant give ask run "
        "trigger fire execute launch transcribe translate summarize convert request order enroll onboard "
        "provision clone copy duplicate fork import enqueue queue"
    ),
    DELETE: _stems(
        "delete remove erase destroy drop purge cancel revoke kick uninstall unlink discard stop clear "
        "unsubscribe unwatch unfollow unpin leave wipe detach disconnect deregister unregister retire "
        "decommission dismiss uninvite unshare unassign ditch scrap trash"
    ),
    UPDATE: _stems(
        "update edit change modify rename mark move assign reassign close resolve acknowledge reopen fix "
        "adjust switch enable disable archive restore rotate transfer hand replace pause resume mute "
        "snooze merge fold combine bump promote demote approve reject offline online reschedule escalate ack "
        "silence extend upgrade downgrade tweak toggle flip lock unlock activate deactivate suspend unsuspend "
        "renew refresh regenerate reset reorder prioritize deprioritize configure"
    ),
    OBTAIN: _stems("get obtain"),
    CHECK: _stems("verify validate evaluate assess"),
    READ: _stems("show grab look see view display fetch retrieve read tell find search download export review inspect"),
}
#: Verbs that are also common nouns ("the file", "a list", "the end"): read as verbs only where a clause
#: opens (the task's first word, or after "to", "and", "then", "please", a subject).
_CLAUSE_VERBS: Final = {
    CREATE: _stems("file log post open email message ping remind notify alert record reply comment note"),
    DELETE: _stems("end"),
    UPDATE: _stems("set point turn tag label"),
    READ: _stems("list count audit monitor track"),
    CHECK: _stems("check test screen"),
}
_TASK_VERB: Final = {verb: intent for intent, verbs in _TASK_VERBS.items() for verb in verbs}
_CLAUSE_VERB: Final = {verb: intent for intent, verbs in _CLAUSE_VERBS.items() for verb in verbs}
_CLAUSE_OPENERS: Final = frozenset("to and then please so we you ll let can could should must".split())
#: Question words: a task opening with one reads.
QUESTIONS: Final = frozenset("what which who whom whose how when where whether is are does do did can".split())
#: "can you ...", "could we ...": a request, not a question.
_ASKING: Final = frozenset("can could would will".split())
_ASKED: Final = frozenset("you we".split())
#: Particles that turn a verb into another: (verb, particle) -> (intent, how far after the verb it may be).
_PHRASES: Final = {
    ("give", "me"): (OBTAIN, 1),
    ("give", "us"): (OBTAIN, 1),
    ("take", "off"): (DELETE, 3),
    ("take", "out"): (DELETE, 3),
    ("take", "away"): (DELETE, 3),
    ("kick", "out"): (DELETE, 3),
    ("get", "rid"): (DELETE, 1),
    ("pull", "off"): (DELETE, 3),
    ("turn", "off"): (UPDATE, 3),
    ("turn", "on"): (UPDATE, 3),
    ("switch", "off"): (UPDATE, 3),
    ("switch", "on"): (UPDATE, 3),
    ("set", "up"): (CREATE, 1),
    ("sign", "up"): (CREATE, 1),
    ("look", "up"): (READ, 3),
    ("pull", "up"): (READ, 3),
    ("kick", "off"): (CREATE, 1),
    ("spin", "up"): (CREATE, 3),
    ("clean", "up"): (DELETE, 3),
    # "open a new incident" creates; "open the task" reads it
    **{("open", determiner): (READ, 1) for determiner in "the this that my our its his her their".split()},
}
_PHRASE_VERBS: Final = frozenset(verb for verb, _ in _PHRASES)
_PHRASE_REACH: Final = 3


def task_intent(words: list[str]) -> tuple[int | None, int]:
    """The intent of a task given its words (case-folded, values already left out), or None; and the position
    of the word it was read from (the verb, or the question word; -1 for none)."""
    if words and words[0] in QUESTIONS and not (words[0] in _ASKING and words[1:2] and words[1] in _ASKED):
        return READ, 0
    for at, word in enumerate(words):
        before = words[at - 1] if at else ""
        if word in _PHRASE_VERBS:
            for reach, particle in enumerate(words[at + 1 : at + 1 + _PHRASE_REACH], 1):
                phrase = _PHRASES.get((word, particle))
                if phrase is not None and reach <= phrase[1]:
                    return phrase[0], at
        term = stem(word)
        intent = _TASK_VERB.get(term)
        if intent is None and (not at or before in _CLAUSE_OPENERS):
            intent = _CLAUSE_VERB.get(term)
        if intent is not None:
            return intent, at
    return None, -1


def _segments(path: str) -> list[str]:
    """The path's segments that are not parameters, the last one's dotted parts as segments of their own."""
    parts = [part for part in path.split("/") if part and not part.startswith("{")]
    if parts and "." in parts[-1]:
        parts[-1:] = [part for part in parts[-1].split(".") if part]
    return parts


def _verb_of(segment: str) -> int | None:
    terms = run_terms(segment)
    return _TOOL_VERB.get(terms[0]) if terms else None


def _path_verb_of(segment: str) -> int | None:
    """The shape a path segment's opening verb says; a plural is a collection, not a verb (``/runs``)."""
    first = next(iter(_IDENTIFIER_PART.findall(segment)), "")
    if len(first) > 3 and first.endswith("s") and not first.endswith("ss"):
        return None
    return _verb_of(segment)


def tool_shape(path: str, title: str, action: str) -> int:
    """The shape of a tool: the verb opening its title, else its path's last segment, else its action's (a
    title is prose, where a leading verb is a verb; a path's last word is often a noun: ``/runs``, ``/filter``)."""
    words = title.split()
    if words:
        shape = _verb_of(words[0])
        if shape is not None:
            return shape
    segments = _segments(path)
    if segments:
        shape = _path_verb_of(segments[-1])
        if shape is not None:
            return shape
    return _ACTION_SHAPES.get(action, OTHER)


#: Words a title may put between its verb and its object ("List all of the on-calls").
_TITLE_FILLER: Final = _stems("all every each new existing specific single multiple current given one many")


def head_terms(path: str, title: str, resource: str) -> frozenset[str]:
    """What a tool acts on: its last non-parameter path segment's terms less a verb (the segment before when
    that leaves none), the first word after its title's opening verb, and its resource's terms but a verb."""
    segments = _segments(path)
    head: list[str] = []
    for segment in reversed(segments[-2:]):
        head = [term for term in run_terms(segment) if term not in _TOOL_VERB]
        if head:
            break
    words = [term for word in title.split()[:8] for term in run_terms(word)]
    if words and words[0] in _TOOL_VERB:
        head += [term for term in words[1:] if term not in _TITLE_FILLER][:1]
    return frozenset(head) | frozenset(term for term in run_terms(resource) if term not in _TOOL_VERB)


def agreement(intent: int | None, shape: int) -> float:
    """How well a tool of ``shape`` answers a task of ``intent`` (0 when the task's intent is unknown)."""
    if intent is None:
        return 0.0
    return _AGREEMENT[intent][shape]
