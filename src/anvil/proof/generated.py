"""Generated-bytes agreement: every compiler-owned byte equals a fresh projection of the bundle's AIR.

The proof lanes ask the same question ``anvil deploy ledger`` asks, with the same answer:
:func:`anvil.deploy.freshness.check_freshness` regenerates the bundle from its own ``air.json`` and
``generation.json`` (the persisted generator inputs) and compares byte for byte. This module only
turns that verdict into a certification check's detail.
"""

from __future__ import annotations

from pathlib import Path

from anvil._dataclass import dataclass
from anvil.deploy.freshness import Freshness, check_freshness

__all__ = ["BytesAgreement", "agreement_of", "generated_bytes_agree"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BytesAgreement:
    """The answer: ``ok`` and, when not, which files differ, are missing, or are unexpected."""

    ok: bool
    compared: int = 0
    differing: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    error: str | None = None

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


def agreement_of(freshness: Freshness) -> BytesAgreement:
    """The agreement a :class:`~anvil.deploy.freshness.Freshness` verdict states."""
    if freshness.state in ("malformed", "symlink"):
        return BytesAgreement(ok=False, error=f"cannot regenerate: {freshness.detail}")

    def named(state: str) -> tuple[str, ...]:
        return tuple(check.path for check in freshness.files if check.state == state)

    return BytesAgreement(
        ok=freshness.fresh,
        compared=len(freshness.projection),
        differing=named("tampered"),
        missing=named("missing"),
        unexpected=named("unexpected"),
    )


def generated_bytes_agree(directory: Path) -> BytesAgreement:
    """Regenerate the bundle in ``directory`` from its AIR and generation inputs and compare every byte.

    Files under a compiler-owned root that the compiler would not write count as a difference too
    (a planted ``schemas/extra.json`` is not something the compiler vouches for). Never raises.
    """
    try:
        return agreement_of(check_freshness(directory))
    except OSError as exc:
        return BytesAgreement(ok=False, error=f"cannot regenerate: {exc.strerror or exc}")
