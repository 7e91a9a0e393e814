"""The "commit the export" rule of ``verify`` and ``run``: a HEAD that only adds exports reuses HEAD^'s review.
Held literally so no unreviewed commit passes: regular ``*.json`` files directly in a proper sub-folder, with no
symlink on its way in HEAD, HEAD^ or on disk (``.reviews -> config`` must not let HEAD change ``config/*.json``)."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

__all__ = ["head_only_touches_exports", "repository_folder"]

_REGULAR_OR_ABSENT = frozenset({"000000", "100644", "100755"})
_FOLDER = "040000"


def repository_folder(path: str) -> str | None:
    """``path`` normalized as written (never resolved on disk); ``None`` unless it names a proper sub-folder."""
    if os.path.isabs(path):
        return None
    rel = posixpath.normpath(path)
    if rel in (".", "..") or rel.startswith("../"):
        return None
    return rel


def head_only_touches_exports(root: Path, folder: str | None, head_sha: str) -> bool:
    """True when ``head_sha`` changes nothing but regular ``*.json`` files directly in ``folder``, no part of
    which is anything but a folder in HEAD, in its parent, or on disk."""
    from agentreview.host.git import changed_entries, tree_modes
    from agentreview.store.export import linked_component

    if folder is None or linked_component(root, folder) is not None:
        return False
    # The diff first: a commit that changes anything else (nearly every commit) is settled by it,
    # without listing the folder's trees.
    changed = changed_entries(root, head_sha)
    if not changed or not all(
        posixpath.dirname(path) == folder
        and path.endswith(".json")
        and old in _REGULAR_OR_ABSENT
        and new in _REGULAR_OR_ABSENT
        for old, new, path in changed
    ):
        return False
    parts = folder.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for rev in (head_sha, f"{head_sha}^"):
        modes = tree_modes(root, rev, prefixes)
        if modes is None or any(mode != _FOLDER for mode in modes.values()):
            return False
    return True
