"""Naming parity with the original on the corpus (original-core §1.4-§1.5).

(a) every corpus spec the original compiles gets, for each (method, path), the original's id, tool name and
CLI command (``spec/golden/naming``); (b) the sorted ``(id, tool name, CLI command)`` triples of every corpus
spec are pinned by a sha256, so no naming change lands unnoticed. A deliberate naming change updates
``TRIPLE_DIGESTS`` and says which triples moved in its commit message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.naming_goldens import compare_spec, compile_names, golden_specs, triples_digest

#: The service id each corpus spec is compiled with (the goldens' ``--service``; a stem for the rest).
SERVICES = {
    "oai-petstore.yaml": "petstore",
    "oai-petstore-expanded.yaml": "petstore-expanded",
    "oai-uspto.yaml": "uspto",
    "oai-callback-example.yaml": "callback-example",
    "oai-link-example.yaml": "link-example",
    "oai-webhook-example.yaml": "webhook-example",
    "oai-petstore-separate/spec/swagger.yaml": "petstore-separate",
    "netlify.yml": "netlify",
    "paypal-checkout-orders-v2.json": "paypal",
    "jira-platform.json": "jira",
    "slack-web-api.json": "slack",
    "pagerduty-rest.json": "pagerduty",
    "openai.yaml": "openai",
    "plaid.yml": "plaid",
    "asana.yaml": "asana",
    "sentry-derefed.json": "sentry",
    "lob/lob-api-public.yml": "lob",
}

#: sha256 of the sorted (id, tool name, CLI command) triples per corpus spec, compiled with SERVICES.
TRIPLE_DIGESTS = {
    "oai-petstore.yaml": "57b04c3cd54b7c5f37c6d3323ff2c121968791c930c53151f27cd6ade317a710",
    "oai-petstore-expanded.yaml": "e52894bedadb083b01a65c0e5f1fa2662aeb2b57e30abbdda61789e10418fff3",
    "oai-uspto.yaml": "852e84efd34c69f6547f8eb1cdeb30b024f85804b0c4ab7dc93d8b12cdf7ba00",
    "oai-callback-example.yaml": "2f4741ea85ee083026f0fe47a10964174d9fc90eee9847c57b0b386c5f53f9d1",
    "oai-link-example.yaml": "964fa17ee38146b94ccade3ddfee3e6382ae942d5ed04306e82733c77886eb3b",
    "oai-webhook-example.yaml": "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
    "oai-petstore-separate/spec/swagger.yaml": "973bfd26c8d11192a73e1f6b16ab66ec9d06e10bc47573a74e1dff6b837f0c15",
    "netlify.yml": "0206a39ea2108da4ed29ebab7a408a20e343dd308751a6c08b54a90928826086",
    "paypal-checkout-orders-v2.json": "657e10bf7cf1042ed7dd24ce5c10259237db05354a6d9918c3414c5ec998b8a4",
    "jira-platform.json": "9bbfb6f174c96145b4fefd63364ed3669e53afedc81cff301b649df7e65ec439",
    "slack-web-api.json": "93c6087371ce5ae05ed522f99dd185a2637441805919b4bd2455b58d142dc628",
    "pagerduty-rest.json": "b08af1a716d86fac8a39c409ac01cb570578f5f52ed984f02e15625b2aaf2b72",
    "openai.yaml": "7bf202dd7b6405dc072f776d2803b80c1f1203b16ac49b4c7afc5371d14756e6",
    "plaid.yml": "c07d28cdc2b45ba5698a6b9c83121ea9fde47572e6a8c5e41176ac06395b2c96",
    "asana.yaml": "7600fd5b2fa0d6de69dc40f4a10c9d9a957c616c431f29571c14b67f0d1ff0d5",
    "sentry-derefed.json": "af644b69af0a3bcef3212632c27f8438543e7501bba6d43e7e5b6d75e25a8158",
    "lob/lob-api-public.yml": "d7a3f011961ee46604521c882925c2ec28d53812ce0999e844d6f70194f3ef23",
}


def _goldens(corpus: Path) -> Path:
    folder = corpus.parent / "spec" / "golden" / "naming"
    if not folder.is_dir():
        pytest.skip(f"naming goldens not found at {folder}")
    return folder


@pytest.mark.corpus
@pytest.mark.slow
def test_every_corpus_spec_the_original_compiles_gets_the_original_names(corpus: Path) -> None:
    goldens = golden_specs(_goldens(corpus))
    assert goldens, "no golden files"
    differences = {}
    for golden in goldens:
        assert SERVICES.get(golden.spec) == golden.service, golden.spec
        report = compare_spec(corpus, golden)
        if report.rows:
            differences[golden.service] = report.rows[:5]
    assert differences == {}


@pytest.mark.corpus
@pytest.mark.slow
def test_the_naming_triples_of_every_corpus_spec_are_pinned(corpus: Path) -> None:
    digests = {spec: triples_digest(compile_names(corpus, spec, service)) for spec, service in SERVICES.items()}
    assert digests == TRIPLE_DIGESTS
