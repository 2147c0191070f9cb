"""Parsing the entry spec ahead in a forked child: the same outcome as parsing here, for any input."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from anvil.load.ahead import ParseAhead
from anvil.load.parse import Parsed, ParseFailure, parse_bytes

_ALIAS_BOMB = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
)

#: Every input the loader guards against, and ordinary ones: name -> text.
_CASES = {
    "spec.yaml": "openapi: 3.0.3\nx: {a: 1.5, b: 0x1F, c: yes, d: ~, e: 2020-09-14, f: .nan}\ns: caf\u00e9\n",
    "spec.json": '{"openapi": "3.1.0", "n": NaN, "big": 1e999, "f": 2.5}',
    "anchors.yaml": "base: &b {type: string}\ncopy: *b\nmerged:\n  <<: *b\n  maxLength: 5\n",
    "loop.yaml": "a: &a\n  type: object\n  properties:\n    self: *a\n",
    "bomb.yaml": _ALIAS_BOMB,
    "evil.yaml": "a: !!python/object/apply:os.system ['true']\n",
    "broken.yaml": "a: [\n",
    "dup.yaml": "a: 1\na: 2\n",
    "braces.json": "{a: 1}",
    "deep.yaml": "".join(" " * level + "a:\n" for level in range(200)) + " " * 200 + "x\n",  # source/too_deep
    "flow.yaml": "\ufeff  {a: 1, b: [x]}\n",
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "nested.json": "[" * 200 + "]" * 200,  # past MAX_DEPTH: source/too_deep
    "empty.yaml": "",
    "bom.yaml": "\ufeffopenapi: 3.0.3\n",
}

# Run in a fresh interpreter: the fork is only made in a process with one thread, which a test worker
# that ran other tests before may not be.
_SCRIPT = r"""
import json, sys
from pathlib import Path
from anvil.load.ahead import ParseAhead
from anvil.load.parse import Parsed, parse_bytes

report = {}
for path in sorted(Path(sys.argv[1]).iterdir()):
    data = path.read_bytes()
    with ParseAhead(path) as ahead:
        forked = ahead.forked
        got = ahead.parse(data, path.name)
    here = parse_bytes(data, path.name)
    shared = isinstance(got, Parsed) and isinstance(got.value, dict) and got.value.get("copy") is not None
    report[path.name] = {
        "forked": forked,
        "answered": ahead.answered_by_child,
        "same": type(got) is type(here) and got == here,
        "shared": shared and got.value["copy"] is got.value["base"],
    }
changed = Path(sys.argv[1]) / "spec.yaml"
with ParseAhead(changed) as ahead:
    other = ahead.parse(b"openapi: 3.1.0\n", "spec.yaml")
    renamed = ahead.parse(changed.read_bytes(), "spec.json")
    same = renamed == parse_bytes(changed.read_bytes(), "spec.json")
    report["changed"] = {"answered": ahead.answered_by_child, "value": other.value, "same": same}
print(json.dumps(report))
"""


def _run(tmp_path: Path) -> dict[str, dict[str, object]]:
    folder = tmp_path / "specs"
    folder.mkdir()
    for name, text in _CASES.items():
        (folder / name).write_text(text, encoding="utf-8")
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(src)},
        timeout=120,
    )
    report: dict[str, dict[str, object]] = json.loads(done.stdout)
    return report


def test_the_child_answers_exactly_what_parsing_here_answers_for_every_guarded_input(tmp_path: Path) -> None:
    report = _run(tmp_path)
    for name, text in _CASES.items():
        if name == "empty.yaml" or text.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
            # Nothing to parse, or JSON (parsed in C, faster than the child's answer loads): parsed here.
            assert report[name] == {"forked": False, "answered": False, "same": True, "shared": False}, name
            continue
        assert report[name] == {"forked": True, "answered": True, "same": True, "shared": name == "anchors.yaml"}, name


def test_other_bytes_or_another_name_are_parsed_here(tmp_path: Path) -> None:
    changed = _run(tmp_path)["changed"]
    assert changed == {"answered": False, "value": {"openapi": "3.1.0"}, "same": True}


def test_no_child_is_forked_while_another_thread_runs(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("a: [1, 2]\n", encoding="utf-8")
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        with ParseAhead(path) as ahead:
            assert not ahead.forked
            got = ahead.parse(path.read_bytes(), "spec.yaml")
            assert isinstance(got, Parsed) and got.value == {"a": [1, 2]}
            assert not ahead.answered_by_child
    finally:
        release.set()
        other.join()


def test_a_file_that_cannot_be_read_is_left_to_the_loader(tmp_path: Path) -> None:
    ahead = ParseAhead(tmp_path / "missing.yaml")
    assert not ahead.forked
    ahead.close()
    (tmp_path / "big.yaml").write_text("a: 1\n" * 10, encoding="utf-8")
    with ParseAhead(tmp_path / "big.yaml", max_file_bytes=8) as limited:
        assert not limited.forked
        assert isinstance(limited.parse(b"a: [\n", "big.yaml"), ParseFailure)
    assert parse_bytes(b"a: 1\n", "x.yaml") == Parsed({"a": 1}, "yaml")
