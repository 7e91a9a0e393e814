"""Text that others wrote, made safe to print into a CI log.

A CI runner obeys some printed lines (``::command``, ``##[``, ``##vso[``) and that text is the change's to steer,
so :func:`neutralize` escapes those openings; :func:`printable` keeps a lone surrogate from an encoding error.
"""

from __future__ import annotations

import re

__all__ = ["neutralize", "printable"]

_BREAK = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_LEAD = r"[\s\u180e\u200b\u200c\u200d\u2060\ufeff]*"
_COMMAND_LINE = re.compile(rf"((?:^|[{_BREAK}]){_LEAD}):(?=:)")
_LEGACY_COMMAND = re.compile(r"##(?=(?:vso)?\[)", re.IGNORECASE)


def neutralize(text: str) -> str:
    """``text`` with no line that a CI runner would take as a command (see the module docstring)."""
    if "::" in text:
        text = _COMMAND_LINE.sub(r"\1%3A", text)
    if "##" in text:
        text = _LEGACY_COMMAND.sub("#%23", text)
    return text


def printable(text: str) -> str:
    """``text`` with every character UTF-8 cannot encode (a lone surrogate) as its ``\\uXXXX`` escape.

    An export is the change's to write; applied to JSON text it is exact: the escape reads back as the same string.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
