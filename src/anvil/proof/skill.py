"""Reading the skill reference back: what ``skill/reference/operations.md`` claims, per operation.

The reference is the agent's view of the bundle, so its shape is a contract (original-core §8.3):
the ``### `<cli command>`  (id: `<id>`, tool: `<tool>`)`` heading of every approved operation, its
``- Semantics:`` flags and ``- Undo:`` line, and the "Pending approval (not callable)" list. This
module parses those claims without trusting them; the lanes compare them with AIR.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from anvil._dataclass import dataclass

__all__ = ["REFERENCE_PATH", "SkillClaim", "SkillReference", "parse_reference", "read_reference"]

#: Where the operations reference lives in a bundle.
REFERENCE_PATH: Final = "skill/reference/operations.md"
_HEADING: Final = re.compile(r"^### `(?P<cli>[^`]+)`\s+\(id: `(?P<id>[^`]+)`, tool: `(?P<tool>[^`]+)`\)\s*$")
_PENDING_ITEM: Final = re.compile(r"^- `(?P<cli>[^`]+)` — ")
_MAX_BYTES: Final = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillClaim:
    """One approved operation as the reference describes it."""

    operation_id: str
    cli: str
    tool: str
    semantics: tuple[str, ...] = ()
    undo: str | None = None

    @property
    def confirm_required(self) -> bool:
        """The ``confirm-required`` flag."""
        return "confirm-required" in self.semantics

    @property
    def key_required(self) -> bool:
        """The ``idempotency-key-required`` flag."""
        return "idempotency-key-required" in self.semantics

    @property
    def retry_safe(self) -> bool:
        """The ``retry-safe`` flag."""
        return "retry-safe" in self.semantics


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillReference:
    """Every claim of the reference: approved operations (document order) and pending CLI commands."""

    approved: tuple[SkillClaim, ...] = ()
    pending: tuple[str, ...] = ()

    def claim(self, operation_id: str) -> SkillClaim | None:
        """The claim about ``operation_id``, if the reference lists it as approved."""
        return next((claim for claim in self.approved if claim.operation_id == operation_id), None)


def parse_reference(text: str) -> SkillReference:
    """Parse the reference text (never raises: what does not parse is simply not claimed)."""
    approved: list[SkillClaim] = []
    pending: list[str] = []
    section = ""
    current: dict[str, object] | None = None

    def close() -> None:
        if current is not None:
            approved.append(SkillClaim(**current))  # type: ignore[arg-type]

    for line in text.splitlines():
        if line.startswith("## "):
            close()
            current = None
            section = line[3:].strip()
            continue
        if section.startswith("Approved"):
            match = _HEADING.match(line)
            if match:
                close()
                current = {"operation_id": match["id"], "cli": match["cli"], "tool": match["tool"]}
            elif current is not None and line.startswith("- Semantics:"):
                current["semantics"] = tuple(part.strip() for part in line.split(":", 1)[1].split(","))
            elif current is not None and line.startswith("- Undo:"):
                current["undo"] = line.split(":", 1)[1].strip()
        elif section.startswith("Pending"):
            item = _PENDING_ITEM.match(line)
            if item:
                pending.append(item["cli"])
    close()
    return SkillReference(approved=tuple(approved), pending=tuple(pending))


def read_reference(directory: Path) -> SkillReference | None:
    """Parse ``<bundle>/skill/reference/operations.md``; None when it is missing or unreadable."""
    path = directory / REFERENCE_PATH
    try:
        if path.is_symlink() or path.stat().st_size > _MAX_BYTES:
            return None
        return parse_reference(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
