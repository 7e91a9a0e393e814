"""The reviewed range's ``git diff`` and ``git log`` as bounded files (through the host's hardened git), for
reviewers with read tools only, which cannot run git."""

from __future__ import annotations

import os
from pathlib import Path

from agentreview.api import GitError, ReviewerRequest, ReviewerResult, run_git

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


def range_prompt(request: ReviewerRequest, directory: Path, who: str) -> str | ReviewerResult:
    """The reviewer's prompt, ending with where this wrote the range's ``range.diff`` and ``range.log``
    (into ``directory``); ``unavailable`` when git cannot produce them."""
    rng = f"{request.base_sha}..{request.head_sha}"
    diff, log = directory / "range.diff", directory / "range.log"
    quote = {"core.quotePath": "false"}
    try:
        for path, args, limit in (
            (diff, ["diff", "--no-color", "--no-ext-diff", "--full-index", rng], MAX_DIFF_BYTES),
            (log, ["log", "--no-color", "--stat", "--format=fuller", rng], MAX_LOG_BYTES),
        ):
            with path.open("wb") as fh:
                run_git(args, request.repo_root, stdout=fh, config=quote, timeout=GIT_TIMEOUT_S)
            _bounded(path, limit)
    except (OSError, GitError) as exc:
        return ReviewerResult("unavailable", f"could not write the range's diff and log for {who}: {exc}")
    return (request.read_prompt or request.answer_prompt) + (
        f"\n\nYou have no shell. The host wrote the range's `git diff` to {diff} and its `git log` to {log}; "
        f"read those files instead of running git, then read the touched files in the repository at "
        f"{request.repo_root}."
    )
