"""The per-sha git pack cache: ``<home>/review-packs/<sha>/``, verified on every hit.

A hit counts only when the commit bytes hash to the pinned sha and the files on disk to its tree; a fetch is
published with one atomic rename under a per-sha lock, so no run sees a half-written entry.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path
from types import ModuleType

from agentreview_packs_git.gitrun import MISSING_GIT, GitRunError, git_executable, run_git, safe_env, user_ca_settings
from agentreview_packs_git.tree import TreeMismatchError, commit_tree_id, disk_tree_id, write_tree

COMMIT_FILE = "agentreview-commit"
PACK_MANIFEST = "REVIEW.md"
MAX_PACK_FILES = 5_000
MAX_PACK_BYTES = 64 * 1024 * 1024


class FetchError(Exception):
    """The pinned commit could not be fetched (network, server, missing commit)."""


def verify_entry(entry: Path, sha: str) -> bytes | None:
    """Check a cache entry against the pinned sha; its REVIEW.md bytes as hashed (``None`` when missing or
    not a regular file), or :class:`TreeMismatchError` (or ``OSError``) naming what is wrong."""
    info = os.lstat(entry)
    if not stat.S_ISDIR(info.st_mode):
        raise TreeMismatchError(f"{entry} is not a plain folder")
    commit_path = entry / ".git" / COMMIT_FILE
    if not stat.S_ISREG(os.lstat(commit_path).st_mode):
        raise TreeMismatchError(f"{commit_path} is not a plain file")
    expected_tree = commit_tree_id(commit_path.read_bytes(), sha)
    actual_tree, manifest = disk_tree_id(entry, capture=PACK_MANIFEST)
    if actual_tree != expected_tree:
        raise TreeMismatchError(
            f"the files differ from commit {sha} (tree {actual_tree} on disk, {expected_tree} pinned)"
        )
    return manifest


def discard(entry: Path) -> None:
    """Move a bad entry out of the way atomically, then delete it."""
    trash = Path(tempfile.mkdtemp(prefix=f".trash-{entry.name[:12]}-", dir=entry.parent))
    with contextlib.suppress(FileNotFoundError):
        os.rename(entry, trash / "entry")
    shutil.rmtree(trash, ignore_errors=True)


def fetch_entry(cache_dir: Path, url: str, sha: str, deadline: float) -> Path:
    """Fetch ``sha`` from ``url`` into a new temporary folder under ``cache_dir``, write its tree and return
    the folder, verified (the caller renames it into place); raises :class:`FetchError` or
    :class:`TreeMismatchError`."""
    tmp = Path(tempfile.mkdtemp(prefix=f".fetch-{sha[:12]}-", dir=cache_dir))
    try:
        plain = safe_env()
        run_git(["init", "--quiet", "--template="], tmp, plain, deadline)
        ca = {k: v for k, v in user_ca_settings(tmp, max(deadline - time.monotonic(), 0.1)).items()
              if k not in os.environ}  # fmt: skip
        env = safe_env(ca)
        _fetch_commit(tmp, url, sha, env, deadline)
        fetched = _objects().read_fetched_commit(
            tmp, sha, env, deadline, max_files=MAX_PACK_FILES, max_bytes=MAX_PACK_BYTES
        )
        write_tree(tmp, fetched.entries, fetched.blobs)
        (tmp / ".git" / COMMIT_FILE).write_bytes(fetched.commit)
        verify_entry(tmp, sha)
        return tmp
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, GitRunError):
            raise FetchError(str(exc)) from exc
        if isinstance(exc, (OSError, ValueError, KeyError)):
            raise TreeMismatchError(f"could not write commit {sha} out ({exc})") from exc
        raise


def _objects() -> ModuleType:
    """The GitPython reader, imported on first use: a cache hit never needs GitPython.

    A git it cannot find is a fetch error, not an ImportError; git's absolute path is set so the import's
    ``git version`` never looks git up in an empty or relative ``PATH`` entry (the reviewed repository)."""
    git = git_executable()
    if git is None:
        raise FetchError(MISSING_GIT)
    saved = {name: os.environ.get(name) for name in ("GIT_PYTHON_REFRESH", "GIT_PYTHON_GIT_EXECUTABLE")}
    if saved["GIT_PYTHON_REFRESH"] is None:
        os.environ["GIT_PYTHON_REFRESH"] = "quiet"
    os.environ["GIT_PYTHON_GIT_EXECUTABLE"] = git
    try:
        from agentreview_packs_git import objects
    except ImportError as exc:
        raise FetchError(
            f"reading a fetched pack needs GitPython ({exc}) — install 'gitpython>=3.1.57' next to agentreview"
        ) from exc
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return objects


def _fetch_commit(repo: Path, url: str, sha: str, env: dict[str, str], deadline: float) -> None:
    """Fetch just the pinned commit (servers allowing a sha in ``want``), else every branch and tag."""
    base = ["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"]
    try:
        run_git([*base, "--depth", "1", "--", url, sha], repo, env, deadline)
        return
    except GitRunError as exc:
        if exc.timed_out:
            raise
    run_git([*base, "--", url, "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"], repo, env, deadline)
    try:
        run_git(["cat-file", "-e", f"{sha}^{{commit}}"], repo, env, deadline)
    except GitRunError as exc:
        raise GitRunError(f"commit {sha} is not reachable from any branch or tag of {url}") from exc
