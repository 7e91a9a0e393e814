"""Text that others wrote, made safe to print into a CI log.

A CI runner reads every line a step prints and obeys some of them. GitHub's runner trims a
line's leading whitespace and takes it as a workflow command when it then begins with ``::``
(``::warning``, ``::error``, ``::add-mask::``, ``::stop-commands::`` ...); it also honours the
older ``##[command]`` form anywhere in a line, as Azure Pipelines does ``##vso[``. A finding's
title and detail are written by a reviewer the change can steer, a command lane's output by the
change's own code, and an export by whoever pushed it, so all of it is passed through
:func:`neutralize` before it is printed: a line that would begin with ``::`` gets its first
colon written as ``%3A`` (GitHub's own escape for it), and ``##[`` / ``##vso[`` get their second
``#`` written as ``%23``. The text stays readable; the only workflow commands agentreview prints
are those ``--annotate github`` writes (:mod:`agentreview.report.annotate`).

Lines are split wherever any reader might split them: ``\\n``, ``\\r`` and every other
character :meth:`str.splitlines` breaks on; leading whitespace is every character
:meth:`str.isspace` accepts plus the invisible format characters (a superset of what .NET's
``TrimStart`` removes).

:func:`printable` makes such text writable at all: a lone surrogate (strict JSON reads one from
an escape) is written as its ``\\uXXXX`` escape rather than ending the output in an encoding error.
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
    """``text`` with every character UTF-8 cannot encode (a lone surrogate such as ``\\ud800``,
    which strict JSON reads from an escape) written as its ``\\uXXXX`` escape.

    An export is the change's to write, and a string stdout cannot encode would end the
    report in an encoding error. Applied to JSON text it is exact: outside strings JSON
    has only ASCII, and inside one a backslash is always escaped, so the ``\\uXXXX`` written
    here reads back as the very same string.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
