"""The discovery query set (``bench/discovery_queries.yaml``): its format, its size, and that every gold
operation id names a real operation of its spec, checked against the original's naming goldens."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO, missing
from tests.naming_goldens import golden_specs

QUERIES = REPO / "bench" / "discovery_queries.yaml"
KEYS = {"spec", "task", "gold"}


def _entries() -> list[dict[str, Any]]:
    entries = yaml.safe_load(QUERIES.read_text(encoding="utf-8"))
    assert isinstance(entries, list)
    return entries


def _golden_ids(corpus: Path) -> dict[str, set[str]]:
    """Operation ids per spec id (the corpus file's stem, as the bundles name services): the goldens compile
    with a short ``--service`` (``jira`` for ``jira-platform.json``), so their prefix is swapped for the stem."""
    folder = corpus.parent / "spec" / "golden" / "naming"
    if not folder.is_dir():
        missing(f"naming goldens not found at {folder}")
    ids: dict[str, set[str]] = {}
    for golden in golden_specs(folder):
        spec = Path(golden.spec).name.split(".", 1)[0]
        ids[spec] = {spec + op_id.removeprefix(golden.service) for op_id, _tool, _cli in golden.rows.values()}
    return ids


def test_every_entry_has_a_spec_a_task_and_one_to_three_distinct_gold_ids_of_that_spec() -> None:
    bad = []
    for number, entry in enumerate(_entries()):
        ok = (
            isinstance(entry, dict)
            and set(entry) == KEYS
            and isinstance(entry["spec"], str)
            and isinstance(entry["task"], str)
            and isinstance(entry["gold"], list)
            and 1 <= len(entry["gold"]) <= 3
            and len(set(entry["gold"])) == len(entry["gold"])
            and all(isinstance(op, str) and op.startswith(f"{entry['spec']}.") for op in entry["gold"])
        )
        if not ok:
            bad.append((number, entry))
    assert bad == []


def test_the_set_holds_at_least_150_tasks_over_at_least_5_specs() -> None:
    specs = Counter(entry["spec"] for entry in _entries())
    assert sum(specs.values()) >= 150
    assert len(specs) >= 5


def test_every_task_is_between_1_and_500_characters_of_real_text() -> None:
    bad = [entry["task"] for entry in _entries() if not (1 <= len(entry["task"]) <= 500 and entry["task"].strip())]
    assert bad == []


def test_no_task_is_asked_twice() -> None:
    counts = Counter(entry["task"].strip().lower() for entry in _entries())
    assert [task for task, count in counts.items() if count > 1] == []


def test_every_gold_id_is_an_operation_id_the_original_gives_that_spec(corpus: Path) -> None:
    ids = _golden_ids(corpus)
    entries = _entries()
    assert {entry["spec"] for entry in entries} <= set(ids), "a spec the goldens do not cover"
    unknown = [(entry["spec"], op) for entry in entries for op in entry["gold"] if op not in ids[entry["spec"]]]
    assert unknown == []


def _split_module() -> Any:
    spec = importlib.util.spec_from_file_location("discovery_split", REPO / "bench" / "discovery_split.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dev_and_held_out_halves_split_each_spec_evenly_and_ignore_the_files_order() -> None:
    split = _split_module()
    entries = _entries()
    halves = split.split_of(entries)
    assert halves == split.split_of(list(reversed(entries)))
    assert set(halves.values()) == {split.DEV, split.HELD_OUT}
    per_spec = Counter((entry["spec"], halves[entry["task"]]) for entry in entries)
    for spec in {entry["spec"] for entry in entries}:
        assert abs(per_spec[(spec, split.DEV)] - per_spec[(spec, split.HELD_OUT)]) <= 1, spec
