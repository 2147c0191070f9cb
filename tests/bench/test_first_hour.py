"""``bench/first_hour.py``: a new user's walk from ``anvil init`` to ``anvil status``, one table per corpus run."""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO

SCRIPT = REPO / "bench" / "first_hour.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("first_hour", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("first_hour", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _one_spec_corpus(corpus: Path, tmp_path: Path, name: str) -> Path:
    """A corpus folder holding only ``name`` (its INDEX.tsv row and file)."""
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        fields = list(reader.fieldnames or [])
        rows = [row for row in reader if row["file"] == name]
    assert len(rows) == 1
    folder = tmp_path / "corpus"
    folder.mkdir()
    with (folder / "INDEX.tsv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    shutil.copy(corpus / name, folder / name)
    return folder


def test_the_walk_on_the_petstore_prints_one_row_with_every_column_and_pass_fail_skip_lane_counts(
    corpus: Path, tmp_path: Path
) -> None:
    folder = _one_spec_corpus(corpus, tmp_path, "oai-petstore.yaml")
    env = {**os.environ, "ANVIL_CORPUS": str(folder), "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--details", "--step-timeout", "300", "--keep", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "spec",
        "ops",
        "reads",
        "writes",
        "certify",
        "selftest",
        "conformance",
        "simulate",
        "ready",
        "blockers",
    ]
    rows = [line for line in lines if line.startswith("oai-petstore.yaml ")]
    assert len(rows) == 1
    cells = rows[0].split()
    assert cells[1] == "3"  # the petstore's three operations
    assert cells[2] == "2"  # its two reads, approved by --approve reads
    assert all(re.fullmatch(r"\d+/\d+/\d+\*?", cell) for cell in cells[4:8]), cells
    assert "## oai-petstore.yaml (service oai-petstore)" in done.stdout
    assert "[oai-petstore.yaml] status rc=0" in done.stderr


def test_the_writes_approved_are_the_proposals_and_the_follow_ups_they_name(tmp_path: Path) -> None:
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(
        "service:\n  name: s\n\noperations:\n"
        "  s.pets.create:\n    state: review_required\n"
        "    # proposed by anvil init: review before approving\n"
        "    effect:\n      class: reversible\n"
        "      inverse:\n        operation: s.pets.delete\n        arguments:\n          id: response.id\n"
        "      lookup:\n        operation: s.pets.get\n        by: id\n\n"
        "  s.pets.delete:\n    state: review_required\n\n"
        "  s.pets.get:\n    state: approved\n\n"
        "  s.pets.update:\n    state: review_required\n",
        encoding="utf-8",
    )
    assert _module().proposals(manifest) == ["s.pets.create", "s.pets.delete", "s.pets.get"]


def test_each_status_blocker_sentence_is_grouped_under_its_reason() -> None:
    reason = _module().blocker_reason
    assert reason("selftest evidence is failed") == "selftest_failed"
    assert reason("conformance evidence is missing") == "conformance_missing"
    no_key = "it has no idempotency carrier: a lost answer cannot be told from no call, so a retry repeats the effect"
    assert reason(no_key) == "no_idempotency_carrier"
    assert reason("the store contract is stale") == "store_contract_stale"
    assert reason("something status never said before") == "other"


def test_init_s_auth_note_is_followed_with_a_scheme_a_gateway_can_hold_else_a_bearer_override() -> None:
    choice = _module().auth_choice
    note = (
        "Note: 441 of 468 operations stay blocked by their auth however they are approved (auth/alternatives_"
        "unmodeled 441). Choose a scheme service-wide: rerun with --force --auth-scheme NAME, one of OAuth2 "
        "(oauth2 authorizationCode), basicAuth (http basic); for an end-user OAuth flow whose tokens you obtain "
        "out of band, add --auth-type bearer --auth-reason TEXT."
    )
    assert choice(note) == ["--auth-scheme", "basicAuth"]
    only_oauth = note.replace(", basicAuth (http basic)", "")
    assert choice(only_oauth)[:4] == ["--auth-scheme", "OAuth2", "--auth-type", "bearer"]
    assert choice("Wrote anvil.yaml: 3 operations (2 approved)") is None


def test_the_tool_budget_levers_are_read_from_status_s_own_sentences() -> None:
    from anvil.proof.disclosure import budget_lever

    writes = [
        {"blockers": ["certify evidence is failed: x; " + budget_lever(4012, ["lob.letters", "lob.checks"])]},
        {"blockers": ["simulate evidence is failed: y; " + budget_lever(2100, ["lob.postcards"])]},
        {"blockers": ["it has no idempotency carrier"]},
    ]
    assert _module().status_levers(writes) == (["lob.checks", "lob.letters", "lob.postcards"], 4012)
    assert _module().status_levers([{"blockers": ["selftest evidence is failed"]}]) == ([], None)


def test_following_the_waiver_lever_writes_a_capability_review_the_manifest_accepts(tmp_path: Path) -> None:
    from anvil.compiler.manifest.parse import parse_manifest

    manifest = tmp_path / "anvil.yaml"
    manifest.write_text("service:\n  name: s\n\noperations:\n  # kept\n  s.pets.get:\n    state: approved\n")
    applied = _module().apply_levers(manifest, "waive", ["s.pets", "s.toys"], 3000)
    assert applied == ["allow_large on s.pets, s.toys"]
    text = manifest.read_text(encoding="utf-8")
    assert "  # kept\n" in text
    parsed, found = parse_manifest(text, "anvil.yaml")
    assert found == [] and parsed is not None
    assert [(r.capability_id, r.state, r.allow_large, r.note) for r in parsed.capabilities] == [
        ("s.pets", "approved", True, "accepted in the first-hour walk"),
        ("s.toys", "approved", True, "accepted in the first-hour walk"),
    ]


def test_following_the_budget_lever_sets_the_value_status_named_and_off_changes_nothing(tmp_path: Path) -> None:
    from anvil.compiler.manifest.parse import parse_manifest

    manifest = tmp_path / "anvil.yaml"
    original = "service:\n  name: s\ndisclosure:\n  output_schema_percent: 40\n"
    manifest.write_text(original)
    assert _module().apply_levers(manifest, "off", ["s.pets"], 3000) == []
    assert manifest.read_text(encoding="utf-8") == original
    assert _module().apply_levers(manifest, "budget", ["s.pets"], 3000) == ["tool_budget_tokens 3000"]
    parsed, found = parse_manifest(manifest.read_text(encoding="utf-8"), "anvil.yaml")
    assert found == [] and parsed is not None and parsed.disclosure is not None
    assert (parsed.disclosure.tool_budget_tokens, parsed.disclosure.output_schema_percent) == (3000, 40)
