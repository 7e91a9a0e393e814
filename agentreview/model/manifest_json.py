"""The manifest records as plain JSON values, and back, without pydantic.

The parse memo (:mod:`agentreview.manifest.memo`) stores what a strict parse concluded and
rebuilds it later by constructing the records directly. Values are written by field name
(``as_``, not the manifest's ``as``), every field always present. Reading is a shape check, not
a second parse: each record must have exactly its fields, each value the JSON type its field
declares (a string, a boolean, an integer that is not a boolean, one of a literal's values, a
list or mapping of those, a nested record), else :class:`ShapeError`. The values' own rules
(patterns, bounds, cross-field rules) were decided by the parse that wrote them.

What a declared field type is comes from one place, the table of
:mod:`agentreview.model.manifest_strict` (:func:`~agentreview.model.manifest_strict.spec_of`):
this module keeps only the JSON shape of each kind of meaning, so a field added to a record is
covered, or refused loudly (TypeError) if its type is new to that table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from agentreview.model import manifest_strict as strict

__all__ = ["ShapeError", "decoder_for", "from_json", "mapping_of", "to_json"]

Decoder = Callable[[Any], Any]


class ShapeError(ValueError):
    """A JSON value that is not the shape of the record it should rebuild."""


def to_json(value: Any) -> Any:
    """A record (or a list, mapping or scalar of records) as JSON values, by field name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


def from_json(record: type[Any], data: Any) -> Any:
    """``data`` (as :func:`to_json` wrote it) rebuilt as ``record``; :class:`ShapeError` when it is not one."""
    return _record_decoder(record)(data)


def mapping_of(record: type[Any], data: Any) -> dict[str, Any]:
    """``data`` rebuilt as a mapping of names to ``record`` (a parse's bindings); :class:`ShapeError` otherwise."""
    decoded: dict[str, Any] = _mapping(_record_decoder(record))(data)
    return decoded


# --------------------------------------------------------------------------- scalars


def _scalar(kind: type) -> Decoder:
    def decode(value: Any) -> Any:
        if type(value) is not kind:  # exact: a boolean is not an integer here
            raise ShapeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return decode


def _literal(values: tuple[Any, ...]) -> Decoder:
    def decode(value: Any) -> Any:
        if not any(type(value) is type(v) and value == v for v in values):
            raise ShapeError(f"expected one of {values!r}, got {value!r}")
        return value

    return decode


def _optional(inner: Decoder) -> Decoder:
    return lambda value: None if value is None else inner(value)


def _list(inner: Decoder) -> Decoder:
    def decode(value: Any) -> list[Any]:
        if type(value) is not list:
            raise ShapeError(f"expected a list, got {type(value).__name__}")
        return [inner(item) for item in value]

    return decode


def _mapping(inner: Decoder) -> Decoder:
    def decode(value: Any) -> dict[str, Any]:
        if type(value) is not dict or not all(type(key) is str for key in value):
            raise ShapeError("expected a mapping with string keys")
        return {key: inner(item) for key, item in value.items()}

    return decode


def _tagged(union: strict.Tagged) -> Decoder:
    """One of ``union``'s records, chosen by its tag (``kind``), the union the parser discriminates."""
    by_tag = strict.members(union)

    def decode(value: Any) -> Any:
        tag = value.get(union.tag) if type(value) is dict else None
        record = next((cls for key, cls in by_tag.items() if type(key) is type(tag) and key == tag), None)
        if record is None:
            raise ShapeError(f"expected {union.tag} one of {sorted(by_tag)}, got {tag!r}")
        return _record_decoder(record)(value)

    return decode


# --------------------------------------------------------------------------- field types

_STR, _BOOL, _INT = _scalar(str), _scalar(bool), _scalar(int)


def _shape(spec: strict.Spec) -> Decoder:
    """The JSON shape of one meaning of manifest_strict's table (its rules were the parse's to apply)."""
    if isinstance(spec, strict.Str):
        return _STR
    if isinstance(spec, strict.Bool):
        return _BOOL
    if isinstance(spec, strict.Int):
        return _INT
    if isinstance(spec, strict.Lit):
        return _literal(spec.values)
    if isinstance(spec, strict.Nullable):
        return _optional(_shape(spec.spec))
    if isinstance(spec, strict.Aliased):
        return _shape(spec.spec)  # stored by field name
    if isinstance(spec, strict.ListOf):
        return _list(_shape(spec.item))
    if isinstance(spec, strict.DictOf) and isinstance(spec.key, strict.Str):
        return _mapping(_shape(spec.value))
    if isinstance(spec, strict.Record):
        return _record_decoder(spec.cls)  # the stored form: a `before` (target: git-range) already applied
    if isinstance(spec, strict.Tagged):
        return _tagged(spec)
    raise TypeError(f"no JSON shape for {spec!r}: add one to agentreview.model.manifest_json")


def decoder_for(annotation: str) -> Decoder:
    """The decoder of one declared field type (``'NonEmpty | None'``); TypeError for a type it does not know."""
    return _shape(strict.spec_of(annotation))


_DECODERS: dict[type[Any], Decoder] = {}


def _record_decoder(record: type[Any]) -> Decoder:
    """The decoder of one record, built once from its declared field types."""
    built = _DECODERS.get(record)
    if built is not None:
        return built
    fields = {f.name: decoder_for(str(f.type)) for f in dataclasses.fields(record)}
    names = set(fields)

    def decode(value: Any) -> Any:
        if type(value) is not dict or set(value) != names:
            raise ShapeError(f"expected the fields of {record.__name__}")
        return record(**{name: fields[name](value[name]) for name in fields})

    _DECODERS[record] = decode
    return decode
