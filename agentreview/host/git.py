"""Git facts a review needs: root, remote identity, commits, ancestry, dirtiness.

Plain ``git`` with fixed argument lists through the hardened runner of :mod:`agentreview.host.gitrun`;
no user input ever lands where git would read an option.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from agentreview.host.gitrun import GIT_TIMEOUT_S, GitError, run_git, run_hardened
from agentreview.host.refs import RefError, resolve


def git(
    args: Sequence[str],
    cwd: Path | str,
    *,
    timeout: float = GIT_TIMEOUT_S,
    input_bytes: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``git <args>`` in ``cwd`` (hardened, text output); raise :class:`GitError` on failure when ``check``."""
    proc: subprocess.CompletedProcess[str] = run_hardened(
        args, cwd, timeout=timeout, input_bytes=input_bytes, text=True
    )
    if check and proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitError(msg[-1] if msg else f"git {args[0]} exited with {proc.returncode}")
    return proc


def repo_root(cwd: Path | str) -> Path:
    try:
        out = git(["rev-parse", "--show-toplevel"], cwd).stdout.strip()
    except GitError as exc:
        raise GitError(f"{cwd} is not inside a git repository ({exc})") from exc
    return Path(out).resolve()


def origin_url(root: Path) -> str | None:
    proc = git(["remote", "get-url", "origin"], root, check=False)
    url = proc.stdout.strip()
    return url if proc.returncode == 0 and url else None


_SCP = re.compile(r"^[^@/]+@([^:/]+):(.+)\Z")
_SCHEME = re.compile(r"^[a-z+]+://", re.IGNORECASE)
_CREDENTIALS = re.compile(r"^[^@/]+@")


def normalize_remote(url: str) -> str:
    """Normalize an origin URL: scheme and credentials removed, scp form to host/path,
    one trailing ``.git`` and then trailing slashes removed (reference-notes 2.12)."""
    url = url.strip()
    match = _SCP.match(url)
    if match:
        url = f"{match.group(1)}/{match.group(2)}"
    else:
        url = _SCHEME.sub("", url, count=1)
        url = _CREDENTIALS.sub("", url, count=1)
    if url.endswith(".git"):
        url = url[: -len(".git")]
    return url.rstrip("/")


def repo_remote(root: Path) -> str:
    url = origin_url(root)
    return normalize_remote(url) if url else f"local:{root}"


def repo_slug(remote: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", remote).strip("_")
    return slug or "repo"


def rev_parse_commit(root: Path, ref: str) -> str:
    """The full sha of the commit ``ref`` names, resolved exactly (:func:`agentreview.host.refs.resolve`:
    an ambiguous name is refused, never guessed), or :class:`GitError`."""
    return resolve(root, ref).commit


_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")


def root_and_commit(cwd: Path | str, ref: str) -> tuple[Path, str | None]:
    """:func:`repo_root` and :func:`rev_parse_commit` in one git process: every run needs both first.

    The commit is None when ``ref`` names none; output it cannot read unambiguously (a root whose
    name has a line break) is answered by the two separate calls instead."""
    if ref == "HEAD" or _SHA.match(ref):  # a name is looked up exactly, never in one rev-parse
        proc = git(
            ["rev-parse", "--show-toplevel", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            cwd,
            check=False,
        )
        lines = proc.stdout.split("\n")
        if proc.returncode == 0 and len(lines) == 3 and lines[2] == "" and _SHA.match(lines[1]):
            return Path(lines[0]).resolve(), lines[1]
    root = repo_root(cwd)
    try:
        return root, rev_parse_commit(root, ref)
    except GitError:
        return root, None


def merge_base(root: Path, base_ref: str, head: str) -> str:
    """The merge-base of ``base_ref`` and ``head``, each resolved exactly first: a name that is
    ambiguous or refused raises its :class:`RefError` as is, never a guess."""
    try:
        base_sha = base_ref if _SHA.match(base_ref) else rev_parse_commit(root, base_ref)
        head_sha = head if _SHA.match(head) else rev_parse_commit(root, head)
        return git(["merge-base", "--end-of-options", base_sha, head_sha], root).stdout.strip()
    except GitError as exc:
        if isinstance(exc, RefError) and not exc.missing:
            raise
        raise GitError(
            f"cannot compute merge-base({base_ref}, {head}) — pass --base explicitly or fetch the base ref ({exc})"
        ) from exc


def is_dirty(root: Path) -> bool:
    """Uncommitted changes to tracked files (untracked files never count)."""
    out = git(["status", "--porcelain", "--untracked-files=no"], root).stdout
    return bool(out.strip())


class CheckoutStatus:
    """Whether the checkout at ``root`` is dirty (:func:`is_dirty`), asked of git once and kept; a run
    calls :meth:`forget` after a prepare step or a wait for another run, which may change the tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dirty: bool | None = None

    def dirty(self) -> bool:
        if self._dirty is None:
            self._dirty = is_dirty(self.root)
        return self._dirty

    def forget(self) -> None:
        self._dirty = None


def is_ancestor(root: Path, ancestor: str, descendant: str) -> bool:
    """Strict ancestry: equal shas are not an ancestor."""
    if ancestor == descendant:
        return False
    proc = git(["merge-base", "--is-ancestor", ancestor, descendant], root, check=False)
    return proc.returncode == 0


def is_tracked(root: Path, relpath: str) -> bool:
    proc = git(["ls-files", "--error-unmatch", "--", relpath], root, check=False)
    return proc.returncode == 0


def in_head(root: Path, relpath: str) -> bool:
    """Whether ``relpath`` is in the tree of HEAD (committed, not only staged; a repository with no commit has none)."""
    return git(["cat-file", "-e", f"HEAD:{relpath}"], root, check=False).returncode == 0


def commit_author(root: Path, sha: str) -> tuple[str, str] | None:
    proc = git(["log", "-1", "--format=%an%x00%ae", sha], root, check=False)
    if proc.returncode != 0 or "\0" not in proc.stdout:
        return None
    name, email = proc.stdout.rstrip("\n").split("\0", 1)
    return name, email


def user_email(root: Path | None) -> str | None:
    proc = git(["config", "user.email"], root or Path.cwd(), check=False)
    value = proc.stdout.strip()
    return value or None


def changed_entries(root: Path, sha: str) -> list[tuple[str, str, str]] | None:
    """``(old mode, new mode, path)`` of every entry the commit ``sha`` changes relative to its first
    parent (``000000`` where it is absent); ``None`` for a root commit or when git fails."""
    proc = git(["diff-tree", "--no-commit-id", "--raw", "-r", "-z", f"{sha}^", sha], root, check=False)
    if proc.returncode != 0:
        return None
    fields = proc.stdout.split("\0")
    entries: list[tuple[str, str, str]] = []
    for header, path in zip(fields[0::2], fields[1::2], strict=False):
        modes = header.lstrip(":").split()
        if len(modes) < 5 or not path:  # a rename or copy carries two paths; diff-tree detects none unasked
            return None
        entries.append((modes[0], modes[1], path))
    return entries


def tree_modes(root: Path, rev: str, paths: Sequence[str]) -> dict[str, str] | None:
    """The mode of each of ``paths`` (literal repository paths) that commit ``rev`` lists as itself
    (``040000`` a folder, ``120000`` a symlink, ``160000`` a submodule); ``None`` when git fails.

    Given ``a`` and ``a/b`` together, git lists the folder ``a`` by its entries rather than as
    itself, so a path missing from the answer is absent or a folder; anything else is listed."""
    proc = git(["--literal-pathspecs", "ls-tree", "-z", "--full-tree", rev, "--", *paths], root, check=False)
    if proc.returncode != 0:
        return None
    modes: dict[str, str] = {}
    wanted = set(paths)
    for item in proc.stdout.split("\0"):
        meta, tab, path = item.partition("\t")
        if tab and path in wanted:
            modes[path] = meta.split()[0]
    return modes


def blob_at(root: Path, rev: str, relpath: str, *, max_bytes: int) -> bytes | None:
    """The exact bytes of the regular file ``relpath`` in commit ``rev``; ``None`` when it is absent there,
    is not a regular file (a symlink or submodule), or is larger than ``max_bytes``."""
    listing = git(["ls-tree", "-z", "--full-tree", "-l", rev, "--", relpath], root, check=False)
    fields = listing.stdout.split("\0")[0].split("\t", 1)
    if listing.returncode != 0 or len(fields) != 2 or fields[1] != relpath:
        return None
    mode, kind, oid, size = fields[0].split()
    if kind != "blob" or mode not in ("100644", "100755") or not size.isdigit() or int(size) > max_bytes:
        return None
    proc = run_git(["cat-file", "blob", oid], root, check=False)
    return proc.stdout if proc.returncode == 0 else None
