"""``@record`` behaves as ``@dataclass(frozen=True)``: the same equality, hash, repr, errors and dataclass API."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentreview.model.record import record


def _pair(kw_only: bool = False) -> tuple[type, type]:
    """The same class body made once by ``record`` and once by ``dataclass(frozen=True)``."""

    def body() -> dict[str, Any]:
        return {
            "__annotations__": {"a": "int", "b": "list[int]", "c": "str", "d": "Any"},
            "__doc__": "A record.",
            "b": field(default_factory=list),
            "c": field(default="x", compare=False),
            "d": field(default=None, repr=False),
        }

    made = record(kw_only=True)(type("R", (), body())) if kw_only else record(type("R", (), body()))
    plain = dataclass(frozen=True, kw_only=kw_only)(type("R", (), body()))
    return made, plain


@pytest.mark.parametrize("kw_only", [False, True])
def test_a_record_compares_hashes_and_prints_as_a_frozen_dataclass(kw_only: bool) -> None:
    made, plain = _pair(kw_only)
    for cls in (made, plain):
        one, two, other = cls(a=1, b=(), c="y"), cls(a=1, b=(), c="z"), cls(a=2, b=())
        assert one == two and one != other  # c is not compared
        assert hash(one) == hash(two)
        assert (one == 1) is False and one.__eq__(1) is NotImplemented
    assert repr(made(a=1, b=[2], d=3)) == repr(plain(a=1, b=[2], d=3)) == "R(a=1, b=[2], c='x')"
    assert hash(made(a=1, b=(), d=3)) == hash(plain(a=1, b=(), d=3))  # type: ignore[arg-type]
    assert made(a=1) != plain(a=1)  # another class, as between two dataclasses
    with pytest.raises(TypeError):
        hash(made(a=1, b=[1]))  # a list inside: unhashable, as the dataclass's own
    if kw_only:
        with pytest.raises(TypeError):
            made(1)


def test_a_record_is_frozen_and_an_ordinary_dataclass() -> None:
    made, _ = _pair()
    value = made(a=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.a = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del value.a
    assert dataclasses.is_dataclass(made)
    assert [f.name for f in dataclasses.fields(made)] == ["a", "b", "c", "d"]
    assert dataclasses.replace(value, a=5) == made(a=5)
    assert dataclasses.asdict(value) == {"a": 1, "b": [], "c": "x", "d": None}


def test_a_method_the_class_defines_is_kept() -> None:
    @record
    class Own:
        """Defines its own equality, hash and repr."""

        a: int

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

        def __repr__(self) -> str:
            return "own"

    @record
    class EqOnly:
        """Defines equality only: the hash is still made from the fields."""

        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, EqOnly)

    assert Own(1) == Own(2) and hash(Own(1)) == 7 and repr(Own(1)) == "own"
    assert EqOnly(1) == EqOnly(2) and hash(EqOnly(1)) == hash((1,))


def test_a_record_that_holds_itself_prints_an_ellipsis() -> None:
    @record
    class Node:
        """Holds a list that may come to hold the node."""

        items: list[Any]

    node = Node([])
    node.items.append(node)
    assert repr(node).endswith(".Node(items=[...])")


# The packages whose modules a run, a cache hit or a gate imports.
COLD_PACKAGES = ("cli", "engine", "host", "manifest", "model", "packs", "plugins", "report", "runs", "signing", "store",
                 "verify")


def test_every_record_and_dataclass_a_cold_command_imports_has_a_docstring() -> None:
    """Without one, ``dataclass`` builds the class's signature as its ``__doc__`` on every start."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "agentreview"
    missing = []
    for path in sorted(p for name in COLD_PACKAGES for p in (package / name).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            decorators = [ast.unparse(d) for d in getattr(node, "decorator_list", [])]
            made = any(d.split("(")[0] in ("dataclass", "record", "dataclasses.dataclass") for d in decorators)
            if isinstance(node, ast.ClassDef) and made and ast.get_docstring(node) is None:
                missing.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name}")
    assert missing == []
