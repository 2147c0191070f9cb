"""Regenerate ``src/anvil/_prepared_inits.py``: the ``__init__`` texts ``anvil serve`` makes before its first listing.

    PYTHONPATH=src .venv/bin/python scripts/prepare_inits.py

:mod:`anvil._dataclass` writes each dataclass ``__init__`` as text with positions for the field names and
compiles it once per text. The texts the payments example's serve start makes before its first
``tools/list`` (as ``tests/serve/test_cold_start.py`` starts it) are written here as plain functions, so
their bytecode is cached with the module's and start-up compiles none of them. Run it after changing the
fields of a dataclass the start-up makes (``test_cold_start`` says when); a text missing from the module is
compiled when needed, with the same result.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULE = REPO / "src" / "anvil" / "_prepared_inits.py"

HEAD = '''"""Prepared ``__init__`` templates of :mod:`anvil._dataclass` (by ``scripts/prepare_inits.py``; do not edit).

Each function is a text ``anvil._dataclass`` writes for an ``__init__`` (fields as positions), stored with
that text: importing this module loads their bytecode from its cache instead of compiling the texts.
"""

# ruff: noqa
# fmt: off
# mypy: ignore-errors

from types import FunctionType

TEMPLATES: list[tuple[str, FunctionType]] = []

'''


def render(texts: list[str]) -> str:
    """The module's source for ``texts``."""
    entries = [f"{text}\nTEMPLATES.append(({text!r}, __create_fn__))\n" for text in sorted(set(texts))]
    return "".join([HEAD, *entries])


def started_texts() -> list[str]:
    """The ``__init__`` texts a serve start of the payments example makes before its first listing."""
    sys.path.insert(0, str(REPO / "src"))
    from anvil.cli.compile import compile_bundle

    spec = importlib.util.spec_from_file_location("cold_start", REPO / "tests" / "serve" / "test_cold_start.py")
    assert spec is not None and spec.loader is not None
    cold = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cold)
    example = REPO / "examples" / "payments"
    with tempfile.TemporaryDirectory(prefix="anvil-inits-") as scratch:
        out = Path(scratch) / "payments"
        compile_bundle(
            example / "openapi.yaml", out=out, manifest=example / "anvil.yaml", service_id="payments", root=REPO
        )
        texts: list[str] = cold._start(out, Path(scratch) / "ledger.db")["templates"]
    return texts


def main() -> int:
    texts = started_texts()
    MODULE.write_text(render(texts), encoding="utf-8")
    print(f"{MODULE.relative_to(REPO)}: {len(set(texts))} templates")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
