"""RPC-style paths whose last word is a verb, and the pairs of them that undo each other.

RPC-style APIs name the action in the path's last word instead of the HTTP method: Slack's
``/pins.add`` beside ``/pins.remove``, Plaid's ``/transfer/create`` beside ``/transfer/cancel``,
``/admin.conversations.restrictAccess.addGroup`` beside ``...removeGroup``. A path's *stem* is what
comes before that word (``/pins``), its *verb* the word's leading ``add`` or ``create``, ``remove``,
``delete`` or ``cancel``, and its *rest* what follows the verb (``Group``). A write made by an
``add``/``create`` is undone by the ``remove``/``delete`` of the same stem and rest (the item is gone
again: an inverse), or compensated by its ``cancel`` (the item stays, cancelled).

``anvil init --propose-effects`` pairs operations with this (:func:`undo_paths`), and the generated
mock serves such a remove as taking away what the paired add stored (:func:`rpc_verb`), so that a
proposed inverse can be proven through the mock's state.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from anvil._dataclass import dataclass

__all__ = ["MAKE_VERBS", "UNDO_VERBS", "RpcVerb", "rpc_verb", "undo_paths"]

#: Verbs that make an item.
MAKE_VERBS: Final = ("create", "add")
#: Verbs that undo what a make verb did, and how: an inverse takes the item away, a compensation
#: leaves it behind marked (a cancelled transfer).
UNDO_VERBS: Final[dict[str, Literal["inverse", "compensate"]]] = {
    "delete": "inverse",
    "remove": "inverse",
    "cancel": "compensate",
}
# The verb leads the word and ends it or is followed by a new word (``addGroup``, ``add_group``), so
# ``address`` or ``cancellations`` are not verbs.
_WORD: Final = re.compile(r"^(?P<verb>create|add|delete|remove|cancel)(?P<rest>(?:[A-Z_].*)?)$")


@dataclass(frozen=True, slots=True)
class RpcVerb:
    """A path split at its last word's verb: ``stem + sep + verb + rest`` is the path."""

    stem: str
    sep: str
    verb: str
    rest: str

    def with_verb(self, verb: str) -> str:
        """The same path with another verb (``/pins.add`` -> ``/pins.remove``)."""
        return f"{self.stem}{self.sep}{verb}{self.rest}"


def rpc_verb(path: str) -> RpcVerb | None:
    """The verb of an RPC-style path's last word (after its last ``/``, or its last ``.`` when the
    word is dotted), else None (a parameter, or no verb)."""
    head, _, last = path.rstrip("/").rpartition("/")
    if not last or "{" in last:
        return None
    if "." in last:
        before, _, word = last.rpartition(".")
        stem, sep = f"{head}/{before}", "."
    else:
        word, stem, sep = last, head, "/"
    found = _WORD.match(word)
    if found is None or not stem.strip("/"):
        return None
    return RpcVerb(stem, sep, found["verb"], found["rest"])


def undo_paths(path: str) -> list[tuple[str, Literal["inverse", "compensate"]]]:
    """The paths that would undo a make at ``path`` (``/pins.add`` -> ``/pins.remove``, ``/pins.delete``
    as inverses; ``/transfer/create`` -> ``/transfer/cancel`` as a compensation), best first; empty
    when ``path`` is not an RPC make."""
    found = rpc_verb(path)
    if found is None or found.verb not in MAKE_VERBS:
        return []
    return [(found.with_verb(verb), how) for verb, how in UNDO_VERBS.items()]
