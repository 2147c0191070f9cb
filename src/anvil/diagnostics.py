"""Diagnostics: compile-time findings as values, never exceptions."""

from __future__ import annotations

from collections.abc import Iterable

from anvil._dataclass import dataclass
from anvil.codes import Severity, code_info

__all__ = ["Diagnostic", "diagnostic", "has_errors", "worst_severity"]

_RANK = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: a registered code, a severity, a message and where it applies.

    ``file``/``line``/``column`` locate source text (1-based); ``pointer`` is a JSON pointer into the
    document when no line is known; ``operation`` is the AIR id it concerns; ``hint`` says what to do.
    """

    code: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    pointer: str | None = None
    operation: str | None = None
    hint: str | None = None

    def to_json(self) -> dict[str, object]:
        """The diagnostic as a JSON object (absent fields omitted), as ``--json`` prints it."""
        out: dict[str, object] = {"code": self.code, "severity": self.severity, "message": self.message}
        for key in ("file", "line", "column", "pointer", "operation", "hint"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def to_air(self) -> dict[str, object]:
        """The diagnostic as AIR stores it (original-core §1.16: ``level``, ``operationId``, ``path``)."""
        out: dict[str, object] = {"level": self.severity, "code": self.code, "message": self.message}
        if self.operation is not None:
            out["operationId"] = self.operation
        if self.pointer is not None:
            out["path"] = self.pointer
        elif self.file is not None:
            out["path"] = self.file
        if self.line is not None:
            out["line"] = self.line
        if self.column is not None:
            out["column"] = self.column
        return out


def diagnostic(
    code: str,
    message: str,
    *,
    severity: Severity | None = None,
    file: str | None = None,
    line: int | None = None,
    column: int | None = None,
    pointer: str | None = None,
    operation: str | None = None,
    hint: str | None = None,
) -> Diagnostic:
    """Build a diagnostic for a registered code; severity defaults to the registry's.

    Raises:
        KeyError: ``code`` is not registered.
    """
    info = code_info(code)
    level = severity or info.severity or "error"
    return Diagnostic(code, level, message, file, line, column, pointer, operation, hint)


def worst_severity(diagnostics: Iterable[Diagnostic]) -> Severity | None:
    """The most severe level present, or None for no diagnostics."""
    worst: Severity | None = None
    for item in diagnostics:
        if worst is None or _RANK[item.severity] > _RANK[worst]:
            worst = item.severity
    return worst


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    """True when any diagnostic is an error."""
    return any(item.severity == "error" for item in diagnostics)
