"""Conformance on every corpus spec: MCP, REST and ``anvil run`` take the same input the same way.

Each spec gets a manifest from ``anvil init --approve all --propose-effects`` (with the reviewer's auth
choice where the spec offers alternatives or only an end-user flow, see :data:`RUNS`) and a bundle from
the compiler; then conformance runs on it. A small spec runs whole; of a large one, a deterministic
sample: the first :data:`PER_SHAPE` operation (by id) of each input shape (path, query and header
parameters, a JSON, form or multipart body, an input renamed apart from its wire name, an input of each
JSON type, one admitting several and one typed by a ``$ref``, a keyed write, a confirming write, an
operation with its own server, no input at all).

An input divergence (the surfaces put different requests on the wire, or one AIR does not describe,
refuse different inputs, or answer differently) fails the test unless it is listed as a
:class:`Finding` about the API; a listed finding that no longer occurs fails it too. The compile must
block no operation on a colliding input name or a form-body key carrier, must say why for any other
block (listed per spec), and must give every operation of the spec it does not compile a diagnostic.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from anvil.air.enums import KEYED_MODES
from anvil.air.inputs import input_bindings
from anvil.air.model import Document, Operation
from anvil.air.naming import prop_key
from anvil.air.tools import operation_input_schema
from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.cli.compile import compile_bundle
from anvil.cli.run_args import schema_types
from anvil.load.refs import follow, is_ref, split_fragment
from anvil.load.spec import load_spec
from anvil.proof.conformance.lane import conformance
from anvil.proof.conformance.surfaces import SURFACES
from anvil.proof.scope import LaneScope

#: How many operations of each input shape a large spec runs.
PER_SHAPE: Final = 1
#: A spec with at most this many operations runs whole.
WHOLE: Final = 12
_HTTP_METHODS: Final = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace", "query"})
_BLOCKERS: Final = ("duplicate_agent_input_name", "unsupported_idempotency_carrier")


@dataclass(frozen=True, slots=True)
class Finding:
    """A divergence that is the API's: ``check`` failed for ``operation`` and ``why``."""

    check: str
    operation: str
    why: str


@dataclass(frozen=True, slots=True)
class Run:
    """How a spec is compiled: its service id, ``anvil init`` flags, a reviewed auth override written
    into the manifest (``scheme``), the diagnostic codes that may block an operation and why, and the
    API's own divergences."""

    service: str
    init: tuple[str, ...] = ()
    override: str | None = None
    blocked_by: dict[str, str] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()


RUNS: Final[dict[str, Run]] = {
    "oai-petstore.yaml": Run("petstore"),
    "oai-petstore-expanded.yaml": Run("petx"),
    "oai-uspto.yaml": Run("uspto"),
    "oai-callback-example.yaml": Run("callback"),
    "oai-link-example.yaml": Run("link"),
    "oai-webhook-example.yaml": Run("webhook"),
    "oai-petstore-separate/spec/swagger.yaml": Run("petsep"),
    "paypal-checkout-orders-v2.json": Run("paypal"),
    "lob/lob-api-public.yml": Run("lob"),
    # Netlify and Slack offer only an end-user OAuth2 flow: served as an operator's static token.
    "netlify.yml": Run("netlify", override="netlifyAuth"),
    "slack-web-api.json": Run("slack", override="slackAuth"),
    "sentry-derefed.json": Run("sentry", init=("--auth-scheme", "auth_token")),
    "asana.yaml": Run("asana", init=("--auth-scheme", "personalAccessToken")),
    "openai.yaml": Run("openai"),
    "jira-platform.json": Run(
        "jira",
        init=("--auth-scheme", "basicAuth"),
        blocked_by={
            "query_language_passthrough": "a JQL input needs a query policy, which this runtime has not",
            "form_body_not_object": "the attachment upload's multipart body is a bare binary string, no named part",
        },
    ),
    "pagerduty-rest.json": Run("pd"),
    # Every call needs three API-key headers at once: served as one composite auth, each key sent.
    "plaid.yml": Run("plaid"),
}


def _index(corpus: Path) -> list[str]:
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        return [row["file"] for row in csv.DictReader(handle, delimiter="\t")]


def _declared_operations(spec: Path, root: Path) -> int:
    """Path x method pairs the spec declares, every HTTP method counted (path-item references followed)."""
    document = load_spec(spec, root=root).document
    assert document is not None
    total = 0
    for item in (document.get("paths") or {}).values():
        for _ in range(8):
            if not is_ref(item):
                break
            tokens = split_fragment(str(item["$ref"]).partition("#")[2])
            item = follow(document, tokens or [])
        total += sum(1 for method in item if method in _HTTP_METHODS) if isinstance(item, dict) else 0
    return total


def shapes(op: Operation) -> set[str]:
    """The input shapes ``op`` has (see the module docstring)."""
    bindings = input_bindings(op)
    found = {binding.location for binding in bindings if binding.location in ("path", "query", "header", "cookie")}
    found |= {"renamed" for b in bindings if b.location != "body" and b.property != prop_key(b.wire_name)}
    body = op.input.body
    if body is not None:
        media = body.content_type.lower()
        found.add("form" if "urlencoded" in media else "multipart" if "multipart" in media else f"body:{media}")
    if op.idempotency.mode in KEYED_MODES:
        found.add("keyed")
    if op.confirmation.required:
        found.add("confirm")
    if op.servers:
        found.add("own-server")
    if not bindings:
        found.add("no-input")
    schema = operation_input_schema(op)
    defs = schema.get("$defs") if isinstance(schema.get("$defs"), dict) else {}
    for binding in bindings:  # what the CLI types a flag's text as
        declared = (schema.get("properties") or {}).get(binding.property) or {}
        kinds = schema_types(declared, defs)
        found |= {f"value:{kind}" for kind in kinds[:1]} | ({"value:several"} if len(kinds) > 1 else set())
        found |= {"value:ref"} if "$ref" in declared else set()
    return found


def sample(doc: Document, must: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Every approved operation of a small spec; of a large one, :data:`PER_SHAPE` of each shape (by id)
    and the ``must`` ids. Empty means every approved operation."""
    approved = sorted((op for op in doc.operations if op.is_approved), key=lambda op: op.id)
    if len(approved) <= WHOLE:
        return ()
    chosen: dict[str, None] = dict.fromkeys(must)
    counts: dict[str, int] = {}
    for op in approved:
        wanted = [shape for shape in sorted(shapes(op)) if counts.get(shape, 0) < PER_SHAPE]
        if wanted:
            chosen[op.id] = None
            for shape in shapes(op):
                counts[shape] = counts.get(shape, 0) + 1
    return tuple(chosen)


def input_divergences(record: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(check, operation, divergence)`` of every failing wire, answer or gate check: where the executable
    surfaces disagree with each other or with AIR about a call."""
    return [
        (check["id"], check["operationId"], item)
        for check in record["checks"]
        if check["id"] in ("wire-agreement", "answer-agreement", "gate-agreement") and check["status"] == "fail"
        for item in check["divergences"]
        if item["between"][0] in SURFACES
    ]


def _manifest(corpus: Path, spec: str, run: Run, out: Path) -> Path:
    manifest, root = out / "anvil.yaml", _root(corpus, spec)
    init = ["init", str(corpus / spec), "--service", run.service, "--out", str(manifest), "--approve", "all"]
    assert main([*init, "--propose-effects", "--spec-root", str(root), *run.init]) == 0
    if run.override:  # the reviewer's decision, as they would write it
        text = manifest.read_text(encoding="utf-8")
        block = f"auth: {{scheme: {run.override}, type: bearer, override: true, reason: tokens minted out of band}}\n"
        manifest.write_text(text.replace("\noperations:\n", f"\n{block}\noperations:\n", 1), encoding="utf-8")
    return manifest


def _root(corpus: Path, spec: str) -> Path:
    parts = Path(spec).parts
    return corpus / parts[0] if len(parts) > 1 else corpus


@pytest.mark.corpus
def test_every_corpus_spec_has_a_conformance_run(corpus: Path) -> None:
    assert sorted(_index(corpus)) == sorted(RUNS)


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("spec", list(RUNS))
def test_mcp_rest_and_anvil_run_take_every_corpus_specs_inputs_alike(corpus: Path, tmp_path: Path, spec: str) -> None:
    run = RUNS[spec]
    manifest = _manifest(corpus, spec, run, tmp_path)
    bundle = tmp_path / run.service
    outcome = compile_bundle(
        corpus / spec, out=bundle, manifest=manifest, service_id=run.service, spec_root=_root(corpus, spec)
    )
    assert outcome.bundle_hash is not None
    codes = {(d.operation, d.code) for d in outcome.diagnostics}
    assert [item for item in codes if item[1].startswith(_BLOCKERS)] == []
    doc = read_bundle(bundle)
    for op in doc.operations:
        if not op.is_approved:
            assert {code for operation, code in codes if operation == op.id} & set(run.blocked_by), op.id
    dropped = sum(1 for d in outcome.diagnostics if d.code == "operation_not_compiled")
    assert len(doc.operations) + dropped == _declared_operations(corpus / spec, _root(corpus, spec))

    environ = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    must = tuple(finding.operation for finding in run.findings)
    record = conformance(bundle, environ=environ, scope=LaneScope(operations=sample(doc, must)))
    found = input_divergences(record)
    unexplained = [item for item in found if (item[0], item[1]) not in {(f.check, f.operation) for f in run.findings}]
    assert unexplained == [], "MCP, REST and anvil run diverge on these inputs"
    stale = [f for f in run.findings if not any((f.check, f.operation) == item[:2] for item in found)]
    assert stale == [], "these listed findings no longer occur"
    assert record["summary"]["pass"] > 0
