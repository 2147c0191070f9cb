"""Items found by the idempotency key their create carried.

An API that takes an idempotency key may also answer "the item made with key K": a list filtered by
the key (``GET /payments?idempotency_key=K``), or an item field that holds it. The mock keeps the key a
create carried on its stored item (:attr:`~anvil.proof.mock.state.Item.key`), writes it into a field
of the item named for it, and a list query parameter named for it (that is no field of the item)
selects the items made with that key: none for a key nothing was made with. A reconciler's lookup by
key through such a list then tells found from never made.

A name is *for the key* when, lower-cased without punctuation, it is ``idempotencykey`` or the name
of the key's carrier on a create of the kind (``Idempotency-Key``, ``X-Request-Id``...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from anvil.proof.mock.routes import Route

__all__ = ["key_names", "normalized"]

_PUNCTUATION: Final = re.compile(r"[^a-z0-9]")


def normalized(name: str) -> str:
    """``name`` lower-cased without punctuation (``Idempotency-Key`` and ``idempotency_key`` agree)."""
    return _PUNCTUATION.sub("", name.lower())


def key_names(routes: Iterable[Route]) -> dict[str, frozenset[str]]:
    """Per kind, the normalized names that are for its creates' idempotency key (module docstring)."""
    out: dict[str, set[str]] = {}
    for route in routes:
        if route.role != "create":
            continue
        names = out.setdefault(route.kind, {"idempotencykey"})
        if route.carrier is not None:
            names.add(normalized(route.carrier.key))
    return {kind: frozenset(names) for kind, names in out.items()}
