"""The manifest records validated without pydantic, for a manifest of the built-in check kinds.

Importing pydantic, building its validators and running its plugin loader cost a cold command
tens of milliseconds, and a manifest whose checks are all ``command`` or ``agent`` needs none of
it to be accepted. This module reads the declaration pydantic reads (the fields of the records
of :mod:`agentreview.model.manifest`: names, defaults, default factories and the names of their
field types) and gives each type name its meaning in :data:`TABLE`, the pydantic-free twin of
:mod:`agentreview.model.manifest_fields`; a test derives each entry again from that module's
pydantic metadata, so the two cannot drift. The validators both attach are defined here.

It only decides: :func:`validate` builds the record pydantic would build, or raises
:class:`Invalid` where pydantic rejects the document, and the parser then lets pydantic explain
(its errors are what :mod:`agentreview.manifest.translate` words for the user). So an invalid
manifest reads exactly as before, and a valid one never imports pydantic. Where Python and
pydantic's Rust core could judge a string differently (one that is not UTF-8, a non-ASCII value
for a pattern whose classes follow the Unicode tables of each), it raises :class:`Undecided`
and pydantic decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Literal, get_args, get_origin

from agentreview.model import manifest as m
from agentreview.model.numbers import whole_number
from agentreview.model.packref import PACK_REF_PATTERN, parse_git_pack_ref

__all__ = [
    "TABLE",
    "Aliased",
    "Bool",
    "DictOf",
    "Int",
    "Invalid",
    "ListOf",
    "Lit",
    "Nullable",
    "Record",
    "Spec",
    "Str",
    "Tagged",
    "Undecided",
    "accepted",
    "exact_bool",
    "members",
    "pack_ref",
    "spec_of",
    "string_target",
    "unique_ids",
    "validate",
]


# --------------------------------------------------------------------------- the validators both sides attach


def pack_ref(value: str) -> str:
    """A pack reference: an npm name, a path, or a pinned ``git+https://<url>#<sha>``."""
    # The pattern needs a look-ahead, which pydantic's default (Rust) regex engine lacks;
    # fullmatch keeps Python's `$` from accepting a trailing newline.
    if re.fullmatch(PACK_REF_PATTERN, value) is None:
        if value.startswith("git+"):
            parse_git_pack_ref(value)  # raises with the message that names the fix
        raise ValueError(f"pack reference {value!r} must be an npm name, a path or git+https://<url>#<sha>")
    return value


def string_target(value: Any) -> Any:
    """``target: git-range`` is the string form of ``{kind: git-range}``."""
    if value == "git-range":
        return {"kind": "git-range"}
    return value


def exact_bool(value: Any) -> Any:
    """A boolean literal's input must be a boolean.

    pydantic looks a ``Literal``'s input up by equality, where ``0``, ``0.0`` and ``-0.0`` are
    ``False`` (its strict mode changes nothing there), so ``effects: 0`` would read as ``false``;
    this before-validator keeps a ``Literal[False]`` as strict in type as every other field.
    """
    if type(value) is not bool:
        raise ValueError("must be true or false")
    return value


def unique_ids(checks: list[Any]) -> list[Any]:
    """A pack's checks, each id once."""
    seen: set[str] = set()
    for check in checks:
        if check.id in seen:
            raise ValueError(f"checks[] lists '{check.id}' more than once")
        seen.add(check.id)
    return checks


# --------------------------------------------------------------------------- outcomes


class Invalid(Exception):
    """pydantic rejects this document (which error it reports is pydantic's to say)."""


class Undecided(Exception):
    """Python and pydantic's core could judge this value differently: pydantic decides."""


_YAML_TYPES = (str, int, float, bool, type(None), list, dict)  # what the frontmatter reader builds


def _wrong_type(value: Any) -> Exception:
    # A value of a type the YAML reader never builds (a subclass, a tuple...) is pydantic's to judge.
    return Invalid() if type(value) in _YAML_TYPES else Undecided()


# --------------------------------------------------------------------------- the vocabulary of the table


def _before(validator: Callable[[Any], Any] | None, value: Any) -> Any:
    """``value`` through a before-validator the records share with pydantic; its refusal is pydantic's too."""
    if validator is None:
        return value
    try:
        return validator(value)
    except (ValueError, AssertionError):
        raise Invalid() from None


class Spec:
    """What one field type means: a strict validator of one value, compared by its parameters."""

    __slots__: tuple[str, ...] = ()

    def __call__(self, value: Any) -> Any:  # pragma: no cover - every spec defines it
        raise NotImplementedError

    def _key(self) -> tuple[Any, ...]:
        return (type(self), *(getattr(self, name) for name in self.__slots__))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({args})"


# Unicode-dependent classes: Python's tables and the Rust regex's may be of different Unicode versions.
_UNICODE_CLASSES = re.compile(r"\\[dDwWsSb]")


class Str(Spec):
    """A string (never coerced), with optional length bounds, a pattern matched whole, an after-validator."""

    __slots__ = ("after", "max_length", "min_length", "pattern")

    def __init__(
        self,
        *,
        min_length: int | None = None,
        max_length: int | None = None,
        pattern: str | None = None,
        after: Callable[[str], str] | None = None,
    ):
        self.min_length, self.max_length, self.pattern, self.after = min_length, max_length, pattern, after

    def __call__(self, value: Any) -> Any:
        if type(value) is not str:
            raise _wrong_type(value)
        ascii_only = value.isascii()
        if not ascii_only:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: pydantic's core judges such strings its own way
                raise Undecided() from None
        if self.min_length is not None and len(value) < self.min_length:
            raise Invalid()
        if self.max_length is not None and len(value) > self.max_length:
            raise Invalid()
        if self.pattern is not None:
            if not ascii_only and _UNICODE_CLASSES.search(self.pattern):
                raise Undecided()  # `\d` and the like: whether it matches depends on each engine's Unicode tables
            if re.fullmatch(self.pattern, value) is None:  # the Rust regex's `$` is the end of the text
                raise Invalid()
        if self.after is not None:
            try:
                value = self.after(value)
            except (ValueError, AssertionError):  # what pydantic turns into a validation error
                raise Invalid() from None
        return value


class Bool(Spec):
    """``true`` or ``false`` and nothing else (YAML ``"true"`` and ``1`` are not booleans)."""

    __slots__ = ()

    def __call__(self, value: Any) -> Any:
        if type(value) is not bool:
            raise _wrong_type(value)
        return value


class Int(Spec):
    """A whole number (:func:`~agentreview.model.numbers.whole_number`: ``1000.0`` and ``1e3`` count, a
    boolean does not), with optional ``gt`` and ``le`` bounds."""

    __slots__ = ("gt", "le")

    def __init__(self, *, gt: int | None = None, le: int | None = None):
        self.gt, self.le = gt, le

    def __call__(self, value: Any) -> Any:
        value = whole_number(raw := value)
        if value is None:
            raise _wrong_type(raw)
        if (self.gt is not None and not value > self.gt) or (self.le is not None and not value <= self.le):
            raise Invalid()
        return value


class Lit(Spec):
    """One of a ``Literal``'s values, after an optional before-validator.

    pydantic looks a literal's input up among the values as a dict key does (so ``0`` and
    ``0.0`` are ``False``) and answers the declared value; this does the same. A literal of
    anything but strings is therefore declared with a ``before`` that checks the input's type
    (``FalseOnly``: :func:`exact_bool`), on both sides.
    """

    __slots__ = ("before", "values")

    def __init__(self, values: tuple[Any, ...], *, before: Callable[[Any], Any] | None = None):
        self.values, self.before = values, before

    def __call__(self, value: Any) -> Any:
        value = _before(self.before, value)
        for expected in self.values:
            try:
                if hash(value) == hash(expected) and value == expected:
                    return expected
            except TypeError:  # unhashable: no literal
                raise Invalid() from None
        raise Invalid()


class Nullable(Spec):
    """``X | None``: null, or an ``X``."""

    __slots__ = ("spec",)

    def __init__(self, spec: Spec):
        self.spec = spec

    def __call__(self, value: Any) -> Any:
        return None if value is None else self.spec(value)


class Aliased(Spec):
    """A field read from another manifest key (``as_`` from ``as``)."""

    __slots__ = ("alias", "spec")

    def __init__(self, alias: str, spec: Spec):
        self.alias, self.spec = alias, spec

    def __call__(self, value: Any) -> Any:
        return self.spec(value)


class ListOf(Spec):
    """A list (never a tuple) of ``item``, with an optional least length and after-validator."""

    __slots__ = ("after", "item", "min_length")

    def __init__(self, item: Spec, *, min_length: int | None = None, after: Callable[[list[Any]], Any] | None = None):
        self.item, self.min_length, self.after = item, min_length, after

    def __call__(self, value: Any) -> Any:
        if type(value) is not list:
            raise _wrong_type(value)
        if self.min_length is not None and len(value) < self.min_length:
            raise Invalid()
        out = [self.item(item) for item in value]
        if self.after is not None:
            try:
                out = self.after(out)
            except (ValueError, AssertionError):
                raise Invalid() from None
        return out


class DictOf(Spec):
    """A mapping of ``key`` to ``value``."""

    __slots__ = ("key", "value")

    def __init__(self, key: Spec, value: Spec):
        self.key, self.value = key, value

    def __call__(self, value: Any) -> Any:
        if type(value) is not dict:
            raise _wrong_type(value)
        return {self.key(key): self.value(item) for key, item in value.items()}


class Record(Spec):
    """A mapping read into a record, by its fields (see :func:`validate`), after an optional before-validator."""

    __slots__ = ("before", "cls")

    def __init__(self, cls: type[Any], *, before: Callable[[Any], Any] | None = None):
        self.cls, self.before = cls, before

    def __call__(self, value: Any) -> Any:
        return _build(self.cls, _before(self.before, value))


class Tagged(Spec):
    """One of ``members``, chosen by the value of the ``tag`` key (each member's ``Literal`` of that field)."""

    __slots__ = ("members", "tag")

    def __init__(self, tag: str, members: tuple[type[Any], ...]):
        self.tag, self.members = tag, members

    def __call__(self, value: Any) -> Any:
        if type(value) is not dict:
            raise _wrong_type(value)
        if self.tag not in value:
            raise Invalid()
        return _build(_member(self, value[self.tag]), value)


# --------------------------------------------------------------------------- the table

_TEXT = Str()
_NON_EMPTY = Str(min_length=1)
_ID = Str(pattern=m.ID_PATTERN, max_length=64)
_REF = Str(pattern=m.REF_PATTERN, max_length=129)
_CHECK = Tagged("kind", (m.CommandCheck, m.AgentCheck))
_PACK_CHECK = Tagged("kind", (m.PackCommandCheck, m.PackAgentCheck))

# What each field type name of the records means: the names of agentreview.model.manifest_fields
# (every one strict: no coercion), checked against that module's pydantic metadata by a test.
TABLE: dict[str, Spec] = {
    "Text": _TEXT,
    "NonEmpty": _NON_EMPTY,
    "Id": _ID,
    "Ref": _REF,
    "Semver": Str(pattern=m.SEMVER_PATTERN),
    "Flag": Bool(),
    "FalseOnly": Lit((False,), before=exact_bool),
    "TimeoutMs": Int(gt=0, le=m.MAX_TIMEOUT_MS),
    "PackRef": Str(after=pack_ref),
    "AsId": Aliased("as", _ID),
    "Names": ListOf(_NON_EMPTY),
    "IdList": ListOf(_ID),
    "RefList": ListOf(_REF),
    "RefList1": ListOf(_REF, min_length=1),
    "Overrides": DictOf(_ID, Record(m.Override)),
    "Bindings": DictOf(_ID, Record(m.Binding)),
    "UsesList": ListOf(Record(m.UsesEntry)),
    "TargetIn": Record(m.Target, before=string_target),
    "Check": _CHECK,
    "ReviewChecks": ListOf(_CHECK, min_length=1),
    "PackCheck": _PACK_CHECK,
    "PackChecks": ListOf(_PACK_CHECK, min_length=1, after=unique_ids),
}


# --------------------------------------------------------------------------- reading the records' declarations


def spec_of(annotation: str) -> Spec:
    """The meaning of one declared field type (``'NonEmpty | None'``, ``'Literal[False]'``, ``'Severity'``).

    A name of :data:`TABLE`, a ``Literal`` (or a name the records' module gives one), or a record
    class, each optionally ``| None``. Anything else is a declaration this module cannot read:
    a TypeError, loudly, at the first parse.
    """
    parts = [part.strip() for part in annotation.split("|")]
    rest = [part for part in parts if part != "None"]
    if len(rest) != 1:
        raise TypeError(f"cannot read the field type {annotation!r}")
    spec = _named(rest[0])
    return Nullable(spec) if len(parts) > 1 else spec


def _named(name: str) -> Spec:
    if name in TABLE:
        return TABLE[name]
    if name.startswith("Literal[") and name.endswith("]"):
        import ast  # already imported with dataclasses (through inspect)

        return Lit(tuple(ast.literal_eval("(" + name.removeprefix("Literal[").removesuffix("]") + ",)")))
    declared = getattr(m, name, None) if name.isidentifier() else None
    if get_origin(declared) is Literal:
        return Lit(get_args(declared))
    if isinstance(declared, type) and is_dataclass(declared):
        return Record(declared)
    raise TypeError(f"cannot read the field type {name!r}: add it to agentreview.model.manifest_strict.TABLE")


class _Plan:
    """One record read for validation: each accepted input key to its field and meaning, the required fields."""

    __slots__ = ("by_key", "required")

    def __init__(self, by_key: dict[str, tuple[str, Spec]], required: frozenset[str]):
        self.by_key, self.required = by_key, required


_PLANS: dict[type[Any], _Plan] = {}
_CONFIG_KEYS = frozenset({"extra", "validate_by_name", "validate_by_alias"})


def _plan(cls: type[Any]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    config = getattr(cls, "__pydantic_config__", {})
    if config.get("extra") != "forbid" or not set(config) <= _CONFIG_KEYS:
        raise TypeError(f"{cls.__name__}: only closed records (extra='forbid') can be read without pydantic")
    by_alias, by_name = config.get("validate_by_alias", True), config.get("validate_by_name", False)
    by_key: dict[str, tuple[str, Spec]] = {}
    required: set[str] = set()
    for f in fields(cls):
        spec = spec_of(str(f.type))
        alias = spec.alias if isinstance(spec, Aliased) else None
        keys = ([alias] if by_alias else []) + ([f.name] if by_name else []) if alias else [f.name]
        for key in keys:
            by_key[key] = (f.name, spec)
        if f.default is MISSING and f.default_factory is MISSING:
            required.add(f.name)
    plan = _PLANS[cls] = _Plan(by_key, frozenset(required))
    return plan


def _build(cls: type[Any], value: Any) -> Any:
    """``value`` read into ``cls``: every key one of its fields, every required field there, each value valid."""
    if type(value) is not dict:
        raise _wrong_type(value)
    plan = _plan(cls)
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        found = plan.by_key.get(key) if type(key) is str else None
        if found is None:
            raise Invalid()  # an unknown key
        name, spec = found
        if name in kwargs:  # the same field under two spellings: pydantic's to judge
            raise Undecided()
        kwargs[name] = spec(item)
    if not plan.required <= kwargs.keys():
        raise Invalid()  # a missing key
    return cls(**kwargs)  # a field left out takes its declared default, as pydantic's does


_MEMBERS: dict[Tagged, dict[Any, type[Any]]] = {}


def members(union: Tagged) -> dict[Any, type[Any]]:
    """Each tag value of ``union`` to its member record (from each member's ``Literal`` tag field)."""
    found = _MEMBERS.get(union)
    if found is None:
        found = {}
        for cls in union.members:
            _, spec = _plan(cls).by_key[union.tag]
            if not isinstance(spec, Lit):
                raise TypeError(f"{cls.__name__}.{union.tag} is not a Literal: it cannot be a union's tag")
            found.update(dict.fromkeys(spec.values, cls))
        _MEMBERS[union] = found
    return found


def _member(union: Tagged, tag: Any) -> type[Any]:
    """The member of ``union`` whose ``Literal`` tag field holds ``tag`` (looked up as pydantic does, by key)."""
    try:
        return members(union)[tag]
    except (KeyError, TypeError):  # an unknown or unhashable kind
        raise Invalid() from None


# --------------------------------------------------------------------------- entry points


def validate(record: type[Any], data: Any) -> Any:
    """``data`` read into ``record`` as pydantic would; :class:`Invalid` or :class:`Undecided` otherwise."""
    return _build(record, data)


def accepted(record: type[Any], data: Any) -> Any:
    """The record when ``data`` is valid, else None (pydantic then decides, and explains)."""
    try:
        return _build(record, data)
    except (Invalid, Undecided):
        return None
