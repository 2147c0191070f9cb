"""The code registry is the public contract: emitted codes are registered, registered codes are tested."""

from __future__ import annotations

import re
from pathlib import Path

from anvil.codes import CODES, code_info

SRC = Path(__file__).resolve().parent.parent / "src" / "anvil"
TESTS = Path(__file__).resolve().parent

# A code passed to diagnostic(...), to an AnvilError subclass, or written as code="..."/"code": "..."
_EMITTED = re.compile(
    r"""(?:diagnostic\(\s*|Error\(\s*|code\s*=\s*|["']code["']\s*:\s*)["']([a-z][a-z0-9_]*(?:/[a-z0-9_]+)?)["']"""
)


def _emitted_codes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "codes.py":
            continue
        for match in _EMITTED.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group(1), []).append(str(path.relative_to(SRC)))
    return found


def test_every_code_emitted_in_the_source_is_registered() -> None:
    unregistered = {code: where for code, where in _emitted_codes().items() if code not in CODES}
    assert unregistered == {}


def test_every_registered_code_is_asserted_by_some_test() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in TESTS.rglob("*.py") if path.name != "test_codes.py")
    unasserted = sorted(code for code in CODES if f'"{code}"' not in text and f"'{code}'" not in text)
    assert unasserted == []


def test_diagnostic_codes_carry_a_default_severity_and_a_summary() -> None:
    for code in CODES.values():
        assert code.summary
        assert (code.severity is not None) == (code.kind == "diagnostic")
    assert code_info("unproven_idempotency").severity == "warning"


def test_every_registered_code_is_used_by_the_source() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in SRC.rglob("*.py") if path.name != "codes.py")
    unused = sorted(code for code in CODES if code not in text)
    assert unused == []
