"""The mutation battery of ``anvil simulate`` (original-core §8.4): weaken one control, prove it is caught.

Each mutant takes the compiled AIR and weakens exactly one control of the first approved operation
it applies to. It is *killed* when the surface signature detects it (the change classifies as
``safety-sensitive``, or ``breaking`` for a changed output contract); the matrix cells that also
failed against it, with the original's expectations, are listed in ``detectedBy`` after
``surface-signature``. A mutant with no operation to apply to is reported ``applicable: false``.

The five mutants of the original keep their names; ``drop_idempotency_key`` and ``drop_undo`` are
ours (a required-key write that stops asking for a key; an effect contract that stops offering its
undo).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.enums import RetryCondition
from anvil.air.model import Confirmation, Document, Idempotency, Operation, Output
from anvil.proof.signature import classify_change, surface_signature
from anvil.proof.simulate.matrix import Simulator, example_problem

__all__ = ["MUTANTS", "Mutant", "run_battery"]


@dataclass(frozen=True, slots=True)
class Mutant:
    """One mutant: its name, whether it is safety-sensitive, which operations it applies to, the change."""

    name: str
    safety: bool
    applies: Callable[[Operation], bool]
    mutate: Callable[[Operation], Operation]


def _remove_confirmation(op: Operation) -> Operation:
    return replace(op, confirmation=Confirmation(required=False))


def _enable_unsafe_retry(op: Operation) -> Operation:
    retry_on: tuple[RetryCondition, ...] = ("timeout", "http_429", "http_503")
    return replace(op, retries=replace(op.retries, mode="safe", max_attempts=3, retry_on=retry_on))


def _drop_oauth_scope(op: Operation) -> Operation:
    return replace(op, auth=replace(op.auth, scopes=op.auth.scopes[1:]))


def _weaken_to_read(op: Operation) -> Operation:
    return replace(op, effect=replace(op.effect, kind="read"))


def _corrupt_output(op: Operation) -> Operation:
    return replace(op, output=Output(schema_ref=None, schema={"type": "string"}, description=op.output.description))


def _drop_key(op: Operation) -> Operation:
    no_key = Idempotency(mode="none")
    # The input schema is what the gateway validates against: drop the key input with the mode.
    schema = op.input.schema
    if schema is not None:
        properties = {k: v for k, v in (schema.get("properties") or {}).items() if k != "idempotency_key"}
        required = [name for name in schema.get("required") or [] if name != "idempotency_key"]
        schema = {**schema, "properties": properties, "required": required}
    return replace(op, idempotency=no_key, input=replace(op.input, schema=schema))


def _drop_undo(op: Operation) -> Operation:
    effect = replace(op.effect, class_="irreversible", reversible=False, inverse=None, compensate=None)
    return replace(op, effect=effect)


def _mutation(op: Operation) -> bool:
    return not op.is_read


#: The battery, in report order.
MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("remove_confirmation", True, lambda op: op.confirmation.required, _remove_confirmation),
    Mutant("enable_unsafe_retry", True, lambda op: _mutation(op) and op.retries.mode != "safe", _enable_unsafe_retry),
    Mutant("drop_oauth_scope", True, lambda op: bool(op.auth.scopes), _drop_oauth_scope),
    Mutant("weaken_mutation_to_read", True, _mutation, _weaken_to_read),
    Mutant("corrupt_output_schema", False, lambda op: op.output.schema is not None, _corrupt_output),
    Mutant("drop_idempotency_key", True, lambda op: _mutation(op) and op.idempotency.mode == "required", _drop_key),
    Mutant(
        "drop_undo",
        True,
        lambda op: _mutation(op) and (op.effect.inverse is not None or op.effect.compensate is not None),
        _drop_undo,
    ),
)


async def run_battery(
    doc: Document, simulator: Simulator, *, targets: Collection[str] | None = None
) -> list[JSONObject]:
    """Run every mutant of :data:`MUTANTS` against ``doc`` (the compiled AIR) and report each.

    Each mutant weakens the first approved operation it applies to (among ``targets`` when given).
    """
    before = surface_signature(doc)
    out: list[JSONObject] = []
    for mutant in MUTANTS:
        target = next(
            (
                op
                for op in doc.operations
                if op.is_approved
                and (targets is None or op.id in targets)
                and mutant.applies(op)
                and example_problem(op) is None
            ),
            None,
        )
        if target is None:
            out.append({"name": mutant.name, "safety": mutant.safety, "applicable": False, "killed": False})
            continue
        mutated = mutant.mutate(target)
        mutant_doc = replace(doc, operations=tuple(mutated if op.id == target.id else op for op in doc.operations))
        classification = classify_change(before, surface_signature(mutant_doc))
        wanted = "safety-sensitive" if mutant.safety else "breaking"
        detected = ["surface-signature"] if classification in (wanted, "safety-sensitive") else []
        cells = await simulator.matrix(mutant_doc, only=target.id)
        detected += [cell.name for cell in cells if not cell.ok]
        out.append(
            {
                "name": mutant.name,
                "safety": mutant.safety,
                "applicable": True,
                "killed": bool(detected) and detected[0] == "surface-signature",
                "classification": classification,
                "operationId": target.id,
                "detectedBy": detected,
            }
        )
    return out
