"""The review policy as a commit REF has it, written out where the loaders can read it (``--policy-from REF``).

Read from REF's git objects, never from the working tree the change controls, into a temporary repository of
their own, so a path pack there is trusted as one tracked in REF is.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentreview.host.gitrun import GitError
from agentreview.model.errors import AgentreviewError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.host.refs import ResolvedRef
    from agentreview.manifest.parse import ParsedReview

MAX_POLICY_TREE_BYTES = 64 * 1024 * 1024  # every file written, together
MAX_POLICY_FILES = 10_000
_MAX_FILE_BYTES = 4 * 1024 * 1024  # one rubric or pack file (the pack loaders' own bound)


class PolicyTreeError(AgentreviewError):
    """REF's policy cannot be read: one line naming the ref, the path and why."""


def manifest_rel(root: Path, cwd: Path, manifest: Path | None, ref: str) -> str:
    """The manifest's repository path (by its name, no link followed): ``--manifest`` relative to ``cwd``,
    else ``REVIEW.md``. A manifest outside the repository is a :class:`UsageError`: it has no version in REF."""
    if manifest is None:
        return "REVIEW.md"
    named = Path(os.path.normpath(cwd / manifest))
    if named == root or root not in named.parents:
        raise UsageError(
            f"--manifest {named}: with --policy-from {ref} the manifest is read from that commit at the same "
            "repository path, so it must lie inside the repository"
        )
    return named.relative_to(root).as_posix()


def repo_rel(base_dir: str, ref: str) -> str | None:
    """``ref`` (relative to the manifest's folder ``base_dir``) as a repository path, or ``None``
    when it is absolute or leaves the repository (REF's tree does not hold it)."""
    if posixpath.isabs(ref):
        return None
    rel = posixpath.normpath(posixpath.join(base_dir, ref))
    return None if rel in ("..", ".") or rel.startswith("../") else rel


@dataclass
class PolicyTree:
    """REF (as resolved), the manifest's repository path ``rel``, its bytes, and the folder ``root``
    that mirrors REF's repository paths for the policy files."""

    resolved: ResolvedRef
    rel: str
    source: bytes
    root: Path
    repo: Path  # the reviewed repository, whose object store REF is read from
    _written: int = 0
    _files: int = 0
    _packs: int = 0

    @property
    def ref(self) -> str:
        """The full ref (or commit id) REF resolved to: what messages and reports show."""
        return self.resolved.exact

    @property
    def sha(self) -> str:
        return self.resolved.commit

    @property
    def manifest_path(self) -> Path:
        return self.root / self.rel

    @property
    def has_path_packs(self) -> bool:
        """Whether a manifest parsed from here names a path pack inside the repository (set by :meth:`fill`)."""
        return self._packs > 0

    def fill(self, parsed: ParsedReview) -> None:
        """Write the rubrics of the manifest's own agent checks and its path packs from REF,
        then add them to the folder's own git index (pack trust asks that a pack be tracked)."""
        base_dir = posixpath.dirname(self.rel)
        for check in parsed.manifest.checks:
            rubric = getattr(check, "rubric", None)
            rel = repo_rel(base_dir, rubric) if isinstance(rubric, str) else None
            if rel is not None:
                self._write_blob(rel)
        for entry in parsed.manifest.uses:
            if entry.pack.startswith(("./", "../")):
                rel = repo_rel(base_dir, entry.pack)
                if rel is not None:
                    self._packs += 1
                    self._write_tree(rel)
        self._track()

    def _write_blob(self, rel: str) -> None:
        from agentreview.host.git import blob_at

        try:
            data = blob_at(self.repo, self.sha, rel, max_bytes=_MAX_FILE_BYTES)
        except GitError as exc:
            raise PolicyTreeError(f"--policy-from {self.ref}: cannot read {rel} ({exc})") from exc
        if data is not None:
            self._put(rel, data)

    def _write_tree(self, rel: str) -> None:
        """Every regular file under the folder ``rel`` in REF (a symbolic link or submodule is left
        out: the pack loaders refuse links out of a pack anyway)."""
        from agentreview.host.git import git

        try:
            listing = git(["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", self.sha, "--", rel], self.repo)
        except GitError as exc:
            raise PolicyTreeError(f"--policy-from {self.ref}: cannot list {rel} ({exc})") from exc
        prefix = rel.rstrip("/") + "/"
        for item in listing.stdout.split("\0"):
            meta, tab, path = item.partition("\t")
            if tab and path.startswith(prefix) and meta.split()[:2] in (["100644", "blob"], ["100755", "blob"]):
                self._write_blob(path)

    def _put(self, rel: str, data: bytes) -> None:
        self._files += 1
        self._written += len(data)
        if self._files > MAX_POLICY_FILES or self._written > MAX_POLICY_TREE_BYTES:
            raise PolicyTreeError(
                f"--policy-from {self.ref}: the policy files (rubrics and path packs) exceed "
                f"{MAX_POLICY_FILES} files or {MAX_POLICY_TREE_BYTES} bytes"
            )
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def _track(self) -> None:
        from agentreview.host.git import git

        try:
            git(["init", "-q"], self.root)
            git(["add", "-A", "--", "."], self.root)
        except GitError as exc:
            raise PolicyTreeError(f"--policy-from {self.ref}: cannot prepare REF's policy files ({exc})") from exc


@contextlib.contextmanager
def policy_tree(repo: Path, ref: str, rel: str) -> Iterator[PolicyTree]:
    """REF resolved exactly and its manifest at ``rel`` written to a temporary folder, removed on exit.

    A ref that does not resolve (or is ambiguous), or a commit without a manifest at ``rel``
    (absent, not a regular file, or larger than the manifest bound): :class:`PolicyTreeError`
    naming both."""
    from agentreview.host.git import blob_at
    from agentreview.host.refs import resolve
    from agentreview.manifest.read import MAX_MANIFEST_BYTES

    try:
        resolved = resolve(repo, ref, role="--policy-from")
        source = blob_at(repo, resolved.commit, rel, max_bytes=MAX_MANIFEST_BYTES)
    except GitError as exc:
        said = str(exc)
        raise PolicyTreeError(said if said.startswith("--policy-from") else f"--policy-from {ref}: {said}") from exc
    if source is None:
        raise PolicyTreeError(
            f"--policy-from {ref}: {resolved.exact} at {resolved.commit[:10]} has no {rel} (absent, not a regular "
            f"file, or larger than {MAX_MANIFEST_BYTES} bytes) — name the branch that holds the review policy"
        )
    with written_policy(repo, resolved, rel, source) as tree:
        yield tree


@contextlib.contextmanager
def written_policy(repo: Path, resolved: ResolvedRef, rel: str, source: bytes) -> Iterator[PolicyTree]:
    """A temporary folder holding ``source`` (REF's manifest) at ``rel``, removed on exit; call
    :meth:`PolicyTree.fill` to add the rubrics and path packs it names."""
    scratch = Path(tempfile.mkdtemp(prefix="agentreview-policy-"))
    try:
        tree = PolicyTree(resolved, rel, source, scratch, repo)
        tree.manifest_path.parent.mkdir(parents=True, exist_ok=True)
        tree.manifest_path.write_bytes(source)
        yield tree
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
