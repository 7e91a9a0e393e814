"""Canonical JSON exactly as the spec defines it, byte for byte what a JavaScript host writes.

Keys sorted by UTF-16 code units, no whitespace, every key and primitive as ``JSON.stringify`` writes it
(lone surrogates escaped, integers beyond 2**53 rounded to a double), so a signature made by any conforming
host checks here; this is why it is not RFC 8785. :data:`UNDEFINED` is an omitted member, ``None`` a kept
``null``. NaN, infinities and integers beyond any double are refused, so one signature never covers two documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from itertools import pairwise
from json.encoder import encode_basestring  # the C escaper: exactly JSON.stringify's escapes
from typing import Any, Final


class CanonicalJsonError(ValueError):
    """A value cannot be represented in canonical JSON."""


class _Undefined:
    """JavaScript's ``undefined``: the member is omitted (``null`` in an array or at the top)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = _Undefined()

_MAX_EXACT = 2**53


def canonical_json(value: Any) -> bytes:
    """The canonical JSON bytes of ``value`` (UTF-8)."""
    parts: list[str] = []
    try:
        _write(value, parts.append, encode_basestring)
    except RecursionError:
        raise CanonicalJsonError("value cannot be written as canonical JSON: nested too deeply") from None
    except CanonicalJsonError as exc:
        raise CanonicalJsonError(f"value cannot be written as canonical JSON: {exc}") from None
    text = "".join(parts)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Surrogates can only sit inside strings (everything structural is ASCII), so the
        # whole text can be made well-formed at once, as JSON.stringify does per string.
        return well_formed_json(text).encode("utf-8")


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed_json(text: str) -> str:
    """JSON ``text`` with every surrogate written as ``JSON.stringify`` writes it, so it encodes as UTF-8:
    a high-low pair joined into one character, a lone one as its ``\\udxxx`` escape. Exact on JSON text:
    outside strings JSON is ASCII, and inside one a backslash is always escaped."""
    if _SURROGATE.search(text) is None:
        return text
    # The UTF-16 round trip joins the pairs; what is still alone is escaped.
    joined = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", joined)


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON text for a file or a reader: non-ASCII written literally, a lone
    surrogate (a reviewer's or an export's string may hold one) escaped as the canonical
    form writes it, so writing the text as UTF-8 never fails. Key order as given."""
    return well_formed_json(json.dumps(value, indent=indent, ensure_ascii=False))


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _sorted_keys(value: Mapping[Any, Any]) -> list[str]:
    keys = list(value)
    try:
        # Code point order is UTF-16 order for ASCII, and distinct keys stay distinct: the common case.
        if all(map(str.isascii, keys)):
            return sorted(keys)
    except TypeError:  # str.isascii of something else
        pass
    for key in keys:
        if not isinstance(key, str):
            raise CanonicalJsonError(f"object keys must be strings, got {type(key).__name__} {key!r}")
    units = sorted((_utf16(k), k) for k in keys)
    for (a, key_a), (b, key_b) in pairwise(units):
        if a == b:
            raise CanonicalJsonError(f"keys {key_a!r} and {key_b!r} are the same JavaScript string")
    return [k for _, k in units]


def _write(value: Any, out: Callable[[str], None], escape: Callable[[str], str]) -> None:
    if isinstance(value, str):
        out(escape(value))
    elif value is None:
        out("null")
    elif isinstance(value, bool):
        out("true" if value else "false")
    elif isinstance(value, int):
        out(_integer(value))
    elif isinstance(value, float):
        out(_number(value))
    elif isinstance(value, Mapping):
        out("{")
        comma = False
        for key in _sorted_keys(value):
            member = value[key]
            if member is UNDEFINED:
                continue
            out(("," if comma else "") + escape(key) + ":")
            _write(member, out, escape)
            comma = True
        out("}")
    elif isinstance(value, (list, tuple)):
        out("[")
        for index, item in enumerate(value):
            if index:
                out(",")
            _write(item, out, escape)
        out("]")
    elif value is UNDEFINED:
        out("null")
    else:
        raise CanonicalJsonError(f"unsupported type {type(value).__name__}")


def _integer(value: int) -> str:
    if -_MAX_EXACT <= value <= _MAX_EXACT:
        return int.__repr__(value)
    try:
        nearest = float(value)  # correctly rounded, ties to even: what JavaScript reads for that literal
    except OverflowError:
        raise CanonicalJsonError(f"an integer of {value.bit_length()} bits is beyond every double") from None
    return _number(nearest)


def _number(value: float) -> str:
    """``Number.prototype.toString(value)`` for a finite double (ECMA-262 Number::toString)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise CanonicalJsonError(f"{value} is not a finite number")
    if value == 0:
        return "0"  # -0 too
    text = float.__repr__(value)  # shortest digits that round-trip, as JavaScript picks them
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    digits = all_digits.lstrip("0")
    # value = 0.<digits> * 10**n, i.e. digits * 10**(n - k)
    n = len(whole) + (int(exp) if exp else 0) - (len(all_digits) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{'+' if e > 0 else '-'}{abs(e)}"
