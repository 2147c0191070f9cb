"""``anvil init`` tells the reviewer what it must not decide: a POST that reads, a browser page, a paired
write the write gate never enables; and ``inspect`` and ``status`` say the last from the start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from anvil.cli import main

_ITEM = {"type": "object", "properties": {"id": {"type": "string"}}}
_JSON = {"application/json": {"schema": _ITEM}}
_OK = {"200": {"description": "ok", "content": _JSON}}
SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Shop", "version": "1"},
    "servers": [{"url": "https://shop.example.com"}],
    "paths": {
        "/paymentMethods": {
            "post": {
                "operationId": "post-paymentMethods",
                "summary": "Get a list of available payment methods",
                "responses": _OK,
            }
        },
        "/authorize": {
            "get": {
                "operationId": "authorize",
                "summary": "Authorize user",
                "responses": {"200": {"description": "the page", "content": {"text/html": {"schema": {}}}}},
            }
        },
        "/notes": {
            "get": {"operationId": "listNotes", "responses": _OK},
            "post": {"operationId": "createNote", "summary": "Create a note", "responses": _OK},
        },
        "/links": {"post": {"operationId": "createLink", "summary": "Create a payment link", "responses": _OK}},
        "/links/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "patch": {
                "operationId": "updateLink",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"status": {"type": "string", "enum": ["active", "expired"]}},
                            }
                        }
                    },
                },
                "responses": _OK,
            },
        },
        "/notes/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"operationId": "getNote", "responses": _OK},
            "delete": {"operationId": "deleteNote", "responses": {"204": {"description": "gone"}}},
        },
    },
}


def _anvil(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _init(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, str]:
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    manifest = tmp_path / "not" / "yet" / "anvil.yaml"  # a folder that does not exist yet
    argv = ["init", str(spec), "--service", "shop", "--out", str(manifest), "--approve", "reads", "--propose-effects"]
    code, out, err = _anvil(capsys, *argv)
    assert code == 0, err
    return spec, manifest, out


def _entry(text: str, op_id: str) -> list[str]:
    """The lines of one operation entry (its key line to the blank line after it)."""
    lines = text.splitlines()
    start = lines.index(f"  {op_id}:")
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def test_init_writes_into_a_folder_it_creates_and_proposes_a_read_only_as_a_comment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, manifest, out = _init(tmp_path, capsys)
    text = manifest.read_text(encoding="utf-8")
    entry = _entry(text, "shop.payment_methods.create")
    assert "    # side_effect: read" in entry
    assert any("says get and it describes no state change" in line for line in entry)
    assert yaml.safe_load(text)["operations"]["shop.payment_methods.create"] == {"state": "review_required"}
    assert "Proposed side_effect: read, commented out, for 1 POST whose summary says it reads" in out


def test_the_commented_read_proposal_once_uncommented_compiles_the_post_as_a_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, manifest, _ = _init(tmp_path, capsys)
    text = manifest.read_text(encoding="utf-8").replace("    # side_effect: read", "    side_effect: read")
    manifest.write_text(
        text.replace(
            "shop.payment_methods.create:\n    state: review_required",
            "shop.payment_methods.create:\n    state: approved",
        ),
        encoding="utf-8",
    )
    bundle = tmp_path / "bundle"
    code, _, err = _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    code, out, _ = _anvil(capsys, "inspect", str(bundle), "--json")
    rows = {row["operationId"]: row for row in json.loads(out)["operations"]}
    assert rows["shop.payment_methods.create"]["class"] == "read"
    assert rows["shop.payment_methods.create"]["state"] == "approved"


def test_approve_reads_leaves_a_browser_page_unapproved_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, manifest, out = _init(tmp_path, capsys)
    text = manifest.read_text(encoding="utf-8")
    operations = yaml.safe_load(text)["operations"]
    assert operations["shop.authorize.list"]["state"] == "review_required"
    assert operations["shop.notes.list"]["state"] == "approved"
    entry = _entry(text, "shop.authorize.list")
    assert any("not approved by --approve reads: a browser page (it answers text/html" in line for line in entry)
    assert "1 operation is a browser page answering HTML, not data (left unapproved): shop.authorize.list" in out


def test_a_paired_write_without_an_idempotency_carrier_is_said_never_enabled_by_init_inspect_and_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, manifest, out = _init(tmp_path, capsys)
    text = manifest.read_text(encoding="utf-8")
    entry = _entry(text, "shop.notes.create")
    assert any(
        "the write gate never enables it as compiled, undo or not: it has no idempotency carrier" in line
        for line in entry
    )
    assert "2 of them the write gate never enables as compiled" in out
    code, _, err = _anvil(capsys, "approve", str(manifest), "shop.notes.create", "shop.notes.delete")
    assert code == 0, err
    bundle = tmp_path / "bundle"
    code, _, err = _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    code, out, _ = _anvil(capsys, "inspect", str(bundle))
    (row,) = [line for line in out.splitlines() if line.startswith("shop.notes.create ")]
    assert "inverse, lookup (never enabled)" in row
    assert "2 writes with an undo marked (never enabled)" in out  # the link too, approved or not
    code, out, _ = _anvil(capsys, "status", str(bundle), "--json")
    writes = {write["operationId"]: write for write in json.loads(out)["writes"]}
    create, delete = writes["shop.notes.create"], writes["shop.notes.delete"]
    assert create["neverEnabled"] is True and delete["neverEnabled"] is False
    assert create["blockers"][0].startswith("it has no idempotency carrier")
    assert "it can never be enabled as compiled, whatever the evidence" in create["blockers"][0]
    code, out, _ = _anvil(capsys, "status", str(bundle))
    assert "shop.notes.create: BLOCKED, NEVER ENABLED AS COMPILED\n    - it has no idempotency carrier" in out


def test_a_compensation_by_a_write_without_a_carrier_is_said_never_enabled_by_init_inspect_and_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, manifest, _ = _init(tmp_path, capsys)
    entry = _entry(manifest.read_text(encoding="utf-8"), "shop.links.create")
    assert "      class: compensable" in entry
    assert any(
        "its undo shop.links.update is a write the write gate never enables as compiled either" in line
        for line in entry
    )
    code, _, err = _anvil(capsys, "approve", str(manifest), "shop.links.create", "shop.links.update")
    assert code == 0, err
    bundle = tmp_path / "bundle"
    code, _, err = _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    code, out, _ = _anvil(capsys, "inspect", str(bundle))
    (row,) = [line for line in out.splitlines() if line.startswith("shop.links.create ")]
    assert "compensate (never enabled) (undo never enabled)" in row
    code, out, _ = _anvil(capsys, "status", str(bundle), "--json")
    writes = {write["operationId"]: write for write in json.loads(out)["writes"]}
    assert writes["shop.links.create"]["undoNeverEnabled"].startswith("its undo shop.links.update is a write")
    assert writes["shop.links.update"]["undoNeverEnabled"] is None
    code, out, _ = _anvil(capsys, "status", str(bundle))
    assert "    note: its undo shop.links.update is a write the write gate never enables as compiled" in out
