"""Frontmatter YAML read with YAML 1.2 core-schema meaning, refusing what a manifest never needs.

Values are built here from PyYAML's events, iteratively, so hostile depth never meets the recursion limit.
Refused with ``line:column``: anchors, aliases, duplicate keys and plain scalars the reference host's YAML 1.1
reader reads otherwise, so one file means one thing on both; docs/concepts.md lists each choice.
"""

from __future__ import annotations

import math
import re
from typing import Any

from agentreview.model.record import record

MAX_DEPTH = 64
MAX_INT_DIGITS = 30

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT10 = re.compile(r"^[-+]?[0-9]+$")
_INT8 = re.compile(r"^0o[0-7]+$")
_INT16 = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF_NAN = re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]")
# Numbers to YAML 1.1 (the reference host's js-yaml 3) but text to YAML 1.2: digit groups
# with "_", base 60 ("1:30" is 90 there) and binary "0b".
_NUMBER_IN_11 = re.compile(
    r"^[-+]?(?:[0-9][0-9_]*_[0-9_]*(?:\.[0-9_]*)?|[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|0b[01_]+)$"
)
# YAML 1.1's timestamp (what js-yaml 3, the reference host's parser, turns into a Date).
_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
    r"|^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?$"
)

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null")}
_SEQ_TAG = f"{_CORE}seq"
_MAP_TAG = f"{_CORE}map"


class YamlError(ValueError):
    """The frontmatter is not YAML this parser accepts. ``line``/``column`` are 1-based file positions."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(f"line {line}:{column}: {message}")
        self.reason = message
        self.line = line
        self.column = column


class _Refused(ValueError):
    """A scalar this module refuses; the builder adds the position."""


@record
class Loaded:
    """The document's value and, for every node, the 1-based file line it starts on.

    ``lines`` maps a path of keys and indexes (``("checks", 2, "timeoutMs")``) to a line,
    so a schema error found later can still point at the file.
    """

    value: Any
    lines: dict[tuple[str | int, ...], int]


def _event_classes() -> tuple[Any, Any]:
    import yaml

    loader = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    return yaml, loader


def _resolve_plain(text: str) -> Any:
    """A plain (unquoted) scalar by the YAML 1.2 core schema; refuses what YAML 1.1 reads otherwise."""
    if (_INT10.match(text) or _FLOAT.match(text)) and _LEADING_ZERO.match(text):
        raise _Refused(
            f"'{text}' has a leading zero, which YAML readers disagree on (YAML 1.1, the reference host's, "
            "reads 010 as octal 8; YAML 1.2 as 10); write the number without leading zeros, or quote it if it is text"
        )
    if _NUMBER_IN_11.match(text):
        raise _Refused(
            f"'{text}' is a number to YAML 1.1 readers (the reference host's) and text to YAML 1.2; "
            "write plain digits, or quote it if it is text"
        )
    if _INT8.match(text):
        raise _Refused(
            f"'{text}' is octal to YAML 1.2 and text to YAML 1.1 readers (the reference host's); "
            "write the number in decimal, or quote it if it is text"
        )
    if _TIMESTAMP.match(text):
        raise _Refused(
            f"'{text}' is a date to YAML 1.1 readers (the reference host reads a timestamp, not text); "
            "quote it if it is text"
        )
    if _NULL.match(text):
        return None
    if _TRUE.match(text):
        return True
    if _FALSE.match(text):
        return False
    digits = None
    if _INT10.match(text):
        digits = text.lstrip("+-")
        base = 10
    elif _INT8.match(text):
        digits, base = text[2:], 8
    elif _INT16.match(text):
        digits, base = text[2:], 16
    if digits is not None:
        if len(digits.lstrip("0")) > MAX_INT_DIGITS:
            raise _Refused(
                f"integer with {len(digits)} digits is too large (at most {MAX_INT_DIGITS}); quote it if it is text"
            )
        return int(text, base) if base == 10 else int(digits, base)
    if _INF_NAN.match(text):
        raise _Refused(f"'{text}' (infinity / not-a-number) is not accepted; use a finite number")
    if _FLOAT.match(text):
        if len(text) > 64:
            raise _Refused("number is too long (at most 64 characters); quote it if it is text")
        value = float(text)
        if math.isinf(value):
            raise _Refused(f"number '{text}' overflows to infinity; use a finite number")
        return value
    return text


def _typed_scalar(tag: str, text: str, plain: Any) -> Any:
    """A scalar with an explicit core tag (``!!str 5``, ``!!int 5``)."""
    if tag == f"{_CORE}str":
        return text
    expected = {f"{_CORE}int": int, f"{_CORE}float": float, f"{_CORE}bool": bool, f"{_CORE}null": type(None)}[tag]
    if expected is float and isinstance(plain, int) and not isinstance(plain, bool):
        return float(plain)
    if type(plain) is not expected:
        raise _Refused(f"'{text}' is not a valid !!{tag.removeprefix(_CORE)}")
    return plain


class _Frame:
    """One open collection: its value, path, and (for a mapping) the key awaiting its value."""

    __slots__ = ("key", "key_lines", "path", "value")

    def __init__(self, value: list[Any] | dict[str, Any], path: tuple[str | int, ...]):
        self.value = value
        self.path = path
        self.key: str | None = None
        self.key_lines: dict[str, int] = {}

    def expects_key(self) -> bool:
        return isinstance(self.value, dict) and self.key is None

    def child_path(self) -> tuple[str | int, ...]:
        if isinstance(self.value, list):
            return (*self.path, len(self.value))
        assert self.key is not None
        return (*self.path, self.key)

    def put(self, item: Any) -> None:
        if isinstance(self.value, list):
            self.value.append(item)
        else:
            assert self.key is not None
            self.value[self.key] = item
            self.key = None


def _tab_message(text: str, line0: int, col0: int, problem: str) -> str | None:
    lines = text.splitlines()
    here = lines[line0] if 0 <= line0 < len(lines) else ""
    if "tab" in problem or (col0 < len(here) and here[col0] == "\t") or here[: col0 + 1].lstrip(" ").startswith("\t"):
        return "tab character used for indentation; YAML indentation must use spaces"
    return None


def load(text: str, *, first_line: int = 1) -> Loaded:
    """Parse one YAML document from ``text``; ``first_line`` is the file line ``text`` starts on.

    Raises :class:`YamlError` for malformed YAML and for everything this module refuses.
    """
    return _Builder(text, first_line).run()


class _Builder:
    """Turns the event stream into plain values, one event at a time, with an explicit stack."""

    def __init__(self, text: str, first_line: int):
        self.text = text
        self.off = first_line - 1
        self.stack: list[_Frame] = []
        self.lines: dict[tuple[str | int, ...], int] = {}
        self.root: list[Any] = []

    def err(self, message: str, mark: Any) -> YamlError:
        return YamlError(message, mark.line + 1 + self.off, mark.column + 1)

    def line(self, mark: Any) -> int:
        return mark.line + 1 + self.off

    def run(self) -> Loaded:
        yaml, loader_cls = _event_classes()
        loader = loader_cls(self.text)
        documents = 0
        try:
            while True:
                event = self._next(yaml, loader)
                if event is None or isinstance(event, yaml.StreamEndEvent):
                    break
                if isinstance(event, yaml.DocumentStartEvent):
                    documents += 1
                    if documents > 1:
                        raise self.err(
                            "more than one YAML document; the frontmatter must be one mapping", event.start_mark
                        )
                elif isinstance(event, yaml.AliasEvent):
                    raise self.err(
                        f"alias '*{event.anchor}' is not allowed; write the value out in full", event.start_mark
                    )
                elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                    self._place(self.stack.pop().value)
                elif isinstance(event, yaml.ScalarEvent):
                    self._on_scalar(event)
                elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                    self._on_start(event, isinstance(event, yaml.MappingStartEvent))
        finally:
            loader.dispose()
        return Loaded(self.root[0] if self.root else None, self.lines)

    def _next(self, yaml: Any, loader: Any) -> Any:
        try:
            return loader.get_event()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line0, col0 = (mark.line, mark.column) if mark else (0, 0)
            problem = exc.problem or exc.context or "malformed YAML"
            message = _tab_message(self.text, line0, col0, problem) or f"malformed YAML: {problem}"
            if "nesting depth" in problem:  # libyaml's own limit (1000) can trip before ours
                message = f"nesting deeper than {MAX_DEPTH} levels is not accepted"
            raise YamlError(message, line0 + 1 + self.off, col0 + 1) from None
        except yaml.reader.ReaderError as exc:  # a control character: no mark, only a position
            before = self.text[: exc.position]
            line0, col0 = before.count("\n"), exc.position - (before.rfind("\n") + 1)
            message = f"control character #x{exc.character:04x} is not allowed in YAML; remove it"
            raise YamlError(message, line0 + 1 + self.off, col0 + 1) from None
        except yaml.YAMLError as exc:
            raise YamlError(f"malformed YAML: {' '.join(str(exc).split())}", self.off + 1, 1) from None

    def _place(self, value: Any) -> None:
        if self.stack:
            self.stack[-1].put(value)
        else:
            self.root.append(value)

    def _refuse_anchor(self, event: Any) -> None:
        if getattr(event, "anchor", None):
            raise self.err(
                f"anchor '&{event.anchor}' is not allowed; anchors and aliases are refused", event.start_mark
            )

    def _on_scalar(self, event: Any) -> None:
        self._refuse_anchor(event)
        value = _scalar(event, self.err)
        parent = self.stack[-1] if self.stack else None
        if parent is not None and parent.expects_key():
            self._accept_key(parent, value, event)
            return
        self.lines[parent.child_path() if parent else ()] = self.line(event.start_mark)
        self._place(value)

    def _on_start(self, event: Any, is_map: bool) -> None:
        self._refuse_anchor(event)
        mark = event.start_mark
        if event.tag not in (None, "!", _MAP_TAG if is_map else _SEQ_TAG):
            raise self.err(f"tag '{event.tag}' is not allowed; only the YAML core tags are accepted", mark)
        parent = self.stack[-1] if self.stack else None
        if parent is not None and parent.expects_key():
            raise self.err("a mapping key must be a plain string, not a " + ("mapping" if is_map else "list"), mark)
        if len(self.stack) >= MAX_DEPTH:
            raise self.err(f"nesting deeper than {MAX_DEPTH} levels is not accepted", mark)
        path = parent.child_path() if parent else ()
        self.lines[path] = self.line(mark)
        self.stack.append(_Frame({} if is_map else [], path))

    def _accept_key(self, frame: _Frame, key: Any, event: Any) -> None:
        mark = event.start_mark
        if event.style in (None, "") and key == "<<":
            raise self.err("merge key '<<' is not allowed; write the keys out in full", mark)
        if not isinstance(key, str):
            raise self.err(f"mapping key '{event.value}' is not a string; quote it if it is meant as text", mark)
        if key in frame.key_lines:
            first = frame.key_lines[key]
            raise self.err(f"duplicate key '{key}' (first defined on line {first}); remove one of them", mark)
        here = self.line(mark)
        frame.key_lines[key] = here
        frame.key = key
        self.lines[(*frame.path, key)] = here


def _scalar(event: Any, err: Any) -> Any:
    """A scalar event's value: quoted and block scalars are strings; plain ones resolve by 1.2 core."""
    mark = event.start_mark
    tag = event.tag
    plain_style = event.style in (None, "") and event.implicit[0]
    try:
        if tag in (None, "!"):
            return _resolve_plain(event.value) if plain_style else event.value
        if tag not in _SCALAR_TAGS:
            raise _Refused(f"tag '{tag}' is not allowed; only the YAML core tags are accepted")
        plain = event.value if tag == f"{_CORE}str" else _resolve_plain(event.value)
        return _typed_scalar(tag, event.value, plain)
    except _Refused as exc:
        raise err(str(exc), mark) from None
