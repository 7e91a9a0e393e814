"""The manifest records as plain JSON values, and back, without pydantic.

The parse memo (:mod:`agentreview.manifest.memo`) stores what a strict parse concluded and
rebuilds it later by constructing the records directly. Values are written by field name
(``as_``, not the manifest's ``as``), every field always present. Reading is a shape check, not
a second parse: each record must have exactly its fields, each value the JSON type its field
declares (a string, a boolean, an integer that is not a boolean, one of a literal's values, a
list or mapping of those, a nested record), else :class:`ShapeError`. The values' own rules
(patterns, bounds, cross-field rules) were decided by the parse that wrote them.

The decoder follows each record's declared field types (the names of
:mod:`agentreview.model.manifest_fields`), so a field added to a record is covered, or refused
loudly by :func:`decoder_for` if its type is new.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any

from agentreview.model import manifest as m

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


def _tagged(*records: type[Any]) -> Decoder:
    """A check of one of ``records``, chosen by its ``kind`` (the union the parser discriminates)."""
    by_kind = {_kind_of(record): record for record in records}

    def decode(value: Any) -> Any:
        kind = value.get("kind") if type(value) is dict else None
        record = by_kind.get(kind) if type(kind) is str else None
        if record is None:
            raise ShapeError(f"expected a check of kind {sorted(by_kind)}, got {kind!r}")
        return _record_decoder(record)(value)

    return decode


def _kind_of(record: type[Any]) -> str:
    (kind,) = _parse_literal(_field_types(record)["kind"])
    return str(kind)


def _parse_literal(annotation: str) -> tuple[Any, ...]:
    """``"Literal['a', 'b']"`` or ``'Literal[False]'`` -> its values (the records' own annotations only)."""
    import ast  # already imported with dataclasses (through inspect)

    values = ast.literal_eval("(" + annotation.removeprefix("Literal[").removesuffix("]") + ",)")
    return tuple(values)


# --------------------------------------------------------------------------- field types

_STR = _scalar(str)

# Each name a record's field may be declared with (see agentreview.model.manifest_fields).
_NAMED: dict[str, Callable[[], Decoder]] = {
    "Id": lambda: _STR,
    "AsId": lambda: _STR,
    "NonEmpty": lambda: _STR,
    "Text": lambda: _STR,
    "Semver": lambda: _STR,
    "PackRef": lambda: _STR,
    "Flag": lambda: _scalar(bool),
    "FalseOnly": lambda: _literal((False,)),
    "TimeoutMs": lambda: _scalar(int),
    "Severity": lambda: _literal(typing.get_args(m.Severity)),
    "Names": lambda: _list(_STR),
    "IdList": lambda: _list(_STR),
    "RefList": lambda: _list(_STR),
    "RefList1": lambda: _list(_STR),
    "Overrides": lambda: _mapping(_record_decoder(m.Override)),
    "Bindings": lambda: _mapping(_record_decoder(m.Binding)),
    "UsesList": lambda: _list(_record_decoder(m.UsesEntry)),
    "TargetIn": lambda: _record_decoder(m.Target),
    "VerdictConfig": lambda: _record_decoder(m.VerdictConfig),
    "ReviewChecks": lambda: _list(_tagged(m.CommandCheck, m.AgentCheck)),
    "PackChecks": lambda: _list(_tagged(m.PackCommandCheck, m.PackAgentCheck)),
}


def decoder_for(annotation: str) -> Decoder:
    """The decoder of one declared field type (``'NonEmpty | None'``); KeyError for a type it does not know."""
    if annotation.endswith(" | None"):
        return _optional(decoder_for(annotation.removesuffix(" | None")))
    if annotation.startswith("Literal["):
        return _literal(_parse_literal(annotation))
    return _NAMED[annotation]()


def _field_types(record: type[Any]) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(record)}


_DECODERS: dict[type[Any], Decoder] = {}


def _record_decoder(record: type[Any]) -> Decoder:
    """The decoder of one record, built once from its declared field types."""
    built = _DECODERS.get(record)
    if built is not None:
        return built
    fields = {name: decoder_for(annotation) for name, annotation in _field_types(record).items()}
    names = set(fields)

    def decode(value: Any) -> Any:
        if type(value) is not dict or set(value) != names:
            raise ShapeError(f"expected the fields of {record.__name__}")
        return record(**{name: fields[name](value[name]) for name in fields})

    _DECODERS[record] = decode
    return decode
