"""Did-you-mean for a name that is not there (a preset, a binding, a check id): the closest known one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like ``name`` (difflib, cutoff 0.6), or None."""
    found = difflib.get_close_matches(name, [str(k) for k in known], n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" — did you mean 'x'?"`` for the closest known name, else ``""``: appended to an error line."""
    match = closest(name, known)
    return f" — did you mean '{match}'?" if match else ""
