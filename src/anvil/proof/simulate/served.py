"""The answer as the agent is served it: what simulate's ``disclosure/response-page`` cell measures.

``anvil serve`` never hands a model an answer over its response budget: the gateway cuts it by its
structure and keeps the whole answer for the caller (:mod:`anvil.serve.responses`). So the cell calls
the operation through a :class:`~anvil.serve.gateway.Gateway` with the budget on and a
:class:`PageKeeper`, the path ``anvil serve`` takes, and measures what comes back
(:func:`served_page`): every text block of the result (the answer or its cut view, the
``[truncated: …]`` marker, a page-cap notice) in o200k tokens. The whole answer the upstream sent is
measured too, and whether it was cut, so a figure hides nothing.
"""

from __future__ import annotations

import hashlib

from anvil._dataclass import dataclass
from anvil.proof.disclosure import tokens_of
from anvil.serve.answer_store import MAX_ANSWER_BYTES, KeptAnswer, answer_uri
from anvil.serve.mcp.results import CallResult
from anvil.serve.responses import TRUNCATED_META

__all__ = ["PageKeeper", "ServedPage", "served_page"]


class PageKeeper:
    """The answer store of the cell's gateway: it holds the last answer kept, named by its digest.

    A store that names answers at random would change the marker's link, and so the served tokens,
    from run to run; the digest keeps one seed's record the same. Like ``anvil serve``'s stores, it
    links no answer over :data:`~anvil.serve.answer_store.MAX_ANSWER_BYTES` (it still holds it, to
    measure).
    """

    def __init__(self) -> None:
        self.last: bytes | None = None

    @staticmethod
    def _uri(body: bytes) -> str:
        return answer_uri(hashlib.sha256(body).hexdigest()[:32])

    async def keep(self, owner: str, body: bytes, media_type: str = "application/json") -> str | None:
        """Hold ``body``; its URI, or None when it is larger than an answer store links."""
        self.last = body
        return self._uri(body) if len(body) <= MAX_ANSWER_BYTES else None

    async def read(self, uri: str, owner: str) -> KeptAnswer | None:
        """The answer held, when ``uri`` names it."""
        if self.last is None or uri != self._uri(self.last):
            return None
        return KeptAnswer(self.last, "application/json")


@dataclass(frozen=True, slots=True)
class ServedPage:
    """One answer as served.

    Attributes:
        tokens: The o200k tokens of every text block the agent receives.
        raw_tokens: The o200k tokens of the whole answer (as compact JSON) before any cut.
        cut: True when the gateway cut the answer to the budget.
    """

    tokens: int
    raw_tokens: int
    cut: bool


def served_page(result: CallResult, keeper: PageKeeper) -> ServedPage:
    """What the agent received in ``result`` (a success the cell's gateway bounded, keeping into ``keeper``)."""
    content = result.to_wire().get("content")
    blocks = content if isinstance(content, list) else []
    texts = [
        str(block["text"])
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    tokens = sum(tokens_of(text) for text in texts)
    cut = TRUNCATED_META in (result.meta or {})
    if cut and keeper.last is not None:
        raw = tokens_of(keeper.last.decode("utf-8", "replace"))
    else:
        raw = tokens_of(texts[0]) if texts else 0  # served whole: the first block is the whole answer
    return ServedPage(tokens=tokens, raw_tokens=raw, cut=cut)
