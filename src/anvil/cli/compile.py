"""``anvil compile SPEC --manifest M --service NAME --out DIR [--root DIR] [--json] [--no-color]``.

Loads the spec and manifest, compiles them to AIR, emits the bundle and installs it transactionally
(original-core §3, §4). Output: diagnostics on stderr, grouped by severity then operation (coloured on
a TTY unless ``NO_COLOR`` is set or ``--no-color`` is given), and one summary line on stdout; with
``--json``, exactly one JSON object on stdout ``{ok, operations, approved, bundleHash, files,
diagnostics}``. Progress for long compiles goes to stderr, only on a TTY.

Exit status:

* 0 - compiled and installed; the worst diagnostic is below ``error``.
* 1 - an ``error`` diagnostic. Compile findings (an operation blocked by validation, an unresolved
  workflow step) still write the bundle, as the original does. Input errors - the spec or the
  manifest could not be read or is invalid (``source/*``, ``manifest/*``) - and install refusals
  (``bundle/*``) write nothing, so the previous bundle at ``--out`` stays exactly as it was.
* 2 - usage: a missing or malformed flag, an invalid ``--service`` id, a ``--root`` that is not a
  directory.

Inputs are bounded: only regular files are read (a FIFO, device or folder as the spec, a ``$ref``
target or the manifest is ``source/not_regular_file`` or ``manifest/not_found``), each at most
``ANVIL_MAX_FILE_BYTES`` bytes (default 64 MiB; larger is ``source/too_large``).

``service.source.uri`` records the spec path relative to ``--root`` (default: the working directory)
when the spec lies under it, else the path as given when that is relative, else the file name: never
an absolute path, so compiling the same inputs under two roots gives byte-identical bundles.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from anvil._dataclass import dataclass
from anvil.diagnostics import Diagnostic, diagnostic, has_errors
from anvil.errors import BundleError, ConfigError, UsageError

if TYPE_CHECKING:
    from anvil.air.token_counter import TokenCounter
    from anvil.bundle.writer import BundleInstall
    from anvil.compiler.manifest.model import Manifest
    from anvil.load.ahead import ParseAhead

__all__ = [
    "CompileOutcome",
    "Progress",
    "compile_bundle",
    "deployment_namespace_for",
    "max_file_bytes",
    "register",
    "render_diagnostics",
    "run",
    "source_uri",
]

_INPUT_PREFIXES = ("source/", "manifest/")
_SEVERITY_ORDER = ("error", "warning", "info")
_COLOURS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m", "dim": "\x1b[2m", "bold": "\x1b[1m"}
_RESET = "\x1b[0m"
_PROGRESS_DELAY_S = 0.5


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``compile`` flags to its subparser."""
    parser.add_argument("spec", metavar="SPEC", help="the OpenAPI 3.x or Swagger 2.0 file (YAML or JSON)")
    parser.add_argument("--manifest", metavar="M", help="the reviewed manifest (anvil.yaml)")
    parser.add_argument("--service", metavar="NAME", help="the service id (overrides the manifest's service.name)")
    parser.add_argument("--out", metavar="DIR", required=True, help="the bundle directory to write or replace")
    parser.add_argument("--root", metavar="DIR", help="the workspace root the recorded spec path is relative to")
    parser.add_argument(
        "--spec-root",
        metavar="DIR",
        help="the folder relative $refs may reach (default: the spec's folder); nothing outside it is read",
    )
    parser.add_argument(
        "--deployment-namespace",
        metavar="NS",
        help=(
            "the deployment identity keying Cloud Run names, Terraform state and ledger coordinates (default: the "
            "manifest's service.deployment_namespace, else the one already persisted at --out, else the service id)"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--no-color", action="store_true", help="never colour the output")


def source_uri(spec: Path, root: Path) -> str:
    """The spec path to record in AIR: relative to ``root``, else as given if relative, else its name."""
    absolute = Path(os.path.abspath(spec))
    try:
        return absolute.relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        pass
    if not spec.is_absolute():
        return PurePosixPath(Path(os.path.normpath(spec)).as_posix()).as_posix()
    return spec.name


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileOutcome:
    """What one compile did. ``bundle_hash`` is None when nothing was installed."""

    diagnostics: tuple[Diagnostic, ...]
    operations: int = 0
    approved: int = 0
    files: int = 0
    bundle_hash: str | None = None

    @property
    def ok(self) -> bool:
        """True when no diagnostic is an error."""
        return not has_errors(self.diagnostics)

    def to_json(self) -> dict[str, object]:
        """The ``--json`` object."""
        return {
            "ok": self.ok,
            "operations": self.operations,
            "approved": self.approved,
            "bundleHash": self.bundle_hash,
            "files": self.files,
            "diagnostics": [item.to_json() for item in self.diagnostics],
        }


class Progress:
    """A one-line elapsed-time indicator on a TTY's stderr, shown only once a compile runs long."""

    def __init__(self, stream: TextIO, label: str, *, enabled: bool, delay: float = _PROGRESS_DELAY_S) -> None:
        self._stream = stream
        self._delay = delay
        self._label = label
        self._enabled = enabled
        self._stage = "compiling"
        self._shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._start = time.monotonic()

    def stage(self, name: str) -> None:
        """Name the step now running ("compiling", "writing")."""
        self._stage = name

    def _loop(self) -> None:
        if self._stop.wait(self._delay):
            return
        while not self._stop.is_set():
            elapsed = time.monotonic() - self._start
            self._stream.write(f"\r\x1b[K{self._stage} {self._label} … {elapsed:.1f}s")
            self._stream.flush()
            self._shown = True
            self._stop.wait(0.2)

    def __enter__(self) -> Progress:
        if self._enabled:
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._enabled:
            self._stop.set()
            self._thread.join()
            if self._shown:
                self._stream.write("\r\x1b[K")
                self._stream.flush()


def _persisted_namespace(out: Path) -> str | None:
    """The namespace an existing bundle at ``out`` persisted (None when absent or unreadable)."""
    from anvil.bundle.generation import parse_generation

    try:
        return parse_generation((out / "generation.json").read_bytes()).deployment_namespace
    except (OSError, BundleError):
        return None


def _manifest_namespace(manifest: Path | None) -> str | None:
    from anvil.compiler.manifest.parse import load_manifest

    if manifest is None:
        return None
    parsed, _found = load_manifest(manifest)
    return parsed.service.deployment_namespace if parsed is not None else None


def deployment_namespace_for(
    out: Path, *, flag: str | None, manifest: Path | None, parsed: Manifest | None = None
) -> str | None:
    """The namespace to persist: the flag, else the manifest's, else the one already at ``out``, else None.

    ``parsed``: the manifest at ``manifest`` as the compile already parsed it (it is not read again).
    """
    if flag:
        return flag
    stated = parsed.service.deployment_namespace if parsed is not None else _manifest_namespace(manifest)
    return stated or _persisted_namespace(out)


def _bundle_error(exc: BundleError) -> Diagnostic:
    return diagnostic(exc.code, exc.message, severity="error", hint=exc.hint)


def compile_bundle(
    spec: Path,
    *,
    out: Path,
    manifest: Path | None = None,
    service_id: str | None = None,
    root: Path | None = None,
    spec_root: Path | None = None,
    progress: Progress | None = None,
    deployment_namespace: str | None = None,
    max_file_bytes: int | None = None,
    ahead: ParseAhead | None = None,
) -> CompileOutcome:
    """Compile ``spec`` (+ ``manifest``) and install the bundle at ``out``; never raises for bad input.

    Input errors (``source/*``, ``manifest/*``) and install refusals write nothing; other error
    diagnostics still write the bundle. ``deployment_namespace`` (``--deployment-namespace``) is persisted
    in ``generation.json``; without it the manifest's ``service.deployment_namespace`` or the namespace the
    bundle at ``out`` already persisted is kept, so a recompile never moves deployment coordinates.
    ``ahead``: ``spec``'s parse already started by the caller (:class:`~anvil.load.ahead.ParseAhead`, which
    forks only while the process has one thread: :func:`run` starts it before its progress thread);
    started here otherwise. The result is the same either way.
    """
    from anvil.cli.collector import paused
    from anvil.load.ahead import ParseAhead
    from anvil.load.files import DEFAULT_MAX_FILE_BYTES

    # Everything a compile builds lives to its end (the spec, the AIR, the files): a collection would
    # walk it all again for nothing (about 0.1 s of a large API's compile, and 5 MB more at the peak).
    with paused():
        # The spec parses in a forked child while this process imports the compiler (forked first: while
        # this process has one thread), and the helper loads the tokenizer meanwhile too.
        limit = DEFAULT_MAX_FILE_BYTES if max_file_bytes is None else max_file_bytes
        if ahead is None:
            ahead = ParseAhead(spec, max_file_bytes=limit)
        with ahead:
            from anvil.air.token_counter import TokenCounter

            with TokenCounter() as counter:
                early = _early_install(out)
                try:
                    return _compile_into(
                        early,
                        counter,
                        ahead,
                        spec,
                        out=out,
                        manifest=manifest,
                        service_id=service_id,
                        root=root,
                        spec_root=spec_root,
                        progress=progress,
                        deployment_namespace=deployment_namespace,
                        max_file_bytes=max_file_bytes,
                    )
                finally:
                    if early is not None:
                        early.discard()  # not committed: an input error, a refusal or a crash


#: Empty files the bundle writer makes ahead while the spec compiles, before their number is known: a
#: large API's bundle has 700-1500, a small one's compile ends before many are made.
_SLOTS_AHEAD = 768


def _files_for(approved: int) -> int:
    """About how many files a bundle has: three per approved operation and two dozen more (the corpus)."""
    return 3 * approved + 24


def _approving(manifest: Manifest) -> int:
    """How many operations ``manifest`` approves by name (before the compile decides)."""
    return sum(entry.state == "approved" for entry in manifest.operations)


def _early_install(out: Path) -> BundleInstall | None:
    """A bundle install started before the compile, so its files are made meanwhile (on another core).

    None when ``out``'s folder does not exist yet (an input error must not leave it made) or ``out`` is
    refused: the install is then started after the compile, where a refusal is reported as before.
    """
    from anvil.bundle.writer import BundleInstall

    if not Path(os.path.abspath(out)).parent.is_dir():
        return None
    try:
        return BundleInstall(out, slots=_SLOTS_AHEAD)
    except BundleError:
        return None


def _compile_into(
    early: BundleInstall | None,
    counter: TokenCounter,
    ahead: ParseAhead,
    spec: Path,
    *,
    out: Path,
    manifest: Path | None,
    service_id: str | None,
    root: Path | None,
    spec_root: Path | None,
    progress: Progress | None,
    deployment_namespace: str | None,
    max_file_bytes: int | None,
) -> CompileOutcome:
    from anvil.bundle.writer import BundleInstall

    with counter:  # ended once the figures are counted
        from anvil.bundle.emit import emit_bundle
        from anvil.bundle.generation import Generation
        from anvil.bundle.hash import bundle_hash, directory_hash
        from anvil.compiler import build

        uri = source_uri(spec, root or Path.cwd())
        result = build(
            spec,
            manifest=manifest,
            service_id=service_id,
            source_uri=uri,
            spec_root=spec_root,
            max_file_bytes=max_file_bytes,
            counter=counter,
            on_manifest=None if early is None else lambda parsed: early.expect(_files_for(_approving(parsed))),
            ahead=ahead,
        )
    diagnostics = tuple(result.diagnostics)
    doc = result.document
    input_failed = any(d.severity == "error" and d.code.startswith(_INPUT_PREFIXES) for d in diagnostics)
    if doc is None or input_failed:
        return CompileOutcome(diagnostics=diagnostics)
    operations, approved = len(doc.operations), sum(op.state == "approved" for op in doc.operations)
    if early is not None:
        early.expect(_files_for(approved))
    try:
        if progress is not None:
            progress.stage("writing")
        namespace = deployment_namespace_for(out, flag=deployment_namespace, manifest=manifest, parsed=result.manifest)
        with early or BundleInstall(out) as install:  # each emitter's files are written while the next emits
            generation = Generation(deployment_namespace=namespace)
            emit_bundle(doc, generation, operations_json=result.operations_json, sink=install.add)
            report = install.commit()
        # Nothing carried forward: ``out`` holds exactly the files written (each read back as written),
        # so they are hashed as they are in memory rather than read again.
        digest = bundle_hash(out) if report.carried else directory_hash(install.files)
    except BundleError as exc:
        return CompileOutcome(diagnostics=(*diagnostics, _bundle_error(exc)), operations=operations, approved=approved)
    return CompileOutcome(
        diagnostics=(*diagnostics, *report.warnings),
        operations=operations,
        approved=approved,
        files=report.files,
        bundle_hash=digest,
    )


def _paint(text: str, colour: str, enabled: bool) -> str:
    return f"{_COLOURS[colour]}{text}{_RESET}" if enabled else text


def _location(item: Diagnostic) -> str:
    if item.file is None:
        return item.pointer or ""
    where = item.file
    if item.line is not None:
        where += f":{item.line}"
        if item.column is not None:
            where += f":{item.column}"
    return where + (f" {item.pointer}" if item.pointer else "")


def render_diagnostics(diagnostics: Sequence[Diagnostic], *, colour: bool = False) -> str:
    """Diagnostics as text, grouped by severity (errors first) then by operation (service-wide first)."""
    lines: list[str] = []
    for severity in _SEVERITY_ORDER:
        group = [d for d in diagnostics if d.severity == severity]
        if not group:
            continue
        lines.append(_paint(f"{severity}s ({len(group)})", severity, colour))
        operations = sorted({d.operation or "" for d in group})
        for operation in operations:
            lines.append("  " + _paint(operation or "(service)", "bold", colour))
            for item in (d for d in group if (d.operation or "") == operation):
                code = _paint(f"{item.code}", severity, colour)
                where = _location(item)
                suffix = "  " + _paint(f"[{where}]", "dim", colour) if where else ""
                lines.append(f"    {code}  {item.message}{suffix}")
                if item.hint:
                    lines.append("      " + _paint(f"hint: {item.hint}", "dim", colour))
    return "\n".join(lines)


def _counts(diagnostics: Sequence[Diagnostic]) -> str:
    parts = []
    for severity in _SEVERITY_ORDER:
        n = sum(d.severity == severity for d in diagnostics)
        if n:
            parts.append(f"{n} {severity}{'s' if n != 1 else ''}")
    return ", ".join(parts)


def _use_colour(args: argparse.Namespace, stream: TextIO) -> bool:
    return not args.no_color and "NO_COLOR" not in os.environ and stream.isatty()


def max_file_bytes(environ: Mapping[str, str]) -> int | None:
    """``ANVIL_MAX_FILE_BYTES``: the per-file limit for the spec, its ``$ref`` files and the manifest
    (a whole number of bytes; unset: 64 MiB).

    Raises:
        ConfigError: ``config/invalid`` for anything but a positive whole number.
    """
    from anvil.air.runtime_env import registered

    raw = environ.get(registered("ANVIL_MAX_FILE_BYTES"), "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(
            "config/invalid", "ANVIL_MAX_FILE_BYTES must be a whole number of bytes.", hint="Unset it for 64 MiB."
        )
    return int(raw)


def run(args: argparse.Namespace) -> int:
    """Run ``anvil compile``; return the exit status (0 ok, 1 error diagnostics, 2 usage)."""
    from anvil.air.codec import SERVICE_ID_PATTERN

    if args.service is not None and not SERVICE_ID_PATTERN.match(args.service):
        raise UsageError(
            "cli/invalid_service_id",
            f"--service {args.service!r} is not a valid service id",
            hint="Use a lowercase slug of 1-64 characters: letters, digits, '-' and '_', starting with a letter.",
        )
    from anvil.bundle.generation import DEPLOYMENT_NAMESPACE_PATTERN

    namespace = args.deployment_namespace
    if namespace is not None and not DEPLOYMENT_NAMESPACE_PATTERN.fullmatch(namespace):
        raise UsageError(
            "cli/invalid_deployment_namespace",
            f"--deployment-namespace {namespace!r} is not a provider-safe deployment namespace",
            hint="Use 1-128 lowercase letters, digits and '-', starting with a letter (e.g. payments-prod-eu).",
        )
    root = Path(args.root) if args.root else None
    if root is not None and not root.is_dir():
        raise UsageError("cli/usage", f"--root {args.root} is not a directory", hint="Pass an existing directory.")
    spec, out = Path(args.spec), Path(args.out)
    manifest = Path(args.manifest) if args.manifest else None
    limit = max_file_bytes(os.environ)
    from anvil.load.ahead import ParseAhead
    from anvil.load.files import DEFAULT_MAX_FILE_BYTES

    # The spec's parse starts before the progress thread does: it is forked only while there is one thread.
    with (
        ParseAhead(spec, max_file_bytes=DEFAULT_MAX_FILE_BYTES if limit is None else limit) as ahead,
        Progress(sys.stderr, spec.name, enabled=sys.stderr.isatty()) as progress,
    ):
        outcome = compile_bundle(
            spec,
            out=out,
            manifest=manifest,
            service_id=args.service,
            root=root,
            spec_root=Path(args.spec_root) if args.spec_root else None,
            progress=progress,
            deployment_namespace=namespace,
            max_file_bytes=limit,
            ahead=ahead,
        )
    if args.json:
        print(json.dumps(outcome.to_json(), ensure_ascii=False, indent=2))
        return 0 if outcome.ok else 1
    if outcome.diagnostics:
        print(render_diagnostics(outcome.diagnostics, colour=_use_colour(args, sys.stderr)), file=sys.stderr)
    counts = _counts(outcome.diagnostics)
    if outcome.bundle_hash is None:
        print(f"Not compiled: {args.spec} -> nothing written to {args.out} ({counts}).", file=sys.stderr)
        return 1
    summary = (
        f"Compiled {outcome.operations} operations ({outcome.approved} approved) from {args.spec} -> {args.out} "
        f"({outcome.files} files), bundle {outcome.bundle_hash[:12]}"
    )
    print(summary + (f"; {counts}" if counts else ""))
    return 0 if outcome.ok else 1
