"""What went wrong in a CI checkout, in one line with the fix: a shallow clone, a base ref not fetched.

Consulted only after the range's base could not be resolved, so that a checkout's fault (``fetch-depth: 1``,
only the pull request's ref fetched) is never reported as the change's.
"""

from __future__ import annotations

from pathlib import Path

from agentreview.host.gitrun import GitError, run_hardened

__all__ = ["SHALLOW", "fetch_command", "is_detached", "is_shallow", "missing_base", "unmergeable"]

SHALLOW = "this is a shallow clone: fetch the full history (actions/checkout: fetch-depth: 0)"


def _ok(root: Path, args: list[str]) -> tuple[int, str]:
    try:
        proc = run_hardened(args, root, timeout=30.0, text=True)
    except GitError:
        return -1, ""
    return proc.returncode, str(proc.stdout).strip()


def is_shallow(root: Path) -> bool:
    """``git rev-parse --is-shallow-repository`` says true."""
    return _ok(root, ["rev-parse", "--is-shallow-repository"]) == (0, "true")


def is_detached(root: Path) -> bool:
    """HEAD names a commit, not a branch (``git symbolic-ref -q HEAD`` fails)."""
    return _ok(root, ["symbolic-ref", "-q", "HEAD"])[0] == 1


def fetch_command(name: str) -> str:
    """The fetch that makes ``name`` resolve: a remote-tracking branch from its remote, else the branch from origin."""
    short = name.removeprefix("refs/remotes/")
    if name.startswith("refs/remotes/") or ("/" in short and not name.startswith("refs/")):
        remote, _, branch = short.partition("/")
        return f"git fetch {remote} {branch}:refs/remotes/{remote}/{branch}"
    branch = name.removeprefix("refs/heads/")
    return f"git fetch origin {branch}:refs/heads/{branch}"


def missing_base(root: Path, name: str, role: str) -> str:
    """The line for a base ref (``role``: REVIEW.md's ``target.base``, or ``--base``) that does not resolve."""
    if is_shallow(root):
        return f"{SHALLOW} — {role} '{name}' is not in this clone"
    where = "REVIEW.md's target.base" if role == "target.base" else role
    fix = f"fetch it: {fetch_command(name)} (actions/checkout: fetch-depth: 0)"
    if is_detached(root):
        return f"HEAD is detached and the base '{name}' ({where}) is not fetched — {fix}, or pass --base <commit>"
    correct = ", correct target.base in REVIEW.md" if role == "target.base" else ""
    return f"the base '{name}' ({where}) does not exist in this clone — {fix}{correct}, or pass --base <commit>"


def unmergeable(root: Path, base: str, head: str, why: str) -> str | None:
    """The line for a merge-base that cannot be computed because the clone is shallow; None otherwise."""
    return f"{SHALLOW} — cannot compute merge-base({base}, {head}): {why}" if is_shallow(root) else None
