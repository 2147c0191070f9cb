"""What the metered ``anvil_projection`` costs over plain ``jmespath.search``, and how soon a bomb stops.

Usage: ``python bench/projection.py``. Answers: a typical read (one object), a page of 100 items and a
large answer of 20,000 items (about 2 MB of JSON). Each expression is timed as the best of 5 runs; the
metered time includes the final measure of the view (what bounds serializing it) and the narrowing check.
Then the self-repeating expressions (``[@, @] | [@, @] | ...`` flattened, serialized, compared) on a tiny
answer: each is stopped by the work budget, and the table says after how long.
"""

from __future__ import annotations

import json
import time
import timeit
from typing import Any

import jmespath

from anvil.serve.projection import Projection, ProjectionFailed, compile_projection


def _item(index: int) -> dict[str, Any]:
    return {
        "id": index,
        "name": f"item {index}",
        "status": "open" if index % 3 else "closed",
        "labels": ["a", "b", "c"],
        "owner": {"login": f"user{index % 50}", "id": index % 50},
        "body": "x" * 60,
    }


ANSWERS: dict[str, Any] = {
    "one object": _item(7),
    "100 items": {"items": [_item(i) for i in range(100)], "total": 100},
    "20,000 items": {"items": [_item(i) for i in range(20_000)], "total": 20_000},
}
EXPRESSIONS = {
    "one object": ["{id: id, name: name}", "owner.login"],
    "100 items": ["items[].{id: id, name: name}", "items[?status == 'open'].id", "length(items)"],
    "20,000 items": ["items[].{id: id, name: name}", "items[?status == 'open'].id", "@"],
}
_DOUBLING = " | ".join(["[@, @]"] * 70)
BOMBS = {
    "flatten": f"{_DOUBLING} | " + "[]" * 40,
    "to_string": f"{_DOUBLING} | to_string(@)",
    "compare": "(" + "|".join(["[@,@]"] * 60) + ") == (" + "|".join(["[@,@]"] * 60) + ")",
    "view": _DOUBLING,
}


def best_ms(call: Any, number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e3


def main() -> None:
    print(f"{'answer':<14} {'bytes':>9} {'expression':<30} {'jmespath ms':>12} {'metered ms':>11} {'ratio':>6}")
    for name, answer in ANSWERS.items():
        size = len(json.dumps(answer))
        number = 2000 if size < 2000 else (100 if size < 100_000 else 3)
        for expression in EXPRESSIONS[name]:
            projection = compile_projection(expression)
            assert isinstance(projection, Projection)
            plain = best_ms(lambda e=expression, a=answer: jmespath.search(e, a), number)
            metered = best_ms(lambda p=projection, a=answer: p.apply(a), number)
            print(f"{name:<14} {size:>9} {expression:<30} {plain:>12.3f} {metered:>11.3f} {metered / plain:>6.2f}")
    print()
    print(f"{'bomb':<10} {'chars':>6} {'stopped after ms':>17}")
    for name, expression in BOMBS.items():
        projection = compile_projection(expression)
        assert isinstance(projection, Projection), name
        started = time.perf_counter()
        try:
            projection.apply({"a": 1})
        except ProjectionFailed as failed:
            assert failed.kind == "budget", failed.kind
        else:
            raise AssertionError(f"{name} was not stopped")
        print(f"{name:<10} {len(expression):>6} {(time.perf_counter() - started) * 1e3:>17.1f}")


if __name__ == "__main__":
    main()
