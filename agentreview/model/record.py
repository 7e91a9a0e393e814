"""``@record``: a frozen dataclass whose ``__eq__``, ``__hash__`` and ``__repr__`` are shared functions.

``dataclass`` compiles the methods it generates at every start-up (docs/performance.md); these read the field
names kept on the class instead. To ``dataclasses`` and mypy it is an ordinary frozen dataclass.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T", bound=type)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        names = self.__record_compare__
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in self.__record_hash__))


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_repr__)
    return f"{self.__class__.__qualname__}({shown})"


def _make(cls: Any, kw_only: bool) -> Any:
    # The rules of dataclass(frozen=True, eq=True): a method the class defines is kept, and so is
    # a __hash__ it defines (a __hash__ of None set by its own __eq__ is not one).
    own_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (own_hash is dataclasses.MISSING or (own_hash is None and "__eq__" in cls.__dict__))
    made = dataclasses.dataclass(cls, frozen=True, eq=False, repr=False, kw_only=kw_only)
    fields = dataclasses.fields(made)
    made.__record_compare__ = tuple(f.name for f in fields if f.compare)
    made.__record_hash__ = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    made.__record_repr__ = tuple(f.name for f in fields if f.repr)
    if "__eq__" not in cls.__dict__:
        made.__eq__ = _eq
    if not explicit_hash:
        made.__hash__ = _hash
    if "__repr__" not in cls.__dict__:
        made.__repr__ = _repr
    return made


@overload
def record(cls: T, /) -> T: ...
@overload
def record(*, kw_only: bool = False) -> Callable[[T], T]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: Any = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclass(frozen=True)`` (or ``kw_only=True`` too), with the shared methods above."""
    if cls is None:
        return lambda c: _make(c, kw_only)
    return _make(cls, kw_only)
