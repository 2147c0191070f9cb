"""``anvil._dataclass.dataclass``: the standard decorator's classes, their methods compiled on first use."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import inspect
import pickle
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from anvil._dataclass import dataclass

Decorator = Callable[..., Any]
OPTIONS = [
    {"frozen": True, "slots": True, "kw_only": True},
    {"frozen": True, "slots": True},
    {"slots": True},
    {"slots": True, "kw_only": True},
    {},
]


def _body(decorate: Decorator, **options: bool) -> type:
    """One class body, under ``decorate``: defaults, factories, fields outside ``__init__`` and a post-init."""

    @decorate(**options)
    class Node:
        """A node."""

        name: str
        size: int = 3
        tags: tuple[str, ...] = ()
        seen: list[int] = dataclasses.field(default_factory=list, compare=False, repr=False)
        derived: int = dataclasses.field(default=7, init=False)
        made: dict[str, int] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)
        limit: ClassVar[int] = 9

        def __post_init__(self) -> None:
            self.seen.append(len(self.name))

    return Node


@dataclasses.dataclass
class _Picklable:
    """Module-level classes, so pickle finds them by name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Kept:
    """A frozen, slotted node pickle can find."""

    name: str
    tags: tuple[str, ...] = ()


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The source texts compiled from here on (``exec`` of a string, or ``compile``)."""
    seen: list[str] = []
    real_exec, real_compile = builtins.exec, builtins.compile

    def counting_exec(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, str):
            seen.append(source)
        return real_exec(source, *args, **kwargs)

    def counting_compile(source: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(source))
        return real_compile(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "exec", counting_exec)
    monkeypatch.setattr(builtins, "compile", counting_compile)
    return seen


def test_defining_a_class_compiles_none_of_its_methods(compiled: list[str]) -> None:
    _body(dataclass, frozen=True, slots=True, kw_only=True)

    assert compiled == []


def test_a_first_instance_compiles_its_init_alone(compiled: list[str]) -> None:
    node_class = _body(dataclass, frozen=True, slots=True, kw_only=True)

    node_class(name="a")
    node_class(name="b")

    assert len(compiled) == 1
    assert "def __init__(" in compiled[0]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda options: ",".join(options) or "plain")
def test_a_class_behaves_as_the_standard_decorators(options: dict[str, bool]) -> None:
    ours, theirs = _body(dataclass, **options), _body(dataclasses.dataclass, **options)
    a, b = ours(name="ab", tags=("x",)), theirs(name="ab", tags=("x",))

    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert repr(a) == repr(b)
    assert a == ours(name="ab", tags=("x",), seen=[5])  # seen is not compared
    assert a != ours(name="ab")
    assert (a == b) is False  # another class
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert repr(dataclasses.replace(a, size=4)) == repr(dataclasses.replace(b, size=4))
    assert ours.__match_args__ == theirs.__match_args__
    assert getattr(ours, "__slots__", None) == getattr(theirs, "__slots__", None)
    assert repr(ours.__dataclass_params__) == repr(theirs.__dataclass_params__)
    assert [(f.name, f.init, f.compare) for f in dataclasses.fields(ours)] == [
        (f.name, f.init, f.compare) for f in dataclasses.fields(theirs)
    ]
    assert (a.seen, a.derived, a.made) == (b.seen, b.derived, b.made)
    assert ours.limit == theirs.limit == 9
    if options.get("frozen"):
        assert hash(a) == hash(b)
        for change in (lambda node: setattr(node, "size", 1), lambda node: delattr(node, "size")):
            with pytest.raises(dataclasses.FrozenInstanceError) as mine:
                change(a)
            with pytest.raises(dataclasses.FrozenInstanceError) as standard:
                change(b)
            assert str(mine.value) == str(standard.value)
        assert copy.deepcopy(a) == a
    else:
        assert ours.__hash__ is None and theirs.__hash__ is None
        a.size = 5
        assert a.size == 5


def test_a_frozen_slotted_instance_pickles_and_copies() -> None:
    kept = Kept(name="k", tags=("a", "b"))

    assert pickle.loads(pickle.dumps(kept)) == kept
    assert copy.copy(kept) == kept
    assert Kept.__hash__ is not None and hash(copy.deepcopy(kept)) == hash(kept)


def test_wrong_arguments_are_refused_as_the_standard_init_refuses_them() -> None:
    node_class = _body(dataclass, frozen=True, slots=True, kw_only=True)

    with pytest.raises(TypeError, match="positional argument"):
        node_class("a")
    with pytest.raises(TypeError, match="unexpected keyword argument 'other'"):
        node_class(name="a", other=1)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'name'"):
        node_class()


def test_a_positional_field_without_a_default_after_one_with_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="non-default argument 'second' follows default argument"):

        @dataclass(slots=True)
        class Bad:
            """Out of order."""

            first: int = 1
            second: int


def test_a_class_without_a_docstring_gets_the_standard_ones() -> None:
    @dataclass(frozen=True, slots=True)
    class Plain:
        name: str
        size: int = 1

    assert Plain.__doc__ == "Plain(name: 'str', size: 'int' = 1)"
    assert Plain(name="p") == Plain("p", 1)


def test_its_own_eq_and_hash_are_kept() -> None:
    @dataclass(frozen=True, slots=True)
    class Keyed:
        """Equal by key alone."""

        key: str
        note: str = ""

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Keyed) and other.key == self.key

        def __hash__(self) -> int:
            return hash(self.key)

    assert Keyed("a", "x") == Keyed("a", "y")
    assert hash(Keyed("a", "x")) == hash("a")
    assert repr(Keyed("a")) == "test_its_own_eq_and_hash_are_kept.<locals>.Keyed(key='a', note='')"
