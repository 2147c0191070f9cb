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


def test_making_the_comparison_methods_computes_no_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    node = _body(dataclass, frozen=True, slots=True)

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("inspect.signature called")

    monkeypatch.setattr(inspect, "signature", refused)
    assert node("a") == node("a")
    assert hash(node("a")) == hash(node("a"))
    assert repr(node("a")).endswith("Node(name='a', size=3, tags=(), derived=7)")


def _pair(decorate: Decorator, **options: bool) -> tuple[type, type]:
    """Two classes whose fields have the same kinds under other names (some named as another's position)."""

    @decorate(**options)
    class Left:
        """Left."""

        first: int
        second: str = "s"
        third: list[int] = dataclasses.field(default_factory=list)

    @decorate(**options)
    class Right:
        """Right."""

        _f1: int
        _f0: str = "r"
        _d0: list[int] = dataclasses.field(default_factory=lambda: [1])

    return Left, Right


@pytest.mark.parametrize("options", OPTIONS, ids=lambda options: ",".join(options) or "plain")
def test_classes_whose_fields_have_the_same_kinds_compile_one_init(
    compiled: list[str], options: dict[str, bool]
) -> None:
    left, right = _pair(dataclass, **options)

    assert left(first=1).first == 1
    for_left = len(compiled)  # none if an earlier test's class had the same kinds
    assert right(_f1=4)._f1 == 4
    assert for_left <= 1
    assert len(compiled) == for_left


@pytest.mark.parametrize("options", OPTIONS, ids=lambda options: ",".join(options) or "plain")
def test_classes_sharing_an_init_text_keep_their_own_names_as_the_standard_decorator_does(
    options: dict[str, bool],
) -> None:
    left, right = _pair(dataclass, **options)
    standard_left, standard_right = _pair(dataclasses.dataclass, **options)

    made = [left(first=1), left(first=2, second="x", third=[3]), right(_f1=4), right(_f1=5, _f0="y", _d0=[6])]
    standard = [
        standard_left(first=1),
        standard_left(first=2, second="x", third=[3]),
        standard_right(_f1=4),
        standard_right(_f1=5, _f0="y", _d0=[6]),
    ]

    assert [repr(node).split("(", 1)[1] for node in made] == [repr(node).split("(", 1)[1] for node in standard]
    for ours, theirs in ((left, standard_left), (right, standard_right)):
        assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
        assert ours.__init__.__annotations__ == theirs.__init__.__annotations__
        assert ours.__init__.__code__.co_varnames == theirs.__init__.__code__.co_varnames
        assert sorted(ours.__init__.__kwdefaults__ or {}) == sorted(theirs.__init__.__kwdefaults__ or {})
        with pytest.raises(TypeError) as mine:
            ours()
        with pytest.raises(TypeError) as standard_error:
            theirs()
        assert str(mine.value).split("(", 1)[1] == str(standard_error.value).split("(", 1)[1]


def test_a_class_whose_init_text_is_prepared_compiles_nothing(compiled: list[str]) -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Single:
        """One field (the prepared texts have this one: anvil serve makes such classes before its first listing)."""

        value: int

    assert Single(value=3).value == 3
    assert compiled == []


def test_every_prepared_template_is_the_code_its_text_compiles_to() -> None:
    from anvil._dataclass import _template
    from anvil._prepared_inits import TEMPLATES

    assert TEMPLATES
    for text, _function in TEMPLATES:
        module = compile(text, "<string>", "exec", dont_inherit=True)
        expected = next(value for value in module.co_consts if isinstance(value, type(module)))
        made = _template(text)
        assert made == expected
        inner = [value for value in made.co_consts if isinstance(value, type(module))]
        assert [(code.co_filename, code.co_firstlineno) for code in (made, *inner)] == [
            ("<string>", 1),
            ("<string>", 2),
        ]
