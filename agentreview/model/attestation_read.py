"""The attestation reader's words and rules: what ``docs/schemas/attestation.schema.json`` accepts plus the rules a
schema cannot state (docs/architecture.md), every problem with its location; nothing is coerced. The members
are declared on the views of :mod:`agentreview.model.attestation`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agentreview.model.reader import ListOf, Obj, ReadError, Rule, Str, read_json
from agentreview.model.signature_alg import SIGNATURE_ALG_PATTERN, is_signature_alg

SCHEMA = "agentproto.review.attestation/v1"

Location = tuple[str | int, ...]
Problem = tuple[Location, str]

_KIND_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-"
_ISO_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}(?::?([0-9]{2}))?)"
)
_PLAIN_KEY = r"[A-Za-z0-9_$@-]{1,64}"


class AttestationShapeError(ValueError):
    """An attestation (or one of its members) that does not have the shape the schema requires.

    ``problems`` holds every ``(location, message)`` found; ``str()`` is the first, on one line.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: list[Problem] = list(problems) or [((), "is not a valid attestation")]
        more = len(self.problems) - 1
        super().__init__(self.lines()[0] + (f" (and {more} more problem(s))" if more else ""))

    def lines(self) -> list[str]:
        """One ``where: what`` line per problem, e.g. ``lanes.0.status: must be one of ...``."""
        return [f"{where(loc)}: {message}" for loc, message in self.problems]


def where(loc: Location) -> str:
    """A location as one printable line: ``lanes.0.status``; ``(document)`` for the whole document.

    A key the document chose (an unknown member) is quoted and escaped when it is not a plain
    name, so no message can carry a newline or a control character from a foreign file.
    """
    if not loc:
        return "(document)"
    parts = []
    for part in loc:
        if isinstance(part, str) and re.fullmatch(_PLAIN_KEY, part):
            parts.append(part)
        elif isinstance(part, int):
            parts.append(str(part))
        else:
            parts.append(_shown(part))
    return ".".join(parts)


def is_iso_datetime(value: str) -> bool:
    """ISO 8601 date-time with a zone (``Z`` or an offset), as the reference's schema requires;
    fromisoformat alone would also take a bare date or a time without a zone, and an offset
    of 60 minutes or more."""
    match = _ISO_DATETIME.fullmatch(value)
    if match is None or (match[1] or "00") > "59":
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- messages


def _a(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a Python {type(value).__name__}"


def _shown(value: Any, limit: int = 48) -> str:
    # ASCII-escaped JSON: one line, no control character, whatever the document holds.
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        return _a(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- the rules a pattern cannot state


def _owner_name(value: Any) -> str | None:
    # ^[^/]+/[^/]+$
    if not isinstance(value, str):
        return f"must be a string, not {_a(value)}"
    if value.count("/") == 1 and not value.startswith("/") and not value.endswith("/"):
        return None
    return "must match ^[^/]+/[^/]+$ (owner/name)"


def _kind(value: Any) -> str | None:
    # "command" | "agent" | ^[a-z][a-z0-9-]*$ of at most 64 characters
    if not isinstance(value, str):
        return f"must be a string, not {_a(value)}"
    if 0 < len(value) <= 64 and "a" <= value[0] <= "z" and not value.strip(_KIND_CHARS):
        return None
    return (
        "must be 'command', 'agent' or a plugin's check kind (^[a-z][a-z0-9-]*$, at most 64 characters), "
        f"not {_shown(value)}"
    )


def _true(value: Any) -> str | None:
    return None if value is True else f"must be true when present, not {_shown(value)}"


def _duration(value: Any) -> str | None:
    # An integer or a finite float, >= 0; which one it is, is kept.
    if type(value) is int:
        return None if value >= 0 else f"must be a number of milliseconds >= 0, not {value}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of milliseconds >= 0, not {_a(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number of milliseconds >= 0"
    return None if value >= 0 else f"must be a number of milliseconds >= 0, not {_shown(value)}"


def _datetime(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, not {_a(value)}"
    if is_iso_datetime(value):
        return None
    return f"must be an ISO 8601 date-time with a time zone (e.g. 2025-01-31T12:00:00.000Z), not {_shown(value)}"


def _alg(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, not {_a(value)}"
    return None if is_signature_alg(value) else f"must match {SIGNATURE_ALG_PATTERN}"


def _words(kind: str, value: Any, ctx: dict[str, Any], msg: str) -> str:
    """A problem of the reader's vocabulary, said the attestation's way (``must be a string, not null``)."""
    if kind == "string_type":
        return f"must be a string, not {_a(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch":
        return f"must match {ctx['pattern']}"
    if kind == "literal_error":
        values = ctx["values"]
        wanted = (
            f"must be '{values[0]}'" if len(values) == 1 else "must be one of " + ", ".join(f"'{v}'" for v in values)
        )
        return f"{wanted}, not {_shown(value) if isinstance(value, str) else _a(value)}"
    if kind in ("int_type", "greater_than"):
        wanted = "an integer" if ctx["gt"] is None else f"an integer >= {ctx['gt'] + 1}"
        return f"must be {wanted}, not {value if kind == 'greater_than' else _a(value)}"
    if kind == "bool_type":
        return f"must be true or false, not {_a(value)}"
    if kind == "list_type":
        return f"must be an array, not {_a(value)}"
    if kind == "too_short":
        return f"must hold at least {ctx['min_length']} item(s), or be left out"
    if kind == "object_type":
        return f"must be an object, not {_a(value)}"
    if kind == "missing":
        return "is required"
    if kind == "key_type":
        return f"has a member name that is not a string: {_shown(value)}"
    if kind == "finite_number":
        return "must be a finite number (NaN and infinities are not JSON)"
    if kind == "json_type":
        return f"is not a JSON value ({_a(value)})"
    if kind == "value_error":
        return str(ctx["reason"])
    return msg  # a Rule's own words


def _unique_presets(items: list[Any]) -> list[Any]:
    if len(set(items)) != len(items):
        raise ValueError("must not repeat a preset")
    return items


# --------------------------------------------------------------------------- the schema's $defs, in
# the members of the views in model/attestation.py

STRING = Str()
NON_EMPTY = Str(min_length=1)
HEX64 = Str(pattern="^[0-9a-f]{64}$")
STRINGS = ListOf(STRING)
PRESETS = ListOf(STRING, after=_unique_presets)
KIND = Rule(_kind)
DURATION = Rule(_duration)
DATETIME = Rule(_datetime)
SIGNATURE_ALG = Rule(_alg)
OWNER_NAME = Rule(_owner_name)
TRUE = Rule(_true)


def prefixed(prefix: str) -> Str:
    """^<prefix>.+$ with ECMA-262's ``.``: any character but a line terminator."""
    return Str(pattern=f"^{re.escape(prefix)}[^\n\r\u2028\u2029]+$", schema_pattern=f"^{prefix}.+$")


def read_object(definition: Obj, data: Any, *, drop_nulls: bool, at: Location = ()) -> dict[str, Any]:
    """Read ``data`` as the schema's ``definition`` (an attestation, a lane result, ...): its private copy,
    or :class:`AttestationShapeError` with every problem, located under ``at``."""
    try:
        out: dict[str, Any] = read_json(definition, data, drop_nulls=drop_nulls, words=_words, at=at)
    except RecursionError:
        raise AttestationShapeError([(at, "is nested too deeply to read")]) from None
    except ReadError as exc:
        raise AttestationShapeError([(e["loc"], e["msg"]) for e in exc.errors]) from None
    return out


def copy_json(value: Any) -> Any:
    """A deep copy of a value this reader produced (dicts, lists and immutable scalars only)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value
