"""The ``anvil`` command line: a thin shell over the library.

Each subcommand lives in its own module under ``anvil.cli`` exposing ``register(subparsers)`` and
``run(args) -> int``; modules are imported lazily so ``anvil --help`` stays fast. This package is the
only place that reads the environment. Exit codes: 0 ok, 1 diagnostics at error level (compile) or
usage of an unknown command, 2 usage, 3+ per command (``anvil run`` follows original-core §5.7),
130 interrupted, and 141 (128 + SIGPIPE, what a shell reports for a tool a closed pipe stopped) when
stdout was closed before the command finished writing (``anvil status BUNDLE | head -1``): the
command stops quietly, printing nothing more, since the reader has all it asked for (``--help``
ends 0: argparse itself ignores a closed stream).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from typing import NoReturn, Protocol

from anvil.cli import collector
from anvil.errors import AnvilError, UsageError

__all__ = ["BROKEN_PIPE_EXIT", "COMMANDS", "main"]

#: The exit status when stdout is closed under a command: 128 + SIGPIPE, as a shell reports it.
BROKEN_PIPE_EXIT = 141

#: subcommand name -> (module, one-line help). The names are a public contract (see tests/cli).
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("anvil.cli.init", "Write a reviewable anvil.yaml listing every operation of a spec."),
    "approve": ("anvil.cli.approve", "Approve manifest entries by key or glob, keeping comments."),
    "compile": ("anvil.cli.compile", "Compile an OpenAPI spec and anvil.yaml into a bundle."),
    "inspect": ("anvil.cli.catalog", "List a bundle's operations with their state, effect and undo."),
    "serve": ("anvil.cli.serve", "Serve a compiled bundle as MCP tools (stdio or Streamable HTTP)."),
    "run": ("anvil.cli.run", "Call one operation of a compiled bundle (direct or through an MCP server)."),
    "deploy": ("anvil.cli.deploy", "Offline deployment evidence: `anvil deploy ledger` (durable idempotency)."),
    "mock": ("anvil.cli.mock", "Serve a stateful mock of a bundle's upstream API, generated from its AIR."),
    "selftest": ("anvil.cli.selftest", "Prove a bundle over MCP against a mock upstream, each declared undo too."),
    "certify": ("anvil.cli.certify", "Re-judge a bundle statically; writes certification.json."),
    "simulate": ("anvil.cli.simulate", "Run the contract matrix and mutation battery on a bundle."),
    "conformance": ("anvil.cli.conformance", "Check that MCP, REST, the CLI and the skill agree on a bundle."),
    "status": ("anvil.cli.status", "Show evidence freshness and what still gates each write."),
    "ledger": ("anvil.cli.ledger", "Create, inspect and reconcile the durable idempotency ledger."),
}


class _Command(Protocol):
    def register(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


class _Parser(argparse.ArgumentParser):
    """argparse that raises a coded UsageError instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError("cli/usage", f"{self.prog}: {message}", hint=f"Run `{self.prog} --help` for usage.")


def _build_parser() -> tuple[_Parser, dict[str, _Command]]:
    parser = _Parser(prog="anvil", description="Agent toolchain compiler and safety gateway.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    loaded: dict[str, _Command] = {}
    wanted = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    for name, (module_name, summary) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=summary, description=summary)
        if wanted is None or wanted == name or "--help" in sys.argv or "-h" in sys.argv:
            module: _Command = importlib.import_module(module_name)
            module.register(sub)
            loaded[name] = module
    return parser, loaded


def _report(exc: AnvilError) -> None:
    print(f"error[{exc.code}]: {exc.message}", file=sys.stderr)
    for line in (exc.hint or "").splitlines():  # a hint may name several fixes, one a line
        print(f"hint: {line}", file=sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at the null device so the interpreter's final flush cannot fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (a test's capture): nothing will flush to it
        pass


def _flushed() -> bool:
    """Flush stdout; False (and stdout silenced) when its reader has gone."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return False
    return True


def _broken_pipe(exc: BaseException) -> bool:
    """True for a closed stdout: BrokenPipeError itself, or a task group's failure made only of it."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_broken_pipe(inner) for inner in exc.exceptions)
    return isinstance(exc, BrokenPipeError)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return the process exit code; never lets a traceback reach the user."""
    args_list = sys.argv[1:] if argv is None else argv
    saved = sys.argv
    sys.argv = ["anvil", *args_list]
    collecting = collector.pause()  # until the command runs (or, for a server, serves): see anvil.cli.collector
    try:
        parser, loaded = _build_parser()
        args = parser.parse_args(args_list)
        if args.version:
            from anvil import __version__

            print(f"anvil {__version__}")
            return 0 if _flushed() else BROKEN_PIPE_EXIT
        if not args.command:
            parser.print_help(sys.stderr)
            return 2
        command = loaded.get(args.command) or importlib.import_module(COMMANDS[args.command][0])
        if collecting and not getattr(command, "RESUMES_COLLECTOR", False):
            gc.enable()
        code = int(command.run(args))
        # A closed pipe surfaces here rather than in the interpreter's exit flush (exit status 120).
        return code if _flushed() else BROKEN_PIPE_EXIT
    except SystemExit:  # argparse's --help and a few commands exit; their output must flush first too
        if not _flushed():
            return BROKEN_PIPE_EXIT
        raise
    except UsageError as exc:
        _report(exc)
        return 2
    except AnvilError as exc:
        _report(exc)
        return 3
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: no traceback reaches a user
        if _broken_pipe(exc):
            _silence_stdout()
            return BROKEN_PIPE_EXIT
        if os.environ.get("ANVIL_DEBUG") == "1":
            raise
        print(f"error[internal_error]: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("hint: this is a bug in Anvil; rerun with ANVIL_DEBUG=1 for a traceback and report it.", file=sys.stderr)
        return 70
    finally:
        sys.argv = saved
        if collecting:
            gc.enable()
