"""A long-lived ``anvil`` command runner for the conformance lane: ``python -m anvil.cli.run_worker``.

Conformance calls every approved operation through ``anvil run`` (twice for one that confirms). As
one process per call, interpreter start, imports and reading the bundle cost about a second each
time; this worker runs the very same entry point (:func:`anvil.cli.main`, so argument parsing, exit
codes and error printing are the CLI's own) for one call after another in one process, in the
environment it was started with.

Protocol, one JSON object per line: the parent writes ``{"argv": ["run", BUNDLE, ...]}`` on stdin;
the worker answers ``{"code": EXIT, "stdout": TEXT, "stderr": TEXT}`` on stdout, and stops at the
end of its input. Only ``run`` is accepted: the worker is not a general shell.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from typing import TextIO

__all__ = ["main"]

_MAX_LINE = 16 * 1024 * 1024


def _answer(channel: TextIO, code: int, stdout: str, stderr: str) -> None:
    channel.write(json.dumps({"code": code, "stdout": stdout, "stderr": stderr}) + "\n")
    channel.flush()


def main(source: TextIO | None = None, channel: TextIO | None = None) -> int:
    """Answer each request line until the input ends; returns the process exit status."""
    from anvil.cli import main as anvil_main

    source = source or sys.stdin
    channel = channel or sys.stdout
    while True:
        line = source.readline(_MAX_LINE)
        if not line:
            return 0
        try:
            request = json.loads(line)
            argv = request["argv"]
            if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:1] != ["run"]:
                raise ValueError("not an anvil run request")
        except (ValueError, KeyError, TypeError):
            _answer(channel, 2, "", "error[cli/usage]: the worker runs `anvil run` requests only\n")
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = anvil_main(argv)
            except SystemExit as exc:  # argparse's --help
                code = exc.code if isinstance(exc.code, int) else 0
        _answer(channel, code, out.getvalue(), err.getvalue())


if __name__ == "__main__":
    sys.exit(main())
