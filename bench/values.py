"""The one value generator on the corpus: how many generated values validate, and what a value costs.

    PYTHONPATH=src .venv/bin/python bench/values.py [--corpus DIR] [--no-regex-compare]

For every corpus spec (compiled with every operation approved, as ``anvil init --approve all`` writes
the manifest), every operation gets an input (every business input, confirm, a fresh key: what
selftest sends) checked against its tool's published input schema, and an answer checked against
its published output schema, both by ``jsonschema`` with format assertion. Printed per spec:
``(operation, schema)`` pairs, how many validated, how many the generator refused to make (with the
reasons: the spec's own contradictions), and the mean cost of a value.

Then every ``pattern`` of the corpus goes through :func:`anvil.air.regex_values.pattern_string` and,
when ``hypothesis`` is importable (the test extra), through ``hypothesis.strategies.from_regex``: how
many patterns each covers (a string ``re.search`` accepts) and the cost per pattern. This is what the
choice of a stdlib generator over a runtime dependency rests on.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from anvil.air.inputs import safety_keys  # noqa: E402
from anvil.air.regex_values import pattern_string  # noqa: E402
from anvil.air.tools import output_projection, published_input_schema  # noqa: E402
from anvil.air.value_inputs import example_arguments, idempotency_key  # noqa: E402
from anvil.air.values import CannotMake, Style, ValueGenerator  # noqa: E402
from anvil.compiler import build  # noqa: E402
from anvil.compiler.manifest.draft import draft_manifest  # noqa: E402
from tests.air.test_values import FORMATS  # noqa: E402


def _valid(schema: Any, value: Any) -> bool:
    return bool(jsonschema.Draft202012Validator(schema, format_checker=FORMATS).is_valid(value))


def _patterns(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            found.add(node["pattern"])
        for value in node.values():
            _patterns(value, found)
    elif isinstance(node, list):
        for value in node:
            _patterns(value, found)


def _spec(corpus: Path, name: str, work: Path, patterns: set[str], reasons: Counter[str]) -> str:
    parts = Path(name).parts
    root = corpus / parts[0] if len(parts) > 1 else None
    first = build(corpus / name, service_id="corpus", source_uri=name, spec_root=root).document
    manifest = work / "anvil.yaml"
    manifest.write_text(draft_manifest(first, approve="all"), encoding="utf-8")
    document = build(corpus / name, manifest=manifest, service_id="corpus", source_uri=name, spec_root=root).document
    generator = ValueGenerator(document.schemas, style=Style(label="selftest", numbered=True))
    counts = [0, 0, 0, 0, 0, 0]  # inputs: pairs, valid, refused; answers: pairs, valid, refused
    spent = 0.0
    for op in document.operations:
        _patterns(op.input.schema, patterns)
        _patterns(op.output.schema, patterns)
        keys = safety_keys(op)
        counts[0] += 1
        started = time.perf_counter()
        try:
            arguments = example_arguments(op, generator)
            if keys.confirm is not None:
                arguments[keys.confirm] = True
            if keys.idempotency is not None:
                arguments[keys.idempotency] = idempotency_key(op, generator, "selftest")
            spent += time.perf_counter() - started
            counts[1] += _valid(published_input_schema(op), arguments)
        except CannotMake as refused:
            counts[2] += 1
            reasons[refused.reason.split(": ", 1)[-1][:90]] += 1
        projection = output_projection(op, document.schemas)
        if projection is None:
            continue
        counts[3] += 1
        started = time.perf_counter()
        try:
            answer = generator.make(op.output.schema, name="answer", direction="response", published=True)
            spent += time.perf_counter() - started
            counts[4] += _valid(projection.schema, {"result": answer} if projection.wrap else answer)
        except CannotMake as refused:
            counts[5] += 1
            reasons[refused.reason.split(": ", 1)[-1][:90]] += 1
    made = counts[0] + counts[3] - counts[2] - counts[5]
    cost = spent / made * 1000 if made else 0.0
    return (
        f"{name:40} inputs {counts[1]:4}/{counts[0]:<4} refused {counts[2]}   "
        f"answers {counts[4]:4}/{counts[3]:<4} refused {counts[5]}   {cost:.2f} ms/value"
    )


def _regex_compare(patterns: set[str], with_hypothesis: bool) -> None:
    ordered = sorted(patterns)
    started = time.perf_counter()
    ours = sum(1 for p in ordered if (t := pattern_string(p, random.Random(1))) is not None and re.search(p, t))
    our_ms = (time.perf_counter() - started) / max(1, len(ordered)) * 1000
    print(f"patterns: {len(ordered)}; anvil.air.regex_values covers {ours} ({our_ms:.2f} ms/pattern)")
    if not with_hypothesis:
        return
    try:
        from hypothesis import strategies
    except ImportError:
        print("hypothesis is not installed: from_regex not measured")
        return
    covered = 0
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for pattern in ordered:
            try:
                text = strategies.from_regex(pattern).example()
            except Exception:  # a pattern hypothesis cannot parse counts as not covered
                continue
            covered += bool(re.search(pattern, text))
    their_ms = (time.perf_counter() - started) / max(1, len(ordered)) * 1000
    print(f"hypothesis.from_regex covers {covered} ({their_ms:.2f} ms/pattern; length bounds not honoured)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--no-regex-compare", action="store_true")
    args = parser.parse_args()
    corpus = Path(args.corpus)
    with (corpus / "INDEX.tsv").open(encoding="utf-8") as handle:
        names = [row["file"] for row in csv.DictReader(handle, delimiter="\t")]
    patterns: set[str] = set()
    reasons: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            print(_spec(corpus, name, Path(work), patterns, reasons), flush=True)
    for reason, count in reasons.most_common():
        print(f"  refused {count}x: {reason}")
    _regex_compare(patterns, not args.no_regex_compare)


if __name__ == "__main__":
    main()
