"""The mock's answers against the gateway's output check, on every corpus spec with every operation approved.

    PYTHONPATH=src .venv/bin/python bench/mock_answers.py [--corpus DIR | --bundles DIR] [SERVICE...] [--verbose]

For every corpus spec (compiled as ``anvil init --approve all`` writes the manifest; or, with
``--bundles``, every compiled bundle in DIR), a fresh ``anvil mock`` of it is called once per approved
operation that has an answer schema, in process over ASGI: creates first, then the other writes,
then reads; path, required query and body inputs are generated from their schemas (as requests:
exactly one ``oneOf`` branch), and an item read answered 404 is asked again for an item planted
through ``POST /__anvil/items`` (what selftest does for an item no approved create makes). Each 2xx
answer goes through the gateway's own output check (:class:`anvil.serve.mcp.results.OutputCheck` of
the operation's whole published output schema). Printed per spec: the operations called, the answers
the check refused (``fail``, each named), the calls the mock refused (``4xx``: its request checks)
and the reads that needed a planted item. Exit status 1 when any answer was refused.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from anvil.air.model import Document, Operation  # noqa: E402
from anvil.air.surface import surface_of  # noqa: E402
from anvil.air.values import ValueGenerator  # noqa: E402
from anvil.proof.mock import MockApi, create_mock_app  # noqa: E402
from anvil.serve.mcp.results import OutputCheck  # noqa: E402

#: The counts printed per spec.
SHOWN = ("operations", "fail", "4xx", "5xx", "planted")


def _path(template: str, op: Operation, values: ValueGenerator, item: tuple[str, str] | None = None) -> str:
    path = template
    for param in op.input.params:
        if param.in_ == "path":
            value: Any = values.attempt(param.schema, name=param.name, direction="request")
            if item is not None and param.name == item[0]:
                value = item[1]
            path = path.replace("{" + param.name + "}", quote(str(value), safe=""))
    return path


async def _scan(document: Document, verbose: bool) -> Counter[str]:
    surface = surface_of(document)
    api = MockApi(document)
    values = ValueGenerator(document.schemas, seed=7)
    counts: Counter[str] = Counter()
    transport = httpx.ASGITransport(app=create_mock_app(api))
    async with httpx.AsyncClient(transport=transport, base_url="http://mock") as client:
        for route in sorted(api.routes, key=lambda r: (r.role != "create", r.method == "GET")):
            op = route.op
            projection = surface.output(op) if op.is_approved and op.output.schema is not None else None
            if projection is None:
                continue
            path = _path(route.template, op, values)
            for missing in route.params:
                path = path.replace("{" + missing + "}", "x")
            query = {}
            for param in op.input.params:
                if param.in_ == "query" and param.required:
                    value = values.attempt(param.schema, name=param.name, direction="request")
                    query[param.name] = value if isinstance(value, str) else json.dumps(value)
            body = op.input.body
            content = values.attempt(body.schema, name="body", direction="request") if body is not None else None
            answer = await client.request(route.method, path, json=content, params=query)
            if answer.status_code == 404 and route.item_param is not None:
                planted = await client.post("/__anvil/items", json={"kind": route.kind})
                if planted.status_code == 201:
                    counts["planted"] += 1
                    path = _path(route.template, op, values, (route.item_param, planted.json()["key"]))
                    answer = await client.request(route.method, path, json=content, params=query)
            counts["operations"] += 1
            if answer.status_code >= 300:
                counts["4xx" if answer.status_code < 500 else "5xx"] += 1
                if verbose:
                    print(f"  {answer.status_code} {op.id}: {answer.text[:160]}")
                continue
            check = OutputCheck(projection)
            data = answer.json() if answer.content else None
            if not check.valid(check.shape(data)):
                counts["fail"] += 1
                print(f"  refused by the output check: {op.id} ({route.method} {route.template})")
    return counts


def _documents(args: argparse.Namespace, work: Path) -> list[tuple[str, Document]]:
    from anvil.bundle.read import read_bundle

    if args.bundles:
        folders = sorted(p for p in Path(args.bundles).iterdir() if (p / "air.json").is_file())
        return [(p.name, read_bundle(p)) for p in folders if not args.services or p.name in args.services]
    from anvil.compiler import build
    from anvil.compiler.manifest.draft import draft_manifest

    corpus = Path(args.corpus)
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        names = [row["file"] for row in csv.DictReader(handle, delimiter="\t")]
    out = []
    for name in names:
        service = Path(name).stem
        if args.services and service not in args.services:
            continue
        parts = Path(name).parts
        root = corpus / parts[0] if len(parts) > 1 else None
        first = build(corpus / name, service_id=service, source_uri=name, spec_root=root).document
        if first is None:
            continue
        manifest = work / f"{service}.anvil.yaml"
        manifest.write_text(draft_manifest(first, approve="all"), encoding="utf-8")
        document = build(corpus / name, manifest=manifest, service_id=service, source_uri=name, spec_root=root).document
        if document is not None:
            out.append((service, document))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("services", nargs="*", help="only these services (the spec file's stem)")
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--bundles", help="compiled bundles (one folder each) instead of compiling the corpus")
    parser.add_argument("--verbose", action="store_true", help="name every call the mock refused")
    args = parser.parse_args()
    total: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as work:
        for service, document in _documents(args, Path(work)):
            counts = asyncio.run(_scan(document, args.verbose))
            total += counts
            print(f"{service:32} " + ", ".join(f"{key} {counts[key]}" for key in SHOWN), flush=True)
    print(f"{'total':32} " + ", ".join(f"{key} {total[key]}" for key in SHOWN))
    sys.exit(1 if total["fail"] else 0)


if __name__ == "__main__":
    main()
