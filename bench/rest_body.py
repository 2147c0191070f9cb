"""What the strict REST body parser costs over a plain ``json.loads``, printed as a table.

Usage: ``python bench/rest_body.py``. Bodies: a typical tool call (~90 B), an argument list of 900
objects (~60 KB, just under the default 64 KiB limit, so every bracket-count fast path is off), and
the same with a long number (so the value walk runs). Each is timed as the best of 5 runs of N parses.
"""

from __future__ import annotations

import json
import timeit

from anvil.serve.rest import parse_body

BODIES = {
    "typical call": {"arguments": {"owner": "o", "repo": "r", "issue_number": 2, "body": "Looks good ✓"}},
    "900 objects": {"arguments": {"items": [{"id": i, "name": "x" * 20, "tags": [1, 2, [3]]} for i in range(900)]}},
    "900 objects + walk": {
        "arguments": {"items": [{"id": i, "name": "x" * 20, "tags": [1, 2, [3]]} for i in range(900)], "n": 10**18}
    },
}


def best_us(call: object, number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6  # type: ignore[arg-type]


def main() -> None:
    print(f"{'body':<20} {'bytes':>7} {'json.loads us':>14} {'parse_body us':>14} {'ratio':>6}")
    for name, body in BODIES.items():
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        number = 2000 if len(data) < 1000 else 40
        plain = best_us(lambda data=data: json.loads(data), number)
        strict = best_us(lambda data=data: parse_body(data), number)
        print(f"{name:<20} {len(data):>7} {plain:>14.1f} {strict:>14.1f} {strict / plain:>6.1f}")


if __name__ == "__main__":
    main()
