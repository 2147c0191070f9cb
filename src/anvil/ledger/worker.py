"""One dedicated thread per embedded store: blocking calls in order, without per-call thread-pool churn.

A SQLite ledger's calls are serialized by its one connection anyway, so a pool of worker threads only
adds hand-off cost (a pool checkout, a cancel scope and a wake-up per call). :class:`SerialWorker` keeps
one daemon thread and one queue: an asyncio caller enqueues the job with a future and the thread
settles it on the caller's loop. A caller cancelled before its job starts has the job skipped (nothing
was done); one cancelled while the job runs is released at once and the job finishes on its own (like
``anyio.to_thread.run_sync(..., abandon_on_cancel=True)``). Under another async library (trio) the
jobs fall back to anyio's thread pool.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

__all__ = ["SerialWorker"]

T = TypeVar("T")
_Job = tuple[Callable[[], Any], "asyncio.AbstractEventLoop | None", "asyncio.Future[Any] | None"]


def _settle(future: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    if future.cancelled():
        return  # the caller left; the job's own effects are what it did
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class SerialWorker:
    """A lazily started daemon thread that runs submitted blocking callables one at a time."""

    def __init__(self, name: str) -> None:
        """Prepare a worker whose thread is named ``name`` (started on the first job)."""
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def _started(self) -> None:
        with self._guard:
            # A thread that is not alive (never started, stopped, or left behind by a fork) is replaced.
            if self._thread is None or not self._thread.is_alive():
                self._jobs = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._serve, args=(self._jobs,), name=self._name, daemon=True)
                self._thread.start()

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            work, loop, future = job
            if future is not None and future.cancelled():
                continue  # abandoned before it began: doing nothing is the faithful answer
            result: object = None
            error: BaseException | None = None
            try:
                result = work()
            except BaseException as exc:  # handed to the caller, never lost in this thread
                error = exc
            if loop is None or future is None:
                continue
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:
                pass  # the caller's loop is closed: nobody is waiting any more

    async def run(self, work: Callable[[], T]) -> T:
        """Run ``work`` on the worker thread after every job submitted before it; its result or error."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio): anyio's pool
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        future: asyncio.Future[T] = loop.create_future()
        self._started()
        self._jobs.put((work, loop, future))
        return await future

    def submit(self, work: Callable[[], object]) -> None:
        """Queue ``work`` without waiting for it (housekeeping such as a WAL checkpoint); errors are dropped."""

        def quiet() -> None:
            try:
                work()
            except Exception:
                pass  # housekeeping: a failure changes nothing a caller relies on

        self._started()
        self._jobs.put((quiet, None, None))

    def stop(self) -> None:
        """Let the thread exit after the jobs already queued (a later job starts a new one)."""
        with self._guard:
            if self._thread is not None and self._thread.is_alive():
                self._jobs.put(None)
            self._thread = None
