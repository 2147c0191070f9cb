"""What an RPC remove takes away: the stored item its request names.

An RPC-style remove (``POST /pins.remove`` beside ``POST /pins.add``, :mod:`anvil.air.rpc`) names no
item in its path: it sends the identifying values its add took (Slack's ``channel`` and
``timestamp``), which the add's answer may not even hold, or the id the add answered (``reminder``).
So every stored item keeps the fields its create was sent (:attr:`Item.sent`), and a remove takes the
newest item whose fields, or whose create's request, hold every value the remove sent for them.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from anvil._types import JSONObject, JSONValue
from anvil.proof.mock.routes import Route
from anvil.proof.mock.state import Item

__all__ = ["named_item", "request_fields"]


def _text(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def request_fields(route: Route, query: Iterable[tuple[str, str]], body: JSONValue) -> JSONObject:
    """The fields a request carries: its query and its body's fields (the idempotency carrier left out)."""
    fields: JSONObject = dict(query)
    if isinstance(body, dict):
        fields.update(copy.deepcopy(body))
    carrier = route.carrier
    if carrier is not None and carrier.mechanism == "query":
        fields.pop(carrier.key, None)
    elif carrier is not None and carrier.mechanism == "body" and carrier.pointer:
        fields.pop(carrier.pointer[0], None)
    return fields


def named_item(store: OrderedDict[str, Item], fields: Mapping[str, JSONValue], id_name: str) -> str | None:
    """The key of the newest item of ``store`` that ``fields`` name: every field the item holds (or its
    create was sent) has the value sent, and at least one does; a field the item does not hold names
    it when it carries the item's id (field ``id_name``: Slack's ``reminder`` of a reminder)."""
    for key, item in reversed(store.items()):
        compared = 0
        for name, value in fields.items():
            if value is None or value in ([], {}, ""):
                continue
            held = [source[name] for source in (item.sent, item.data) if name in source]
            if not held:
                compared += int(id_name in item.data and _text(item.data[id_name]) == _text(value))
                continue
            if not any(_text(h) == _text(value) for h in held):
                break
            compared += 1
        else:
            if compared:
                return key
    return None
