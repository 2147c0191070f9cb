from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from anvil.air.canonical import pretty_json
from anvil.air.codec import document_json, load_document
from anvil.air.model import Document
from anvil.bundle.container import WHEEL_PATH
from anvil.bundle.emit import emit_bundle, owned_roots
from anvil.bundle.encoding import json_file
from anvil.bundle.generation import Generation, parse_generation
from anvil.errors import BundleError


def _with_pending(doc: Document) -> Document:
    ops = list(doc.operations)
    ops[3] = replace(ops[3], state="review_required")
    return replace(doc, operations=tuple(ops))


def test_emitting_the_same_document_twice_gives_identical_bytes(payments_doc: Document) -> None:
    assert emit_bundle(payments_doc) == emit_bundle(payments_doc)


def test_a_reloaded_document_emits_the_same_bytes(payments_doc: Document) -> None:
    reloaded = load_document(json.loads(json.dumps(document_json(payments_doc))))
    assert emit_bundle(reloaded) == emit_bundle(payments_doc)


def test_every_file_is_utf8_with_unix_newlines_and_no_absolute_paths(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    cwd = os.getcwd().encode()
    for path, data in files.items():
        assert not path.startswith("/") and ".." not in path.split("/") and "\\" not in path
        assert cwd not in data
        if path == WHEEL_PATH:  # the image's runtime wheel: a ZIP archive, the one binary file
            assert data.startswith(b"PK\x03\x04")
            continue
        text = data.decode("utf-8")
        assert text.endswith("\n") and not text.endswith("\n\n") and "\r" not in text
    assert list(files) == sorted(files)


def test_air_json_round_trips_to_the_same_document(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    assert load_document(json.loads(files["air.json"])) == payments_doc


def test_generation_json_records_unset_inputs_as_nulls(payments_doc: Document) -> None:
    data = json.loads(emit_bundle(payments_doc)["generation.json"])
    assert data == {
        "schemaVersion": 1,
        "resourceOptions": {"mcpEndpoint": None, "cliNpmPackage": None, "cliOci": None, "deploymentNamespace": None},
    }
    assert parse_generation(emit_bundle(payments_doc)["generation.json"]) == Generation()


def test_only_approved_operations_reach_tools_runtime_and_skill_files(payments_doc: Document) -> None:
    files = emit_bundle(_with_pending(payments_doc))
    tools = [tool["name"] for tool in json.loads(files["tools.json"])["tools"]]
    assert tools == ["payments_get_customer", "payments_get_payment", "payments_create_refund"]
    runtime = json.loads(files["runtime/operations.manifest.json"])
    assert [op["id"] for op in runtime["operations"]] == [
        "payments.customers.get",
        "payments.payments.get",
        "payments.refunds.create",
    ]
    assert runtime["baseUrl"] == "https://payments.internal.example.com"
    assert "skill/schemas/capture_payment.schema.json" not in files
    assert "skill/examples/capture_payment.json" not in files
    assert "skill/schemas/create_refund.schema.json" in files
    # every operation, whatever its state, keeps its assembled schema and its catalog entry
    assert "schemas/payments.capture.create.schema.json" in files
    states = {op["id"]: op["state"] for op in json.loads(files["catalog.json"])["operations"]}
    assert states["payments.capture.create"] == "review_required"


def test_tools_json_is_the_tools_list_projection(payments_doc: Document) -> None:
    tool = json.loads(emit_bundle(payments_doc)["tools.json"])["tools"][2]
    assert tool["name"] == "payments_create_refund"
    assert tool["_meta"]["anvil/idempotency"] == "required"
    assert "anvil_dry_run" in tool["inputSchema"]["properties"]


def test_the_example_input_fills_required_inputs_and_safety_keys(payments_doc: Document) -> None:
    example = json.loads(emit_bundle(payments_doc)["skill/examples/create_refund.json"])
    assert example["input"] == {
        "payment_id": "example",
        "amount": 1,
        "currency": "example",
        "idempotency_key": "create_refund-example-key",
        "confirm": True,
    }
    assert example["tool"] == "payments_create_refund"


def test_owned_roots_are_the_top_level_names_of_generated_paths(payments_doc: Document) -> None:
    roots = owned_roots(emit_bundle(payments_doc))
    assert {
        "air.json",
        "generation.json",
        "catalog.json",
        "tools.json",
        "schemas",
        "runtime",
        "skill",
        "deploy",
        "harness.json",
    } == roots


def test_an_unsafe_deployment_namespace_is_refused(payments_doc: Document) -> None:
    with pytest.raises(BundleError) as caught:
        emit_bundle(payments_doc, Generation(deployment_namespace="unsafe/namespace"))
    assert caught.value.code == "bundle/invalid"


def test_json_files_are_byte_identical_to_the_canonical_pretty_printer(payments_doc: Document) -> None:
    tricky = {
        "a": [1.0, 1.5, -0.0, 1e21, 1e-7, 2**63, True, None, 'é\u2028\x01"\\'],
        "b": {},
        "c": [],
        "d": {"nested": [{"x": [[]]}]},
        200: "int key",
        "😀": ("tuple",),
    }
    assert json_file(tricky) == pretty_json(tricky).encode("utf-8")
    assert json_file(document_json(payments_doc)) == pretty_json(document_json(payments_doc)).encode("utf-8")


def test_air_json_is_written_from_the_operations_json_the_compile_hands_on(payments_doc: Document) -> None:
    written = emit_bundle(payments_doc)["air.json"]
    given = json.loads(json.dumps(document_json(payments_doc)["operations"]))
    assert emit_bundle(replace(payments_doc), operations_json=given)["air.json"] == written
    given[0]["description"] = "written from what was given"
    air = json.loads(emit_bundle(replace(payments_doc), operations_json=given)["air.json"])
    assert air["operations"][0]["description"] == "written from what was given"  # used as is, not serialized again


def test_a_sink_receives_every_file_as_its_emitter_makes_it(payments_doc: Document) -> None:
    batches: list[dict[str, bytes]] = []
    files = emit_bundle(payments_doc, sink=lambda produced: batches.append(dict(produced)))
    assert len(batches) > 1 and batches[0].keys() == {"air.json", "generation.json"}
    assert {rel: data for batch in batches for rel, data in batch.items()} == files
    assert sum(len(batch) for batch in batches) == len(files)
