"""The strict reader of both documents: one vocabulary of field meanings, every problem at once, nothing coerced.

Manifest records are dataclasses whose fields carry a :class:`Spec` (:func:`spec`); the attestation is open
objects (:class:`Obj`). :class:`ReadError` holds pydantic-shaped errors, so a plugin model's are worded alike.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from agentreview.model.numbers import whole_number

Error = dict[str, Any]
_BAD: Any = object()  # what a value that failed reads as; its problems are already recorded


class ReadError(ValueError):
    """The value is not the record: ``errors`` lists every problem, located."""

    def __init__(self, errors: list[Error]):
        super().__init__("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors))
        self.errors = errors


Words = Callable[[str, Any, dict[str, Any], str], str]


class _Context:
    """One read: the problems found so far, the extra members of a tagged union (a plugin's kinds),
    whether an open object leaves out its null members, and how a document words a problem."""

    __slots__ = ("drop_nulls", "errors", "extra", "words")

    def __init__(self, extra: Mapping[str, Any], *, drop_nulls: bool = False, words: Words | None = None):
        self.errors: list[Error] = []
        self.extra = extra
        self.drop_nulls = drop_nulls
        self.words = words

    def bad(self, kind: str, loc: tuple[Any, ...], value: Any, msg: str, **ctx: Any) -> Any:
        if self.words is not None:
            msg = self.words(kind, value, ctx, msg)
        self.errors.append({"type": kind, "loc": loc, "input": value, "ctx": ctx, "msg": msg})
        return _BAD


def _after(validator: Callable[[Any], Any], value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
    try:
        return validator(value)
    except (ValueError, AssertionError) as exc:
        return cx.bad("value_error", loc, value, f"Value error, {exc}", reason=str(exc))


class Spec:
    """What one field means: reads a value (recording its problems) and states its JSON Schema."""

    __slots__: tuple[str, ...] = ()

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:  # pragma: no cover - every spec has one
        raise NotImplementedError

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - every spec has one
        raise NotImplementedError


class Str(Spec):
    """A string with optional length bounds, a pattern matched whole and an after-validator."""

    __slots__ = ("after", "max_length", "min_length", "pattern", "schema_pattern")

    def __init__(
        self,
        *,
        min_length: int | None = None,
        max_length: int | None = None,
        pattern: str | None = None,
        after: Callable[[str], str] | None = None,
        schema_pattern: str | None = None,
    ):
        self.min_length, self.max_length, self.pattern, self.after = min_length, max_length, pattern, after
        self.schema_pattern = schema_pattern  # the pattern as the JSON Schema (ECMA-262) writes it

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        if type(value) is not str:
            return cx.bad("string_type", loc, value, "Input should be a valid string")
        if self.min_length is not None and len(value) < self.min_length:
            return cx.bad("string_too_short", loc, value, "String is too short", min_length=self.min_length)
        if self.max_length is not None and len(value) > self.max_length:
            return cx.bad("string_too_long", loc, value, "String is too long", max_length=self.max_length)
        # ASCII: `\d` means what it means in the JSON Schema's ECMA-262 patterns, [0-9]
        if self.pattern is not None and re.fullmatch(self.pattern, value, re.ASCII) is None:
            shown = self.schema_pattern or self.pattern
            return cx.bad("string_pattern_mismatch", loc, value, "String does not match", pattern=shown)
        return value if self.after is None else _after(self.after, value, loc, cx)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        for key, value in (
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("pattern", self.schema_pattern or self.pattern),
        ):
            if value is not None:
                out[key] = value
        return out


class Bool(Spec):
    """``true`` or ``false`` and nothing else (``"true"`` and ``1`` are not booleans)."""

    __slots__ = ()

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        return value if type(value) is bool else cx.bad("bool_type", loc, value, "Input should be a valid boolean")

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "boolean"}


class Int(Spec):
    """The one place an integer field is judged: an integral number (not a boolean), with ``gt``/``le`` bounds.

    ``exact``: a JSON integer only, never ``3.0`` (a signed document re-exports what it read).
    """

    __slots__ = ("exact", "gt", "le")

    def __init__(self, *, gt: int | None = None, le: int | None = None, exact: bool = False):
        self.gt, self.le, self.exact = gt, le, exact

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        # 1000.0 and 1e3 are 1000, as JavaScript reads them; an exact field (a signed one) takes an int only
        raw = value
        value = (value if type(value) is int else None) if self.exact else whole_number(value)
        if value is None:
            return cx.bad("int_type", loc, raw, "Input should be a valid integer", gt=self.gt)
        if self.gt is not None and not value > self.gt:
            return cx.bad("greater_than", loc, value, f"Input should be greater than {self.gt}", gt=self.gt)
        if self.le is not None and not value <= self.le:
            return cx.bad("less_than_equal", loc, value, f"Input should be at most {self.le}", le=self.le)
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer"}
        if self.gt is not None:
            out["exclusiveMinimum"] = self.gt
        if self.le is not None:
            out["maximum"] = self.le
        return out


class Lit(Spec):
    """One of fixed values of one JSON type (the value's type must be the literal's: ``0`` is not ``false``)."""

    __slots__ = ("values",)

    def __init__(self, *values: Any):
        self.values = values

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        for expected in self.values:
            if type(value) is type(expected) and value == expected:
                return expected
        if isinstance(self.values[0], bool) and type(value) is not bool:
            return cx.bad("value_error", loc, value, "Value error, must be true or false")
        expected = self.expected()
        return cx.bad("literal_error", loc, value, f"Input should be {expected}", expected=expected, values=self.values)

    def expected(self) -> str:
        shown = [repr(v) for v in self.values]
        return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        kind = "boolean" if isinstance(self.values[0], bool) else "string"
        if len(self.values) == 1:
            return {"const": self.values[0], "type": kind}
        return {"enum": list(self.values), "type": kind}


class Nullable(Spec):
    """null, or the inner spec."""

    __slots__ = ("inner",)

    def __init__(self, inner: Spec):
        self.inner = inner

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        return None if value is None else self.inner.read(value, loc, cx)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [self.inner.schema(defs), {"type": "null"}]}


class ListOf(Spec):
    """A list of ``item``, with an optional least length and an after-validator of the whole list."""

    __slots__ = ("after", "item", "min_length")

    def __init__(self, item: Spec, *, min_length: int | None = None, after: Callable[[list[Any]], Any] | None = None):
        self.item, self.min_length, self.after = item, min_length, after

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        if type(value) is not list:
            return cx.bad("list_type", loc, value, "Input should be a valid list")
        if self.min_length is not None and len(value) < self.min_length:
            return cx.bad("too_short", loc, value, "List is too short", min_length=self.min_length)
        out = [self.item.read(item, (*loc, i), cx) for i, item in enumerate(value)]
        if any(item is _BAD for item in out):
            return _BAD
        return out if self.after is None else _after(self.after, out, loc, cx)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": self.item.schema(defs)}
        if self.min_length is not None:
            out["minItems"] = self.min_length
        return out


class DictOf(Spec):
    """A mapping whose keys are ``key`` strings and whose values are ``value``."""

    __slots__ = ("key", "value")

    def __init__(self, key: Str, value: Spec):
        self.key, self.value = key, value

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        if type(value) is not dict:
            return cx.bad("dict_type", loc, value, "Input should be a valid dictionary")
        out = {}
        for key, item in value.items():
            name = self.key.read(key, (*loc, key, "[key]"), cx)  # the key first, as it reads in the file
            out[name] = self.value.read(item, (*loc, key), cx)
        if any(k is _BAD or v is _BAD for k, v in out.items()):
            return _BAD
        return out

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        names = self.key.schema(defs)
        names.pop("type")
        return {"type": "object", "propertyNames": names, "additionalProperties": self.value.schema(defs)}


class Rule(Spec):
    """A rule a pattern cannot state: ``check`` answers None for a right value, else what is wrong with it."""

    __slots__ = ("check", "json")

    def __init__(self, check: Callable[[Any], str | None], json: dict[str, Any] | None = None):
        self.check, self.json = check, json or {}

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        wrong = self.check(value)
        return value if wrong is None else cx.bad("rule", loc, value, wrong)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return dict(self.json)


class Obj(Spec):
    """An open JSON object read into a private dict: its declared members in order (an optional one may
    be null, left out when the read drops nulls), then its other members in the order read, any JSON."""

    __slots__ = ("fields", "known", "name")

    def __init__(self, name: str, *fields: tuple[str, bool, Spec]):
        self.name, self.fields = name, fields
        self.known = frozenset(key for key, _, _ in fields)

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        if not isinstance(value, dict):
            return cx.bad("object_type", loc, value, "Input should be an object")
        out: dict[str, Any] = {}
        for key, required, meaning in self.fields:
            item = value.get(key, _BAD)
            if item is _BAD:
                if required:
                    cx.bad("missing", (*loc, key), value, "Field required")
            elif item is None and not required:
                if not cx.drop_nulls:
                    out[key] = None
            else:
                out[key] = meaning.read(item, (*loc, key), cx)
        if len(out) != len(value):  # other members (or dropped nulls): kept, in the order read
            for key, item in value.items():
                if key in self.known:
                    continue
                if not isinstance(key, str):
                    cx.bad("key_type", loc, key, "Member names should be strings")
                elif item is not None or not cx.drop_nulls:
                    out[key] = _json_value(item, (*loc, key), cx)
        return out


def _json_value(value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
    """A copy of an undeclared member's value, which may be any JSON value (no NaN, no infinity)."""
    if value is None or isinstance(value, str | int):  # bool is an int
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else cx.bad("finite_number", loc, value, "Input should be finite")
    if isinstance(value, list):
        return [_json_value(v, (*loc, i), cx) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                cx.bad("key_type", loc, key, "Member names should be strings")
                continue
            out[key] = _json_value(item, (*loc, key), cx)
        return out
    return cx.bad("json_type", loc, value, "Input should be a JSON value")


def read_json(meaning: Spec, data: Any, *, drop_nulls: bool, words: Words, at: tuple[Any, ...] = ()) -> Any:
    """``data`` read by ``meaning`` into a private copy, located under ``at``; the problems, worded by
    ``words``, in :class:`ReadError` otherwise."""
    cx = _Context({}, drop_nulls=drop_nulls, words=words)
    built = meaning.read(data, at, cx)
    if cx.errors or built is _BAD:
        raise ReadError(cx.errors)
    return built


def spec(meaning: Spec, **options: Any) -> Any:
    """A record field with its meaning: ``id: str = spec(ID)``; ``key=`` names its key when not the field's."""
    key = options.pop("key", None)
    return dataclasses.field(metadata={"spec": meaning, **({"key": key} if key else {})}, **options)


def key_of(f: dataclasses.Field[Any]) -> str:
    """The document key of a record field (``as`` for ``as_``, a Python keyword)."""
    key: str = f.metadata.get("key", f.name)
    return key


class _Plan:
    __slots__ = ("fields", "keys")

    def __init__(self, cls: type[Any]):
        undeclared = [f.name for f in dataclasses.fields(cls) if "spec" not in f.metadata]
        if undeclared:
            raise TypeError(f"cannot read the field {cls.__name__}.{undeclared[0]}: declare it with reader.spec(...)")
        self.fields = [(f, key_of(f), f.metadata["spec"]) for f in dataclasses.fields(cls)]
        self.keys = {key for _, key, _ in self.fields}


_PLANS: dict[type[Any], _Plan] = {}


def _plan(cls: type[Any]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _Plan(cls)
    return plan


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


class Record(Spec):
    """A closed mapping read into ``cls`` by its fields' specs, after an optional before-step."""

    __slots__ = ("before", "cls")

    def __init__(self, cls: type[Any], *, before: Callable[[Any], Any] | None = None):
        self.cls, self.before = cls, before

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        if self.before is not None:
            value = self.before(value)
        return _build(self.cls, value, loc, cx)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return _define(self.cls, defs)


def _build(cls: type[Any], value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
    if type(value) is not dict:
        return cx.bad("dataclass_type", loc, value, "Input should be a dictionary")
    plan = _plan(cls)
    kwargs: dict[str, Any] = {}
    failed = False
    for f, key, meaning in plan.fields:
        if key in value:
            kwargs[f.name] = meaning.read(value[key], (*loc, key), cx)
            failed |= kwargs[f.name] is _BAD
        elif _required(f):
            failed = True
            cx.bad("missing", (*loc, key), value, "Field required")
    for key in value:
        if key not in plan.keys:
            failed = True
            cx.bad("unexpected_keyword_argument", (*loc, key), value[key], "Unexpected keyword argument")
    return _BAD if failed else cls(**kwargs)


def _define(cls: type[Any], defs: dict[str, Any]) -> dict[str, Any]:
    name = cls.__name__
    if name not in defs:
        defs[name] = {}  # placed first: a record met again while defining this one refers to it
        properties: dict[str, Any] = {}
        for f, key, meaning in _plan(cls).fields:
            prop = meaning.schema(defs)
            if f.default is not dataclasses.MISSING:
                prop["default"] = f.default
            properties[key] = prop
        required = [key for f, key, _ in _plan(cls).fields if _required(f)]
        defs[name] = {"type": "object", "additionalProperties": False, "properties": properties, "required": required}
    return {"$ref": f"#/$defs/{name}"}


class Tagged(Spec):
    """One of ``members`` records, chosen by the value of its ``tag`` key (a plugin may add members)."""

    __slots__ = ("by_tag", "members", "open", "tag")

    def __init__(self, tag: str, *members: type[Any], open: bool = False):
        self.tag, self.members, self.open = tag, members, open
        self.by_tag = {_plan(cls).fields[_index(cls, tag)][2].values[0]: cls for cls in members}

    def read(self, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
        if type(value) is not dict:
            return cx.bad("model_attributes_type", loc, value, "Input should be a valid dictionary")
        if self.tag not in value:
            return cx.bad("union_tag_not_found", loc, value, f"Unable to find the '{self.tag}' tag")
        tag = value[self.tag]
        cls = self.by_tag.get(tag) if type(tag) is str else None
        if cls is not None:
            return _build(cls, value, loc, cx)
        model = cx.extra.get(tag) if self.open and type(tag) is str else None
        if model is not None:
            return _plugin(model, value, loc, cx)
        return cx.bad("union_tag_invalid", loc, value, f"Input tag {tag!r} does not match any expected tag")

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        refs = [_define(cls, defs) for cls in self.members]
        mapping = {tag: f"#/$defs/{cls.__name__}" for tag, cls in sorted(self.by_tag.items())}
        return {"oneOf": refs, "discriminator": {"propertyName": self.tag, "mapping": mapping}}


def _index(cls: type[Any], key: str) -> int:
    return next(i for i, (_, k, _) in enumerate(_plan(cls).fields) if k == key)


def _plugin(model: Any, value: Any, loc: tuple[Any, ...], cx: _Context) -> Any:
    """A check of a kind a plugin contributes, read by the plugin's model (pydantic: the plugin API's)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(value)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            cx.errors.append({**err, "loc": (*loc, *err["loc"])})
        return _BAD


def read(meaning: Spec | type[Any], data: Any, *, extra: Mapping[str, Any] | None = None) -> Any:
    """``data`` read by a spec, or into a record class by its fields; :class:`ReadError` listing every problem
    otherwise. ``extra`` maps a tag of an open union (a plugin's check kind) to the model that reads it."""
    cx = _Context(extra or {})
    built = _build(meaning, data, (), cx) if isinstance(meaning, type) else meaning.read(data, (), cx)
    if cx.errors or built is _BAD:
        raise ReadError(cx.errors)
    return built


def to_json(value: Any) -> Any:
    """A record (or a list, mapping or scalar of records) as the document it reads from, key by key."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key_of(f): to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


def json_schema(cls: type[Any]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12 keywords) of the record ``cls``: its definition, with ``$defs``."""
    defs: dict[str, Any] = {}
    _define(cls, defs)
    root = defs.pop(cls.__name__)
    return {**root, "$defs": dict(sorted(defs.items()))}
