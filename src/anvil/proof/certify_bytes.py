"""Generated-bytes agreement: every compiler-owned byte equals a fresh projection of the bundle's AIR.

This is the one place the proof lanes ask "are the generated files what the compiler would write
now?". It regenerates with :func:`anvil.bundle.emit.emit_bundle` from the bundle's own ``air.json`` and
``generation.json`` (the persisted generator inputs) and compares byte for byte; ``anvil deploy
ledger`` asks the same question, and the two must share one answer (swap this body for deploy's
freshness check when both live on one branch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from anvil.bundle.emit import emit_bundle, owned_roots
from anvil.bundle.hash import bundle_files
from anvil.bundle.read import read_bundle, read_generation
from anvil.errors import AnvilError

__all__ = ["BytesAgreement", "generated_bytes_agree"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BytesAgreement:
    """The answer: ``ok`` and, when not, which files differ, are missing, or are unexpected."""

    ok: bool
    compared: int = 0
    differing: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    error: str | None = None
    paths: tuple[str, ...] = field(default=())

    def detail(self) -> str:
        """One line saying what agreed or what did not (paths only, never contents)."""
        if self.error is not None:
            return self.error
        if self.ok:
            return f"{self.compared} compiler-owned file(s) equal a fresh projection of air.json + generation.json"
        parts = []
        if self.differing:
            parts.append("differ: " + ", ".join(self.differing))
        if self.missing:
            parts.append("missing: " + ", ".join(self.missing))
        if self.unexpected:
            parts.append("not generated: " + ", ".join(self.unexpected))
        return "; ".join(parts)


def generated_bytes_agree(directory: Path) -> BytesAgreement:
    """Regenerate the bundle in ``directory`` from its AIR and generation inputs and compare every byte.

    Files under a compiler-owned root that the compiler would not write count as a difference too
    (a planted ``schemas/extra.json`` is not something the compiler vouches for). Never raises.
    """
    try:
        expected = emit_bundle(read_bundle(directory), read_generation(directory))
        present = bundle_files(directory)
    except AnvilError as exc:
        return BytesAgreement(ok=False, error=f"cannot regenerate: {exc.message}")
    roots = owned_roots(expected)
    owned_present = {path for path in present if path.split("/", 1)[0] in roots}
    differing = tuple(sorted(p for p, data in expected.items() if p in present and present[p] != data))
    missing = tuple(sorted(p for p in expected if p not in present))
    unexpected = tuple(sorted(owned_present - set(expected)))
    ok = not (differing or missing or unexpected)
    return BytesAgreement(
        ok=ok,
        compared=len(expected),
        differing=differing,
        missing=missing,
        unexpected=unexpected,
        paths=tuple(expected),
    )
