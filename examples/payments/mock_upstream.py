"""A small stateful payments upstream for examples and tests.

It keeps customers, payments and refunds in memory, honours ``Idempotency-Key`` on refunds (the same
key and body replays the first answer; the same key with another body is a 409), and counts every
business request so tests can prove how many calls reached the wire.

It is also the API's OAuth2 authorization server (RFC 6749 section 4.4, client credentials). With no client
registered (the default) it issues a token to anyone and the business routes take any caller. With a
client registered (``--client-id``/``--client-secret``, or ``OAuth(clients=...)``) the token endpoint
authenticates it (``client_secret_basic`` or ``client_secret_post``) and every business route wants
``Authorization: Bearer <a token it issued>``: an unknown or expired token is a 401 ``invalid_token``,
a token without the route's scope (``payments.read`` for GET, ``payments.write`` for POST) a 403.

Routes (the API of ``openapi.yaml``):
    GET  /customers/{customer_id}          200 customer | 404 customer_not_found
    GET  /payments/{payment_id}            200 payment | 404 payment_not_found
    POST /payments/{payment_id}/refunds    201 refund | 400 | 404 | 409
    POST /payments/{payment_id}/capture    200 payment (capturing twice is harmless)
    POST /oauth/token                      {"access_token", "token_type": "Bearer", "expires_in", "scope"}
Control routes (never counted):
    GET  /__requests   {"count": n, "requests": [{method, path, idempotency_key, authorization, body}]}
    POST /__reset      back to the seed state (registered clients and the token lifetime stay)
    POST /__fault      {"path": "/payments/pay_123/refunds", "status": 503, "times": 1}: fail the next calls;
                       with "delay_ms": N instead of a status, answer them normally N ms late (a timeout)
    GET  /__oauth      {"issued": n, "refused": n, "requests": [{client_auth, client_id, grant_type, scope}]}
    POST /__oauth      {"lifetime": seconds, "mode": "normal" | "hang" | "huge", "revoke": true}: tokens
                       issued from now on live ``lifetime``; ``hang`` answers no token request (until the
                       mode changes, at most a minute), ``huge`` streams a 5 MB answer; ``revoke`` forgets
                       every issued token (the next call with one is a 401)

Run it: ``python examples/payments/mock_upstream.py --port 0`` prints ``{"url": "http://127.0.0.1:N"}``;
add ``--client-id ID --client-secret SECRET [--token-lifetime SECONDS]`` to require its tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import copy
import json
import secrets
import socket
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote_plus

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["HUGE_TOKEN_ANSWER_BYTES", "SEED_CUSTOMERS", "SEED_PAYMENTS", "OAuth", "State", "create_app", "main"]

#: What ``mode: huge`` streams from the token endpoint.
HUGE_TOKEN_ANSWER_BYTES = 5 * 1024 * 1024
#: The longest a ``mode: hang`` token request is held.
_HANG_LIMIT_S = 60.0

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
class OAuth:
    """The authorization server's memory. Issued tokens are kept here (a test checks they leak nowhere)."""

    clients: dict[str, str] = field(default_factory=dict)
    """client id -> secret; empty: anyone gets a token and the business routes check none."""
    lifetime: int = 3600
    """``expires_in`` of the tokens issued from now on (seconds)."""
    mode: str = "normal"
    issued: dict[str, dict[str, Any]] = field(default_factory=dict)
    """token -> {"client_id", "scope", "expires_at"}."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every token request, without its secret."""
    refused: int = 0
    """Business calls refused with 401 (unknown or expired token)."""

    def forget(self) -> None:
        """Forget issued tokens, requests and the mode; keep the clients and the lifetime."""
        self.issued, self.requests, self.refused, self.mode = {}, [], 0, "normal"


@dataclass
class State:
    """Everything the mock remembers; ``reset()`` returns to the seed."""

    customers: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(SEED_CUSTOMERS))
    payments: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(SEED_PAYMENTS))
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)
    idempotency: dict[str, tuple[Any, int, dict[str, Any]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    oauth: OAuth = field(default_factory=OAuth)

    def reset(self) -> None:
        """Forget every change, request, fault and issued token (registered clients stay)."""
        fresh = State()
        self.customers, self.payments, self.refunds = fresh.customers, fresh.payments, fresh.refunds
        self.idempotency, self.requests, self.faults = {}, [], []
        self.oauth.forget()


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers={"x-request-id": f"req_{code}"})


def _client_of(authorization: str | None, form: dict[str, str]) -> tuple[str | None, str | None, str]:
    """The client id, secret and how they came: ``client_secret_basic`` (RFC 6749 section 2.3.1: each part
    form-encoded, then Basic) or ``client_secret_post`` (form fields)."""
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() == "basic":
        try:
            pair = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None, None, "client_secret_basic"
        client_id, _, secret = pair.partition(":")
        return unquote_plus(client_id), unquote_plus(secret), "client_secret_basic"
    return form.get("client_id"), form.get("client_secret"), "client_secret_post"


async def _huge() -> AsyncIterator[bytes]:
    """A JSON answer of :data:`HUGE_TOKEN_ANSWER_BYTES`, streamed (no length announced)."""
    chunk = b" " * 65536
    yield b'{"access_token": "'
    for _ in range(HUGE_TOKEN_ANSWER_BYTES // len(chunk)):
        yield chunk
    yield b'", "token_type": "Bearer"}'


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
                "traceparent": request.headers.get("traceparent"),
                "body": body,
            }
        )
        for fault in memory.faults:  # a slow answer: the request is taken, its answer comes late
            if "delay_ms" in fault and fault.get("path") in (None, request.url.path) and fault["times"] > 0:
                fault["times"] -= 1
                await asyncio.sleep(fault["delay_ms"] / 1000)
        return body

    def injected_fault(request: Request) -> Response | None:
        for fault in memory.faults:
            if "delay_ms" not in fault and fault.get("path") in (None, request.url.path) and fault["times"] > 0:
                fault["times"] -= 1
                return _error(int(fault.get("status", 503)), "injected_fault", "Injected fault.")
        return None

    def refused(request: Request) -> Response | None:
        """With a registered client: a 401 for a missing, unknown or expired token, a 403 for a missing scope."""
        oauth = memory.oauth
        if not oauth.clients:
            return None
        scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
        issued = oauth.issued.get(token) if scheme.lower() == "bearer" else None
        if issued is None or issued["expires_at"] <= time.time():
            oauth.refused += 1
            answer = _error(401, "invalid_token", "The access token is unknown or expired.")
            answer.headers["www-authenticate"] = 'Bearer error="invalid_token"'
            return answer
        needed = "payments.read" if request.method == "GET" else "payments.write"
        if needed not in issued["scope"].split():
            return _error(403, "insufficient_scope", f"The access token lacks the {needed} scope.")
        return None

    async def lookup(request: Request, table: dict[str, dict[str, Any]], param: str, what: str) -> Any:
        """Record the request, then answer a refused token, an injected fault, a 404, or the stored row (a dict)."""
        await record(request)
        if (denied := refused(request)) is not None:
            return denied
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
        if (denied := refused(request)) is not None:
            return denied
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
        oauth = memory.oauth
        form = {name: values[0] for name, values in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
        client_id, secret, method = _client_of(request.headers.get("authorization"), form)
        seen = {"client_auth": method, "client_id": client_id, "grant_type": form.get("grant_type")}
        oauth.requests.append({**seen, "scope": form.get("scope")})
        if oauth.mode == "hang":
            began = time.monotonic()
            while oauth.mode == "hang" and time.monotonic() - began < _HANG_LIMIT_S:
                await asyncio.sleep(0.05)
        if oauth.mode == "huge":
            return StreamingResponse(_huge(), media_type="application/json")
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        if oauth.clients and (client_id is None or oauth.clients.get(client_id) != secret):
            return JSONResponse(
                {"error": "invalid_client"}, status_code=401, headers={"www-authenticate": 'Basic realm="payments"'}
            )
        value = f"mock-at-{len(oauth.issued) + 1}-{secrets.token_hex(8)}"
        scope = form.get("scope", "")
        oauth.issued[value] = {"client_id": client_id, "scope": scope, "expires_at": time.time() + oauth.lifetime}
        answer = {"access_token": value, "token_type": "Bearer", "expires_in": oauth.lifetime, "scope": scope}
        return JSONResponse(answer, headers={"cache-control": "no-store"})

    async def oauth_seen(request: Request) -> Response:
        oauth = memory.oauth
        return JSONResponse({"issued": len(oauth.issued), "refused": oauth.refused, "requests": oauth.requests})

    async def oauth_control(request: Request) -> Response:
        spec = await request.json()
        oauth = memory.oauth
        if "lifetime" in spec:
            oauth.lifetime = int(spec["lifetime"])
        if spec.get("mode") in ("normal", "hang", "huge"):
            oauth.mode = spec["mode"]
        if spec.get("revoke"):
            oauth.issued = {}
        return JSONResponse({"ok": True})

    async def requests_seen(request: Request) -> Response:
        return JSONResponse({"count": len(memory.requests), "requests": memory.requests})

    async def reset(request: Request) -> Response:
        memory.reset()
        return JSONResponse({"ok": True})

    async def fault(request: Request) -> Response:
        spec = await request.json()
        found = {"path": spec.get("path"), "status": int(spec.get("status", 503)), "times": int(spec.get("times", 1))}
        if "delay_ms" in spec:
            found["delay_ms"] = int(spec["delay_ms"])
        memory.faults.append(found)
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
        Route("/__oauth", oauth_seen, methods=["GET"]),
        Route("/__oauth", oauth_control, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.memory = memory
    return app


def main(argv: list[str] | None = None) -> int:
    """Serve the mock on loopback; print ``{"url": ...}`` on stdout once it is bound."""
    parser = argparse.ArgumentParser(description="The payments example's mock upstream.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--client-id", help="register an OAuth2 client: every business route then wants its token")
    parser.add_argument("--client-secret", default="", help="the registered client's secret")
    parser.add_argument("--token-lifetime", type=int, default=3600, help="expires_in of issued tokens (seconds)")
    args = parser.parse_args(argv)
    state = State(oauth=OAuth(lifetime=args.token_lifetime))
    if args.client_id:
        state.oauth.clients[args.client_id] = args.client_secret

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
    server = uvicorn.Server(uvicorn.Config(create_app(state), log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
