"""Built-in pack loader for path references (``./pack``, ``../pack``, ``/abs/pack``).

The only kind that can be *trusted* (its commands run without ``allowCommands``), and only when it is provably
part of the reviewed content; anything that cannot be established (a symlink out, an untracked folder, no git)
means untrusted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from agentreview import hookimpl
from agentreview.model.contracts.errors import PackLoadError, PackUnavailableError
from agentreview.model.contracts.packs import LoadedPack, PackLoadContext, PackLoader
from agentreview.packs.confine import PACK_MANIFEST, is_inside, read_pack_manifest

_LS_FILES_TIMEOUT_S = 10.0


def _is_tracked(repo_real: str, rel_manifest: str) -> bool:
    """``git ls-files --error-unmatch`` with literal pathspecs, so a path holding ``*`` or ``:``
    cannot match some other tracked file."""
    from agentreview.host.git import GitError, git

    try:
        proc = git(
            ["--literal-pathspecs", "ls-files", "--error-unmatch", "--", rel_manifest],
            repo_real,
            timeout=_LS_FILES_TIMEOUT_S,
            check=False,
        )
    except GitError:
        return False
    return proc.returncode == 0


def is_trusted(root_real: str, repo_root: Path) -> bool:
    """AIP-62 §Pack trust: inside the repo by real path, and REVIEW.md tracked and a plain file (a tracked
    symlink would let untracked content borrow the tracked name)."""
    try:
        repo_real = os.path.realpath(repo_root, strict=True)
    except OSError:
        return False
    if not is_inside(root_real, repo_real):
        return False
    manifest = os.path.join(root_real, PACK_MANIFEST)
    if os.path.islink(manifest) or not os.path.isfile(manifest):
        return False
    rel = os.path.relpath(manifest, repo_real)
    return _is_tracked(repo_real, rel.replace(os.sep, "/"))


class PathPackLoader:
    """Loads ``path`` references: relative to the consumer REVIEW.md's folder, or absolute."""

    form = "path"

    def load(self, ref: str, ctx: PackLoadContext) -> LoadedPack:
        if "\0" in ref:
            raise PackLoadError(f"pack '{ref!r}': a path reference may not contain a NUL byte")
        given = Path(ref) if os.path.isabs(ref) else ctx.manifest_dir / ref
        root_real = os.path.realpath(given)
        if not os.path.isdir(root_real):
            repo_real = os.path.realpath(ctx.repo_root)
            message = f"pack '{ref}': {given} is not a directory — point uses[].pack at the folder holding the pack"
            # Inside the repository a missing pack is a defect of the reviewed content; outside
            # it, the pack is just not present on this machine.
            if is_inside(root_real, repo_real):
                raise PackLoadError(message)
            raise PackUnavailableError(message)
        root = Path(root_real)
        source = read_pack_manifest(root, ref)
        return LoadedPack(root=root, source=source, trusted=is_trusted(root_real, ctx.repo_root), origin=str(given))


@hookimpl
def agentreview_register_pack_loaders(register: Callable[[PackLoader], None]) -> None:
    register(PathPackLoader())
