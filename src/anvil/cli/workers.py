"""``anvil serve --workers N``: N worker processes serving one HTTP port, under one supervisor.

The supervisor binds and listens on the port once (so port 0 is resolved once), without
``SO_REUSEPORT``, then starts N ``anvil serve`` worker processes with the same bundles, flags and
environment, each inheriting that one listening socket (``--listen-fd``) and accepting from it. No
socket on the port has ``SO_REUSEPORT`` set, so no other process can bind the port and take a share
of its connections, as it could join a group of ``SO_REUSEPORT`` sockets of the same user. Every
worker opens the ledger itself (so the ledger must be one they can share: SQLite, PostgreSQL or
Firestore, not ``memory:``) and has its own upstream connection pool and caches. ``/metrics`` sums
every worker's series (the workers share a metrics folder, see
:class:`~anvil.serve.metrics.FleetMetrics`).

Once every worker listens, the supervisor prints ``{"url": ...}`` on stdout. SIGINT/SIGTERM stop the
workers gracefully and the supervisor exits 0; a worker that exits on its own stops the others and
the supervisor exits 3 (the worker's own message is on stderr).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Final

from anvil.errors import ConfigError

__all__ = ["MAX_WORKERS", "METRICS_DIR_VARIABLE", "supervise"]

#: The most workers one supervisor starts.
MAX_WORKERS: Final = 64
#: The variable prometheus-client reads to keep its values in shared files (set for every worker).
METRICS_DIR_VARIABLE: Final = "PROMETHEUS_MULTIPROC_DIR"
_START_SECONDS: Final = 60.0
_STOP_SECONDS: Final = 15.0
#: The shared socket's accept queue (the kernel caps it at ``net.core.somaxconn``).
_BACKLOG: Final = 2048


def _stop(workers: Sequence[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    deadline = time.monotonic() + _STOP_SECONDS
    for worker in workers:
        try:
            worker.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=_STOP_SECONDS)


def _first_line(worker: subprocess.Popen[bytes], deadline: float) -> str | None:
    assert worker.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([worker.stdout], [], [], left)
        if not ready:
            return None
        chunk = os.read(worker.stdout.fileno(), 4096)
        if not chunk:
            return None
        line += chunk
    return line.decode("utf-8", errors="replace")


def supervise(
    worker_argv: Sequence[str], *, host: str, port: int, count: int, environ: Mapping[str, str], shown_url: str
) -> int:
    """Run ``count`` workers on ``host:port`` until signalled; returns the exit status.

    Args:
        worker_argv: The ``anvil serve`` arguments every worker gets (bundles and flags, no ``--http``).
        host: The bind host.
        port: The bind port (0: a free one, the same for every worker).
        count: How many workers (2 to :data:`MAX_WORKERS`).
        environ: The workers' environment.
        shown_url: The URL to announce, with ``{port}`` for the port.

    Raises:
        ConfigError: ``config/invalid`` when the port cannot be bound.
    """
    from anvil.serve.mcp.http import listen

    try:
        holder = listen(host, port, backlog=_BACKLOG)
    except OSError as exc:
        raise ConfigError("config/invalid", f"Cannot listen on {host}:{port}: {exc.strerror or exc}.") from exc
    bound = holder.getsockname()[1]
    stopping = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    workers: list[subprocess.Popen[bytes]] = []
    import tempfile  # the supervisor's only (a worker reads MAX_WORKERS and METRICS_DIR_VARIABLE: cold start)

    with tempfile.TemporaryDirectory(prefix="anvil-metrics-") as metrics_dir:
        env = {**environ, METRICS_DIR_VARIABLE: metrics_dir}
        shown_host = f"[{host}]" if ":" in host else host
        try:
            for index in range(count):
                command = [
                    sys.executable,
                    "-m",
                    "anvil",
                    "serve",
                    *worker_argv,
                    "--http",
                    f"{shown_host}:{bound}",
                    "--worker-index",
                    str(index + 1),
                    "--worker-count",
                    str(count),
                    "--listen-fd",
                    str(holder.fileno()),
                ]
                workers.append(subprocess.Popen(command, stdout=subprocess.PIPE, env=env, pass_fds=(holder.fileno(),)))
            deadline = time.monotonic() + _START_SECONDS
            for worker in workers:
                line = _first_line(worker, deadline)
                try:
                    started = line is not None and "url" in json.loads(line)
                except ValueError:
                    started = False
                if not started:
                    print("anvil: a worker did not start; stopping.", file=sys.stderr, flush=True)
                    return 3
                assert worker.stdout is not None
                worker.stdout.close()
            print(json.dumps({"url": shown_url.format(port=bound)}), flush=True)
            print(f"anvil: {count} workers on port {bound}", file=sys.stderr, flush=True)
            while not stopping:
                ended = next((worker for worker in workers if worker.poll() is not None), None)
                if ended is not None:
                    print(
                        f"anvil: worker {workers.index(ended) + 1} exited ({ended.returncode}); stopping.",
                        file=sys.stderr,
                        flush=True,
                    )
                    return 3
                time.sleep(0.2)
            return 0
        finally:
            _stop(workers)
            holder.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
