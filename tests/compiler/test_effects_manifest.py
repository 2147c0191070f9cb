"""Every effect/* compile code from a real ``anvil.yaml`` through ``anvil.compiler.build``.

Each case is a minimal manifest over one small OpenAPI document. The line a finding must point at
carries a ``#<`` marker: the offending entry inside the ``effect:`` block (or the block itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from anvil.air.model import Operation
from anvil.codes import CODES
from anvil.compiler import CompileResult, build
from anvil.diagnostics import Diagnostic

OPENAPI = """\
openapi: 3.0.3
info: {title: Notes, version: 1.0.0}
servers: [{url: "https://notes.example"}]
components:
  schemas:
    Note:
      type: object
      required: [id, text]
      properties:
        id: {type: integer}
        text: {type: string}
        expires_at: {type: string}
paths:
  /notes:
    get:
      operationId: listNotes
      parameters:
        - {name: key, in: query, schema: {type: string}}
      responses:
        "200":
          description: The notes.
          content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Note"}}}}
    post:
      operationId: createNote
      requestBody:
        required: true
        content: {application/json: {schema: {type: object, required: [text], properties: {text: {type: string}}}}}
      responses:
        "201":
          description: The new note.
          content: {application/json: {schema: {$ref: "#/components/schemas/Note"}}}
  /notes/{note_id}:
    parameters:
      - {name: note_id, in: path, required: true, schema: {type: integer}}
    get:
      operationId: getNote
      responses:
        "200":
          description: The note.
          content: {application/json: {schema: {$ref: "#/components/schemas/Note"}}}
    patch:
      operationId: updateNote
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, properties: {text: {type: string}, archived: {type: boolean}}}
      responses:
        "200":
          description: The note.
          content: {application/json: {schema: {$ref: "#/components/schemas/Note"}}}
    delete:
      operationId: deleteNote
      responses:
        "204": {description: Gone.}
  /notes/{note_id}/publish:
    parameters:
      - {name: note_id, in: path, required: true, schema: {type: integer}}
    post:
      operationId: publishNote
      responses:
        "200":
          description: The published note.
          content: {application/json: {schema: {$ref: "#/components/schemas/Note"}}}
  /blobs:
    post:
      operationId: createBlob
      requestBody:
        required: true
        content: {application/json: {schema: {type: object, properties: {data: {type: string}}}}}
      responses:
        "201":
          description: An opaque answer.
          content: {application/json: {schema: {type: object}}}
"""

OPERATION_KEYS = ("listNotes", "getNote", "createNote", "updateNote", "deleteNote", "publishNote", "createBlob")

#: Every entry is approved; createNote sends an Idempotency-Key header (a lookup by key needs a carrier).
DEFAULT_ENTRIES = {
    "createNote": "idempotency: {strategy: key_supported, key_location: header, header: Idempotency-Key}",
}

INVERSE = """\
inverse:
  operation: deleteNote
  arguments: {note_id: response.id}
"""

#: A contract of each kind, all valid: nothing effect/* may be reported for it.
CLEAN = {
    "createNote": """\
effect:
  class: reversible
  inverse:
    operation: deleteNote
    arguments: {note_id: response.id}
    deadline: {within_ms: 60000}
  compensate:
    operation: updateNote
    arguments: {note_id: response.id, archived: {const: true}}
    deadline: {at: response.expires_at}
  lookup:
    operation: listNotes
    by: idempotency_key
    arguments: {key: idempotency_key}
""",
    "publishNote": """\
effect:
  class: irreversible
  lookup: {operation: getNote, by: id, arguments: {note_id: response.id}}
  draft:
    operation: updateNote
    arguments: {note_id: request.note_id, archived: {const: true}}
    handle: response.id
    promote: {operation: updateNote, arguments: {note_id: response.id, archived: {const: false}}}
    discard: {operation: deleteNote, arguments: {note_id: response.id}}
""",
}


def manifest_text(entries: dict[str, str]) -> str:
    """A manifest approving every operation (unless its entry states otherwise), with ``entries`` added."""
    lines = ["service: {name: notes}", "operations:"]
    for key in OPERATION_KEYS:
        lines.append(f"  {key}:")
        if not entries.get(key, "").startswith("state:"):
            lines.append("    state: approved")
        for extra in (DEFAULT_ENTRIES.get(key, ""), entries.get(key, "")):
            lines.extend(f"    {line}" for line in extra.splitlines())
    return "\n".join(lines) + "\n"


def compile_notes(tmp_path: Path, entries: dict[str, str]) -> tuple[CompileResult, Path, str]:
    spec = tmp_path / "openapi.yaml"
    spec.write_text(OPENAPI, encoding="utf-8")
    manifest = tmp_path / "anvil.yaml"
    text = manifest_text(entries)
    manifest.write_text(text, encoding="utf-8")
    return build(spec, manifest=manifest), manifest, text


def effect_findings(result: CompileResult) -> list[Diagnostic]:
    return [d for d in result.diagnostics if d.code.startswith("effect/")]


def op_by_source(result: CompileResult, operation_id: str) -> Operation:
    return next(op for op in result.document.operations if op.source_ref.operation_id == operation_id)


def marked_line(text: str) -> int:
    (line,) = [number for number, content in enumerate(text.splitlines(), start=1) if "#<" in content]
    return line


@dataclass(frozen=True)
class Case:
    code: str
    severity: str
    operation: str
    entry: str
    also: dict[str, str] | None = None


CASES: list[Case] = [
    Case("effect/class_on_read", "error", "getNote", "effect:\n  class: irreversible  #<\n"),
    Case("effect/read_class_on_mutation", "error", "deleteNote", "effect:\n  class: read  #<\n"),
    Case(
        "effect/class_conflicts_reversible",
        "error",
        "createNote",
        "reversible: false\neffect:\n  class: reversible  #<\n" + "\n".join(f"  {x}" for x in INVERSE.splitlines()),
    ),
    Case("effect/reversible_without_inverse", "error", "createNote", "effect:\n  class: reversible  #<\n"),
    Case("effect/compensable_without_compensate", "error", "createNote", "effect:\n  class: compensable  #<\n"),
    Case(
        "effect/inverse_on_non_reversible",
        "error",
        "createNote",
        "effect:\n  class: irreversible\n  inverse:\n    operation: deleteNote  #<\n"
        "    arguments: {note_id: response.id}\n",
    ),
    Case(
        "effect/compensate_on_class",
        "error",
        "createNote",
        "effect:\n  class: irreversible\n"
        "  compensate: {operation: updateNote, arguments: {note_id: response.id}}  #<\n",
    ),
    Case(
        "effect/lookup_on_read",
        "error",
        "getNote",
        "effect:\n  class: read\n  lookup: {operation: listNotes, by: id, arguments: {}}  #<\n",
    ),
    Case(
        "effect/draft_on_read",
        "error",
        "getNote",
        "effect:\n  draft:\n    operation: updateNote  #<\n    arguments: {note_id: request.note_id}\n"
        "    handle: response.id\n    promote: {operation: updateNote, arguments: {note_id: response.id}}\n",
    ),
    Case(
        "effect/operation_missing",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: eraseNote  #<\n"
        "    arguments: {note_id: response.id}\n",
    ),
    Case(
        "effect/operation_self",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: createNote  #<\n"
        "    arguments: {text: request.text}\n",
    ),
    Case(
        "effect/follow_up_is_read",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: getNote  #<\n    arguments: {note_id: response.id}\n",
    ),
    Case(
        "effect/lookup_not_read",
        "error",
        "createNote",
        "effect:\n  class: reversible\n"
        + "\n".join(f"  {x}" for x in INVERSE.splitlines())
        + "\n  lookup:\n    operation: deleteNote  #<\n    by: id\n    arguments: {note_id: response.id}\n",
    ),
    Case(
        "effect/operation_not_approved",
        "warning",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote  #<\n"
        "    arguments: {note_id: response.id}\n",
        also={"deleteNote": "state: review_required"},
    ),
    Case(
        "effect/mapping_sets_safety_control",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n    arguments:\n"
        "      note_id: response.id\n      confirm: {const: true}  #<\n",
    ),
    Case(
        "effect/mapping_unknown_argument",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n    arguments:\n"
        "      note_id: response.id\n      note: response.text  #<\n",
    ),
    Case(
        "effect/mapping_missing_required",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n    arguments: {}  #<\n",
    ),
    Case(
        "effect/mapping_required_optional",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n    arguments:\n"
        "      note_id: response.id?  #<\n",
    ),
    Case(
        "effect/mapping_type_mismatch",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n    arguments:\n"
        "      note_id: {const: abc}  #<\n",
    ),
    Case(
        "effect/path_invalid",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n    arguments:\n"
        "      note_id: body.id  #<\n",
    ),
    Case(
        "effect/path_root_not_allowed",
        "error",
        "publishNote",
        "effect:\n  class: irreversible\n  draft:\n    operation: updateNote\n    arguments:\n"
        "      note_id: response.id  #<\n    handle: response.id\n"
        "    promote: {operation: updateNote, arguments: {note_id: response.id}}\n",
    ),
    Case(
        "effect/path_unresolved",
        "error",
        "createNote",
        "effect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n    arguments:\n"
        "      note_id: response.number  #<\n",
    ),
    Case(
        "effect/path_unverified",
        "info",
        "createBlob",
        "effect:\n  class: compensable\n  compensate:\n    operation: updateNote\n    arguments:\n"
        "      note_id: response.id  #<\n      archived: {const: true}\n",
    ),
    Case(
        "effect/deadline_shape",
        "error",
        "createNote",
        "effect:\n  class: reversible\n"
        + "\n".join(f"  {x}" for x in INVERSE.splitlines())
        + "\n    deadline: {within_ms: 1000, at: response.expires_at}  #<\n",
    ),
    Case(
        "effect/deadline_path",
        "error",
        "createNote",
        "effect:\n  class: reversible\n"
        + "\n".join(f"  {x}" for x in INVERSE.splitlines())
        + "\n    deadline:\n      at: request.text  #<\n",
    ),
    Case(
        "effect/draft_handle",
        "error",
        "publishNote",
        "effect:\n  class: irreversible\n  draft:\n    operation: updateNote\n"
        "    arguments: {note_id: request.note_id}\n    handle: request.note_id  #<\n"
        "    promote: {operation: updateNote, arguments: {note_id: response.id}}\n",
    ),
    Case(
        "effect/lookup_without_idempotency_key",
        "error",
        "updateNote",
        "effect:\n  class: irreversible\n  lookup:\n    operation: listNotes\n    by: idempotency_key  #<\n"
        "    arguments: {key: idempotency_key}\n",
    ),
    Case(
        "effect/lookup_key_unused",
        "error",
        "createNote",
        "effect:\n  class: reversible\n"
        + "\n".join(f"  {x}" for x in INVERSE.splitlines())
        + "\n  lookup:\n    operation: listNotes\n    by: idempotency_key  #<\n    arguments: {key: request.text}\n",
    ),
    Case(
        "effect/confirmation_for_draft",
        "warning",
        "publishNote",
        "confirmation: {required: false}\neffect:\n  class: irreversible\n  draft:\n    operation: updateNote  #<\n"
        "    arguments: {note_id: request.note_id}\n    handle: response.id\n"
        "    promote: {operation: updateNote, arguments: {note_id: response.id, archived: {const: false}}}\n",
    ),
]


def test_the_table_covers_every_effect_compile_code() -> None:
    registered = {c.name for c in CODES.values() if c.kind == "diagnostic" and c.name.startswith("effect/")}
    assert {case.code for case in CASES} == registered
    assert all(CODES[case.code].severity == case.severity for case in CASES)


def test_a_clean_manifest_reports_no_effect_diagnostic(tmp_path: Path) -> None:
    result, _, _ = compile_notes(tmp_path, CLEAN)
    assert effect_findings(result) == []
    assert not [d for d in result.diagnostics if d.severity == "error"]
    created = op_by_source(result, "createNote").effect
    assert (created.class_, created.reversible) == ("reversible", True)
    assert created.inverse is not None and created.inverse.operation == "notes.notes.delete"
    assert created.lookup is not None and created.lookup.operation == "notes.notes.list"
    published = op_by_source(result, "publishNote").effect
    assert published.draft is not None and published.draft.operation == "notes.notes.update"


@pytest.mark.parametrize("case", CASES, ids=[case.code for case in CASES])
def test_each_effect_code_comes_from_a_minimal_manifest_at_its_line(tmp_path: Path, case: Case) -> None:
    result, manifest, text = compile_notes(tmp_path, {case.operation: case.entry, **(case.also or {})})
    op = op_by_source(result, case.operation)
    findings = effect_findings(result)
    assert [(d.code, d.severity) for d in findings] == [(case.code, case.severity)]
    (found,) = findings
    # An absolute manifest path is shown by its file name, so no absolute path reaches generated output.
    assert (found.file, found.line, found.operation) == (manifest.name, marked_line(text), op.id)
    if case.severity == "error":
        assert op.effect.class_ == ("read" if op.effect.kind == "read" else "irreversible")
        assert (op.effect.inverse, op.effect.compensate, op.effect.lookup, op.effect.draft) == (None,) * 4
        assert any(note.startswith("Effect contract rejected (1 error(s))") for note in op.review_notes)
    else:
        assert op.effect.class_ == CLASS_KEPT[case.code]


#: The declared class each non-error case keeps (its contract stands).
CLASS_KEPT = {
    "effect/operation_not_approved": "reversible",
    "effect/path_unverified": "compensable",
    "effect/confirmation_for_draft": "irreversible",
}


def test_an_unknown_key_in_the_effect_block_fails_the_compile(tmp_path: Path) -> None:
    result, manifest, text = compile_notes(tmp_path, {"createNote": "effect: {class: reversible, undo: x}  #<"})
    unknown = [d for d in result.diagnostics if d.code == "manifest/unknown_key"]
    assert [(d.severity, d.file, d.line) for d in unknown] == [("error", manifest.name, marked_line(text))]


def test_a_follow_up_target_that_validation_blocks_is_reported_as_not_approved(tmp_path: Path) -> None:
    # deleteNote is approved by the manifest but names a query carrier the spec does not declare, so
    # validation blocks it; the contract check runs on the validated operations and sees the block.
    entries = {
        "createNote": "state: approved\neffect:\n  class: reversible\n  inverse:\n    operation: deleteNote\n"
        "    arguments: {note_id: response.id}\n",
        "deleteNote": "state: approved\nidempotency: {strategy: required_request_key, key_location: query, "
        "parameter: idem}\n",
    }
    result, _manifest, _text = compile_notes(tmp_path, entries)
    assert op_by_source(result, "deleteNote").state == "blocked"
    assert "unsupported_idempotency_carrier" in [d.code for d in result.diagnostics]
    assert [(d.code, d.severity) for d in effect_findings(result)] == [("effect/operation_not_approved", "warning")]
    assert op_by_source(result, "createNote").effect.class_ == "reversible"
