"""Reading a pack's files: never outside the pack's root, never a FIFO or device, never unbounded.

A pack is content somebody else wrote, so it is read through the host's one bounded reader. Symlinks are
followed only to decide where a file really is; the final open refuses one, so a swap after the check is not.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentreview.host.files import UnreadableFileError, read_regular_file
from agentreview.model.contracts.errors import PackLoadError

__all__ = ["MAX_PACK_FILE_BYTES", "PACK_MANIFEST", "is_inside", "read_confined", "read_pack_file", "read_pack_manifest"]

MAX_PACK_FILE_BYTES = 4 * 1024 * 1024
PACK_MANIFEST = "REVIEW.md"


def read_pack_file(path: str | Path, *, follow_symlinks: bool = True, limit: int = MAX_PACK_FILE_BYTES) -> bytes:
    """A bounded regular file, or :class:`PackLoadError` saying why it cannot be read."""
    try:
        return read_regular_file(path, limit=limit, follow_symlinks=follow_symlinks)
    except UnreadableFileError as exc:
        raise PackLoadError(str(exc)) from exc


def is_inside(child: str, parent: str) -> bool:
    """True when the real path ``child`` is ``parent`` or below it (both already real paths)."""
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def read_confined(root: Path, rel: str) -> bytes:
    """Read ``rel`` below the pack ``root``, refusing anything whose real path leaves the root."""
    root_real = os.path.realpath(root)
    target = os.path.realpath(os.path.join(root_real, rel))
    if not is_inside(target, root_real):
        raise PackLoadError(f"resolves outside its pack root ({root}) — refusing to read it")
    return read_pack_file(target, follow_symlinks=False)


def read_pack_manifest(root: Path, ref: str) -> bytes:
    """Read ``<root>/REVIEW.md`` through the confined reader (it may not point out of the root)."""
    if not os.path.lexists(root / PACK_MANIFEST):
        raise PackLoadError(
            f"pack '{ref}': no {PACK_MANIFEST} at {root / PACK_MANIFEST} — a pack root must hold its "
            f"'kind: review-pack' {PACK_MANIFEST}"
        )
    try:
        return read_confined(root, PACK_MANIFEST)
    except PackLoadError as exc:
        raise PackLoadError(f"pack '{ref}': {PACK_MANIFEST} {exc}") from exc
