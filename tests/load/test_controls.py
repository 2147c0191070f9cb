"""Control characters: what no spec name may hold, and how spec text is folded to one safe line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil.load.controls import fold_controls, has_control, is_control
from anvil.load.parse import ParseFailure, parse_bytes
from anvil.load.spec import load_spec

#: The line breaks YAML knows (a lone CR looks clean in a terminal), the other separators the reviewer
#: named, an ANSI escape, a bidi override, a zero-width space, the BOM, DEL, a C1 control, a noncharacter.
CONTROLS = ("\n", "\r", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x00", "\x1b", "\u202e",
            "\u200b", "\ufeff", "\x7f", "\x9b", "\ufffe", "\ud800")  # fmt: skip


@pytest.mark.parametrize("char", CONTROLS, ids=ascii)
def test_every_line_break_separator_and_invisible_control_is_a_control(char: str) -> None:
    assert is_control(char) and has_control(f"deleteItem{char}risk")


@pytest.mark.parametrize("name", ["createPet", "/pets/{petId}", "créer", "作成する", "a b", "x\u00a0y", "😀", ""])
def test_ordinary_names_in_any_script_hold_no_control(name: str) -> None:
    assert not has_control(name)


def test_folding_makes_one_line_breaks_a_space_and_every_other_control_its_escape() -> None:
    assert fold_controls("a\nb\r\nc\x85d\u2028e\u2029f\tg") == "a b c d e f g"
    assert fold_controls("red\x1b[31m \u202egnp.exe") == "red\\x1b[31m \\u202egnp.exe"
    assert fold_controls("  plain   text ") == "plain text"
    assert fold_controls("x\ud800") == "x\\ud800"


def _spec(tmp_path: Path, operation_id: str, path: str = "/items/{id}") -> Path:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {path: {"delete": {"operationId": operation_id, "responses": {"204": {"description": "ok"}}}}},
    }
    file = tmp_path / "openapi.json"
    file.write_text(json.dumps(spec, ensure_ascii=True), encoding="utf-8")
    return file


def test_an_operation_id_holding_the_reviewers_injection_is_refused_at_load_where_it_stands(tmp_path: Path) -> None:
    hostile = "deleteItem\n    risk: low\n    confirmation: {required: false}\n  #"
    found = [d for d in load_spec(_spec(tmp_path, hostile)).diagnostics if d.code == "source/control_character"]
    assert len(found) == 1 and found[0].severity == "error"
    assert (found[0].file, found[0].line) == ("openapi.json", 1) and found[0].column and found[0].column > 1
    assert "\n" not in found[0].message and "deleteItem\\n    risk: low" in found[0].message


@pytest.mark.parametrize("char", ["\r", "\u2028", "\x00"], ids=ascii)
def test_a_path_holding_a_control_is_refused_at_load(tmp_path: Path, char: str) -> None:
    found = load_spec(_spec(tmp_path, "deleteItem", path=f"/items/{{id}}{char}")).diagnostics
    assert [d.code for d in found if d.severity == "error"] == ["source/control_character"]


def test_a_clean_spec_has_no_control_diagnostic(tmp_path: Path) -> None:
    assert not [d for d in load_spec(_spec(tmp_path, "deleteItem")).diagnostics if d.severity == "error"]


def test_a_json_string_holding_a_lone_surrogate_is_a_parse_error_not_a_crash_later() -> None:
    failure = parse_bytes(b'{"openapi": "3.0.3", "x": "key\\ud800"}', "openapi.json")
    assert isinstance(failure, ParseFailure) and "lone surrogate" in failure.message
    paired = parse_bytes(b'{"x": "\\ud83d\\ude00"}', "openapi.json")  # a pair is one character: fine
    assert not isinstance(paired, ParseFailure) and paired.value == {"x": "\U0001f600"}
