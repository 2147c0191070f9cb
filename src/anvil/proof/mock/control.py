"""The mock's control routes (never logged): what is served, the request log, faults, reset, and the state.

* ``GET /__anvil``: what is served;
* ``GET|DELETE /__anvil/requests``: the request log (``?since=SEQ``);
* ``GET|POST|DELETE /__anvil/fault``: faults (``status``, ``delay_ms``, ``reset``, ``after_commit``,
  ``times``, and ``method``/``path``/``operation`` to match);
* ``POST /__anvil/reset``: forget everything;
* ``GET /__anvil/items``: the state itself (``{kinds: {kind: count}}``, or with ``?kind=K``
  ``{kind, items: [{key, scope, data}]}``);
* ``POST /__anvil/items`` ``{kind, scope?}``: store one item of ``kind`` made from its schema with a
  fresh id, and answer it (201 ``{kind, key, scope, data}``; 400 ``invalid_seed`` for a kind the mock
  does not serve). Selftest plants the item an approved read addresses when no approved create makes
  it, so the read proves the gateway against an item that exists; nothing else is ever invented for a
  read of a kind the API creates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as StarletteRoute

from anvil._types import JSONObject, JSONValue
from anvil.proof.mock.kinds import KindCatalog
from anvil.proof.mock.state import MAX_FAULTS, Item, MockState, parse_fault
from anvil.proof.mock.wire import Unparsed, parse_body, read_body

__all__ = ["Controlled", "control_routes"]


class Controlled(Protocol):
    """What the control routes drive (:class:`~anvil.proof.mock.app.MockApi`)."""

    state: MockState
    kinds: KindCatalog

    def describe(self) -> JSONObject:
        """What ``GET /__anvil`` answers."""
        ...

    def reset(self) -> None:
        """Forget everything."""
        ...

    def plant(self, kind: str, scope: str) -> tuple[int, JSONValue]:
        """Store one made item of ``kind`` under ``scope``: ``(status, answer)``."""
        ...


def control_routes(api: Controlled) -> list[StarletteRoute]:
    """The ``/__anvil*`` routes over ``api`` (module docstring)."""
    state = api.state

    async def describe(request: Request) -> Response:
        return JSONResponse(api.describe())

    async def requests_log(request: Request) -> Response:
        if request.method == "DELETE":
            state.log.clear()
            return JSONResponse({"count": state.seen, "requests": []})
        since = request.query_params.get("since", "0")
        after = int(since) if since.isdigit() else 0
        return JSONResponse({"count": state.seen, "requests": [e for e in state.log if e["seq"] > after]})

    async def faults(request: Request) -> Response:
        if request.method == "DELETE":
            state.faults.clear()
        elif request.method == "POST":
            raw = await read_body(request)
            parsed = parse_body(raw or b"") if raw is not None else Unparsed()
            fault = parse_fault(None if isinstance(parsed, Unparsed) else parsed)
            if isinstance(fault, str):
                return JSONResponse({"message": fault, "code": "invalid_fault"}, status_code=400)
            if len(state.faults) >= MAX_FAULTS:
                return JSONResponse({"message": "Too many pending faults.", "code": "invalid_fault"}, status_code=400)
            state.faults.append(fault)
            return JSONResponse({"fault": fault.to_json()}, status_code=201)
        return JSONResponse({"faults": [fault.to_json() for fault in state.faults]})

    async def reset(request: Request) -> Response:
        api.reset()
        return JSONResponse({"reset": True})

    async def items(request: Request) -> Response:
        if request.method == "POST":
            return await _plant(api, request)
        kind = request.query_params.get("kind")
        if kind is None:
            return JSONResponse({"kinds": {name: len(store) for name, store in state.items.items()}})
        store: Mapping[str, Item] = state.items.get(kind, {})
        listed = [{"key": key, "scope": item.scope, "data": item.data} for key, item in store.items()]
        return JSONResponse({"kind": kind, "items": listed})

    return [
        StarletteRoute("/__anvil", describe, methods=["GET"]),
        StarletteRoute("/__anvil/requests", requests_log, methods=["GET", "DELETE"]),
        StarletteRoute("/__anvil/fault", faults, methods=["GET", "POST", "DELETE"]),
        StarletteRoute("/__anvil/reset", reset, methods=["POST"]),
        StarletteRoute("/__anvil/items", items, methods=["GET", "POST"]),
    ]


async def _plant(api: Controlled, request: Request) -> Response:
    raw = await read_body(request)
    parsed = parse_body(raw or b"") if raw is not None else Unparsed()
    kind = parsed.get("kind") if isinstance(parsed, dict) else None
    scope = parsed.get("scope", "") if isinstance(parsed, dict) else ""
    if not isinstance(kind, str) or kind not in api.kinds.served or not isinstance(scope, str) or len(scope) > 2048:
        message = 'Name a kind the mock serves ({"kind": K}, optional "scope": the collection path).'
        return JSONResponse({"message": message, "code": "invalid_seed"}, status_code=400)
    status, body = api.plant(kind, scope.rstrip("/"))
    return JSONResponse(body, status_code=status)
