"""``docs/reference/`` is generated from the registries by ``scripts/gen_reference.py`` and cannot drift."""

from __future__ import annotations

import argparse
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from anvil.air.meta_keys import EFFECT_REPORT_KEYS, META_KEYS
from anvil.air.runtime_env import OTEL_ENV, RUNTIME_ENV, RUNTIME_ENV_FAMILIES
from anvil.codes import CODES
from anvil.proof.disclosure import INSPECT_KEYS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_reference_is_what_the_registries_generate(gen: ModuleType) -> None:
    assert gen.stale() == [], "run: PYTHONPATH=src .venv/bin/python scripts/gen_reference.py"


def test_a_changed_missing_or_extra_page_is_reported_stale(gen: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "reference"
    shutil.copytree(REPO / "docs" / "reference", out)
    assert gen.stale(out) == []
    codes = out / "codes.md"
    codes.write_text(codes.read_text(encoding="utf-8").replace("`source/not_found`", "`source/gone`"), "utf-8")
    (out / "meta.md").unlink()
    (out / "old.md").write_text("# A page no registry makes\n", encoding="utf-8")
    assert gen.stale(out) == ["codes.md", "meta.md", "old.md"]


def test_the_check_mode_exits_1_and_names_the_page(
    gen: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reference"
    shutil.copytree(REPO / "docs" / "reference", out)
    (out / "cli.md").write_text("stale\n", encoding="utf-8")
    monkeypatch.setattr(gen, "OUT", out)
    assert gen.main(["--check"]) == 1
    assert "docs/reference/cli.md differs" in capsys.readouterr().err
    assert gen.main([]) == 0  # regenerating makes it fresh again
    assert gen.main(["--check"]) == 0


def test_every_code_variable_and_key_of_the_registries_is_on_its_page(gen: ModuleType) -> None:
    pages = gen.render()
    assert all(f"`{name}`" in pages["codes.md"] for name in CODES)
    assert all(f"`{var.name}`" in pages["environment.md"] for var in (*RUNTIME_ENV, *OTEL_ENV))
    assert all(f"`{var.name}<ID>`" in pages["environment.md"] for var in RUNTIME_ENV_FAMILIES)
    assert all(f"`{key.name}`" in pages["meta.md"] for key in (*META_KEYS, *EFFECT_REPORT_KEYS))
    assert all(f"`{key}`" in pages["meta.md"] for key in INSPECT_KEYS)


def test_every_command_and_flag_the_cli_parses_is_on_the_cli_page(gen: ModuleType) -> None:
    from anvil.cli import COMMANDS
    from anvil.cli.run_args import CONTROL_FLAGS

    page = gen.render()["cli.md"]
    parsers = gen._parsers()
    assert {name for name, _, _ in parsers} >= {f"anvil {command}" for command in COMMANDS}
    assert "## `anvil deploy ledger`" in page and "## `anvil ledger resolve`" in page
    flags = {
        flag
        for _, _, parser in parsers
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS  # internal flags
        for flag in action.option_strings
    }
    assert {"--disclosure", "--ttl-seconds", "--propose-effects", "--not-committed"} <= flags
    assert all(f"`{flag}`" in page for flag in flags)
    assert all(f"`--{flag}`" in page for flag in CONTROL_FLAGS if flag != "help")


def test_a_table_cell_keeps_code_and_escapes_what_markdown_would_eat(gen: ModuleType) -> None:
    assert gen._cell("a | b") == "a \\| b"
    assert gen._cell("ANVIL_<PROFILE>_* and `ANVIL_<P>_*`") == "ANVIL_&lt;PROFILE&gt;_\\* and `ANVIL_<P>_*`"
    assert gen._cell("two\n  lines") == "two lines"
