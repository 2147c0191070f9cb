"""The dedicated ledger thread: jobs in order on one thread, errors to the caller, abandoned jobs skipped."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from anvil.errors import LedgerError
from anvil.ledger.worker import SerialWorker

pytestmark = pytest.mark.anyio


async def test_jobs_run_in_submission_order_on_one_thread_that_is_not_the_callers() -> None:
    worker = SerialWorker("test-worker")
    seen: list[tuple[int, int]] = []

    def job(index: int) -> int:
        seen.append((index, threading.get_ident()))
        return index * 2

    async with anyio.create_task_group() as group:
        for index in range(5):
            group.start_soon(worker.run, lambda index=index: job(index))
    assert [index for index, _ in seen] == [0, 1, 2, 3, 4]
    assert len({ident for _, ident in seen}) == 1 and seen[0][1] != threading.get_ident()
    assert await worker.run(lambda: job(9)) == 18
    worker.stop()
    assert await worker.run(lambda: job(10)) == 20  # a stopped worker starts a new thread on demand
    worker.stop()


async def test_an_error_in_a_job_reaches_its_caller_and_the_thread_keeps_serving() -> None:
    worker = SerialWorker("test-worker")

    def failing() -> None:
        raise LedgerError("ledger/unavailable", "The store failed.")

    with pytest.raises(LedgerError) as raised:
        await worker.run(failing)
    assert raised.value.code == "ledger/unavailable"
    assert await worker.run(lambda: "still serving") == "still serving"
    worker.submit(failing)  # housekeeping errors are dropped, the thread survives them
    assert await worker.run(lambda: "after housekeeping") == "after housekeeping"
    worker.stop()


async def test_a_job_whose_caller_was_cancelled_before_it_started_is_never_run() -> None:
    worker = SerialWorker("test-worker")
    gate = threading.Event()
    ran: list[str] = []

    def blocker() -> None:
        gate.wait(5)
        ran.append("blocker")

    async with anyio.create_task_group() as group:
        group.start_soon(worker.run, blocker)
        await anyio.sleep(0.05)
        with anyio.move_on_after(0.05):
            await worker.run(lambda: ran.append("abandoned"))
        gate.set()
    assert await worker.run(lambda: "next") == "next"
    time.sleep(0.01)
    assert ran == ["blocker"]
    worker.stop()
