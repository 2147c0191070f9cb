"""What a bundle tells a reader about undoing each action (ADR-0030 §9, original-gateway §2.9).

github-mini (one contract of each kind) is compiled from its real manifest and emitted; payments,
which declares no contract, shows that undeclared operations gain only their labels.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.harness import harness_index
from anvil.compiler import build

REPO = Path(__file__).resolve().parents[2]


def compile_example(name: str, service: str) -> Document:
    example = REPO / "examples" / name
    result = build(
        example / "openapi.yaml",
        manifest=example / "anvil.yaml",
        service_id=service,
        source_uri=f"examples/{name}/openapi.yaml",
    )
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    return result.document


@pytest.fixture(scope="module")
def github() -> Document:
    return compile_example("github-mini", "github")


@pytest.fixture(scope="module")
def github_files(github: Document) -> dict[str, bytes]:
    return emit_bundle(github)


@pytest.fixture(scope="module")
def payments_files() -> dict[str, bytes]:
    return emit_bundle(compile_example("payments", "payments"))


def entries(operations_md: str) -> dict[str, list[str]]:
    """Approved entries of operations.md: CLI command -> the entry's lines (heading excluded)."""
    approved = operations_md.split("## Approved operations\n")[1].split("## Pending approval")[0]
    out: dict[str, list[str]] = {}
    for block in approved.split("\n### ")[1:]:
        heading, *lines = block.strip("\n").splitlines()
        out[heading.split("`")[1]] = lines
    return out


def effect_table(skill_md: str) -> dict[str, str]:
    """SKILL.md's effects table: CLI command -> Effect cell."""
    rows = skill_md.split("## Effects\n")[1].split("\n## ")[0].splitlines()
    table = [row for row in rows if row.startswith("| `")]
    return {row.split(" | ")[0].strip("| `"): row.split(" | ")[2] for row in table}


# --- reference/operations.md ---------------------------------------------------------------------------------


def test_each_declared_mutation_gets_its_undo_sentence(github_files: dict[str, bytes]) -> None:
    found = {
        cli: [line for line in lines if line.startswith("- Undo:")]
        for cli, lines in entries(github_files["skill/reference/operations.md"].decode()).items()
    }
    assert {cli: lines for cli, lines in found.items() if lines} == {
        "github comments create": ["- Undo: This action can be undone with `github comments delete`."],
        "github issues create": [
            "- Undo: This action cannot be undone, but can be compensated with `github issues update` "
            "(which leaves a trace)."
        ],
        "github releases create": [
            "- Undo: This action cannot be undone. It has a draft form (`github releases create`) that can be "
            "reviewed before it is promoted."
        ],
    }


def test_the_undo_line_follows_the_semantics_auth_and_inputs_lines(github_files: dict[str, bytes]) -> None:
    lines = entries(github_files["skill/reference/operations.md"].decode())["github comments create"]
    metadata = [line.split(":")[0] for line in lines if line.startswith("- ")]
    assert metadata[:5] == ["- Semantics", "- Auth", "- Inputs", "- Undo", "- Schema"]


def test_an_undeclared_operation_has_no_undo_line(payments_files: dict[str, bytes]) -> None:
    assert "- Undo:" not in payments_files["skill/reference/operations.md"].decode()


# --- SKILL.md ------------------------------------------------------------------------------------------------


def test_skill_md_labels_every_approved_operation(github_files: dict[str, bytes]) -> None:
    assert effect_table(github_files["skill/SKILL.md"].decode()) == {
        "github issues list": "read",
        "github issues create": "write, can be compensated (not undone), needs confirm",
        "github issues get": "read",
        "github issues update": "write, cannot be undone, needs confirm",
        "github comments list": "read",
        "github comments create": "write, can be undone",
        "github comments delete": "write, cannot be undone, needs confirm",
        "github releases create": "write, cannot be undone (has a draft form), needs confirm",
        "github releases delete": "write, cannot be undone, needs confirm",
        "github releases update": "write, cannot be undone, needs confirm",
        "github releases get": "read",
        "github pulls list": "read",
    }


def test_an_operation_without_a_contract_is_labelled_by_its_kind(payments_files: dict[str, bytes]) -> None:
    assert effect_table(payments_files["skill/SKILL.md"].decode()) == {
        "payments customers get": "read",
        "payments payments get": "read",
        "payments refunds create": "write, cannot be undone, needs confirm",
        "payments capture create": "write, cannot be undone, needs confirm",
    }


# --- harness.json --------------------------------------------------------------------------------------------


def test_harness_json_lists_each_operations_class_and_declared_undo(
    github: Document, github_files: dict[str, bytes]
) -> None:
    harness: dict[str, Any] = json.loads(github_files["harness.json"])
    tool = {op.id: op.mcp.tool_name for op in github.operations}

    def entry(op_id: str, cli: str, effect_class: str, confirm: bool, **extra: Any) -> dict[str, Any]:
        kind = "read" if effect_class == "read" else "mutation"
        head = {"id": op_id, "tool": tool[op_id], "cli": cli, "effect": kind, "effect_class": effect_class}
        return {**head, **extra, "confirm": confirm}

    assert harness == {
        "schemaVersion": 1,
        "connector": "github",
        "service": {"id": "github", "version": "1.0.0"},
        "operations": [
            entry("github.issues.list", "github issues list", "read", False),
            entry(
                "github.issues.create",
                "github issues create",
                "compensable",
                True,
                undo={"kind": "compensate", "operation": "github.issues.update"},
            ),
            entry("github.issues.get", "github issues get", "read", False),
            entry("github.issues.update", "github issues update", "irreversible", True),
            entry("github.comments.list", "github comments list", "read", False),
            entry(
                "github.comments.create",
                "github comments create",
                "reversible",
                False,
                undo={"kind": "inverse", "operation": "github.comments.delete"},
            ),
            entry("github.comments.delete", "github comments delete", "irreversible", True),
            entry("github.releases.create", "github releases create", "irreversible", True, draft=True),
            entry("github.releases.delete", "github releases delete", "irreversible", True),
            entry("github.releases.update", "github releases update", "irreversible", True),
            entry("github.tags.get", "github releases get", "read", False),
            entry("github.pulls.list", "github pulls list", "read", False),
        ],
    }
    assert list(harness["operations"][1]) == ["id", "tool", "cli", "effect", "effect_class", "undo", "confirm"]
    assert github_files["harness.json"].endswith(b"}\n")


def test_harness_json_lists_only_approved_operations_without_undo_when_none_is_declared(
    payments_files: dict[str, bytes],
) -> None:
    operations = json.loads(payments_files["harness.json"])["operations"]
    assert [op["effect_class"] for op in operations] == ["read", "read", "irreversible", "irreversible"]
    assert all(set(op) == {"id", "tool", "cli", "effect", "effect_class", "confirm"} for op in operations)


def test_harness_json_skips_operations_that_are_not_approved(github: Document) -> None:
    pending = replace(github, operations=tuple(replace(op, state="review_required") for op in github.operations))
    assert harness_index(pending)["operations"] == []
