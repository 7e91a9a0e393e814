"""Other people's text inside Markdown that GitHub renders: the job summary and SARIF's ``help.markdown``.

The text is the change's to write, so it is plain words (:func:`md_word`) or one line in a code span nothing
inside can close (:func:`md_code`).
"""

from __future__ import annotations

import re

from agentreview.report.neutral import neutralize

__all__ = ["MAX_CELL", "md_code", "md_word", "one_line"]

MAX_CELL = 300
_WORD = r"""[A-Za-z0-9./('"](?:[A-Za-z0-9.+/,:()'"…-]|(?<=[A-Za-z0-9])[_@])*"""
_PLAIN = re.compile(rf"{_WORD}(?: {_WORD})*\Z")
# What GitHub links without angle brackets: www. at a word's start, a scheme's ://, mailto: and xmpp:.
_AUTOLINK = re.compile(r"(?:^| )www\.|://|mailto:|xmpp:", re.IGNORECASE)
# C0 and C1 controls, DEL, and the bidirectional embeddings, overrides and isolates.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_BACKTICKS = re.compile(r"`+")


def one_line(value: object, limit: int = MAX_CELL) -> str:
    """``value`` as text on one line (runs of whitespace a single space), at most ``limit``
    characters of it, with no control or bidi-override character."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = _UNSAFE.sub("\ufffd", " ".join(text.split()))
    return text[:limit] + "…" if len(text) > limit else text


def md_code(value: object, limit: int = MAX_CELL, *, cell: bool = False) -> str:
    """``value`` on one line as a code span no text inside can break out of; empty for no text."""
    text = neutralize(one_line(value, limit))
    if not text:
        return ""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "  # CommonMark strips one space each side, so the inner backtick stays
    if cell:
        text = text.replace("|", "\\|")
    return f"{fence}{text}{fence}"


def md_word(value: object, limit: int = MAX_CELL, *, cell: bool = False) -> str:
    """``value`` as written when it is plain words (see the module docstring), else :func:`md_code`."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    if len(text) <= limit and _PLAIN.match(text) and not _AUTOLINK.search(text):
        return text
    return md_code(text, limit, cell=cell)
