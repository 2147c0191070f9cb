"""Request bodies read before pydantic-core is imported read exactly as ``pydantic_core.from_json`` reads them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pydantic_core

from anvil.serve.mcp.bodies import is_serialization_error, is_validation_error
from tests.serve.support import REPO

#: Read in a fresh interpreter (no pydantic-core yet): each reading, and whether it imported pydantic-core.
READ = textwrap.dedent(
    """
    import json, sys
    from anvil.serve.mcp.bodies import read_body

    out = []
    for text in json.loads(sys.argv[1]):
        before = "pydantic_core" in sys.modules
        try:
            value = ["ok", repr(read_body(text.encode("utf-8", "surrogatepass")))]
        except ValueError:
            value = ["refused", None]
        out.append([value, not before and "pydantic_core" in sys.modules])
    print(json.dumps(out))
    """
)

#: Bodies both parsers read alike: orjson's reading is kept, pydantic-core stays unimported.
AGREED = [
    '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    '{"a":1,"b":2,"a":3}',
    '{"n":18446744073709551615,"m":-9223372036854775808,"z":-0}',
    '{"s":"\\ud83d\\ude00 \\u00e9 \\/ \\u0000","t":[true,false,null,[]]}',
    " \r\n{}\t",
    "[" * 100 + "]" * 100,
]
#: Bodies where orjson reads otherwise than pydantic-core, or refuses what it reads.
DIFFERENT = [
    '{"big":123456789012345678901234567890}',
    '{"low":-9223372036854775809}',
    '{"f":1.5}',
    '{"x":NaN}',
    '{"x":1e400}',
    "[" * 101 + "]" * 101,
    "[" * 250 + "]" * 250,
]
REFUSED = ['"\\ud800"', "[1,]", "{}x", "01", "\ufeff{}"]


def _fresh(bodies: list[str]) -> list[Any]:
    shown = subprocess.run(
        [sys.executable, "-c", READ, json.dumps(bodies)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    found: list[Any] = json.loads(shown.stdout)
    return found


def _expected(text: str) -> list[Any]:
    try:
        return ["ok", repr(pydantic_core.from_json(text.encode("utf-8", "surrogatepass")))]
    except ValueError:
        return ["refused", None]


def test_bodies_both_parsers_read_alike_are_read_as_pydantic_reads_them_without_importing_it() -> None:
    read = _fresh(AGREED)
    assert [value for value, _ in read] == [_expected(text) for text in AGREED]
    assert [imported for _, imported in read] == [False] * len(AGREED)


def test_big_integers_floats_nan_infinity_and_deep_nesting_are_left_to_pydantic_core() -> None:
    for text in DIFFERENT:  # one interpreter each: the first of them imports pydantic-core
        [(value, imported)] = _fresh([text])
        assert value == _expected(text), text
        assert imported, text


def test_bodies_neither_parser_reads_are_refused_with_a_value_error() -> None:
    read = _fresh(REFUSED)
    assert [value for value, _ in read] == [["refused", None]] * len(REFUSED)


def test_pydantic_core_errors_are_recognised_once_it_is_imported_and_nothing_is_before() -> None:
    try:
        pydantic_core.SchemaValidator(pydantic_core.core_schema.int_schema()).validate_python("x")
    except pydantic_core.ValidationError as exc:
        parse_error: ValueError = exc
    failed = pydantic_core.PydanticSerializationError("cannot serialize")
    assert is_validation_error(parse_error) and not is_serialization_error(parse_error)
    assert is_serialization_error(failed) and not is_validation_error(failed)
    assert not is_validation_error(ValueError("x")) and not is_serialization_error(ValueError("x"))
    check = (
        "import sys; from anvil.serve.mcp.bodies import is_validation_error as v, is_serialization_error as s; "
        "print(v(ValueError()), s(ValueError()), 'pydantic_core' in sys.modules)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", check],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert shown.stdout.split() == ["False", "False", "False"]
