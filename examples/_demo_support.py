"""The stage ``examples/demo.py`` plays on: compiled bundles, mock upstreams, the gateway, and printing.

Nothing here is part of Anvil. It compiles the examples with :func:`anvil.cli.compile.compile_bundle`
(what ``anvil compile`` runs), serves each example's mock upstream under uvicorn on ``127.0.0.1:0`` in a
daemon thread (so the demo can show the mock's memory before and after), starts the gateway as a child
process (``python -m anvil serve ...``, which prints ``{"url": ...}`` once it listens), and prints what
happens as plain text: colour only on a terminal, and never when ``NO_COLOR`` is set.

Every wait is bounded, and everything started here is stopped by :class:`Stage` on the way out.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, ClassVar, TextIO

__all__ = [
    "REPO",
    "ChildProcess",
    "DemoFailure",
    "MockThread",
    "Printer",
    "Stage",
    "compile_example",
    "format_call",
    "load_mock",
    "render_table",
]

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class DemoFailure(Exception):
    """A step did not behave as the story says it should; the demo exits non-zero."""


def load_mock(example: str) -> ModuleType:
    """Import ``examples/<example>/mock_upstream.py`` under a private module name."""
    name = f"demo_{example.replace('-', '_')}_mock"
    spec = importlib.util.spec_from_file_location(name, REPO / "examples" / example / "mock_upstream.py")
    if spec is None or spec.loader is None:
        raise DemoFailure(f"cannot load the {example} mock upstream")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


class MockThread:
    """An ASGI app under uvicorn on a free loopback port, in a daemon thread."""

    def __init__(self, app: Any, name: str) -> None:
        import uvicorn

        self.name = name
        self.url = ""
        # IPPROTO_TCP lets asyncio set TCP_NODELAY on accepted connections (no 40 ms delayed-ACK stalls).
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        config = uvicorn.Config(app, log_level="error", lifespan="off", ws="none")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"mock-{name}", daemon=True)

    def _run(self) -> None:
        self._server.run(sockets=[self._sock])

    def start(self, timeout: float = START_TIMEOUT_S) -> str:
        """Bind, serve, and return ``http://127.0.0.1:PORT`` once uvicorn reports it started."""
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise DemoFailure(f"the {self.name} mock upstream did not start")
            time.sleep(0.01)
        return self.url

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Ask uvicorn to exit and wait for the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._sock.close()


class ChildProcess:
    """A child that prints ``{"url": ...}`` on stdout once it listens; its stderr goes to a log file."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], log: Path, name: str) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.log = log
        self.name = name
        self.url = ""
        self._process: subprocess.Popen[str] | None = None

    def start(self, timeout: float = START_TIMEOUT_S) -> str:
        """Start the child and return the URL it prints.

        Raises:
            DemoFailure: the child exited or printed nothing usable within ``timeout`` seconds.
        """
        with self.log.open("w", encoding="utf-8") as errors:
            self._process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=self.env, text=True
            )
        stdout = self._process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], timeout)
        line = stdout.readline() if ready else ""
        try:
            self.url = str(json.loads(line)["url"])
        except (ValueError, KeyError, TypeError):
            self.stop()
            raise DemoFailure(f"{self.name} did not start:\n{self.log_tail()}") from None
        return self.url

    def alive(self) -> bool:
        """True while the child runs."""
        return self._process is not None and self._process.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """Terminate the child (kill it if it lingers) and return its exit status."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if process.stdout is not None:
            process.stdout.close()
        return process.returncode

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the child wrote to stderr."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Stage:
    """Owns everything the demo starts; leaving the ``with`` block stops it all, newest first."""

    def __init__(self) -> None:
        self._stack = ExitStack()

    def __enter__(self) -> Stage:
        self._stack.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.__exit__(exc_type, exc, tb)

    def mock(self, app: Any, name: str) -> MockThread:
        """Start a mock upstream; it is stopped when the stage closes."""
        mock = MockThread(app, name)
        self._stack.callback(mock.stop)
        mock.start()
        return mock

    def child(self, argv: Sequence[str], *, env: Mapping[str, str], log: Path, name: str) -> ChildProcess:
        """Start a child process; it is stopped when the stage closes."""
        child = ChildProcess(argv, env=env, log=log, name=name)
        self._stack.callback(child.stop)
        child.start()
        return child


def compile_example(example: str, service: str, out: Path) -> str:
    """Compile ``examples/<example>`` into ``out`` as ``anvil compile`` does; return a one-line summary.

    Raises:
        DemoFailure: the example did not compile cleanly.
    """
    from anvil.cli.compile import compile_bundle

    folder = REPO / "examples" / example
    outcome = compile_bundle(
        folder / "openapi.yaml", out=out, manifest=folder / "anvil.yaml", service_id=service, root=REPO
    )
    if outcome.bundle_hash is None or not outcome.ok:
        codes = sorted({d.code for d in outcome.diagnostics if d.severity == "error"})
        raise DemoFailure(f"examples/{example} did not compile: {', '.join(codes) or 'nothing installed'}")
    return (
        f"examples/{example} -> {out.name}/: {outcome.operations} operations "
        f"({outcome.approved} approved), bundle {outcome.bundle_hash.removeprefix('sha256:')[:12]}"
    )


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def format_call(tool: str, arguments: Mapping[str, Any]) -> str:
    """``tool(name=value, ...)`` with JSON values (strings quoted)."""
    return f"{tool}({', '.join(f'{key}={_value(value)}' for key, value in arguments.items())})"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> str:
    """A plain left-aligned text table with a rule under the header."""
    widths = [max(len(str(row[i])) for row in (headers, *rows)) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return (indent + "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(headers), indent + "  ".join("-" * width for width in widths), *map(line, rows)])


class Printer:
    """Prints the story: step headers, calls, outcomes, notes. Colour only on a terminal without ``NO_COLOR``."""

    _CODES: ClassVar[dict[str, str]] = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "cyan": "36",
    }

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.colour = bool(isatty()) and "NO_COLOR" not in os.environ
        self._step = 0

    def _paint(self, text: str, style: str) -> str:
        if not self.colour:
            return text
        return "".join(f"\033[{self._CODES[part]}m" for part in style.split()) + text + "\033[0m"

    def out(self, text: str = "", style: str = "") -> None:
        """Print one line (styled when colour is on)."""
        print(self._paint(text, style) if style else text, file=self.stream, flush=True)

    def title(self, text: str) -> None:
        """The demo's banner."""
        self.out("=" * len(text), "bold")
        self.out(text, "bold")
        self.out("=" * len(text), "bold")

    def step(self, text: str) -> None:
        """A numbered step header."""
        self._step += 1
        self.out()
        self.out(f"{self._step}. {text}", "bold cyan")

    def call(
        self, tool: str, arguments: Mapping[str, Any], *, meta: Mapping[str, Any] | None = None, rest: bool = False
    ) -> None:
        """``→ tool(args)``, then how it travels: the ``_meta`` sent over MCP, or the REST request."""
        self.out(f"  → {format_call(tool, arguments)}")
        if rest:
            key = (meta or {}).get("idempotency_key")
            stage = " with stage: true" if (meta or {}).get("stage") else ""
            header = f", Idempotency-Key: {key}" if key else ""
            self.out(f"      via POST /call/{tool}{stage}{header}", "dim")
        elif meta:
            self.out(f"      _meta: {json.dumps(dict(meta))}", "dim")

    def outcome(self, text: str, *, ok: bool = True) -> None:
        """``← what came back``, green when it went as planned, red when it was refused."""
        self.out(f"    ← {text}", "green" if ok else "red")

    def detail(self, label: str, text: str) -> None:
        """An indented ``label: text`` line under a call."""
        self.out(f"      {label}: {text}", "dim" if label != "effect" else "")

    def note(self, text: str) -> None:
        """A line of narration."""
        self.out(f"  {text}", "dim")
