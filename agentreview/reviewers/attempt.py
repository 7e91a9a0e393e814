"""Private directories for one reviewer attempt, and linking the user's credentials into them.

A credential is *linked*, never copied, so a token the CLI refreshes in place stays refreshed in the
user's own store; nothing one attempt leaves reaches the next.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentreview.model.contracts.reviewers import ReviewerRequest


def remove_path(path: Path) -> None:
    """Remove whatever is at ``path`` (a symlink itself, never its target)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def fresh_dir(path: Path) -> Path:
    """An empty private directory (0700), replacing anything left at ``path``."""
    remove_path(path)
    path.mkdir(parents=True, mode=0o700)
    return path


def attempt_dir(request: ReviewerRequest, name: str) -> Path:
    """A fresh private directory ``name`` inside this attempt's ``work_dir``."""
    return fresh_dir(request.work_dir / name)


def link_if_exists(source: Path, target: Path) -> bool:
    """Symlink a credential into a private home (linked, never copied, so token refresh is kept)."""
    if not source.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(source)
    return True


def user_home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def user_dir(variable: str, *default: str) -> Path:
    """Where the user's own CLI keeps its credentials: ``$variable`` when set, else ``~/<default>``."""
    value = os.environ.get(variable)
    return Path(value) if value else user_home().joinpath(*default)
