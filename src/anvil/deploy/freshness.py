"""Freshness: do a bundle's compiler-owned bytes equal a fresh deterministic projection? (original-ledger §3.7)

The projection is :func:`anvil.bundle.emit.emit_bundle` of the bundle's own ``air.json`` and persisted
generator inputs (``generation.json``). Every compiler-owned file on disk is compared byte for byte with it,
so one changed byte anywhere (Terraform, the runtime manifest, the store contract, the docs) is found and
named. Nothing is written and nothing leaves the machine.

Public API (used by ``anvil deploy ledger``, and meant for ``anvil certify`` and ``anvil status``):

* :func:`check_freshness` ``(directory) -> Freshness`` - every file's :data:`FileState`, the bundle hash
  and the parsed inputs;
* :func:`inspect_store` ``(directory | Freshness) -> StoreInspection`` - the store-contract state machine
  (``fresh`` / ``missing`` / ``corrupt`` / ``stale``) on top of it.

Per-file states (:data:`FileState`):

========== =====================================================================================
fresh      the bytes equal the projection
missing    a compiler-owned file the projection has is absent
tampered   the bytes differ from the projection (hand edit, or emitted by other inputs/compiler)
unexpected an extra file inside a directory the generator owns (root-level extra files are allowed)
symlink    a symbolic link anywhere in the bundle: a hash cannot bind a mutable link target
malformed  a generator input (``air.json``, ``generation.json``) that does not parse, so nothing
           can be projected from it
========== =====================================================================================
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from anvil._dataclass import dataclass
from anvil.air.canonical import sha256_hex
from anvil.air.codec import load_document
from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle, owned_roots
from anvil.bundle.generation import Generation, parse_generation
from anvil.bundle.hash import hash_files
from anvil.bundle.store import REQUIREMENT_PREDICATE, STORE_CONTRACT_PATH, firestore_settings, store_contract
from anvil.bundle.writer import GENERATOR_ROOTS
from anvil.errors import AnvilError

__all__ = [
    "ContractState",
    "FileCheck",
    "FileState",
    "Freshness",
    "FreshnessState",
    "StoreInspection",
    "check_freshness",
    "inspect_store",
    "parse_store_contract",
]

FileState = Literal["fresh", "missing", "tampered", "unexpected", "symlink", "malformed"]
#: ``fresh``: every compiler-owned byte agrees; ``stale``: some file is missing, tampered or unexpected;
#: ``malformed``: AIR or the generator inputs do not parse; ``symlink``: the bundle holds a link.
FreshnessState = Literal["fresh", "stale", "malformed", "symlink"]
ContractState = Literal["fresh", "missing", "corrupt", "stale"]

AIR_PATH = "air.json"
GENERATION_PATH = "generation.json"
_SKIPPED_DIRS = frozenset({"node_modules"})
_RECOMPILE = "recompile before planning or proving ledger readiness"


@dataclass(frozen=True, slots=True, kw_only=True)
class FileCheck:
    """One file's verdict. ``detail`` is a one-line reason (empty when fresh)."""

    path: str
    state: FileState
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Freshness:
    """The result of :func:`check_freshness`.

    Attributes:
        directory: the bundle directory (absolute).
        state: the bundle-level verdict (see :data:`FreshnessState`).
        files: every checked path with its state, sorted by path (fresh files included).
        bundle_hash: the bundle hash of the bytes on disk (None when a symlink prevents hashing).
        document: the parsed AIR (None when ``air.json`` is missing or malformed).
        generation: the parsed generator inputs (None when missing or malformed).
        on_disk: the bundle's hashed files as read (path -> bytes).
        projection: the fresh deterministic projection (empty when nothing could be projected).
    """

    directory: Path
    state: FreshnessState
    files: tuple[FileCheck, ...]
    bundle_hash: str | None
    document: Document | None
    generation: Generation | None
    on_disk: dict[str, bytes] = field(repr=False)
    projection: dict[str, bytes] = field(repr=False)

    @property
    def fresh(self) -> bool:
        """True when every compiler-owned byte equals the projection."""
        return self.state == "fresh"

    @property
    def problems(self) -> tuple[FileCheck, ...]:
        """The files that are not fresh, sorted by path."""
        return tuple(check for check in self.files if check.state != "fresh")

    def state_of(self, path: str) -> FileState | None:
        """The state of one relative path, or None when it was not checked."""
        return next((check.state for check in self.files if check.path == path), None)

    @property
    def detail(self) -> str:
        """The problems as ``<path>: <reason>`` entries joined by ``"; "`` (empty when fresh)."""
        return "; ".join(f"{check.path}: {check.detail}" for check in self.problems)


def _read_tree(directory: Path) -> tuple[dict[str, bytes], list[str], list[FileCheck]]:
    """Regular files (node_modules skipped), symlinks, and entries that are neither or cannot be read.

    A FIFO, socket or device is reported, never opened: opening a FIFO would block the check forever.
    """
    files: dict[str, bytes] = {}
    links: list[str] = []
    odd: list[FileCheck] = []
    for current, dirnames, filenames in os.walk(directory, followlinks=False):
        base = Path(current)
        rel_base = base.relative_to(directory).as_posix()
        prefix = "" if rel_base == "." else rel_base + "/"
        kept = []
        for name in sorted(dirnames):
            if (base / name).is_symlink():
                links.append(prefix + name)
            elif name not in _SKIPPED_DIRS:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path, rel = base / name, prefix + name
            try:
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode):
                    links.append(rel)
                elif stat.S_ISREG(mode):
                    files[rel] = path.read_bytes()
                else:
                    odd.append(FileCheck(path=rel, state="malformed", detail="not a regular file"))
            except OSError as exc:
                odd.append(FileCheck(path=rel, state="malformed", detail=f"cannot be read ({exc.strerror})"))
    return files, links, odd


def _parse_inputs(on_disk: dict[str, bytes]) -> tuple[Document | None, Generation | None, list[FileCheck]]:
    problems: list[FileCheck] = []
    document: Document | None = None
    generation: Generation | None = None
    raw_air = on_disk.get(AIR_PATH)
    if raw_air is None:
        problems.append(FileCheck(path=AIR_PATH, state="missing", detail="missing compiler-owned file"))
    else:
        try:
            document = load_document(json.loads(raw_air))
        except (ValueError, UnicodeDecodeError, AnvilError) as exc:
            reason = exc.message if isinstance(exc, AnvilError) else "not valid JSON"
            problems.append(FileCheck(path=AIR_PATH, state="malformed", detail=f"does not load as AIR ({reason})"))
    raw_generation = on_disk.get(GENERATION_PATH)
    if raw_generation is None:
        problems.append(
            FileCheck(
                path=GENERATION_PATH,
                state="missing",
                detail="generation.json is missing or invalid; recompile to persist generator inputs",
            )
        )
    else:
        try:
            generation = parse_generation(raw_generation)
        except AnvilError:
            problems.append(
                FileCheck(
                    path=GENERATION_PATH,
                    state="malformed",
                    detail="generation.json is missing or invalid; recompile to persist generator inputs",
                )
            )
    return document, generation, problems


def _compare(on_disk: dict[str, bytes], projection: dict[str, bytes], reported: set[str]) -> list[FileCheck]:
    checks: list[FileCheck] = []
    for path, data in projection.items():
        if path in reported:
            continue
        actual = on_disk.get(path)
        if actual is None:
            checks.append(FileCheck(path=path, state="missing", detail="missing compiler-owned file"))
        elif actual != data:
            checks.append(FileCheck(path=path, state="tampered", detail="bytes differ from deterministic projection"))
        else:
            checks.append(FileCheck(path=path, state="fresh"))
    owned = owned_roots(projection) | GENERATOR_ROOTS
    for path in on_disk:
        top, sep, _rest = path.partition("/")
        if sep and top in owned and path not in projection:
            checks.append(FileCheck(path=path, state="unexpected", detail="unexpected file inside compiler-owned root"))
    return checks


def check_freshness(directory: Path) -> Freshness:
    """Compare every compiler-owned file of ``directory`` with a fresh projection of its own inputs.

    Never raises for a bad bundle: a missing, malformed, tampered or linked file is a :class:`FileCheck`.

    Raises:
        FileNotFoundError: ``directory`` does not exist or is not a directory.
    """
    directory = Path(os.path.abspath(directory))
    if not directory.is_dir():
        raise FileNotFoundError(str(directory))
    on_disk, links, odd = _read_tree(directory)
    document, generation, problems = _parse_inputs(on_disk)
    problems.extend(odd)
    if links:
        checks = [FileCheck(path=link, state="symlink", detail="unexpected symlink in bundle") for link in links]
        return Freshness(
            directory=directory,
            state="symlink",
            files=tuple(sorted(checks + problems, key=lambda c: c.path)),
            bundle_hash=None,
            document=document,
            generation=generation,
            on_disk=on_disk,
            projection={},
        )
    projection: dict[str, bytes] = {}
    checks = list(problems)
    malformed = document is None
    if document is not None:
        try:
            projection = emit_bundle(document, generation or Generation())
        except AnvilError as exc:
            checks.append(FileCheck(path=AIR_PATH, state="malformed", detail=f"cannot be projected ({exc.message})"))
            malformed = True
        if projection:
            checks.extend(_compare(on_disk, projection, {c.path for c in problems}))
    state: FreshnessState
    if malformed:
        state = "malformed"
    elif any(c.state != "fresh" for c in checks):
        state = "stale"
    else:
        state = "fresh"
    files = sorted(checks, key=lambda c: (c.path, c.state))
    return Freshness(
        directory=directory,
        state=state,
        files=tuple(files),
        bundle_hash=hash_files(on_disk),
        document=document,
        generation=generation,
        on_disk=on_disk,
        projection=projection,
    )


# --- the store contract ------------------------------------------------------------------------


_VARIABLE_STRINGS = frozenset(
    {
        ("serviceId",),
        ("firestore", "namespace"),
        ("firestore", "collectionGroup"),
        ("firestore", "runtimeUri", "terraformExpression"),
        ("firestore", "runtimeUri", "resolvedTemplate"),
    }
)
_SCHEMA_MESSAGE = f"{STORE_CONTRACT_PATH} does not match schema version 1."
_JSON_MESSAGE = f"{STORE_CONTRACT_PATH} is not valid JSON."


class _Mismatch(Exception):
    pass


def _match(value: Any, template: Any, path: tuple[str, ...]) -> None:
    if path in _VARIABLE_STRINGS:
        if not isinstance(value, str) or not value:
            raise _Mismatch
        return
    if path == ("firestore", "retention", "resultTtlSecondsDefault"):
        if type(value) is not int or value < 1:
            raise _Mismatch
        return
    if path == ("requirement", "operationIds"):
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise _Mismatch
        return
    if isinstance(template, dict):
        if not isinstance(value, dict) or set(value) != set(template):
            raise _Mismatch
        for key, inner in template.items():
            _match(value[key], inner, (*path, key))
        return
    if type(value) is not type(template) or value != template:
        raise _Mismatch


def _schema_template(backend: str) -> dict[str, Any] | None:
    """The shape of one variant with placeholder values where the schema only constrains types."""
    base: dict[str, Any] = {
        "schemaVersion": 1,
        "serviceId": "x",
        "required": backend == "firestore",
        "requirement": {"predicate": REQUIREMENT_PREDICATE, "operationIds": []},
        "backend": backend,
    }
    if backend == "none":
        return {**base, "firestore": None}
    if backend == "firestore":
        return {**base, "firestore": firestore_settings("x")}
    return None


def parse_store_contract(data: bytes) -> dict[str, Any]:
    """Strictly parse ``deploy/idempotency-store.json`` bytes (original-ledger §3.5).

    Raises:
        ValueError: the exact message ``... is not valid JSON.`` or ``... does not match schema version 1.``.
    """
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ValueError(_JSON_MESSAGE) from None
    if not isinstance(value, dict):
        raise ValueError(_SCHEMA_MESSAGE)
    backend = value.get("backend")
    template = _schema_template(backend) if isinstance(backend, str) else None
    if template is None:
        raise ValueError(_SCHEMA_MESSAGE)
    try:
        _match(value, template, ())
    except _Mismatch:
        raise ValueError(_SCHEMA_MESSAGE) from None
    ids = value["requirement"]["operationIds"]
    if (value["backend"] == "firestore") != bool(ids):
        raise ValueError(_SCHEMA_MESSAGE)
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreInspection:
    """The store contract's verdict (original-ledger §3.7).

    Attributes:
        state: ``fresh``, ``missing``, ``corrupt`` or ``stale``.
        detail: one sentence; for ``stale`` after a byte check, the failing files joined by ``"; "``.
        path: the absolute contract path.
        contract: the parsed contract (None unless it parsed).
        digest: sha256 of the contract file bytes (None when missing).
        freshness: the underlying bundle check.
    """

    state: ContractState
    detail: str
    path: Path
    contract: dict[str, Any] | None
    digest: str | None
    freshness: Freshness

    @property
    def backend(self) -> str | None:
        """``firestore`` or ``none`` when the contract parsed."""
        return None if self.contract is None else str(self.contract["backend"])


_FIRESTORE_FRESH = (
    "The generated Firestore store contract and every compiler-owned bundle byte match canonical AIR and "
    "persisted generation inputs."
)
_NONE_FRESH = (
    "Canonical AIR does not require a managed idempotency store, and every compiler-owned bundle byte matches "
    "its deterministic projection."
)


def inspect_store(source: Path | Freshness) -> StoreInspection:
    """Run the store-contract state machine; the first failing step wins.

    1. the contract file is absent -> ``missing``; 2. it does not parse strictly -> ``corrupt``;
    3. it differs from the contract recomputed from canonical AIR and the persisted namespace -> ``stale``;
    4. any compiler-owned byte differs from the projection -> ``stale`` naming the files; else ``fresh``.

    Args:
        source: a bundle directory, or an already computed :class:`Freshness`.

    Raises:
        FileNotFoundError: a directory that does not exist.
    """
    freshness = source if isinstance(source, Freshness) else check_freshness(source)
    path = freshness.directory / STORE_CONTRACT_PATH

    def verdict(state: ContractState, detail: str, contract: dict[str, Any] | None = None) -> StoreInspection:
        raw = freshness.on_disk.get(STORE_CONTRACT_PATH)
        digest = None if raw is None else sha256_hex(raw)
        return StoreInspection(
            state=state, detail=detail, path=path, contract=contract, digest=digest, freshness=freshness
        )

    raw = freshness.on_disk.get(STORE_CONTRACT_PATH)
    if raw is None:
        return verdict("missing", f"{STORE_CONTRACT_PATH} is missing; recompile the bundle.")
    try:
        contract = parse_store_contract(raw)
    except ValueError as exc:
        return verdict("corrupt", str(exc))
    if freshness.document is None:
        return verdict("stale", f"air.json cannot be projected; {_RECOMPILE}.", contract)
    try:
        expected = store_contract(freshness.document, freshness.generation or Generation())
    except AnvilError as exc:
        return verdict("stale", f"{exc.message} The contract cannot be recomputed; {_RECOMPILE}.", contract)
    if contract != expected:
        return verdict(
            "stale",
            f"{STORE_CONTRACT_PATH} does not match canonical AIR and the persisted generation inputs; {_RECOMPILE}.",
            contract,
        )
    if not freshness.fresh:
        return verdict("stale", freshness.detail or f"the bundle cannot be projected; {_RECOMPILE}.", contract)
    return verdict("fresh", _FIRESTORE_FRESH if contract["backend"] == "firestore" else _NONE_FRESH, contract)
