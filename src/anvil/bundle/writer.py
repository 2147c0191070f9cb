"""The one writer of bundle files: a transactional install (original-core §4.3).

``install_bundle(out, files)`` never edits a bundle in place. It refuses dangerous output paths,
stages the new tree in a hidden sibling (carrying forward every entry that is not compiler-owned, such
as user notes, ``.anvil/`` or proof records), verifies the staged bytes, then swaps directories with a
backup it restores on failure. Whatever goes wrong, the previous bundle is left as it was. A live
install holds a lock file in its stage (``flock``, POSIX); the next install beside it deletes any stage
whose lock nobody holds, which only a killed compile leaves.

Compiler-owned roots are the top-level names the generated paths live under plus the roots the
original generator owns, so a root the generator stopped producing is still cleaned out.
"""

from __future__ import annotations

import os
import queue
import secrets
import shutil
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from anvil._dataclass import dataclass
from anvil.bundle.emit import owned_roots
from anvil.bundle.generation import parse_generation
from anvil.diagnostics import Diagnostic, diagnostic
from anvil.errors import BundleError

__all__ = ["GENERATOR_ROOTS", "BundleInstall", "InstallReport", "check_relative_path", "install_bundle"]

#: Top-level names owned by the generator even when this compile emits nothing under them.
GENERATOR_ROOTS: frozenset[str] = frozenset(
    {
        "air.yaml",
        "air.json",
        "generation.json",
        "catalog.json",
        "tools.json",
        "harness.json",
        "package.json",
        "schemas",
        "cli",
        "mcp",
        "runtime",
        "skill",
        "plugin",
        ".claude-plugin",
        ".agent",
        "docs",
        "deploy",
        "mock",
        "tests",
    }
)
#: The file a live install holds locked in its stage; a stage whose lock nobody holds was left by a killed
#: compile and is deleted by the next install beside it (removed before the swap).
_LOCK = ".compile-lock"
#: The folder of the stage that holds the empty files made ahead of the bundle's (removed before the swap).
_SLOTS = ".compile-slots"
#: The interpreter's thread switch interval while the writer thread works (see :class:`BundleInstall`).
_SWITCH_S = 0.0002
#: At most this many files are made ahead, whatever is expected (bounded work for a guess).
_MAX_SLOTS = 16384
#: Put on the writer's queue to wake it (not a file).
_WAKE: tuple[str, bytes] = ("", b"")
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallReport:
    """What an install did.

    ``files``: generated files written; ``carried``: top-level non-owned entries carried forward from
    the previous directory (sorted); ``replaced``: an existing directory was swapped out;
    ``warnings``: non-fatal findings (a backup that could not be deleted).
    """

    out: Path
    files: int
    carried: tuple[str, ...] = ()
    replaced: bool = False
    warnings: tuple[Diagnostic, ...] = ()


def _unsafe_path(rel: str, why: str) -> BundleError:
    return BundleError(
        "bundle/path_unsafe",
        f"refusing to write bundle path {rel!r}: {why}",
        hint="This is a generator bug: generated paths must be relative POSIX paths inside the bundle.",
    )


def check_relative_path(rel: str) -> None:
    """Accept only a relative POSIX path with no empty, ``.`` or ``..`` segment and no backslash.

    Raises:
        BundleError: ``bundle/path_unsafe`` otherwise.
    """
    if not rel or rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise _unsafe_path(rel, "not a relative path")
    if "\\" in rel or "\0" in rel:
        raise _unsafe_path(rel, "contains a backslash or NUL")
    if any(part in ("", ".", "..") for part in rel.split("/")):
        raise _unsafe_path(rel, "has an empty, '.' or '..' segment")


def _unsafe_out(out: Path, why: str) -> BundleError:
    return BundleError(
        "bundle/out_unsafe",
        f"refusing to write a bundle to {out}: {why}",
        hint="Choose a dedicated output directory, e.g. --out build/<service>.",
    )


def _is_bundle(directory: Path) -> bool:
    if not (directory / "air.json").is_file():
        return False
    try:
        parse_generation((directory / "generation.json").read_bytes())
    except (OSError, BundleError):
        return False
    return True


def _check_out(out: Path) -> bool:
    """Refuse unsafe targets; return True when ``out`` exists (an empty dir or a bundle to replace)."""
    if out.is_symlink():
        raise _unsafe_out(out, "it is a symlink")
    resolved = out.resolve()
    if resolved == Path(resolved.anchor):
        raise _unsafe_out(out, "it is the filesystem root")
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise _unsafe_out(out, "it is the working directory or one of its parents")
    if not out.exists():
        return False
    if not out.is_dir():
        raise BundleError(
            "bundle/out_not_bundle",
            f"{out} exists and is not a directory",
            hint="Remove it or choose another --out.",
        )
    if (out / ".git").exists():
        raise _unsafe_out(out, "it contains a .git repository")
    entries = [entry for entry in os.listdir(out) if entry != ".anvil"]
    if entries and not _is_bundle(out):
        raise BundleError(
            "bundle/out_not_bundle",
            f"{out} is not empty and is not an Anvil bundle (no air.json with a valid generation.json)",
            hint="Choose an empty or new directory for --out; Anvil only replaces its own bundles.",
        )
    return True


def _sibling(out: Path, kind: str) -> Path:
    while True:
        candidate = out.parent / f".{out.name}.{kind}-{secrets.token_hex(4)}"
        if not os.path.lexists(candidate):
            return candidate


def _hold(stage: Path) -> int | None:
    """Make and lock ``stage``'s lock file for as long as the returned descriptor is open (None: no
    ``flock`` here, so no stage is ever judged stale)."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    fd = os.open(stage / _LOCK, _WRITE_FLAGS, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _sweep(out: Path) -> None:
    """Delete the stages beside ``out`` that killed installs left: a hidden ``compile-stage`` directory
    whose lock file exists and nobody holds. One without a lock file (being made, or older) is left."""
    try:
        import fcntl
    except ImportError:
        return
    prefix = f".{out.name}.compile-stage-"
    try:
        entries = [entry for entry in os.scandir(out.parent) if entry.name.startswith(prefix)]
    except OSError:
        return
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            fd = os.open(os.path.join(entry.path, _LOCK), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a live install holds it
        else:
            shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            os.close(fd)


def _carry(out: Path, stage: Path, roots: frozenset[str]) -> tuple[str, ...]:
    carried = []
    for entry in sorted(os.listdir(out)):
        if entry in roots:
            continue
        source, target = out / entry, stage / entry
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
        carried.append(entry)
    return tuple(carried)


def _write(stage: Path, rel: str, data: bytes, made: set[str] | None = None, slot: Path | None = None) -> None:
    """Write ``data`` at ``rel`` under ``stage``; ``made``: the folders this install already made or checked;
    ``slot``: an empty file made ahead of time to fill and link there (see :class:`BundleInstall`)."""
    *folders, name = rel.split("/")
    current = stage
    for depth, folder in enumerate(folders):
        current = current / folder
        if made is not None:
            key = "/".join(folders[: depth + 1])
            if key in made:
                continue  # already made or checked by this install: a directory, not a link
        if current.is_symlink():
            raise _unsafe_path(rel, f"{folder!r} is a symlink")
        try:
            current.mkdir()
        except FileExistsError:
            if not current.is_dir():
                raise _unsafe_path(rel, f"{folder!r} is already a file") from None
        if made is not None:
            made.add(key)  # once it exists: another writer skipping it can write inside
    if slot is not None and _fill_slot(slot, current / name, rel, data):
        return
    try:
        fd = os.open(current / name, _WRITE_FLAGS, 0o644)
    except FileExistsError:
        raise _unsafe_path(rel, "the path is written twice or is already a directory") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _fill_slot(slot: Path, target: Path, rel: str, data: bytes) -> bool:
    """Write ``data`` into the empty ``slot`` and link it at ``target``; False where links are refused.

    A link never replaces an existing path, so a path written twice is still caught.
    """
    fd = os.open(slot, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    try:
        os.link(slot, target, follow_symlinks=False)
    except FileExistsError:
        raise _unsafe_path(rel, "the path is written twice or is already a directory") from None
    except OSError:
        return False  # a filesystem without hard links: the slot is removed with the rest
    os.unlink(slot)
    return True


def _check_written(stage: Path, rel: str, data: bytes) -> None:
    if (stage / rel).read_bytes() != data:
        raise BundleError("bundle/out_unwritable", f"staged bytes of {rel} differ from the generated bytes")


def _check_owned(stage: Path, files: Mapping[str, bytes], roots: frozenset[str]) -> None:
    for root in roots:
        top = stage / root
        if not top.is_dir():
            continue
        for current, _dirs, names in os.walk(top):
            for name in names:
                rel = (Path(current) / name).relative_to(stage).as_posix()
                if rel not in files:
                    raise BundleError("bundle/out_unwritable", f"unexpected file {rel} inside a compiler-owned root")


def _swap(out: Path, stage: Path, existed: bool) -> Path | None:
    """Move ``stage`` to ``out``; an existing ``out`` goes to a backup that is restored on failure."""
    if not existed:
        try:
            os.rename(stage, out)
        except OSError as exc:
            raise _unwritable(out, exc) from exc
        return None
    backup = _sibling(out, "compile-backup")
    try:
        os.rename(out, backup)
    except OSError as exc:
        raise _unwritable(out, exc) from exc
    try:
        os.rename(stage, out)
    except OSError as exc:
        os.rename(backup, out)
        raise _unwritable(out, exc) from exc
    return backup


def _discard_backup(backup: Path) -> tuple[Diagnostic, ...]:
    try:
        shutil.rmtree(backup)
    except OSError as exc:
        return (
            diagnostic(
                "bundle/backup_not_removed",
                f"the new bundle is installed but the previous one could not be deleted from {backup}: {exc}",
                hint="Delete the backup directory by hand.",
            ),
        )
    return ()


def _unwritable(out: Path, exc: BaseException) -> BundleError:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return BundleError(
        "bundle/out_unwritable",
        f"cannot write the bundle to {out}: {reason}",
        hint="Check that --out names a writable directory path; the previous bundle (if any) is unchanged.",
    )


class BundleInstall:
    """A transactional install fed while the files are still being produced (original-core §4.3).

    The output is checked and a hidden stage made on construction; :meth:`add` hands files to a writer
    thread that writes and reads back each one while the caller emits the next (writing a large bundle
    is mostly kernel time, which then runs beside the emission); :meth:`commit` writes what is still
    queued beside the thread (which file of two conflicting paths fails first may then vary, never that
    one fails), carries the entries that are not compiler-owned forward, checks no stray file sits in an owned root
    and swaps the stage in. Leaving the ``with`` block without committing deletes the stage, so the
    previous bundle at ``out`` stays as it was whatever goes wrong.

    Making a file is the dear part on some filesystems (an inode costs 0.4-0.7 ms on this project's
    ext4 VMs, filling one microseconds): with ``slots``, the thread makes up to that many empty files
    while nothing waits to be written (say while the spec is still compiled), and each bundle file
    then fills one and is linked at its path (a link never replaces a path, so a path written twice is
    still refused); the spare ones are deleted before the swap. While the thread lives, the interpreter
    switches threads every 0.2 ms (not 5), or a thread that mostly waits on the kernel would get the
    interpreter back only every 5 ms while the compiler computes. :meth:`expect` sets how many files
    to make ahead once the caller knows better.

    Raises:
        BundleError: as :func:`install_bundle`, from the constructor (the output), :meth:`add` (a bad
            path) or :meth:`commit` (staging or swapping failed).
    """

    def __init__(self, out: Path, *, slots: int = 0) -> None:
        self._out = Path(os.path.abspath(out))
        self._existed = _check_out(self._out)
        try:
            self._out.parent.mkdir(parents=True, exist_ok=True)
            _sweep(self._out)
            self._stage = _sibling(self._out, "compile-stage")
            self._stage.mkdir()
        except OSError as exc:
            raise _unwritable(self._out, exc) from exc
        try:
            self._lock = _hold(self._stage)
        except OSError as exc:
            shutil.rmtree(self._stage, ignore_errors=True)
            raise _unwritable(self._out, exc) from exc
        self._files: dict[str, bytes] = {}
        self._pending: queue.SimpleQueue[tuple[str, bytes] | None] = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._done = False
        self._slots = min(max(0, slots), _MAX_SLOTS)
        # Shared by the writer thread and, once the files are all queued, the committing thread.
        self._spare: list[Path] = []
        self._numbered = 0
        self._made: set[str] = set()
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch, _SWITCH_S))
        self._thread = threading.Thread(target=self._drain, name="anvil-bundle-writer", daemon=True)
        self._thread.start()

    def __enter__(self) -> BundleInstall:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.discard()

    def discard(self) -> None:
        """Delete the stage unless committed (idempotent): nothing at ``out`` changes."""
        if not self._done:
            self._finish_writes()
            shutil.rmtree(self._stage, ignore_errors=True)
            self._done = True
            self._release()

    def _release(self) -> None:
        """Close the stage's lock (after the stage is swapped in or deleted)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    @property
    def files(self) -> Mapping[str, bytes]:
        """Every file added so far (relative POSIX path -> bytes), in the order added."""
        return self._files

    def expect(self, count: int) -> None:
        """Make up to ``count`` files ahead in all (say once the compile knows about how many it emits)."""
        self._slots = min(max(0, count), _MAX_SLOTS)
        self._pending.put(_WAKE)  # a thread waiting for files goes back to making them

    def add(self, files: Mapping[str, bytes]) -> None:
        """Queue ``files`` (relative POSIX path -> bytes) to be written, in the order given."""
        for rel, data in files.items():
            check_relative_path(rel)
            if rel in self._files:
                raise _unsafe_path(rel, "the path is written twice")
            self._files[rel] = data
            self._pending.put((rel, data))

    def commit(self) -> InstallReport:
        """Finish the writes and swap the stage in as the bundle at ``out``."""
        if self._done:
            raise RuntimeError("this install is already committed or discarded")
        self._finish_writes()
        self._done = True
        out, stage = self._out, self._stage
        try:
            if self._failure is not None:
                raise self._failure
            if os.path.lexists(stage / _SLOTS):
                shutil.rmtree(stage / _SLOTS)
            if os.path.lexists(stage / _LOCK):
                os.unlink(stage / _LOCK)  # still held: a sweep that opened it before cannot lock it
            roots = owned_roots(tuple(self._files)) | GENERATOR_ROOTS
            # Carried after the writes: no carried entry is an owned root, so none meets a written path.
            carried = _carry(out, stage, roots) if self._existed else ()
            _check_owned(stage, self._files, roots)
            backup = _swap(out, stage, self._existed)
        except BundleError:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        except OSError as exc:
            shutil.rmtree(stage, ignore_errors=True)
            raise _unwritable(out, exc) from exc
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        finally:
            self._release()
        warnings = _discard_backup(backup) if backup is not None else ()
        return InstallReport(
            out=out, files=len(self._files), carried=carried, replaced=self._existed, warnings=warnings
        )

    def _finish_writes(self) -> None:
        self._help()
        self._pending.put(None)
        self._thread.join()
        sys.setswitchinterval(self._switch)

    def _help(self) -> None:
        """Write what is still queued from this thread too, beside the writer (both mostly wait on the kernel)."""
        while True:
            try:
                item = self._pending.get_nowait()
            except queue.Empty:
                return
            if item is not None and item is not _WAKE:
                self._put(*item)

    def _put(self, rel: str, data: bytes) -> None:
        if self._failure is not None:
            return  # the first failure is the answer; the rest is discarded with the stage
        try:
            slot = self._spare.pop()
        except IndexError:
            slot = None
            self._numbered += 1  # made where it belongs: one file fewer to make ahead
        try:
            _write(self._stage, rel, data, self._made, slot)
            _check_written(self._stage, rel, data)
        except Exception as exc:  # raised by commit, whatever it is: a missing file must not be swapped in
            if self._failure is None:
                self._failure = exc

    def _drain(self) -> None:
        folder = self._stage / _SLOTS
        if self._slots:
            try:
                folder.mkdir()
            except OSError:
                self._slots = 0
        while True:
            try:
                item = self._pending.get_nowait() if self._numbered < self._slots else self._pending.get()
            except queue.Empty:  # nothing to write yet: make the next empty file
                slot = folder / str(self._numbered)
                self._numbered += 1
                try:
                    os.close(os.open(slot, _WRITE_FLAGS, 0o644))
                except OSError:
                    self._slots = 0  # making them fails: the files are made where they belong
                else:
                    self._spare.append(slot)
                continue
            if item is None:
                return
            if item is not _WAKE:
                self._put(*item)


def install_bundle(out: Path, files: Mapping[str, bytes]) -> InstallReport:
    """Install ``files`` (relative POSIX path -> bytes) as the bundle at ``out``, transactionally.

    Raises:
        BundleError: ``bundle/path_unsafe`` for a bad generated path; ``bundle/out_unsafe`` for the
            filesystem root, the working directory (or a parent), a symlink or a directory holding
            ``.git``; ``bundle/out_not_bundle`` for a non-empty directory that is not a bundle, or a
            file; ``bundle/out_unwritable`` when staging or swapping fails. In every case the previous
            directory at ``out`` is unchanged.
    """
    for rel in files:
        check_relative_path(rel)
    with BundleInstall(out) as install:
        install.add({rel: files[rel] for rel in sorted(files)})
        return install.commit()
