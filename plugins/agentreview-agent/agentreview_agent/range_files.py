"""The reviewed range's ``git diff`` and ``git log`` as bounded files a reviewer's read tools can open.

Reviewers with read tools only cannot run git, so the provider writes both (through the host's
hardened git) where they can read them, cut at a fixed size with a last line that says so.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentreview.api import GitError, ReviewerRequest, run_git

MAX_DIFF_BYTES = 4 * 1024 * 1024
MAX_LOG_BYTES = 512 * 1024
GIT_TIMEOUT_S = 60


def _bounded(path: Path, limit: int) -> None:
    if path.stat().st_size <= limit:
        return
    with path.open("r+b") as fh:
        fh.truncate(limit)
        fh.seek(0, os.SEEK_END)
        fh.write(
            f"\n[agentreview: cut at {limit} bytes; read the touched files in the repository for the rest]\n".encode()
        )


def write_range_files(request: ReviewerRequest, directory: Path) -> tuple[Path, Path]:
    """Write ``range.diff`` and ``range.log`` of the request's range into ``directory``; raises
    ``OSError`` or ``GitError`` when git cannot produce them."""
    rng = f"{request.base_sha}..{request.head_sha}"
    diff, log = directory / "range.diff", directory / "range.log"
    quote = {"core.quotePath": "false"}
    for path, args, limit in (
        (diff, ["diff", "--no-color", "--no-ext-diff", "--full-index", rng], MAX_DIFF_BYTES),
        (log, ["log", "--no-color", "--stat", "--format=fuller", rng], MAX_LOG_BYTES),
    ):
        with path.open("wb") as fh:
            run_git(args, request.repo_root, stdout=fh, config=quote, timeout=GIT_TIMEOUT_S)
        _bounded(path, limit)
    return diff, log


def range_note(diff: Path, log: Path, repo_root: Path) -> str:
    """The prompt's last lines: where the range's diff and log are, and where the repository is."""
    return (
        f"\n\nYou have no shell. The host wrote the range's `git diff` to {diff} and its `git log` to {log}; "
        f"read those files instead of running git, then read the touched files in the repository at {repo_root}."
    )


__all__ = ["GitError", "range_note", "write_range_files"]
