"""The shape to keep: imports flow one way between stages, and only the CLI reads the environment."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "anvil"
CORE = {"anvil", "anvil._types", "anvil.codes", "anvil.diagnostics", "anvil.errors"}

# stage -> stages it may import (besides itself and the core modules)
ALLOWED: dict[str, set[str]] = {
    "air": set(),
    "load": set(),
    "compiler": {"air", "load"},
    "bundle": {"air", "compiler", "load"},
    "ledger": {"air"},
    "runtime": {"air", "ledger"},
    "serve": {"air", "runtime", "ledger", "bundle"},
    "deploy": {"air", "bundle"},
    "proof": {"air", "bundle", "runtime", "ledger", "serve", "compiler", "load", "deploy"},
    "cli": {"air", "bundle", "compiler", "load", "runtime", "ledger", "serve", "deploy", "proof"},
}


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "anvil" and parts[1] in ALLOWED else None


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_stages_import_only_the_stages_to_their_left() -> None:
    violations = []
    for path in sorted(SRC.rglob("*.py")):
        module = "anvil." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        own = _stage(module)
        for imported in _imports(path):
            if not imported.startswith("anvil") or imported in CORE:
                continue
            target = _stage(imported)
            if own is None:
                continue  # core modules are checked below
            if target is not None and target != own and target not in ALLOWED[own]:
                violations.append(f"{module} imports {imported}")
    assert violations == []


def test_core_modules_import_no_stage() -> None:
    for name in ("_types.py", "codes.py", "diagnostics.py", "errors.py"):
        stages = [m for m in _imports(SRC / name) if _stage(m) is not None]
        assert stages == [], name


def test_only_the_cli_reads_the_environment() -> None:
    readers = []
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] == "cli":
            continue
        text = path.read_text(encoding="utf-8")
        if "os.environ" in text or "os.getenv" in text or "getenv(" in text:
            readers.append(str(path.relative_to(SRC)))
    assert readers == []
