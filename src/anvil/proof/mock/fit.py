"""Keeping the mock's answers within their operation's answer schema.

The state can hold more than an answer schema allows (a request field the schema lacks, an id the
schema does not declare): :class:`AnswerFitter` makes each answer validate, dropping what a closed
object forbids, else carrying the held fields over a value generated from the schema. An answer is
judged as the gateway judges it, against its schema as published (:func:`answer_schema`: a ``oneOf``
whose branches overlap accepts a value of any of them).
"""

from __future__ import annotations

import json
from typing import Final

from anvil._types import JSONObject, JSONValue
from anvil.proof.mock.schema import SchemaSet, Validator, ValueMaker, answer_schema

__all__ = ["AnswerFitter"]

_MAX_FIT_DEPTH: Final = 4
_MAX_HELD: Final = 4096


class AnswerFitter:
    """Makes values validate against answer schemas (validators cached per schema)."""

    def __init__(self, schemas: SchemaSet, maker: ValueMaker, answers: SchemaSet | None = None) -> None:
        """Args: schemas: where refs lead; maker: the mock's value generator (for a value made afresh);
        answers: ``schemas`` as answers are judged (:func:`answer_schema`), made here when None: before
        the mock serves, since a large API's schemas take a while (a third of a second for OpenAI's).
        """
        self.schemas = schemas
        self.maker = maker
        if answers is None:
            stated = answer_schema(dict(schemas.schemas))
            answers = SchemaSet(stated if isinstance(stated, dict) else {})
        #: The shared schemas as answers are judged.
        self.answers = answers
        self._checks: dict[str, Validator] = {}
        #: id(schema) -> (the schema, its validator); holding the schema keeps its id from being reused.
        self._by_identity: dict[int, tuple[JSONObject, Validator]] = {}

    def _check(self, schema: JSONObject) -> Validator:
        held = self._by_identity.get(id(schema))
        if held is not None and held[0] is schema:  # the same schema object: no need to serialize it
            return held[1]
        key = json.dumps(schema, sort_keys=True, default=str)
        found = self._checks.get(key)
        if found is None:
            stated = answer_schema(schema)
            found = Validator(stated if isinstance(stated, dict) else schema, self.answers)
            self._checks[key] = found
        if len(self._by_identity) >= _MAX_HELD:
            self._by_identity.clear()
        self._by_identity[id(schema)] = (schema, found)
        return found

    def _project(self, schema: JSONValue, value: JSONValue, depth: int = 0) -> JSONValue:
        """``value`` without the object fields ``schema`` forbids (``additionalProperties: false``), in
        the objects and lists it holds too."""
        resolved = self.schemas.deref(schema)
        if resolved is None or depth > 4:
            return value
        if isinstance(value, list) and isinstance(resolved.get("items"), dict):
            return [self._project(resolved["items"], item, depth + 1) for item in value]
        if not isinstance(value, dict):
            return value
        props = self.schemas.properties(resolved)
        closed = resolved.get("additionalProperties") is False
        out: JSONObject = {}
        for key, sub in value.items():
            if key in props:
                out[key] = self._project(props[key], sub, depth + 1)
            elif not closed:
                out[key] = sub
        return out

    def fit(self, schema: JSONObject, value: JSONValue, name: str, depth: int = 0) -> JSONValue:
        """``value`` made to validate against ``schema``: as it is when it does; else without the fields
        the schema does not have; else a value generated from the schema carrying each of ``value``'s
        fields that keeps it valid, a nested object or list fitted the same way first (so an item in
        its envelope keeps its identity when one of its fields does not fit). When even the generated
        value does not validate, the mock's generator cannot satisfy the schema, and that value is
        answered as the best it has."""
        check = self._check(schema)
        if check.problem(value) is None:
            return value
        projected = self._project(schema, value)
        if check.problem(projected) is None:
            return projected
        resolved = self.schemas.deref(schema)
        if isinstance(projected, list) and resolved is not None and isinstance(resolved.get("items"), dict):
            items = resolved["items"]
            fitted = [self.fit(items, item, name, depth + 1) for item in projected]
            if check.problem(fitted) is None:
                return fitted
        base = self.maker.value(schema, name)
        if base is None:
            return projected  # no value validates (the schema contradicts itself): the held one, as it is
        if not isinstance(base, dict) or not isinstance(projected, dict):
            return base
        props = self.schemas.properties(schema)
        out = dict(base)
        for key, field in projected.items():
            trial = {**out, key: field}
            if check.problem(trial) is not None and isinstance(field, dict | list) and depth < _MAX_FIT_DEPTH:
                sub = props.get(key)
                if isinstance(sub, dict):
                    trial = {**out, key: self.fit(sub, field, key, depth + 1)}
            if check.problem(trial) is None:
                out = trial
        return out
