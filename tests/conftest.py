"""Shared fixtures: real git repositories.

(The isolated ``AGENTREVIEW_HOME`` every test gets, ``agentreview_home``, is the repository root's conftest.py.)
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

GitRepoFactory = Callable[..., Path]


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` (30 s bound) and return its stdout; fail the test on a non-zero exit."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepoFactory:
    """Factory: ``git_repo(path=None, files=None) -> Path``.

    Creates a repository on branch ``main`` with user.name/email set and signing off,
    writes ``files`` (relative path -> text; default a README) and commits them as the
    initial commit.
    """
    counter = iter(range(1_000_000))

    def make(path: Path | None = None, files: Mapping[str, str] | None = None) -> Path:
        root = path or tmp_path / f"repo{next(counter)}"
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.name", "Test User")
        git(root, "config", "user.email", "test@example.com")
        git(root, "config", "commit.gpgsign", "false")
        for rel, text in (files or {"README.md": "test repository\n"}).items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial commit")
        return root.resolve()

    return make
