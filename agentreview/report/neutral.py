"""Text that others wrote, made safe to print into a CI log or a terminal.

A CI runner obeys some printed lines (``::command``, ``##[``, ``##vso[``) and a terminal obeys control sequences
(clear the screen, hide text, set the title, write the clipboard), and that text is the change's or a note
pusher's to steer, so :func:`neutralize` escapes those openings and every control character but a line break
and a tab; :func:`printable` keeps a lone surrogate from an encoding error.
"""

from __future__ import annotations

import re

__all__ = ["neutralize", "printable"]

_BREAK = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_LEAD = r"[\s\u180e\u200b\u200c\u200d\u2060\ufeff]*"
_COMMAND_LINE = re.compile(rf"((?:^|[{_BREAK}]){_LEAD}):(?=:)")
_LEGACY_COMMAND = re.compile(r"##(?=(?:vso)?\[)", re.IGNORECASE)


# C0 controls but the line feed and the tab, DEL, C1 controls, and the bidirectional embeddings, overrides and
# isolates (which make a terminal show text in another order than it is)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralize(text: str) -> str:
    """``text`` with no control character a terminal would obey (each shown as its ``\\xNN`` or ``\\uNNNN``
    escape) and no line that a CI runner would take as a command (see the module docstring)."""
    if not text.isprintable():  # a line feed or a tab too: the common case of many lines skips the search
        text = _CONTROL.sub(_escape, text)
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
