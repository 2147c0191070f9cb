"""Spec text written into a manifest: every key, value and comment one line, read back as written."""

from __future__ import annotations

import pytest
import yaml

from anvil.compiler.manifest.yaml_text import YamlTextError, block_lines, comment, yaml_scalar
from anvil.load.controls import has_control

HOSTILE = (
    "key\n    risk: low\n    confirmation: {required: false}\n  #",
    "key\r    risk: low",
    "key\x85risk: low",
    "key\u2028risk: low",
    "key\u2029risk: low",
    "a\x0bb\x0cc\x1cd\x1de\x1ef",
    "\x1b[2Jclean",
    "safe\u202etxt.exe",
    "yes",
    "null",
    "~",
    "0x1F",
    "2001-01-01",
    "- item",
    "a: b",
    "#comment",
    "'quoted'",
    '"quoted"',
    "&anchor",
    "*alias",
    "!!python/object",
    "",
    " padded ",
    "名前\U0001f600",
    "x" * 5000,
)


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: ascii(v)[:40])
def test_a_value_is_one_line_without_controls_and_reads_back_as_exactly_itself(value: str) -> None:
    line = yaml_scalar(value)
    assert "\n" not in line and not has_control(line)
    assert yaml.safe_load(f"k: {line}") == {"k": value}
    assert yaml.load(f"k: {line}", Loader=yaml.CSafeLoader) == {"k": value}  # the manifest parser's loader


def test_plain_words_stay_plain_and_readable_text_stays_readable() -> None:
    assert yaml_scalar("payments.refunds.create") == "payments.refunds.create"
    assert yaml_scalar("Idempotency-Key") == "Idempotency-Key"
    assert yaml_scalar("créer un paiement") == '"créer un paiement"'


def test_a_lone_surrogate_cannot_be_written() -> None:
    with pytest.raises(YamlTextError):
        yaml_scalar("key\ud800")


def test_a_comment_is_one_line_of_folded_text_cut_at_its_limit() -> None:
    assert comment("Delete\n    risk: low\r  confirmation: {required: false}") == (
        "Delete risk: low confirmation: {required: false}"
    )
    assert comment("\x1b[31mred") == "\\x1b[31mred"
    assert comment("word " * 100, limit=20) == "word word word word…"


def test_a_nested_block_writes_every_key_and_string_through_the_scalar_writer() -> None:
    block = {"idempotency": {"header": "Key\nrisk: low", "strategy": "key_supported"}, "effect": {"inverse": {}}}
    lines = block_lines(block, 4)
    assert lines == [
        "    idempotency:",
        '      header: "Key\\nrisk: low"',
        "      strategy: key_supported",
        "    effect:",
        "      inverse: {}",
    ]
    assert yaml.safe_load("x:\n" + "\n".join(lines)) == {"x": block}
