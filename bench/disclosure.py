"""What measuring disclosure figures costs the compiler, per corpus spec.

Usage: ``python bench/disclosure.py [SPEC_FILTER]`` (the corpus is ``ANVIL_CORPUS``, default
``../shared/corpus`` beside the repository). Each spec is compiled once; then every operation's input
schemas are rebuilt as the original compiles them ("view s": :mod:`anvil.compiler.original_view`,
part of every compile), its measured surface (:func:`anvil.air.disclosure_surface.measured_surface_json`)
is built, and counted with the o200k_base tokenizer and, for comparison, with ``chars/4``. "table s"
is the one-off load of the BPE table (paid once per process, on the first count). Counting is pure
Python; the tokenizer caches pieces it has seen: "o200k 1st s" is the first count of the spec (what a
compile pays; specs run in order in one process, so later ones find some pieces cached), "o200k s"
the best of 3 after it.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from anvil.air.disclosure_surface import measured_surface_json  # noqa: E402
from anvil.air.tokens import count_tokens  # noqa: E402
from anvil.compiler import build  # noqa: E402
from anvil.compiler.original_view import OriginalSchemas, original_view  # noqa: E402
from anvil.load.spec import load_spec  # noqa: E402

SERVICES = {
    "asana.yaml": "asana",
    "jira-platform.json": "jira",
    "netlify.yml": "netlify",
    "openai.yaml": "openai",
    "pagerduty-rest.json": "pagerduty",
    "plaid.yml": "plaid",
    "sentry-derefed.json": "sentry",
    "slack-web-api.json": "slack",
}


def _best(run: object, times: int = 3) -> float:
    best = math.inf
    for _ in range(times):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    corpus = Path(os.environ.get("ANVIL_CORPUS", str(REPO.parent / "shared" / "corpus")))
    wanted = sys.argv[1] if len(sys.argv) > 1 else ""
    start = time.perf_counter()
    count_tokens("warm")
    print(f"table s: {time.perf_counter() - start:.3f}")
    head = f"{'spec':<24}{'ops':>6}{'chars':>11}{'tokens':>10}"
    print(f"{head}{'view s':>8}{'surface s':>11}{'o200k 1st s':>12}{'o200k s':>10}{'chars/4 s':>11}")
    for spec, service in SERVICES.items():
        if wanted not in spec:
            continue
        doc = build(corpus / spec, service_id=service, source_uri=spec).document
        loaded = load_spec(corpus / spec).document or {}
        start = time.perf_counter()
        schemas = OriginalSchemas(loaded)
        viewed = [original_view(op, loaded, schemas) for op in doc.operations]
        view = time.perf_counter() - start
        surfaces = [measured_surface_json(op) for op in viewed]
        start = time.perf_counter()
        first = [count_tokens(text) for text in surfaces]
        cold = time.perf_counter() - start
        built = _best(lambda ops=viewed: [measured_surface_json(op) for op in ops])
        counted = _best(lambda texts=surfaces: [count_tokens(text) for text in texts])
        estimated = _best(lambda texts=surfaces: [math.ceil(len(text) / 4) for text in texts])
        chars = sum(len(text) for text in surfaces)
        tokens = sum(first)
        print(
            f"{spec:<24}{len(surfaces):>6}{chars:>11}{tokens:>10}{view:>8.3f}{built:>11.3f}{cold:>12.3f}"
            f"{counted:>10.3f}{estimated:>11.4f}"
        )


if __name__ == "__main__":
    main()
