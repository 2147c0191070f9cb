"""``anvil_projection``: a JMESPath view of a successful answer (original-core §5.4, §5.6).

A caller narrows what it reads with a JMESPath expression (the ``jmespath`` library, the reference
implementation the JMESPath specification is tested against). Two steps, at two moments:

* :func:`compile_projection`, before anything runs: the expression must be a string of at most
  :data:`~anvil.air.tools.MAX_PROJECTION_CHARS` characters that parses, nests shallowly enough to be
  evaluated, and calls only functions JMESPath defines with the number of arguments they take.
  Otherwise the call is refused (``validation_error``, ``details.code`` ``projection/invalid``) before
  any ledger reservation or upstream request.
* :meth:`Projection.apply`, after a success: the view of the answer. Evaluation is metered. Every
  value the interpreter produces is charged its shallow size (one unit, plus its items or keys, plus
  one per 64 characters of a string), and the operations whose work follows the *expanded* size of
  their operands (``==`` and ``!=``, ``contains``, ``to_string``, ``join``) are charged that size
  first, counted by a walk that stops at the budget. JMESPath builds ``[@, @] | [@, @] | ...`` from
  shared references, cheaply, but comparing, flattening or serializing it would take time exponential
  in the expression's length; metered, it stops within the budget. The budget is
  :data:`WORK_FLOOR` units, extended once, when spent, by :data:`WORK_PER_VALUE` units per value of
  the answer (a large answer may be read whole by a few steps). A view may only narrow: it holds at
  most :data:`NARROW_ALLOWANCE` values more than the answer. An evaluation over budget, a view that
  is not narrower, an argument of the wrong type or a number JSON cannot carry is
  :class:`ProjectionFailed`; the caller then gets an error, never the unprojected payload.

The projection is applied by the gateway (and by ``anvil run`` in direct mode) to the data the caller
is answered with; the executor and the ledger keep the whole answer, so an idempotent replay applies
the replaying call's own projection.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.tools import MAX_PROJECTION_CHARS, PROJECTION_ARGUMENT
from anvil.runtime.envelope import ErrorEnvelope
from anvil.serve.meter import WORK_FLOOR, WORK_PER_VALUE, Exhausted, Meter, json_size

__all__ = [
    "NARROW_ALLOWANCE",
    "WORK_FLOOR",
    "WORK_PER_VALUE",
    "Projection",
    "ProjectionFailed",
    "ProjectionRefusal",
    "compile_projection",
    "failure_envelope",
    "json_size",
]

#: How many values a view may add to the answer's (a label or a count beside what it selects).
NARROW_ALLOWANCE: Final = 64


@dataclass(frozen=True, slots=True)
class ProjectionRefusal:
    """Why an expression is refused before the call: a message for the envelope and its details.

    ``kind`` names the rule broken: ``type`` (not a string), ``empty``, ``length``, ``parse``,
    ``depth`` or ``function`` (unknown, or the wrong number of arguments).
    """

    message: str
    details: JSONObject
    kind: str


class ProjectionFailed(Exception):
    """The view could not be taken from a successful answer; ``reason`` says why, in words for a caller."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        #: ``budget``, ``depth``, ``type``, ``evaluation``, ``narrow`` or ``number``.
        self.kind = kind
        self.reason = reason


def _nodes(tree: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a parsed expression (a slice's children are numbers, not nodes)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(child for child in node.get("children", ()) if isinstance(child, dict))


def _arity_problem(name: str, given: int) -> str | None:
    """Why a call of function ``name`` with ``given`` arguments cannot run, or None when it can."""
    from anvil.serve.interpreter import MeteredFunctions

    spec = MeteredFunctions.FUNCTION_TABLE.get(name)
    if spec is None:
        return f"unknown function {name}()"
    signature = spec["signature"]
    if signature and signature[-1].get("variadic"):
        if given < len(signature):
            return f"{name}() takes at least {len(signature)} argument(s), {given} given"
    elif given != len(signature):
        return f"{name}() takes {len(signature)} argument(s), {given} given"
    return None


def _refusal(kind: str, reason: str, **details: JSONValue) -> ProjectionRefusal:
    message = (
        f"{PROJECTION_ARGUMENT} is not a JMESPath expression the gateway can evaluate: {reason}; nothing was called."
    )
    return ProjectionRefusal(message, {"code": "projection/invalid", "field": PROJECTION_ARGUMENT, **details}, kind)


@dataclass(frozen=True, slots=True)
class Projection:
    """A checked ``anvil_projection`` expression, ready to apply to successful answers."""

    expression: str
    _parsed: Any

    def apply(self, data: JSONValue) -> JSONValue:
        """The view of ``data`` the expression selects.

        Raises:
            ProjectionFailed: the evaluation failed, ran out of budget, expanded the answer or made a
                value JSON cannot carry (the caller must not get ``data`` instead).
        """
        from jmespath import exceptions as jmespath_errors

        from anvil.serve.interpreter import Metered

        meter = Meter(data)
        try:
            view = Metered(meter).visit(self._parsed.parsed, data)
            if view is data:
                return view  # the whole answer (``@``): what the call answers without a projection
            size = meter.expanded(view)  # what serializing the view will walk
        except Exhausted:
            raise ProjectionFailed("budget", "the expression needs more work than the answer allows") from None
        except RecursionError:
            raise ProjectionFailed("depth", "the expression nests too deeply to evaluate") from None
        except jmespath_errors.JMESPathTypeError as exc:
            raise ProjectionFailed("type", f"{exc.function_name}() got an argument of the wrong type") from None
        except (jmespath_errors.JMESPathError, TypeError, ValueError, OverflowError):
            raise ProjectionFailed("evaluation", "the expression cannot be evaluated on this answer") from None
        # Narrower: the answer holds at least the view's values less the allowance (counted no further).
        floor = size - NARROW_ALLOWANCE
        answer = meter.answer_size if meter.answer_size is not None else json_size(data, floor)
        if answer < floor:
            raise ProjectionFailed("narrow", "the view would be larger than the answer (a projection may only narrow)")
        if not _plain_json(view):
            raise ProjectionFailed("number", "the view holds a number JSON cannot carry")
        return view


def _plain_json(value: object) -> bool:
    """True when ``value`` is JSON: no NaN or infinity (``to_number('1e999')`` makes one), no other type."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif not (item is None or isinstance(item, str | int)):
            return False
    return True


def compile_projection(expression: object) -> Projection | ProjectionRefusal:
    """Check ``expression`` (an ``anvil_projection`` argument) and compile it, or say why it is refused.

    Refused: not a string, empty, longer than :data:`~anvil.air.tools.MAX_PROJECTION_CHARS`
    characters, not JMESPath (``details.position`` is the character where parsing stopped), nested
    too deeply, or calling a function JMESPath does not define or with the wrong number of arguments.
    """
    if not isinstance(expression, str):
        return _refusal("type", "it must be a string")
    if not expression.strip():
        return _refusal("empty", "it is empty")
    if len(expression) > MAX_PROJECTION_CHARS:
        return _refusal(
            "length", f"it is longer than {MAX_PROJECTION_CHARS} characters", max_length=MAX_PROJECTION_CHARS
        )
    import jmespath  # with its interpreter (anvil.serve.interpreter), loaded by the first projection
    from jmespath import exceptions as jmespath_errors

    try:
        parsed = jmespath.compile(expression)
    except jmespath_errors.ParseError as exc:
        position = exc.lex_position if isinstance(exc.lex_position, int) else len(expression)
        return _refusal("parse", f"it does not parse (at character {position})", position=position)
    except RecursionError:
        return _refusal("depth", "it nests too deeply")
    for node in _nodes(parsed.parsed):
        if node.get("type") == "function_expression":
            problem = _arity_problem(str(node.get("value")), len(node.get("children", ())))
            if problem is not None:
                return _refusal("function", problem)
    return Projection(expression=expression, _parsed=parsed)


def failure_envelope(operation: str, failed: ProjectionFailed, trace_id: str, status: int | None) -> ErrorEnvelope:
    """The error a caller gets when its projection failed on a successful answer (``projection/failed``).

    ``validation_error`` (the caller's expression is at fault), not retryable; the message says the
    call itself succeeded, so the caller reads the effect report that travels with it.
    """
    return ErrorEnvelope(
        code="validation_error",
        message=(
            f"The call succeeded, but {PROJECTION_ARGUMENT} could not be applied to its answer: {failed.reason}. "
            "The effect report says what happened; the answer is not returned."
        ),
        retryable=False,
        safe_to_retry=False,
        operation=operation,
        trace_id=trace_id,
        upstream={"status": status} if status is not None else None,
        details={"code": "projection/failed", "field": PROJECTION_ARGUMENT},
    )
