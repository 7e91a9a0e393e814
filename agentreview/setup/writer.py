"""The one rule every file ``init`` writes obeys: a user's file is never overwritten without --force.

A link or non-regular file is never replaced, nor written through a folder leading out of the repository.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

from agentreview.host.files import UnreadableFileError, atomic_write_bytes, read_regular_file
from agentreview.model.record import record

__all__ = ["Outcome", "place", "shown"]

Status = Literal["written", "unchanged", "skipped"]


@record
class Outcome:
    """What happened to one file: ``path`` as shown to the user, the status, and why."""

    path: str
    status: Status
    reason: str = ""


def shown(path: Path, root: Path) -> str:
    """``path`` relative to the repository root when it lies inside it, else absolute."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _escapes(path: Path, root: Path | None) -> bool:
    if root is None:
        return False
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    real = parent.resolve()
    return real != root.resolve() and root.resolve() not in real.parents


def place(path: Path, data: bytes, *, root: Path, force: bool, mode: int = 0o644, confine: bool = True) -> Outcome:
    """Write ``data`` to ``path`` under the never-overwrite rule and say what happened.

    ``confine`` refuses a path whose existing folders resolve outside ``root``.
    """
    name = shown(path, root)
    if confine and _escapes(path, root):
        return Outcome(name, "skipped", "its folder is a symbolic link out of the repository; not written")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            return Outcome(name, "skipped", "exists and is not a regular file; never replaced")
        try:
            same = read_regular_file(path, limit=max(len(data), 1) + 1, follow_symlinks=False) == data
        except UnreadableFileError:
            same = False
        if same:
            return Outcome(name, "unchanged", "already as init writes it")
        if not force:
            return Outcome(name, "skipped", "exists; --force overwrites it")
    atomic_write_bytes(path, data, mode=mode)
    return Outcome(name, "written", "overwritten (--force)" if info is not None else "")
