"""`anvil mock` serves every corpus spec that compiles: each operation gets an answer, never a 500."""

from __future__ import annotations

import csv
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from anvil.proof.mock import MockApi, create_mock_app
from anvil.proof.mock.schema import SchemaSet, ValueMaker

#: At most this many operations per spec get a request (bounds the run on a very large spec).
PER_SPEC = 500


def _specs(corpus: Path) -> list[str]:
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        return [row["file"] for row in csv.DictReader(handle, delimiter="\t")]


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.anyio
async def test_the_mock_answers_every_operation_of_every_corpus_spec_that_compiles_without_a_500(
    corpus: Path,
) -> None:
    from anvil.compiler import build

    served = 0
    problems: dict[str, str] = {}
    for name in _specs(corpus):
        top = Path(name).parts[0]
        spec_root = corpus / top if len(Path(name).parts) > 1 else None
        result = build(corpus / name, manifest=None, service_id="corpus", source_uri=name, spec_root=spec_root)
        if result.document is None:
            continue
        document = result.document
        api = MockApi(document)
        maker = ValueMaker(SchemaSet(document.schemas))
        app = create_mock_app(api)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
            for route in api.routes[:PER_SPEC]:
                path = route.template
                for param in route.op.input.params:
                    if param.in_ == "path":
                        value = maker.value(param.schema, param.name)
                        path = path.replace("{" + param.name + "}", quote(str(value), safe=""))
                for missing in route.params:
                    path = path.replace("{" + missing + "}", "x")
                body = route.op.input.body
                content = maker.value(body.schema, "body") if body is not None else None
                answer = await client.request(route.method, path, json=content)
                if answer.status_code >= 500:
                    problems[f"{name} {route.method} {route.template}"] = f"{answer.status_code}"
        served += 1
    assert served >= 10
    assert problems == {}


@pytest.mark.corpus
@pytest.mark.anyio
async def test_the_mock_answers_a_pagerduty_invocation_the_gateways_output_check_accepts(corpus: Path) -> None:
    # The invocation's agent is a oneOf of two alike shapes ({id, type} required twice): read as
    # "exactly one branch" no answer exists, so the gateway refused the mock's (and PagerDuty's) answer.
    from anvil.air.surface import surface_of
    from anvil.compiler import build
    from anvil.serve.mcp.results import OutputCheck

    spec = corpus / "pagerduty-rest.json"
    document = build(spec, manifest=None, service_id="pagerduty-rest", source_uri=spec.name).document
    assert document is not None
    api = MockApi(document, seed=5)
    route = next(r for r in api.routes if r.op.id == "pagerduty-rest.invocations.get")
    surface = surface_of(document)
    check = OutputCheck(surface.output(route.op))  # type: ignore[arg-type]
    answers = []
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mock_app(api)), base_url="http://mock"
    ) as client:
        planted = await client.post("/__anvil/items", json={"kind": route.kind})
        assert planted.status_code == 201
        for _ in range(2):  # the same item read twice answers the same
            answer = await client.get(route.template.replace("{id}", quote(planted.json()["key"], safe="")))
            assert answer.status_code == 200
            answers.append(answer.json())
    assert check.valid(check.shape(answers[0])), answers[0]
    assert answers[0] == answers[1]
    agent = answers[0]["invocation"]["metadata"]["agent"]
    assert isinstance(agent, dict) and {"id", "type"} <= set(agent)
