"""``dataclass``: the standard library's decorator, with the generated methods compiled on first use.

On Python 3.11 ``dataclasses.dataclass`` writes each generated method (``__init__``, ``__repr__``,
``__eq__``, ``__hash__`` and a frozen class's ``__setattr__``/``__delattr__``) as source text and
compiles it when the class is defined: about 0.5 ms a class, nearly all of it ``compile``. ``anvil
serve`` defines some 150 dataclasses before its first ``tools/list`` and creates instances of fewer
than half of them by then, so those compilations were a quarter of its start-up.

This decorator takes the options the package uses (``frozen``, ``slots``, ``kw_only``) and gives a
class that behaves as the standard decorator's: the same fields, ``__match_args__`` and slots, frozen
assignment refused with ``FrozenInstanceError``, pickling and copying of a frozen slotted class, and
the same ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__``. What differs is when the methods are
made: each is a placeholder until first looked up, then made and installed in its place.

* ``__init__`` is written as the standard decorator writes it (the same text, one compilation);
* ``__repr__``, ``__eq__`` and ``__hash__`` (and ``__dataclass_params__``) are made together by the
  standard decorator itself, on a stand-in class with the same fields;
* a frozen class's ``__setattr__`` and ``__delattr__`` are closures (nothing to compile).

A class without its own docstring (the standard decorator makes one from the signature, which needs
``__init__`` at once), with fields inherited from a dataclass, or with an ``InitVar`` goes to the
standard decorator unchanged.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable
from typing import Any, Final, TypeVar, dataclass_transform, overload

__all__ = ["dataclass"]

_T = TypeVar("_T")
_Options = tuple[bool, bool, bool]  # (frozen, kw_only, slots)
_COMPARE: Final = ("__repr__", "__eq__", "__hash__")


class _FactoryMarker:
    """The default an ``__init__`` parameter with a default factory shows (as the standard one's)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_HAS_DEFAULT_FACTORY: Final = _FactoryMarker()


class _Generated:
    """The placeholder of a generated method (or ``__dataclass_params__``) of ``owner``: its first
    lookup makes it, installs it on ``owner`` and answers it."""

    __slots__ = ("name", "options", "owner")

    def __init__(self, owner: type, name: str, options: _Options) -> None:
        self.owner = owner
        self.name = name
        self.options = options

    def __get__(self, instance: object, kind: type | None = None) -> Any:
        made = _make(self.owner, self.name, self.options)
        if instance is None or not hasattr(made, "__get__"):
            return made
        return made.__get__(instance, kind)


def _make(owner: type, name: str, options: _Options) -> Any:
    """Make ``owner``'s ``name`` (with the methods made alongside it) and install it in place of its
    placeholder."""
    frozen, kw_only, slots = options
    if name == "__init__":
        made = {name: _init(owner, frozen=frozen, slots=slots)}
    elif name in _COMPARE:  # unfrozen, so no __setattr__ is compiled; unsafe_hash makes the frozen class's hash
        stand_in = _stand_in(owner, init=False, eq=True, frozen=False, kw_only=kw_only, unsafe_hash=frozen)
        made = {key: stand_in.__dict__[key] for key in _COMPARE}
    else:  # __dataclass_params__: what the standard decorator records for these options
        made = {name: _stand_in(owner, init=True, eq=True, frozen=frozen, kw_only=kw_only).__dataclass_params__}
    for key, value in made.items():
        if isinstance(owner.__dict__.get(key), _Generated):
            setattr(owner, key, value)
    return made[name]


def _stand_in(owner: type, **options: bool) -> Any:
    """A class with ``owner``'s fields, processed by the standard decorator with ``options``."""
    fields: dict[str, dataclasses.Field[Any]] = owner.__dataclass_fields__  # type: ignore[attr-defined]
    namespace: dict[str, Any] = {
        "__module__": owner.__module__,
        "__qualname__": owner.__qualname__,
        "__annotations__": {key: field.type for key, field in fields.items()},
    }
    for key, field in fields.items():  # copies: the decorator rewrites the Fields it is given as it reads them
        namespace[key] = dataclasses.field(
            default=field.default,
            default_factory=field.default_factory,
            init=field.init,
            repr=field.repr,
            hash=field.hash,
            compare=field.compare,
            metadata=field.metadata,
            kw_only=field.kw_only,
        )
    return dataclasses.dataclass(type(owner.__name__, (), namespace), repr=True, **options)


def _init(owner: type, *, frozen: bool, slots: bool) -> Callable[..., None]:
    """``owner``'s ``__init__``, written as the standard decorator writes it."""
    fields = dataclasses.fields(owner)
    this = "__dataclass_self__" if "self" in owner.__dataclass_fields__ else "self"  # type: ignore[attr-defined]
    scope: dict[str, Any] = {f"_type_{field.name}": field.type for field in fields}
    scope.update(
        {
            "MISSING": dataclasses.MISSING,
            "_HAS_DEFAULT_FACTORY": _HAS_DEFAULT_FACTORY,
            "__dataclass_builtins_object__": object,
            "_return_type": None,
        }
    )
    lines = []
    for field in fields:
        value: str | None = field.name
        default = f"_dflt_{field.name}"
        if field.default_factory is not dataclasses.MISSING:
            scope[default] = field.default_factory
            value = (
                f"{default}() if {field.name} is _HAS_DEFAULT_FACTORY else {field.name}"
                if field.init
                else f"{default}()"
            )
        elif field.default is not dataclasses.MISSING and (field.init or slots):
            scope[default] = field.default
            value = field.name if field.init else default  # a slotted class sets a non-init default
        elif not field.init:
            value = None  # read from the class attribute
        if value is not None:
            target = f"{this}.{field.name}={value}"
            if frozen:
                target = f"__dataclass_builtins_object__.__setattr__({this},{field.name!r},{value})"
            lines.append(target)
    if hasattr(owner, "__post_init__"):
        lines.append(f"{this}.__post_init__()")
    positional = [_parameter(field) for field in fields if field.init and not field.kw_only]
    keywords = [_parameter(field) for field in fields if field.init and field.kw_only]
    parameters = ",".join([this, *positional, *(["*", *keywords] if keywords else [])])
    body = "\n".join(f"  {line}" for line in lines or ["pass"])
    text = (
        f"def __create_fn__({', '.join(scope)}):\n def __init__({parameters})->_return_type:\n{body}\n return __init__"
    )
    namespace: dict[str, Any] = {}
    code = compile(text, "<string>", "exec", dont_inherit=True)  # not this module's postponed annotations
    exec(code, sys.modules[owner.__module__].__dict__, namespace)  # the standard decorator's way
    function: Callable[..., None] = namespace["__create_fn__"](**scope)
    function.__qualname__ = f"{owner.__qualname__}.__init__"
    return function


def _parameter(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        return f"{field.name}:_type_{field.name}=_dflt_{field.name}"
    if field.default_factory is not dataclasses.MISSING:
        return f"{field.name}:_type_{field.name}=_HAS_DEFAULT_FACTORY"
    return f"{field.name}:_type_{field.name}"


def _frozen(owner: type, names: frozenset[str]) -> None:
    """The standard decorator's ``__setattr__``/``__delattr__`` of a frozen class, as closures."""
    base: Any = owner  # for super(): the next class after owner in the instance's order

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(base, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(base, self).__delattr__(name)

    for method in (__setattr__, __delattr__):
        method.__qualname__ = f"{owner.__qualname__}.{method.__name__}"
        setattr(owner, method.__name__, method)


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, field.name) for field in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for field, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, field.name, value)  # the class is frozen


def _standard(cls: type) -> bool:
    """Whether ``cls`` is left to the standard decorator (see the module's docstring)."""
    if not cls.__dict__.get("__doc__") or any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:]):
        return True
    kinds = inspect.get_annotations(cls).values()
    return any("InitVar" in (kind if isinstance(kind, str) else repr(kind)) for kind in kinds)


def _process(cls: type[_T], *, frozen: bool, slots: bool, kw_only: bool) -> type[_T]:
    if _standard(cls):
        return dataclasses.dataclass(cls, frozen=frozen, slots=slots, kw_only=kw_only)
    own = dict(cls.__dict__)
    if frozen and ("__setattr__" in own or "__delattr__" in own):
        raise TypeError(f"Cannot overwrite attribute __setattr__ or __delattr__ in class {cls.__name__}")
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    made = dataclasses.dataclass(cls, init=False, repr=False, eq=False, slots=slots, kw_only=kw_only)
    _check_order(made)
    options = (frozen, kw_only, slots)
    for name in ("__init__", "__repr__", "__eq__"):
        if name not in own:
            setattr(made, name, _Generated(made, name, options))
    made.__dataclass_params__ = _Generated(made, "__dataclass_params__", options)  # type: ignore[attr-defined]
    if not explicit_hash:  # as the standard decorator's hash rule: made when frozen, else unhashable
        made.__hash__ = _Generated(made, "__hash__", options) if frozen else None  # type: ignore[assignment]
    if frozen:
        _frozen(made, frozenset(field.name for field in dataclasses.fields(made)))  # type: ignore[arg-type]
        if slots:
            for name, method in (("__getstate__", _getstate), ("__setstate__", _setstate)):
                if name not in own:
                    setattr(made, name, method)
    return made


def _check_order(cls: type) -> None:
    """The standard decorator's refusal of a positional field without a default after one with."""
    seen_default = False
    for field in dataclasses.fields(cls):
        if field.init and not field.kw_only:
            if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {field.name!r} follows default argument")


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(
    *, frozen: bool = False, slots: bool = False, kw_only: bool = False
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(
    cls: type[_T] | None = None, /, *, frozen: bool = False, slots: bool = False, kw_only: bool = False
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """``dataclasses.dataclass(cls, frozen=..., slots=..., kw_only=...)``, its generated methods made on
    first use (see the module's docstring)."""

    def wrap(cls: type[_T]) -> type[_T]:
        return _process(cls, frozen=frozen, slots=slots, kw_only=kw_only)

    return wrap if cls is None else wrap(cls)
