"""``anvil init`` with a hostile spec: no string the spec chose can change what the written manifest says.

The spec is untrusted (a vendor's, a URL's, a pull request's). The reviewer's reproduction: an
operationId holding ``\\n    risk: low\\n    confirmation: {required: false}\\n  #`` became keys of the
entry beside its comment, and ``anvil approve`` then served an irreversible destructive delete as low
risk with no confirmation. Now such names are refused at load, every other spec string is written as
one line, and init reads back what it wrote before writing it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings, strategies as st

from anvil.cli import main
from anvil.compiler import build
from anvil.compiler.manifest.parse import parse_manifest
from anvil.load.controls import has_control

INJECTION = "\n    risk: low\n    confirmation: {required: false}\n  #"
#: Every character YAML or a terminal takes for a line break, and the other controls the reviewer named.
BREAKS = ("\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def _spec(
    *,
    operation_id: str = "deleteItem",
    path: str = "/items/{id}",
    summary: str = "Delete an item",
    header: str = "Idempotency-Key",
    scheme: str = "apiKey",
) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
        {
            "name": header,
            "in": "header",
            "required": True,
            "description": "An idempotency key.",
            "schema": {"type": "string"},
        },
    ]
    if "{id}" not in path:
        params = params[1:]
    return {
        "openapi": "3.0.3",
        "info": {"title": "Items", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "components": {"securitySchemes": {scheme: {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
        "security": [{scheme: []}],
        "paths": {
            path: {
                "delete": {
                    "operationId": operation_id,
                    "summary": summary,
                    "parameters": params,
                    "responses": {"204": {"description": "gone"}},
                }
            },
            "/items": {
                "get": {"operationId": "listItems", "summary": summary, "responses": {"200": {"description": "ok"}}}
            },
        },
    }


def _key_block(header: str) -> dict[str, str]:
    return {"strategy": "required_request_key", "key_location": "header", "header": header}


def _write(folder: Path, spec: dict[str, Any]) -> Path:
    path = folder / "openapi.json"
    path.write_text(json.dumps(spec, ensure_ascii=True), encoding="utf-8")  # a lone surrogate stays \ud800
    return path


def _init(capsys: pytest.CaptureFixture[str], spec: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["init", str(spec), "--service", "items", "--out", str(out), "--force", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("brk", BREAKS, ids=lambda c: ascii(c))
def test_an_operation_id_that_would_write_keys_into_the_manifest_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], brk: str
) -> None:
    spec = _write(tmp_path, _spec(operation_id="deleteItem" + INJECTION.replace("\n", brk)))
    out = tmp_path / "anvil.yaml"
    code, _, err = _init(capsys, spec, out)
    assert code == 1 and "source/control_character" in err and "Not written" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [spec]  # no half-written or temporary file


def test_a_path_holding_a_control_character_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, _spec(path="/items/{id}\r    risk: low"))
    out = tmp_path / "anvil.yaml"
    code, _, err = _init(capsys, spec, out)
    assert code == 1 and "source/control_character" in err
    assert not out.exists()


@pytest.mark.parametrize("brk", BREAKS, ids=lambda c: ascii(c))
def test_a_hostile_summary_or_scheme_name_is_one_line_and_changes_no_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], brk: str
) -> None:
    hostile = INJECTION.replace("\n", brk)
    spec = _write(tmp_path, _spec(summary="Delete" + hostile, scheme="key" + hostile))
    out = tmp_path / "anvil.yaml"
    code, _, err = _init(capsys, spec, out, "--propose-effects", f"--auth-scheme=key{hostile}")
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    assert not any(has_control(line) for line in text.split("\n"))  # every line one line, no controls
    parsed = yaml.safe_load(text)
    assert parsed["auth"] == {"scheme": "key" + hostile}  # the scheme name exactly, quoted on one line
    delete = parsed["operations"]["items.items.delete"]
    assert delete["state"] == "review_required" and "risk" not in delete and "confirmation" not in delete
    assert delete["idempotency"] == {
        "strategy": "required_request_key",
        "key_location": "header",
        "header": "Idempotency-Key",
    }


def test_the_reviewers_flow_no_longer_serves_a_destructive_delete_as_low_risk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """init writes the draft, approve approves the delete: the compiled delete keeps its posture."""
    spec = _write(tmp_path, _spec(summary="Delete" + INJECTION.replace("\n", "\r")))
    out = tmp_path / "anvil.yaml"
    assert _init(capsys, spec, out)[0] == 0
    assert main(["approve", str(out), "items.items.delete"]) == 0
    printed = capsys.readouterr().out
    assert "sets " not in printed  # nothing beyond the posture was approved
    doc = build(spec, manifest=out, service_id="items").document
    delete = next(op for op in doc.operations if op.id == "items.items.delete")
    assert delete.is_approved and delete.effect.risk == "destructive" and delete.confirmation.required


def test_a_spec_string_holding_a_lone_surrogate_is_refused_at_load_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, _spec(header="Key\ud800", scheme="key\udfff"))  # JSON spells them \ud800
    out = tmp_path / "anvil.yaml"
    code, _, err = _init(capsys, spec, out, "--auth-scheme=key\udfff")
    assert code == 1 and "source/parse_error" in err and "lone surrogate" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [spec]


# --- the property ----------------------------------------------------------------------------------------------

#: Spec text YAML reads specially but that is no control: quoted when written, kept exactly.
_SYNTAX = [": ", " #", "'", '"', "{", "}", "- ", "&a", "*a", "!!str ", "|", ">", "...", "---", "?", "%", "@", "`", "\\",
           "yes", "null", "~", "0x1", "\u00a0", "\u3000", "é", "名前", "\U0001f600"]  # fmt: skip
#: Controls and separators: folded in comments, escaped in values, refused in operationIds and paths.
_CONTROLS = [*BREAKS, "\x00", "\x1b[2J", "\x7f", "\x9b", "\u202e", "\u200b", "\ufeff", "\ufffe", "\t"]
_NO_CONTROL = st.characters(exclude_categories=["Cc", "Cf", "Cs", "Zl", "Zp"]).filter(lambda c: c not in "\ufffe\uffff")
#: Names a spec may hold (no control): every operationId and path the loader accepts.
_NAME = st.lists(st.one_of(_NO_CONTROL, st.sampled_from(_SYNTAX)), max_size=12).map("".join)
#: Any text of all of Unicode but lone surrogates (which no spec file can hold: a parse error, tested above).
_CHARS = st.one_of(st.characters(codec="utf-8"), st.sampled_from(_SYNTAX + _CONTROLS))
_TEXT = st.lists(_CHARS, max_size=12).map("".join)
#: Mostly names the loader accepts, sometimes any text (then refused at load when it holds a control).
_SPEC_NAME = st.integers(0, 3).flatmap(lambda pick: _TEXT if pick == 0 else _NAME)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    operation_id=_SPEC_NAME,
    path=_SPEC_NAME,
    summary=_TEXT,
    header=_TEXT,
    scheme=st.lists(_CHARS, min_size=1, max_size=12).map("".join),
)
def test_the_manifest_init_writes_reads_back_as_exactly_the_entries_init_meant(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    operation_id: str,
    path: str,
    summary: str,
    header: str,
    scheme: str,
) -> None:
    folder = tmp_path_factory.mktemp("spec")
    spec = _write(
        folder,
        _spec(operation_id=operation_id, path="/items/" + path, summary=summary, header=header, scheme=scheme),
    )
    out = folder / "anvil.yaml"
    code, _, err = _init(capsys, spec, out, "--propose-effects", f"--auth-scheme={scheme}")
    event("written" if code == 0 else "refused")
    if code != 0:  # refused only for a name no spec may hold, at load, and then nothing is written
        assert not out.exists(), err
        assert "source/control_character" in err and (has_control(operation_id) or has_control(path)), err
        return
    assert not has_control(operation_id) and not has_control(path)
    text = out.read_text(encoding="utf-8")
    assert not any(has_control(line) for line in text.split("\n"))
    assert all(line.lstrip().startswith("#") or "#" not in line or '"' in line for line in text.splitlines())
    compiled = build(spec, service_id="items").document
    parsed = yaml.safe_load(text)
    assert set(parsed) == {"service", "auth", "operations"}
    assert parsed["auth"] == {"scheme": scheme} and parsed["service"] == {"name": "items", "display_name": "Items"}
    assert sorted(parsed["operations"]) == sorted(op.id for op in compiled.operations)
    for entry in parsed["operations"].values():
        assert entry["state"] == "review_required"
        assert set(entry) <= {"state", "idempotency"}
        if "idempotency" in entry:
            assert entry["idempotency"] == {
                "strategy": "required_request_key",
                "key_location": "header",
                "header": header,
            }
    manifest, found = parse_manifest(text, "anvil.yaml")
    assert manifest is not None and not [d for d in found if d.severity == "error"]
    assert {entry.key: entry.state for entry in manifest.operations} == dict.fromkeys(
        parsed["operations"], "review_required"
    )
