"""A subprocess that runs the executor against the loopback upstream and a shared SQLite ledger.

python ledger_worker.py crash LEDGER_URI UPSTREAM_URL KEY MARKER
    one keyed write whose ``on_upstream_answered`` hook writes MARKER and then blocks forever,
    so the parent can SIGKILL the process after the upstream answered and before completion.

python ledger_worker.py race LEDGER_URI UPSTREAM_URL KEY GO_FILE CALLS
    waits for GO_FILE, then makes CALLS concurrent identical keyed writes and prints one JSON
    object per outcome on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_support import keyed_write

from anvil.ledger.registry import open_ledger
from anvil.runtime.context import CallOptions, RuntimeContext, UpstreamAnswer
from anvil.runtime.executor import execute

REFUND = {"payment_id": "pay_1", "amount": 2500}


async def crash(ledger_uri: str, upstream_url: str, key: str, marker: str) -> None:
    async def block(_answer: UpstreamAnswer) -> None:
        Path(marker).write_text("answered", encoding="utf-8")
        await anyio.sleep_forever()

    async with httpx.AsyncClient() as client:
        context = RuntimeContext(
            service_id="payments",
            base_url=upstream_url,
            client=client,
            env="prod",
            allowed_hosts=("127.0.0.1",),
            ledger=open_ledger(ledger_uri),
            on_upstream_answered=block,
        )
        await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key=key))


async def race(ledger_uri: str, upstream_url: str, key: str, go_file: str, calls: int) -> None:
    deadline = time.monotonic() + 30
    while not Path(go_file).exists():  # a start line shared by every worker process
        if time.monotonic() > deadline:
            raise SystemExit("no go signal")
        await anyio.sleep(0.005)
    ledger = open_ledger(ledger_uri)
    results: list[dict[str, object]] = []
    async with httpx.AsyncClient() as client:
        context = RuntimeContext(
            service_id="payments",
            base_url=upstream_url,
            client=client,
            env="prod",
            allowed_hosts=("127.0.0.1",),
            ledger=ledger,
        )

        async def one() -> None:
            outcome = await execute(keyed_write(), REFUND, context, CallOptions(idempotency_key=key))
            results.append(
                {
                    "kind": outcome.kind,
                    "code": outcome.code,
                    "ledger": outcome.record.ledger,
                    "replayed": outcome.replayed,
                }
            )

        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(one)
    await ledger.close()
    for item in results:
        print(json.dumps(item))


def main(argv: list[str]) -> None:
    mode, ledger_uri, upstream_url, key, path = argv[:5]
    if mode == "crash":
        anyio.run(crash, ledger_uri, upstream_url, key, path)
    else:
        anyio.run(race, ledger_uri, upstream_url, key, path, int(argv[5]))


if __name__ == "__main__":
    main(sys.argv[1:])
