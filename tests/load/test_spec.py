"""load_spec: the corpus loads cleanly, bad inputs become coded diagnostics, source identity is stable."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from anvil.load.spec import count_operations, load_spec
from tests.conftest import corpus_dir
from tests.load.helpers import FIXTURES, unresolved_refs


def _corpus_rows() -> list[tuple[str, int]]:
    index = corpus_dir() / "INDEX.tsv"
    if not index.is_file():
        return [("<corpus absent>", 0)]
    with index.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    # lob's INDEX count is for path items left unfollowed; followed, they hold 105 operations.
    return [(row["file"], 105 if row["file"].startswith("lob/") else int(row["operations"])) for row in rows]


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "operations"), _corpus_rows())
def test_every_corpus_spec_loads_with_no_error_and_only_resolvable_internal_refs(
    corpus: Path, name: str, operations: int
) -> None:
    # A spec kept in its own folder (lob/, oai-petstore-separate/) may refer anywhere inside that folder.
    root = corpus / name.split("/")[0] if "/" in name else None
    result = load_spec(corpus / name, root=root)
    assert result.document is not None
    assert [d for d in result.diagnostics if d.severity == "error"] == []
    assert count_operations(result.document) == operations
    assert unresolved_refs(result.document) == []
    json.dumps(result.document)  # no object cycles: recursion stays in references


BAD_INPUTS = [
    ("bad/absent.yaml", "source/not_found", True),
    ("bad/yaml_syntax.yaml", "source/parse_error", True),
    ("bad/json_syntax.json", "source/parse_error", True),
    ("bad/not_openapi.yaml", "source/not_openapi", True),
    ("bad/openapi4.yaml", "source/unsupported_version", True),
    ("bad/swagger12.json", "source/unsupported_version", True),
    ("bad/dangling.yaml", "source/ref_missing", False),
    ("bad/missing_file.yaml", "source/ref_missing", False),
    ("bad/remote.yaml", "source/external_ref", False),
    ("bad/escape/spec/openapi.yaml", "source/path_escape", False),
    ("bad/invalid_ref.yaml", "source/ref_invalid", False),
]


@pytest.mark.parametrize(("fixture", "code", "fatal"), BAD_INPUTS)
def test_a_bad_input_yields_its_code_and_never_raises(fixture: str, code: str, fatal: bool) -> None:
    result = load_spec(FIXTURES / fixture)
    assert code in [d.code for d in result.diagnostics]
    assert all(d.severity == "error" for d in result.diagnostics if d.code == code)
    assert (result.document is None) is fatal
    assert not result.ok
    if result.document is not None:
        assert unresolved_refs(result.document) == []


def test_a_yaml_syntax_error_carries_its_file_line_and_column() -> None:
    result = load_spec(FIXTURES / "bad/yaml_syntax.yaml")
    (found,) = result.diagnostics
    assert (found.code, found.file, found.line) == ("source/parse_error", "yaml_syntax.yaml", 4)
    assert found.column is not None


def test_a_json_syntax_error_carries_its_line_and_column() -> None:
    result = load_spec(FIXTURES / "bad/json_syntax.json")
    (found,) = result.diagnostics
    assert (found.code, found.file, found.line, found.column) == ("source/parse_error", "json_syntax.json", 4, 13)


def test_a_dangling_ref_is_located_and_replaced_so_later_stages_never_meet_it() -> None:
    result = load_spec(FIXTURES / "bad/dangling.yaml")
    (found,) = result.diagnostics
    assert (found.code, found.file, found.line) == ("source/ref_missing", "dangling.yaml", 12)
    assert result.document is not None
    media = result.document["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]
    assert media["schema"] == {}


def test_a_remote_ref_is_reported_and_nothing_but_the_entry_is_read() -> None:
    result = load_spec(FIXTURES / "bad/remote.yaml")
    assert [d.code for d in result.diagnostics] == ["source/external_ref"]
    assert list(result.files) == ["remote.yaml"]


def test_a_ref_escaping_the_folder_is_refused_and_the_outside_file_is_never_read() -> None:
    result = load_spec(FIXTURES / "bad/escape/spec/openapi.yaml")
    assert [d.code for d in result.diagnostics] == ["source/path_escape"]
    assert list(result.files) == ["openapi.yaml"]


def test_a_root_folder_admits_refs_that_climb_out_of_the_entry_folder() -> None:
    result = load_spec(FIXTURES / "bad/escape/spec/openapi.yaml", root=FIXTURES / "bad/escape")
    assert result.ok
    assert result.entrypoint == "spec/openapi.yaml"
    assert sorted(result.files) == ["outside.yaml", "spec/openapi.yaml"]


def test_a_spec_without_paths_loads_with_a_no_operations_warning() -> None:
    result = load_spec(FIXTURES / "bad/no_paths.yaml")
    assert [(d.code, d.severity) for d in result.diagnostics] == [("source/no_operations", "warning")]
    assert result.ok


def test_source_hash_and_snapshot_id_follow_the_sorted_path_and_digest_recipe() -> None:
    folder = FIXTURES / "two_files"
    result = load_spec(folder / "openapi.yaml")
    assert result.ok
    outer = hashlib.sha256()
    for name in ("openapi.yaml", "schemas.yaml"):
        data = (folder / name).read_bytes()
        assert result.files[name] == data
        outer.update(name.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\0")
    assert result.source_hash == "sha256:" + outer.hexdigest()
    assert result.snapshot_id == "src-" + outer.hexdigest()[:16]
    assert result.entrypoint == "openapi.yaml"


def test_the_uri_defaults_to_the_path_as_given_and_is_never_made_absolute() -> None:
    path = Path("tests/load/fixtures/two_files/openapi.yaml")
    assert load_spec(path).uri == str(path)
    assert load_spec(FIXTURES / "two_files/openapi.yaml", uri="specs/openapi.yaml").uri == "specs/openapi.yaml"


def test_loading_twice_gives_equal_documents_and_identity() -> None:
    first = load_spec(FIXTURES / "multi/openapi.yaml")
    second = load_spec(FIXTURES / "multi/openapi.yaml")
    assert json.dumps(first.document) == json.dumps(second.document)
    assert (first.source_hash, first.snapshot_id) == (second.source_hash, second.snapshot_id)


def test_the_parser_is_chosen_by_content_not_by_extension(tmp_path: Path) -> None:
    spec = tmp_path / "spec.txt"
    spec.write_text('{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": {}}}}')
    yaml_named_json = tmp_path / "spec.json"
    yaml_named_json.write_text("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get: {}\n")
    assert load_spec(spec).ok
    assert load_spec(yaml_named_json).ok


def test_a_directory_is_not_a_regular_file(tmp_path: Path) -> None:
    result = load_spec(tmp_path)
    assert [d.code for d in result.diagnostics] == ["source/not_regular_file"]
    assert result.document is None


def test_a_yaml_alias_that_contains_itself_loads_with_a_truncation_warning(tmp_path: Path) -> None:
    spec = tmp_path / "openapi.yaml"
    spec.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n"
        "        '200':\n          description: ok\n          content:\n            application/json:\n"
        "              schema: &node\n                type: object\n                properties:\n"
        "                  next: *node\n"
    )
    result = load_spec(spec)
    assert [(d.code, d.severity, d.line) for d in result.diagnostics] == [("schema_cycle_truncated", "warning", 11)]
    assert result.ok
    json.dumps(result.document)
