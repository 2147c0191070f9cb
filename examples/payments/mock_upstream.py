"""A small stateful payments upstream for examples and tests.

It keeps customers, payments and refunds in memory, honours ``Idempotency-Key`` on refunds (the same
key and body replays the first answer; the same key with another body is a 409), and counts every
business request so tests can prove how many calls reached the wire.

Routes (the API of ``openapi.yaml``):
    GET  /customers/{customer_id}          200 customer | 404 customer_not_found
    GET  /payments/{payment_id}            200 payment | 404 payment_not_found
    POST /payments/{payment_id}/refunds    201 refund | 400 | 404 | 409
    POST /payments/{payment_id}/capture    200 payment (capturing twice is harmless)
    POST /oauth/token                      a client-credentials token for any client
Control routes (never counted):
    GET  /__requests   {"count": n, "requests": [{method, path, idempotency_key, authorization, body}]}
    POST /__reset      back to the seed state
    POST /__fault      {"path": "/payments/pay_123/refunds", "status": 503, "times": 1}: fail the next calls

Run it: ``python examples/payments/mock_upstream.py --port 0`` prints ``{"url": "http://127.0.0.1:N"}``.
"""

from __future__ import annotations

import argparse
import copy
import json
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["SEED_CUSTOMERS", "SEED_PAYMENTS", "State", "create_app", "main"]

SEED_CUSTOMERS: dict[str, dict[str, Any]] = {
    "cus_123": {"id": "cus_123", "name": "Ada Lovelace", "email": "ada@example.com"},
}
SEED_PAYMENTS: dict[str, dict[str, Any]] = {
    "pay_123": {
        "id": "pay_123",
        "customer_id": "cus_123",
        "amount": 5000,
        "currency": "EUR",
        "status": "captured",
        "refunded_amount": 0,
    },
    "pay_456": {
        "id": "pay_456",
        "customer_id": "cus_123",
        "amount": 1200,
        "currency": "EUR",
        "status": "authorized",
        "refunded_amount": 0,
    },
}


@dataclass
class State:
    """Everything the mock remembers; ``reset()`` returns to the seed."""

    customers: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(SEED_CUSTOMERS))
    payments: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(SEED_PAYMENTS))
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)
    idempotency: dict[str, tuple[Any, int, dict[str, Any]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)

    def reset(self) -> None:
        """Forget every change, request and fault."""
        fresh = State()
        self.customers, self.payments, self.refunds = fresh.customers, fresh.payments, fresh.refunds
        self.idempotency, self.requests, self.faults = {}, [], []


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers={"x-request-id": f"req_{code}"})


def create_app(state: State | None = None) -> Starlette:
    """The mock as an ASGI app; pass a :class:`State` to inspect it from a test."""
    memory = state or State()

    async def record(request: Request) -> Any:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        memory.requests.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": str(request.url.query),
                "idempotency_key": request.headers.get("idempotency-key"),
                "authorization": request.headers.get("authorization"),
                "body": body,
            }
        )
        return body

    def injected_fault(request: Request) -> Response | None:
        for fault in memory.faults:
            if fault.get("path") in (None, request.url.path) and fault["times"] > 0:
                fault["times"] -= 1
                return _error(int(fault.get("status", 503)), "injected_fault", "Injected fault.")
        return None

    async def lookup(request: Request, table: dict[str, dict[str, Any]], param: str, what: str) -> Any:
        """Record the request, then answer an injected fault, a 404, or the stored row (a dict)."""
        await record(request)
        if (fault := injected_fault(request)) is not None:
            return fault
        row = table.get(request.path_params[param])
        return _error(404, f"{what}_not_found", f"No such {what}.") if row is None else row

    async def get_customer(request: Request) -> Response:
        found = await lookup(request, memory.customers, "customer_id", "customer")
        return JSONResponse(found) if isinstance(found, dict) else found

    async def get_payment(request: Request) -> Response:
        found = await lookup(request, memory.payments, "payment_id", "payment")
        return JSONResponse(found) if isinstance(found, dict) else found

    async def capture_payment(request: Request) -> Response:
        found = await lookup(request, memory.payments, "payment_id", "payment")
        if not isinstance(found, dict):
            return found
        if found["status"] == "authorized":
            found["status"] = "captured"
        return JSONResponse(found)

    async def create_refund(request: Request) -> Response:
        body = await record(request)
        if (fault := injected_fault(request)) is not None:
            return fault
        payment_id = request.path_params["payment_id"]
        key = request.headers.get("idempotency-key")
        if key is not None and key in memory.idempotency:
            seen_body, status, answer = memory.idempotency[key]
            if seen_body != {"payment_id": payment_id, "body": body}:
                return _error(409, "idempotency_conflict", "This Idempotency-Key was used for another request.")
            return JSONResponse(answer, status_code=status, headers={"idempotent-replayed": "true"})
        payment = memory.payments.get(payment_id)
        if payment is None:
            return _error(404, "payment_not_found", "No such payment.")
        if not isinstance(body, dict):
            return _error(400, "invalid_request", "The body must be a JSON object.")
        amount, currency = body.get("amount"), body.get("currency")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1 or not isinstance(currency, str):
            return _error(400, "invalid_request", "amount (a positive integer) and currency are required.")
        if payment["status"] not in ("captured", "refunded"):
            return _error(400, "payment_not_captured", "Only captured payments can be refunded.")
        if payment["refunded_amount"] + amount > payment["amount"]:
            return _error(400, "amount_too_large", "The refund exceeds the refundable amount.")
        refund = {
            "id": f"re_{len(memory.refunds) + 1:04d}",
            "payment_id": payment_id,
            "amount": amount,
            "currency": currency,
            "status": "succeeded",
        }
        if isinstance(body.get("reason"), str):
            refund["reason"] = body["reason"]
        memory.refunds[refund["id"]] = refund
        payment["refunded_amount"] += amount
        if payment["refunded_amount"] == payment["amount"]:
            payment["status"] = "refunded"
        if key is not None:
            memory.idempotency[key] = ({"payment_id": payment_id, "body": body}, 201, refund)
        return JSONResponse(refund, status_code=201)

    async def token(request: Request) -> Response:
        await request.body()
        return JSONResponse({"access_token": "mock-access-token", "token_type": "Bearer", "expires_in": 3600})

    async def requests_seen(request: Request) -> Response:
        return JSONResponse({"count": len(memory.requests), "requests": memory.requests})

    async def reset(request: Request) -> Response:
        memory.reset()
        return JSONResponse({"ok": True})

    async def fault(request: Request) -> Response:
        spec = await request.json()
        memory.faults.append(
            {"path": spec.get("path"), "status": int(spec.get("status", 503)), "times": int(spec.get("times", 1))}
        )
        return JSONResponse({"ok": True})

    routes = [
        Route("/customers/{customer_id}", get_customer, methods=["GET"]),
        Route("/payments/{payment_id}", get_payment, methods=["GET"]),
        Route("/payments/{payment_id}/refunds", create_refund, methods=["POST"]),
        Route("/payments/{payment_id}/capture", capture_payment, methods=["POST"]),
        Route("/oauth/token", token, methods=["POST"]),
        Route("/__requests", requests_seen, methods=["GET"]),
        Route("/__reset", reset, methods=["POST"]),
        Route("/__fault", fault, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.memory = memory
    return app


def main(argv: list[str] | None = None) -> int:
    """Serve the mock on loopback; print ``{"url": ...}`` on stdout once it is bound."""
    parser = argparse.ArgumentParser(description="The payments example's mock upstream.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)

    import uvicorn

    # An explicit IPPROTO_TCP, as anvil.serve.mcp.http.listen does: asyncio turns Nagle off (TCP_NODELAY) only
    # for sockets that say so, and with Nagle on every small answer waits ~40 ms for an ACK.
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)  # connections queue from now on, so the printed URL is usable at once
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(json.dumps({"url": f"http://{shown}:{port}"}), flush=True)
    server = uvicorn.Server(uvicorn.Config(create_app(), log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
