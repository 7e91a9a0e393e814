"""The strict reader of an attestation document, ``agentproto.review.attestation/v1``.

It accepts exactly the documents the committed JSON Schema (``docs/schemas/attestation.schema.json``,
draft 2020-12, also shipped as ``agentreview/model/attestation.schema.json``) accepts, plus the rules
a schema cannot state, and refuses everything else:

* patterns have their ECMA-262 meaning, as the schema's dialect says: ``$`` ends the text (a
  trailing newline does not match) and ``.`` matches no line terminator (``\\n \\r \\u2028 \\u2029``);
* ``createdAt`` and ``signedAt`` are ISO 8601 date-times with a zone, the spec's "offset allowed"
  (``Z``, ``+02:00``, ``+0200`` or ``+02``), that :meth:`datetime.fromisoformat` reads;
* an integer member (``line``, ``exitCode``, ``pr.number``) is a JSON integer: ``3.0`` is refused
  (a reader keeping it would re-export ``3.0`` where canonical JSON writes ``3``);
* ``durationMs`` is an integer or a finite float and keeps which one it is;
* a boolean is never a number, nor a number a boolean; nothing is coerced (``"5"`` is not ``5``,
  ``"true"`` is not ``true``);
* every value, unknown members included, is JSON: objects with string keys, lists, strings,
  integers, finite floats, booleans, null (``NaN`` and infinities are refused).

Why by hand and not pydantic: reading an attestation is on the path of every ``verify`` and
cache hit, where importing pydantic and building the validators cost ~75 ms and this whole
module imports in ~2 ms; a read of a typical document takes ~30 µs either way.

What a read gives back is a private copy (the caller's object is never kept, so mutating it later
changes nothing): the schema's members in the schema's order, then unknown members in the order
read. With ``drop_nulls`` (a document this host builds) a member whose value is null is left out
at every level the schema describes, so such a document never writes ``"x": null``; without it
(a document read for verification) explicit nulls are kept, because they are signed.

Every problem is reported, each with its location: :class:`AttestationShapeError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from agentreview.model.signature_alg import SIGNATURE_ALG_PATTERN, is_signature_alg

SCHEMA = "agentproto.review.attestation/v1"

Location = tuple[str | int, ...]
Problem = tuple[Location, str]

# The schema's simple patterns are checked with string operations (each rule names its pattern):
# as fast, and nothing to compile on every start.
_HEX_DIGITS = "0123456789abcdef"
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


# --------------------------------------------------------------------------- scalar rules
# A scalar rule returns None when the value is right, else what is wrong with it.

Scalar = Callable[[Any], str | None]


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else f"must be a string, not {_a(value)}"


def _non_empty(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, not {_a(value)}"
    return None if value else "must not be empty"


def _hex64(value: Any) -> str | None:
    # ^[0-9a-f]{64}$
    if not isinstance(value, str):
        return f"must be a string, not {_a(value)}"
    return None if len(value) == 64 and not value.strip(_HEX_DIGITS) else "must match ^[0-9a-f]{64}$"


def _prefixed(prefix: str) -> Scalar:
    # ^<prefix>.+$, with ECMA-262's ``.``: any character but a line terminator
    shown = f"^{prefix}.+$"

    def rule(value: Any) -> str | None:
        if not isinstance(value, str):
            return f"must be a string, not {_a(value)}"
        if (
            len(value) > len(prefix)
            and value.startswith(prefix)
            and "\n" not in value
            and "\r" not in value
            and "\u2028" not in value
            and "\u2029" not in value
        ):
            return None
        return f"must match {shown}"

    return rule


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


def _one_of(*allowed: str) -> Scalar:
    listed = ", ".join(f"'{a}'" for a in allowed)
    message = f"must be '{allowed[0]}'" if len(allowed) == 1 else f"must be one of {listed}"

    def rule(value: Any) -> str | None:
        if not isinstance(value, str):
            return f"{message}, not {_a(value)}"
        return None if value in allowed else f"{message}, not {_shown(value)}"

    return rule


def _integer(minimum: int | None = None) -> Scalar:
    # A JSON integer: never a bool, never a float (3.0 is refused, see the module's docstring).
    wanted = "an integer" if minimum is None else f"an integer >= {minimum}"

    def rule(value: Any) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be {wanted}, not {_a(value)}"
        return None if minimum is None or value >= minimum else f"must be {wanted}, not {value}"

    return rule


def _boolean(value: Any) -> str | None:
    return None if value is True or value is False else f"must be true or false, not {_a(value)}"


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


# --------------------------------------------------------------------------- objects and arrays
# A composite rule (an object or an array) reads a value into its private copy, appending what is
# wrong to ``problems``.


class _Field(NamedTuple):
    key: str
    required: bool  # an optional member may also be null (the schema's anyOf [..., null])
    how: int  # _STRING (any string), _SCALAR (a scalar rule) or _COMPOSITE (an _Object or _Array)
    rule: Any


_STRING, _SCALAR, _COMPOSITE = 0, 1, 2
_MISSING: Any = object()


def _field(key: str, required: bool, rule: Any) -> _Field:
    if rule is _string:
        return _Field(key, required, _STRING, rule)
    return _Field(key, required, _COMPOSITE if isinstance(rule, _Object | _Array) else _SCALAR, rule)


def _req(key: str, rule: Any) -> _Field:
    return _field(key, True, rule)


def _opt(key: str, rule: Any) -> _Field:
    return _field(key, False, rule)


class _Object:
    """One ``$defs`` object of the schema: its members in order; unknown members are kept."""

    def __init__(self, name: str, fields: Sequence[_Field]) -> None:
        self.name = name
        self.fields = tuple(fields)
        self.known = frozenset(f.key for f in fields)

    def __call__(self, value: Any, loc: Location, problems: list[Problem], drop_nulls: bool) -> Any:
        if not isinstance(value, dict):
            problems.append((loc, f"must be an object, not {_a(value)}"))
            return None
        out: dict[str, Any] = {}
        get = value.get
        missing = _MISSING
        for key, required, how, rule in self.fields:
            item = get(key, missing)
            if item is missing:
                if required:
                    problems.append(((*loc, key), "is required"))
                continue
            if item is None and not required:
                if not drop_nulls:
                    out[key] = None
                continue
            if how == 0:  # _STRING
                if not isinstance(item, str):
                    problems.append(((*loc, key), f"must be a string, not {_a(item)}"))
            elif how == 2:  # _COMPOSITE
                item = rule(item, (*loc, key), problems, drop_nulls)
            else:
                wrong = rule(item)
                if wrong is not None:
                    problems.append(((*loc, key), wrong))
            out[key] = item
        if len(out) != len(value):  # unknown members (or dropped nulls): kept, in the order read
            known = self.known
            for key, item in value.items():
                if key in known:
                    continue
                if not isinstance(key, str):
                    problems.append((loc, f"has a member name that is not a string: {_shown(key)}"))
                elif item is not None or not drop_nulls:
                    out[key] = _json_value(item, (*loc, key), problems)
        return out


class _Array:
    """An array of one rule's items; ``unique`` is the message when a string repeats (uniqueItems)."""

    def __init__(self, item: Any, *, min_items: int = 0, unique: str = "") -> None:
        self.item = item
        self.composite = isinstance(item, _Object | _Array)
        self.min_items = min_items
        self.unique = unique

    def __call__(self, value: Any, loc: Location, problems: list[Problem], drop_nulls: bool) -> Any:
        if not isinstance(value, list):
            problems.append((loc, f"must be an array, not {_a(value)}"))
            return None
        if len(value) < self.min_items:
            problems.append((loc, f"must hold at least {self.min_items} item(s), or be left out"))
        item = self.item
        if self.composite:
            return [item(v, (*loc, i), problems, drop_nulls) for i, v in enumerate(value)]
        wrong_items = False
        for i, v in enumerate(value):
            wrong = item(v)
            if wrong is not None:
                problems.append(((*loc, i), wrong))
                wrong_items = True
        if self.unique and not wrong_items and len(set(value)) != len(value):
            problems.append((loc, self.unique))
        return list(value)


def _json_value(value: Any, loc: Location, problems: list[Problem]) -> Any:
    """A copy of an unknown member's value, which may be any JSON value."""
    if value is None or isinstance(value, (str, int)):  # bool is an int
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        problems.append((loc, "must be a finite number (NaN and infinities are not JSON)"))
        return None
    if isinstance(value, list):
        return [_json_value(v, (*loc, i), problems) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append((loc, f"has a member name that is not a string: {_shown(key)}"))
                continue
            out[key] = _json_value(item, (*loc, key), problems)
        return out
    problems.append((loc, f"is not a JSON value ({_a(value)})"))
    return None


# --------------------------------------------------------------------------- the schema's $defs

FINDING = _Object("Finding", [
    _req("severity", _one_of("high", "medium", "low")),
    _req("title", _string),
    _req("detail", _string),
    _opt("file", _string),
    _opt("line", _integer(1)),
])  # fmt: skip
COMPOSED_FROM = _Object("ComposedFrom", [
    _req("rangeSha", _hex64),
    _req("headSha", _non_empty),
    _req("attestationSha256", _hex64),
])  # fmt: skip
FALLBACK = _Object("Fallback", [
    _req("preset", _string),
    _req("error", _string),
    _opt("unknownFields", _Array(_string)),
    _opt("unsafeValues", _Array(_string)),
])  # fmt: skip
LANE_RESULT = _Object("LaneResult", [
    _req("id", _string),
    _req("kind", _kind),
    _req("status", _one_of("pass", "fail", "skipped", "timeout")),
    _req("blocking", _boolean),
    _req("findings", _Array(FINDING)),
    _req("durationMs", _duration),
    _opt("error", _string),
    _opt("sessionId", _string),
    _opt("preset", _string),
    _opt("summary", _string),
    _opt("exitCode", _integer()),
    _opt("model", _string),
    _opt("fallbacks", _Array(FALLBACK)),
    _opt("unknownFields", _Array(_string)),
    _opt("unsafeValues", _Array(_string)),
    _opt("composedFrom", COMPOSED_FROM),
])  # fmt: skip
TARGET = _Object("Target", [_req("repoRemote", _non_empty), _req("baseSha", _non_empty), _req("headSha", _non_empty)])
SIGNATURE = _Object("Signature", [
    _req("alg", _alg),
    _req("keyFingerprint", _prefixed("SHA256:")),
    _req("principal", _string),
    _req("signedAt", _datetime),
    _req("sig", _string),
])  # fmt: skip
ATTESTOR = _Object("Attestor", [
    _req("daemon", _string),
    _req("presets", _Array(_string, unique="must not repeat a preset")),
    _opt("signature", SIGNATURE),
])  # fmt: skip
RUBRIC_DIGEST = _Object("RubricDigest", [_req("check", _string), _req("path", _string), _req("sha256", _hex64)])
PACK_DIGEST = _Object("PackDigest", [
    _req("ref", _string),
    _req("id", _string),
    _req("version", _string),
    # Any string: an unknown recipe is a verification failure with its own message, not an unreadable document.
    _req("alg", _string),
    _req("sha256", _hex64),
])  # fmt: skip
GIT_AUTHOR = _Object("GitAuthor", [_req("name", _string), _req("email", _string)])
REQUESTER = _Object("Requester", [_opt("sessionId", _string), _opt("gitAuthor", GIT_AUTHOR)])
PULL_REQUEST = _Object("PullRequest", [
    _req("provider", _one_of("github")),
    _req("repo", _owner_name),
    _req("number", _integer(1)),
    _req("url", _string),
])  # fmt: skip
ATTESTATION = _Object("Attestation", [
    _req("schema", _one_of(SCHEMA)),
    _req("runId", _prefixed("review-")),
    _req("reviewId", _string),
    _req("manifestSha", _hex64),
    _req("binding", _non_empty),
    _req("target", TARGET),
    _req("rangeSha", _hex64),
    _req("lanes", _Array(LANE_RESULT)),
    _req("verdict", _one_of("pass", "block", "incomplete")),
    _req("attestor", ATTESTOR),
    _req("rubrics", _Array(RUBRIC_DIGEST)),
    _opt("packs", _Array(PACK_DIGEST, min_items=1)),
    _opt("dirty", _true),
    _opt("requester", REQUESTER),
    _opt("pr", PULL_REQUEST),
    _req("createdAt", _datetime),
])  # fmt: skip

DEFINITIONS: dict[str, _Object] = {
    d.name: d
    for d in (ATTESTATION, FINDING, COMPOSED_FROM, FALLBACK, LANE_RESULT, TARGET, SIGNATURE, ATTESTOR,
              RUBRIC_DIGEST, PACK_DIGEST, GIT_AUTHOR, REQUESTER, PULL_REQUEST)
}  # fmt: skip


def read_object(definition: str, data: Any, *, drop_nulls: bool, at: Location = ()) -> dict[str, Any]:
    """Read ``data`` as the schema's ``definition`` ("Attestation", "LaneResult", ...): its private copy,
    or :class:`AttestationShapeError` with every problem, located under ``at``."""
    problems: list[Problem] = []
    try:
        out = DEFINITIONS[definition](data, at, problems, drop_nulls)
    except RecursionError:
        raise AttestationShapeError([(at, "is nested too deeply to read")]) from None
    if problems:
        raise AttestationShapeError(problems)
    return out


def read_attestation(data: Any, *, drop_nulls: bool = False) -> dict[str, Any]:
    """Read a whole attestation document (see the module's docstring)."""
    return read_object("Attestation", data, drop_nulls=drop_nulls)


def copy_json(value: Any) -> Any:
    """A deep copy of a value this reader produced (dicts, lists and immutable scalars only)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value
