"""Reading a fetched commit through GitPython's object model, held to the fetch's rules.

:class:`HardenedGit` starts every ``cat-file`` itself (absolute, hardened git in its own process group under
the deadline); GitPython gets binary object ids only, and sizes are checked before bytes are read.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
from git.db import GitCmdObjectDB

from agentreview_packs_git.gitrun import HARDENING, MISSING_GIT, GitRunError, git_executable
from agentreview_packs_git.tree import MODE_EXEC, MODE_FILE, MODE_LINK, TreeEntry, TreeMismatchError, commit_tree_id

_SHA = re.compile(r"^[0-9a-f]{40}\Z")
_FILE_MODES = {0o100644: MODE_FILE, 0o100755: MODE_EXEC, 0o120000: MODE_LINK}
_FORBIDDEN_NAMES = {b"", b".", b"..", b".git"}
_ALLOWED_CALLS = (["cat-file", "--batch"], ["cat-file", "--batch-check"])


@dataclass(frozen=True)
class FetchedCommit:
    commit: bytes  # the raw commit object, hashed to the pinned sha
    entries: list[TreeEntry]
    blobs: dict[str, bytes]


class HardenedGit(git.Git):
    """GitPython's command runner, allowed to start only persistent ``cat-file`` readers, in the
    scrubbed environment, with the hardening options, killed at ``deadline``."""

    def __init__(self, root: Path, env: dict[str, str], deadline: float) -> None:
        super().__init__(root)
        self._root = root
        self._env = dict(env)
        self.deadline = deadline
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._closed = False
        self.set_persistent_git_options(c=list(HARDENING[1::2]))
        self._watchdog = threading.Timer(max(deadline - time.monotonic(), 0.0), self._on_deadline)
        self._watchdog.daemon = True
        self._watchdog.start()

    def execute(self, command: Any, *args: Any, **kwargs: Any) -> Any:
        """Start ``git <HARDENING> cat-file --batch[-check]`` for GitPython's object database;
        refuse any other call (this loader asks GitPython for nothing else)."""
        argv = [str(part) for part in command]
        hardened = argv[1 : 1 + len(HARDENING)] == list(HARDENING)
        call = argv[1 + len(HARDENING) :]
        if args or kwargs.get("as_process") is not True or not hardened or call not in _ALLOWED_CALLS:
            raise GitRunError(f"refused an unexpected git call from GitPython: {' '.join(call[:3]) or argv[:1]}")
        with self._lock:
            if self._closed or time.monotonic() >= self.deadline:
                raise GitRunError("git cat-file was not started: the time limit was already used up", timed_out=True)
            git = git_executable()
            if git is None:
                raise GitRunError(MISSING_GIT)
            try:
                proc = subprocess.Popen(
                    [git, *HARDENING, *call],
                    cwd=str(self._root),
                    env=self._env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                raise GitRunError(f"cannot start git ({exc.strerror or exc}) — is git installed?") from exc
            self._procs.append(proc)
        return self.AutoInterrupt(proc, ["git", *HARDENING, *call])

    def kill(self) -> None:
        """Kill the process group of every reader still running (pipes stay open, so a blocked read
        ends at end-of-file rather than on a closed file)."""
        with self._lock:
            self._kill_locked()

    def _on_deadline(self) -> None:
        with self._lock:
            if not self._closed:
                self._kill_locked()

    def _kill_locked(self) -> None:
        for proc in self._procs:
            if proc.returncode is None:  # not reaped (reaping happens only in close): the group id is ours
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop the watchdog and every reader, then reap them (GitPython's ``clear_cache``)."""
        self._watchdog.cancel()
        with self._lock:
            self._closed = True  # a watchdog already firing now finds nothing to do
            self._kill_locked()
        self.clear_cache()
        for proc in self._procs:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def read_fetched_commit(root: Path, sha: str, env: dict[str, str], deadline: float, *,
                        max_files: int, max_bytes: int) -> FetchedCommit:  # fmt: skip
    """Read commit ``sha`` from the repository at ``root``: its verified bytes, its files and their blobs.

    Raises :class:`GitRunError` when git fails or the deadline passes, :class:`TreeMismatchError` when
    the commit is not a pack we can write out (forged bytes, submodules, unsafe paths, too large)."""
    if not _SHA.match(sha):
        raise ValueError(f"not a 40-hex object id: {sha!r}")
    runner = HardenedGit(root, env, deadline)
    try:
        repo = _FetchedRepo(root, runner)
        try:
            return _Reader(repo, runner, sha, max_files, max_bytes).read()
        finally:
            repo.close()
    finally:
        runner.close()


class _FetchedRepo(git.Repo):
    """The fetch folder as GitPython's repository object: what the object model reads (``odb``) and
    what ``close`` ends (``git``). ``Repo.__init__`` is skipped on purpose: it consults this process's
    ``GIT_DIR``, ``GIT_OBJECT_DIRECTORY``, ``GIT_COMMON_DIR`` and ``GIT_WORK_TREE`` (a git hook's), which
    would send the reader to another object store or refuse the folder."""

    def __init__(self, root: Path, runner: HardenedGit) -> None:  # no Repo.__init__: see above
        self.git_dir = os.fspath(root / ".git")
        self.working_dir = self._working_tree_dir = os.fspath(root)
        self._bare = False
        self.git = runner
        self.odb = GitCmdObjectDB(os.fspath(root / ".git" / "objects"), runner)


class _Reader:
    def __init__(self, repo: git.Repo, runner: HardenedGit, sha: str, max_files: int, max_bytes: int) -> None:
        self.repo, self.runner, self.sha, self.deadline = repo, runner, sha, runner.deadline
        self.max_files, self.max_bytes = max_files, max_bytes

    def read(self) -> FetchedCommit:
        binsha = bytes.fromhex(self.sha)
        raw = self._read(binsha, "commit", self._size(binsha, "commit", self.max_bytes))
        tree_id = commit_tree_id(raw, self.sha)  # the pinned id is checked on the bytes, not on git's word
        commit = git.Commit(self.repo, binsha)
        tree = self._guard(lambda: commit.tree)
        if tree.hexsha != tree_id:
            raise TreeMismatchError(f"commit {self.sha} names tree {tree.hexsha}, its bytes name {tree_id}")
        entries, files = self._walk(tree)
        blobs = {hexsha: self._read(blob.binsha, "blob", size) for hexsha, (blob, size) in sorted(files.items())}
        return FetchedCommit(raw, entries, blobs)

    def _walk(self, root: git.Tree) -> tuple[list[TreeEntry], dict[str, tuple[git.Blob, int]]]:
        """Every file below ``root`` (depth first, no recursion limit), with each distinct blob's size."""
        entries: list[TreeEntry] = []
        files: dict[str, tuple[git.Blob, int]] = {}
        stack, trees, tree_bytes, file_bytes = [root], 0, 0, 0
        while stack:
            tree = stack.pop()
            trees += 1
            tree_bytes += self._size(tree.binsha, "tree", self.max_bytes - tree_bytes)
            if trees > self.max_files:
                raise TreeMismatchError(
                    f"commit {self.sha} holds more than {self.max_files} folders — too large for a pack"
                )
            subtrees = []
            for item in self._guard(lambda t=tree: list(t), "holds a tree entry git would refuse"):
                path = self._path(os.fspath(tree.path), os.fspath(item.path))
                if item.type == "tree":
                    subtrees.append(item)
                    continue
                mode = _FILE_MODES.get(item.mode) if item.type == "blob" else None
                if mode is None:
                    kind = "commit" if item.type == "submodule" else item.type
                    raise TreeMismatchError(
                        f"'{os.fsdecode(path)}' is a {kind} (mode {item.mode:o}); review packs may hold only files "
                        "and symlinks (no submodules)"
                    )
                if item.hexsha not in files:
                    files[item.hexsha] = (item, self._size(item.binsha, "blob", None))
                size = files[item.hexsha][1]
                entries.append(TreeEntry(mode, item.hexsha, size, path))
                file_bytes += size
                if len(entries) > self.max_files or file_bytes > self.max_bytes:
                    raise TreeMismatchError(
                        f"commit {self.sha} holds more than {self.max_files} files or {self.max_bytes} bytes — "
                        "too large for a pack"
                    )
            stack.extend(reversed(subtrees))
        return entries, files

    def _path(self, parent: str, child: str) -> bytes:
        """``child``'s path as bytes, refused when unsafe or when it is not ``parent/<one name>``
        (GitPython joins names with '/' and would silently merge an empty or '/'-led name)."""
        path = child.encode("utf-8", "surrogateescape")
        prefix = parent.encode("utf-8", "surrogateescape") + b"/" if parent else b""
        parts = path.split(b"/")
        if (
            not path.startswith(prefix)
            or b"/" in path[len(prefix) :]
            or any(part in _FORBIDDEN_NAMES or part.lower() == b".git" for part in parts)
        ):
            raise TreeMismatchError(f"unsafe path '{os.fsdecode(path)}' in the pack tree")
        return path

    def _size(self, binsha: bytes, kind: str, limit: int | None) -> int:
        """The object's size from git's header, checked to be a ``kind`` within ``limit``."""
        info = self._guard(lambda: self.repo.odb.info(binsha))
        found = _kind(info.type)
        if found != kind:
            raise TreeMismatchError(f"object {binsha.hex()} is a {found}, not a {kind}")
        if limit is not None and info.size > limit:
            raise TreeMismatchError(f"commit {self.sha} holds more than {self.max_bytes} bytes — too large for a pack")
        return int(info.size)

    def _read(self, binsha: bytes, kind: str, size: int) -> bytes:
        """Exactly ``size`` bytes of a ``kind`` object whose header was already checked."""
        ostream = self._guard(lambda: self.repo.odb.stream(binsha))
        try:
            if (_kind(ostream.type), ostream.size) != (kind, size):
                self.runner.kill()  # so the unread rest drains as end-of-file, not ``size`` bytes
                raise TreeMismatchError(f"object {binsha.hex()} changed while it was read")
            data = ostream.read()  # a reader killed at the deadline ends this early: checked below
        finally:
            del ostream  # its __del__ drains what is left while the pipe is still open
        if len(data) != size or time.monotonic() >= self.deadline:
            raise self._stopped(None)
        return bytes(data)

    def _guard(self, step: Any, refusal: str = "cannot be read") -> Any:
        """Run one GitPython step; a failure after the deadline is the timeout, an I/O failure git's,
        anything else (GitPython's parsers on hostile bytes) the commit's (``refusal`` says how)."""
        if time.monotonic() >= self.deadline:
            raise self._stopped(None)
        try:
            result = step()
        except GitRunError:
            raise
        except Exception as exc:  # untrusted bytes through a third-party parser: a refusal, never a traceback
            # A half-read object stream in GitPython's frames must drain now, while its pipe is open,
            # not after close() has closed it (an "Exception ignored" on stderr).
            traceback.clear_frames(exc.__traceback__)
            raise self._stopped(exc, refusal) from exc
        if time.monotonic() >= self.deadline:  # a killed reader can look like a short answer
            raise self._stopped(None)
        return result

    def _stopped(self, exc: Exception | None, refusal: str = "cannot be read") -> Exception:
        if time.monotonic() >= self.deadline:
            return GitRunError("git cat-file did not finish in time and was killed", timed_out=True)
        if exc is None or isinstance(exc, OSError):
            return GitRunError(f"git cat-file stopped answering ({exc or 'short read'})")
        return TreeMismatchError(f"commit {self.sha} {refusal} ({str(exc) or type(exc).__name__})")


def _kind(value: str | bytes) -> str:
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value
