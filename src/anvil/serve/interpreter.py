"""The metered JMESPath interpreter of :mod:`anvil.serve.projection`, loaded with the first projection.

``jmespath`` is imported here and by the projection's functions, not when the gateway starts: a listener
that is never asked for an ``anvil_projection`` never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from jmespath.functions import Functions, signature
from jmespath.visitor import Options, TreeInterpreter, _equals

from anvil._types import JSONObject
from anvil.serve.meter import CHARS_PER_UNIT, Meter

__all__ = ["Metered", "MeteredFunctions"]


_F = TypeVar("_F", bound=Callable[..., Any])


def _signature(*arguments: JSONObject) -> Callable[[_F], _F]:
    """JMESPath's ``@signature`` (how its function table finds a function and checks its arguments), typed."""
    return cast("Callable[[_F], _F]", signature(*arguments))


class MeteredFunctions(Functions):  # type: ignore[misc]  # jmespath ships no type information
    """JMESPath's functions, the ones whose work follows their arguments' expanded size charged first."""

    def __init__(self, meter: Meter) -> None:
        super().__init__()
        self.meter = meter

    @_signature({"types": ["array", "string"]}, {"types": []})
    def _func_contains(self, subject: Any, search: Any) -> Any:
        self.meter.expanded(subject)
        self.meter.expanded(search)
        return super()._func_contains(subject, search)

    @_signature({"types": []})
    def _func_to_string(self, arg: Any) -> Any:
        self.meter.expanded(arg)
        return super()._func_to_string(arg)

    @_signature({"types": ["string"]}, {"types": ["array-string"]})
    def _func_join(self, separator: Any, array: Any) -> Any:
        total = len(separator) * len(array) + sum(len(item) for item in array)
        self.meter.spend(total // CHARS_PER_UNIT)
        return super()._func_join(separator, array)


class Metered(TreeInterpreter):  # type: ignore[misc]  # jmespath ships no type information
    """JMESPath's interpreter, charging every value it produces against a budget (module docstring)."""

    def __init__(self, meter: Meter) -> None:
        super().__init__(Options(custom_functions=MeteredFunctions(meter)))
        self.meter = meter

    def visit(self, node: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        # Visitor.visit's dispatch, inlined: this runs once per node per value the expression reads.
        method = self._method_cache.get(node["type"])
        if method is None:
            method = self._method_cache[node["type"]] = getattr(self, f"visit_{node['type']}", self.default_visit)
        result = method(node, *args, **kwargs)
        meter = self.meter
        kind = type(result)
        if kind is list or kind is dict:
            meter.left -= 1 + len(result)
        elif kind is str:
            meter.left -= 1 + len(result) // CHARS_PER_UNIT
        else:
            meter.left -= 1
        if meter.left < 0:
            meter.spend(0)  # extend the budget once, else stop
        return result

    def visit_comparator(self, node: dict[str, Any], value: Any) -> Any:
        if node["value"] in self._EQUALITY_OPS:
            left = self.visit(node["children"][0], value)
            right = self.visit(node["children"][1], value)
            self.meter.expanded(left)  # a deep comparison walks both
            self.meter.expanded(right)
            equal = _equals(left, right)
            return equal if node["value"] == "eq" else not equal
        return super().visit_comparator(node, value)
