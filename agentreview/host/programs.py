"""Finding the programs the host starts (``git``, ``ssh-keygen``, ``gh``, reviewer CLIs) by absolute path.

Only absolute ``PATH`` entries are searched: the host runs in the reviewed repository, where an empty or
relative entry would start the change author's ``./git``.
"""

from __future__ import annotations

import os
import shutil
import threading

__all__ = ["ProgramNotFoundError", "find_program", "program", "safe_path"]

_found: dict[tuple[str, str], str] = {}
_lock = threading.Lock()


class ProgramNotFoundError(Exception):
    """A program the host needs is not installed on an absolute ``PATH`` entry (the host's own failure)."""


def safe_path(value: str) -> str:
    """``value`` (a ``PATH``) without empty or relative entries."""
    return os.pathsep.join(entry for entry in value.split(os.pathsep) if os.path.isabs(entry))


def find_program(name: str, path: str | None = None) -> str | None:
    """The absolute path of ``name`` on the absolute entries of ``path`` (default ``PATH``), or ``None``.

    A hit is kept for the process; a miss is looked up again, so a program installed meanwhile is found."""
    search = safe_path(os.environ.get("PATH", os.defpath) if path is None else path)
    key = (name, search)
    with _lock:
        cached = _found.get(key)
    if cached is not None:
        return cached
    found = shutil.which(name, path=search) if search else None
    if found is None or not os.path.isabs(found):
        return None
    with _lock:
        _found[key] = found
    return found


def program(name: str, path: str | None = None) -> str:
    """:func:`find_program` for a program the host cannot work without; raise
    :class:`ProgramNotFoundError` with one line naming it and the fix."""
    found = find_program(name, path)
    if found is None:
        raise ProgramNotFoundError(
            f"{name} is not installed: no executable '{name}' in an absolute PATH entry "
            "(empty and relative entries are ignored) — install it or add its folder to PATH"
        )
    return found
