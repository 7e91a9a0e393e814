"""What ``agentreview fetch`` imported last from each remote, so a fetch reads only changed notes, and where one
cut short stopped. A disposable cache (``cache/notes-fetch/``): losing it only makes the next fetch read all."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

FORMAT = "agentreview.notes-fetch/1"
MAX_STATE_BYTES = 64 * 1024
_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class FetchState:
    """``imported``: the remote notes commit fully imported last. While a capped import is under
    way, ``importing`` is the notes commit being imported and ``cursor`` the last annotated object
    id read (notes are read in object-id order)."""

    imported: str | None = None
    importing: str | None = None
    cursor: str | None = None


def repository_key(cwd: Path) -> str:
    """This clone, found without starting git: its git directory (``$GIT_DIR``, else the nearest
    ``.git`` above ``cwd``) and that directory's inode, so a fresh clone at the same path is new."""
    given = os.environ.get("GIT_DIR")
    start = cwd.resolve()
    where = Path(given).resolve() if given else next(
        (p / ".git" for p in (start, *start.parents) if (p / ".git").exists()), start
    )  # fmt: skip
    try:
        inode = str(where.stat().st_ino)
    except OSError:
        inode = ""
    return f"{where}\0{inode}"


def state_path(home: Path, cwd: Path, remote: str) -> Path:
    from agentreview.host.home import cache_dir

    digest = hashlib.sha256(f"{FORMAT}\0{repository_key(cwd)}\0{remote}".encode("utf-8", "surrogateescape"))
    return cache_dir(home) / "notes-fetch" / f"{digest.hexdigest()}.json"


def _oid(value: object) -> str | None:
    return value if isinstance(value, str) and _HEX.fullmatch(value) else None


def load(path: Path) -> FetchState:
    """The recorded state, or the empty one for a missing, unreadable or malformed file."""
    from agentreview.host.files import read_regular_file

    try:
        document = json.loads(read_regular_file(path, limit=MAX_STATE_BYTES, follow_symlinks=False))
    except Exception:  # missing, a symlink, too large, not JSON: start over
        return FetchState()
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return FetchState()
    importing = _oid(document.get("importing"))
    cursor = _oid(document.get("cursor")) if importing else None
    return FetchState(_oid(document.get("imported")), importing if cursor else None, cursor)


def save(path: Path, state: FetchState) -> None:
    """Record ``state``; a cache that cannot be written only costs the next fetch a full read."""
    from agentreview.host.files import FileWriteError, atomic_write_text

    body = {"format": FORMAT, "imported": state.imported, "importing": state.importing, "cursor": state.cursor}
    with contextlib.suppress(FileWriteError):
        atomic_write_text(path, json.dumps(body, indent=2) + "\n", durable=False)
