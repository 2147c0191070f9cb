"""Operations and a loopback mock upstream for the runtime tests (also imported by the worker script).

The factories build AIR ``Operation`` objects directly. The mock upstream is a Starlette app served by
uvicorn on 127.0.0.1 in a background thread; it counts calls, captures requests and answers from a
per-test script.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from anvil.air.model import (
    Auth,
    BodyField,
    Cli,
    Confirmation,
    Effect,
    Idempotency,
    Input,
    Mcp,
    Operation,
    Param,
    RequestBody,
    RetryPolicy,
    SourceRef,
)
from anvil.runtime.context import RuntimeContext

SAFE_RETRIES = RetryPolicy(
    mode="safe",
    basis="idempotency_key",
    max_attempts=3,
    backoff="exponential_jitter",
    base_delay_ms=200,
    max_delay_ms=20000,
    retry_on=("timeout", "connection_reset", "dns_failure", "http_429", "http_503", "http_504"),
)
NO_RETRIES = RetryPolicy(mode="none")


def operation(
    op_id: str,
    *,
    method: str,
    path: str,
    kind: str = "mutation",
    params: tuple[Param, ...] = (),
    body: RequestBody | None = None,
    idempotency: Idempotency | None = None,
    retries: RetryPolicy = NO_RETRIES,
    confirmation: Confirmation | None = None,
    auth: Auth | None = None,
    state: str = "approved",
) -> Operation:
    """An approved operation with the given wire shape."""
    name = op_id.replace(".", "_")
    extra: dict[str, Any] = {}
    if confirmation is not None:
        extra["confirmation"] = confirmation
    if auth is not None:
        extra["auth"] = auth
    return Operation(
        id=op_id,
        canonical_name=name,
        display_name=name,
        source_ref=SourceRef(path=path, method=method),
        effect=Effect(kind=kind, action="get" if kind == "read" else "create"),  # type: ignore[arg-type]
        input=Input(params=params, body=body),
        idempotency=idempotency or Idempotency(mode="natural" if kind == "read" else "none"),
        retries=retries,
        cli=Cli(command=name),
        mcp=Mcp(tool_name=name),
        state=state,  # type: ignore[arg-type]
        **extra,
    )


def _amount_body(*extra: BodyField) -> RequestBody:
    fields = (BodyField(name="amount", required=True, schema={"type": "integer"}), *extra)
    schema = {"type": "object", "properties": {f.name: f.schema for f in fields}, "required": ["amount"]}
    return RequestBody(schema=schema, projection="fields", fields=fields)


PAYMENT_ID = Param(name="payment_id", in_="path", required=True, schema={"type": "string"})


def read_op() -> Operation:
    """GET /payments/{payment_id}: a read, retried when safe."""
    return operation(
        "payments.payment.get",
        method="get",
        path="/payments/{payment_id}",
        kind="read",
        params=(PAYMENT_ID,),
        retries=SAFE_RETRIES,
    )


def keyed_write(*, retries: RetryPolicy = SAFE_RETRIES, confirm: bool = False) -> Operation:
    """POST /payments/{payment_id}/refunds: key required from the client, carried in ``Idempotency-Key``."""
    return operation(
        "payments.refund.create",
        method="post",
        path="/payments/{payment_id}/refunds",
        params=(PAYMENT_ID,),
        body=_amount_body(),
        idempotency=Idempotency(
            mode="required", mechanism="header", key="Idempotency-Key", key_derivation="client_supplied"
        ),
        retries=retries,
        confirmation=Confirmation(required=True, risk="financial") if confirm else None,
    )


def fingerprint_write() -> Operation:
    """A keyed write whose key is derived from the request fingerprint when none is supplied."""
    return operation(
        "payments.refund.create",
        method="post",
        path="/payments/{payment_id}/refunds",
        params=(PAYMENT_ID,),
        body=_amount_body(),
        idempotency=Idempotency(
            mode="required", mechanism="header", key="Idempotency-Key", key_derivation="request_fingerprint"
        ),
        retries=SAFE_RETRIES,
    )


def unkeyed_write(*, retries: RetryPolicy = NO_RETRIES) -> Operation:
    """POST /payments/{payment_id}/notes: idempotency mode none (never retried, never keyed)."""
    return operation(
        "payments.note.create",
        method="post",
        path="/payments/{payment_id}/notes",
        params=(PAYMENT_ID,),
        body=_amount_body(),
        retries=retries,
    )


def body_carrier_write() -> Operation:
    """A keyed write whose key travels in the body field ``request_id``."""
    body = _amount_body(BodyField(name="request_id", schema={"type": "string"}))
    return operation(
        "payments.transfer.create",
        method="post",
        path="/transfers",
        body=body,
        idempotency=Idempotency(mode="required", mechanism="body", key="request_id", key_derivation="client_supplied"),
        retries=SAFE_RETRIES,
    )


def form_carrier_write(media: str = "application/x-www-form-urlencoded", *, derive: bool = False) -> Operation:
    """A telephony-style payment: a form body (``media``) whose field ``IdempotencyKey`` carries the key."""
    fields = (
        BodyField(name="Amount", required=True, schema={"type": "integer"}),
        BodyField(name="To", required=True, schema={"type": "string"}),
        BodyField(name="IdempotencyKey", schema={"type": "string"}),
    )
    schema = {"type": "object", "properties": {f.name: f.schema for f in fields}, "required": ["Amount", "To"]}
    return operation(
        "telephony.payment.create",
        method="post",
        path="/Accounts/{AccountSid}/Payments.json",
        params=(Param(name="AccountSid", in_="path", required=True, schema={"type": "string"}),),
        body=RequestBody(content_type=media, schema=schema, projection="fields", fields=fields, required=True),
        idempotency=Idempotency(
            mode="required",
            mechanism="body",
            key="IdempotencyKey",
            key_derivation="request_fingerprint" if derive else "client_supplied",
        ),
        retries=SAFE_RETRIES,
    )


def nested_body_carrier_write() -> Operation:
    """A keyed write with a whole body and the key at ``/meta/idempotency``."""
    schema = {
        "type": "object",
        "properties": {
            "amount": {"type": "integer"},
            "meta": {"type": "object", "properties": {"idempotency": {"type": "string"}, "note": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    return operation(
        "payments.batch.create",
        method="post",
        path="/batches",
        body=RequestBody(schema=schema, projection="whole", required=True),
        idempotency=Idempotency(
            mode="required", mechanism="body", key="/meta/idempotency", key_derivation="client_supplied"
        ),
    )


def query_carrier_write() -> Operation:
    """A key_supported write whose key travels in the query parameter ``dedupe``."""
    dedupe = Param(name="dedupe", in_="query", schema={"type": "string"})
    return operation(
        "payments.capture.create",
        method="post",
        path="/payments/{payment_id}/captures",
        params=(PAYMENT_ID, dedupe),
        idempotency=Idempotency(mode="key_supported", mechanism="query", key="dedupe", key_derivation="none"),
    )


def path_carrier_write() -> Operation:
    """PUT /orders/{order_key}: the key is the path segment."""
    order_key = Param(name="order_key", in_="path", required=True, schema={"type": "string"})
    return operation(
        "payments.order.put",
        method="put",
        path="/orders/{order_key}",
        params=(order_key,),
        body=_amount_body(),
        idempotency=Idempotency(mode="required", mechanism="path", key="order_key", key_derivation="client_supplied"),
    )


class FakeClock:
    """Wall-clock seconds that only move when a test says so."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def no_sleep(_seconds: float) -> None:
    """A sleep that returns at once (backoff is asserted from recorded waits elsewhere)."""


#: Builds a RuntimeContext against the loopback upstream; keywords override any field.
ContextFactory = Callable[..., RuntimeContext]


def with_state(op: Operation, state: str) -> Operation:
    """``op`` in another approval state."""
    return dataclasses.replace(op, state=state)  # type: ignore[arg-type]


# --- the loopback mock upstream --------------------------------------------------------------------------


@dataclass
class Captured:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Scripted:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


class UpstreamState:
    """Per-test state of the mock: scripted answers, a hold gate and what it received."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.calls: list[Captured] = []
            self.script: list[Scripted] = []
            self.default = Scripted(status=200)
            self.arrived = threading.Event()
            self.hold: threading.Event | None = None

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.calls)

    def answer(self, *answers: Scripted) -> None:
        with self.lock:
            self.script.extend(answers)


class MockUpstream:
    """A uvicorn server on 127.0.0.1 with a catch-all route that echoes the request it got."""

    def __init__(self) -> None:
        self.state = UpstreamState()
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off", ws="none")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:  # uvicorn offers no started event to wait on
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("mock upstream did not start")
            time.sleep(0.005)
        sock = self.server.servers[0].sockets[0]
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    async def _handle(self, request: Request) -> Response:
        state = self.state
        captured = Captured(
            method=request.method,
            path=request.scope["raw_path"].decode("ascii"),
            query=request.url.query,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=await request.body(),
        )
        with state.lock:
            state.calls.append(captured)
            scripted = state.script.pop(0) if state.script else state.default
            hold = state.hold
        state.arrived.set()
        if hold is not None:
            await anyio.to_thread.run_sync(hold.wait, 10)
        if scripted.status in (204, 304):
            content = b""
        elif scripted.raw is not None:
            content = scripted.raw
        elif scripted.body is not None:
            content = json.dumps(scripted.body).encode()
        else:
            echo = {"method": captured.method, "path": captured.path, "received": _json_or_none(captured.body)}
            content = json.dumps(echo).encode()
        headers = {"content-type": "application/json", **scripted.headers}
        return Response(content, status_code=scripted.status, headers=headers)


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None
