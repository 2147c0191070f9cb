"""Resolver: internal refs followed one chain at a time, cycle-guarded, with JSON pointer unescaping."""

from __future__ import annotations

from typing import Any

from anvil.load.refs import Resolver, is_ref

DOCUMENT: dict[str, Any] = {
    "paths": {"/a/{id}": {"get": {"operationId": "getA"}}},
    "components": {
        "schemas": {
            "Pet": {"type": "object"},
            "Alias": {"$ref": "#/components/schemas/Pet"},
            "Twice": {"$ref": "#/components/schemas/Alias"},
            "Loop1": {"$ref": "#/components/schemas/Loop2"},
            "Loop2": {"$ref": "#/components/schemas/Loop1"},
            "a~b": {"type": "string"},
            "Nothing": None,
        },
        "parameters": {"list": [{"name": "first"}, {"name": "second"}]},
    },
}


def test_lookup_returns_the_node_an_internal_ref_names() -> None:
    resolver = Resolver(DOCUMENT)
    assert resolver.lookup("#/components/schemas/Pet") is DOCUMENT["components"]["schemas"]["Pet"]
    assert resolver.lookup("#") is DOCUMENT


def test_lookup_unescapes_pointer_tokens_and_percent_escapes() -> None:
    resolver = Resolver(DOCUMENT)
    assert resolver.lookup("#/paths/~1a~1{id}/get") == {"operationId": "getA"}
    assert resolver.lookup("#/paths/~1a~1%7Bid%7D/get") == {"operationId": "getA"}
    assert resolver.lookup("#/components/schemas/a~0b") == {"type": "string"}


def test_lookup_indexes_arrays_and_rejects_bad_indexes() -> None:
    resolver = Resolver(DOCUMENT)
    assert resolver.lookup("#/components/parameters/list/1") == {"name": "second"}
    assert resolver.lookup("#/components/parameters/list/2") is None
    assert resolver.lookup("#/components/parameters/list/01") is None


def test_lookup_of_a_missing_or_non_internal_ref_is_none() -> None:
    resolver = Resolver(DOCUMENT)
    assert resolver.lookup("#/components/schemas/Nope") is None
    assert resolver.lookup("other.yaml#/Pet") is None
    assert not resolver.contains("#/components/schemas/Nope")
    assert resolver.contains("#/components/schemas/Nothing")


def test_resolve_follows_a_chain_to_content() -> None:
    resolver = Resolver(DOCUMENT)
    assert resolver.resolve({"$ref": "#/components/schemas/Twice"}) == {"type": "object"}


def test_resolve_returns_a_node_that_is_not_a_ref_unchanged() -> None:
    node = {"type": "string"}
    assert Resolver(DOCUMENT).resolve(node) is node


def test_resolve_of_a_dangling_ref_or_a_loop_without_content_is_empty() -> None:
    resolver = Resolver(DOCUMENT)
    assert resolver.resolve({"$ref": "#/components/schemas/Nope"}) == {}
    assert resolver.resolve({"$ref": "#/components/schemas/Loop1"}) == {}


def test_the_name_of_a_ref_is_its_last_token() -> None:
    resolver = Resolver(DOCUMENT)
    assert resolver.name_of({"$ref": "#/components/schemas/Pet"}) == "Pet"
    assert resolver.name_of({"type": "string"}) is None
    assert is_ref({"$ref": "#/x"}) and not is_ref({"$ref": 3})
