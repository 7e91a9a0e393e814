"""Where prepare steps and lanes run: the checkout when it holds the head, else a temporary worktree of it.

Lanes must see the commit the attestation names. A worktree lives under ``$AGENTREVIEW_HOME/worktrees/<runId>``,
held by a lock: removed when the run ends, and swept by the next run when its run died.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from agentreview.host import git
from agentreview.host.files import UnreadableFileError, read_regular_file
from agentreview.host.gitrun import run_git
from agentreview.host.locks import FileLock, LockTimeout
from agentreview.model.record import record

__all__ = ["LaneTree", "lane_tree", "sweep", "worktrees_dir"]

ADD_TIMEOUT_S = 300.0
# Set by git for hooks (a pre-commit hook's GIT_INDEX_FILE, say): they name the checkout's work tree
# and index, which making the worktree would overwrite, and git commands inside it would read.
_CHECKOUT_ENV = ("GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX")
_LOCATION_ENV = ("GIT_DIR", "GIT_COMMON_DIR", *_CHECKOUT_ENV)


@record
class LaneTree:
    """The folder prepare steps and lanes run in, and whether it is a temporary worktree of the head."""

    root: Path
    detached: bool
    isolated: bool = False  # a worktree only because the checkout holds the pushed head under uncommitted changes


def worktrees_dir(home: Path) -> Path:
    return home / "worktrees"


def tree_env(names: tuple[str, ...] = _LOCATION_ENV) -> dict[str, str]:
    """This process's environment without the variables that name the checkout's repository."""
    return {k: v for k, v in os.environ.items() if k not in names}


def tree_head(tree: LaneTree) -> str:
    """The commit checked out in ``tree``."""
    if not tree.detached:
        return git.rev_parse_commit(tree.root, "HEAD")
    out = run_git(["rev-parse", "--verify", "HEAD^{commit}"], tree.root, env=tree_env()).stdout
    return out.decode("ascii", "replace").strip()


def tree_dirty(tree: LaneTree) -> bool:
    """Uncommitted changes to tracked files in ``tree`` (untracked files never count)."""
    if not tree.detached:
        return git.is_dirty(tree.root)
    out = run_git(["status", "--porcelain", "--untracked-files=no"], tree.root, env=tree_env()).stdout
    return bool(out.strip())


@contextlib.contextmanager
def lane_tree(
    repo_root: Path, head_ref: str, home: Path, run_id: str, report: Callable[[str], None], *, isolated: bool = False
) -> Iterator[LaneTree]:
    """The checkout when ``head_ref`` names its ``HEAD`` now (unless ``isolated``: a pushed commit under
    uncommitted changes); else a temporary worktree of the commit ``head_ref`` names, removed when the block
    ends (normally, by an exception, or by a cancel)."""
    sweep(home, repo_root)
    if head_ref == "HEAD" and not isolated:
        yield LaneTree(repo_root, detached=False)
        return
    head_sha = git.rev_parse_commit(repo_root, head_ref)
    at_head = git.rev_parse_commit(repo_root, "HEAD") == head_sha
    if at_head and not isolated:
        yield LaneTree(repo_root, detached=False)
        return
    folder = worktrees_dir(home)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / run_id
    with FileLock(folder / f"{run_id}.lock", timeout=0) as lock:
        try:
            if at_head:
                report(f"the checkout has uncommitted changes to tracked files: the pushed commit {head_sha[:10]} is "
                       "reviewed in a worktree of it, as pushed (prepare steps and lanes run there)")  # fmt: skip
            else:
                report(f"the checkout is not at {head_sha[:10]}: prepare steps and lanes run in a worktree of it")
            try:
                run_git(["worktree", "add", "--detach", "--", str(path), head_sha], repo_root,
                        env=tree_env(_CHECKOUT_ENV), timeout=ADD_TIMEOUT_S)  # fmt: skip
            except git.GitError as exc:
                raise git.GitError(f"could not check {head_sha[:12]} out in a worktree for the lanes: {exc}") from exc
            yield LaneTree(path, detached=True, isolated=at_head)
        finally:
            _remove(repo_root, path, Path(lock.lock_file))


def sweep(home: Path, repo_root: Path) -> None:
    """Remove the worktrees of runs that died (their lock is free) and prune them from their
    repository's worktree list; best effort, never fails a run."""
    folder = worktrees_dir(home)
    try:
        entries = [e for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for entry in entries:
        lock_path = folder / f"{entry.name}.lock"
        try:
            with FileLock(lock_path, timeout=0):
                _remove(_common_dir(Path(entry.path)) or repo_root, Path(entry.path), lock_path)
        except (LockTimeout, OSError):
            continue  # its run is alive (or the lock cannot be had): not ours to remove


def _common_dir(tree: Path) -> Path | None:
    """The repository (its git folder) a worktree of ours belongs to, from its ``.git`` file."""
    try:
        raw = read_regular_file(tree / ".git", limit=4096, follow_symlinks=False)
    except (UnreadableFileError, OSError):
        return None
    admin = Path(raw.decode("utf-8", "replace").removeprefix("gitdir:").strip())
    return admin.parent.parent if admin.is_absolute() and admin.parent.name == "worktrees" else None


def _remove(repo_root: Path, path: Path, lock_path: Path) -> None:
    _remove_tree(path)
    _prune(repo_root)
    with contextlib.suppress(OSError):
        lock_path.unlink()


def _prune(where: Path) -> None:
    """``git worktree prune`` in the repository at ``where`` (its root or its git folder)."""
    with contextlib.suppress(git.GitError, OSError):
        run_git(["worktree", "prune"], where, env=tree_env(), timeout=60)


def _remove_tree(path: Path) -> None:
    """Delete ``path`` and everything under it, even folders a lane made read-only; never follows a link."""
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(OSError):
            path.unlink()
        return
    pending = [str(path)]
    while pending:  # owner rwx on every folder first (rmtree cannot empty one it may not write)
        folder = pending.pop()
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(folder).st_mode):  # a folder, not a link to one
                os.chmod(folder, stat.S_IRWXU)
        with contextlib.suppress(OSError), os.scandir(folder) as found:
            pending += [entry.path for entry in found if entry.is_dir(follow_symlinks=False)]
    shutil.rmtree(path, ignore_errors=True)
