"""Why the gate found no attestation when the CI checkout is GitHub's ``pull_request`` merge commit, which
nobody reviewed: one line with the fix (check out the pull request's head)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.manifest.parse import ParsedReview
    from agentreview.verify.result import VerifyOptions

MERGE_COMMIT = (
    "HEAD is the merge commit GitHub made; check out the pull request's head "
    "(actions/checkout: ref: ${{ github.event.pull_request.head.sha }})"
)
_PULL_MERGE = re.compile(r"^refs/pull/\d+/merge\Z")


def _parents(root: Path, commit: str) -> list[str]:
    from agentreview.host.git import GitError, git

    try:
        proc = git(["rev-list", "--parents", "-n", "1", "--end-of-options", commit], root, check=False)
    except GitError:
        return []
    return proc.stdout.split()[1:] if proc.returncode == 0 else []


def _second_parent(root: Path, head_sha: str) -> str | None:
    parents = _parents(root, head_sha)
    return parents[1] if len(parents) == 2 else None


def _attested(options: VerifyOptions, root: Path, parsed: ParsedReview, commit: str) -> bool:
    """Whether an attestation names ``commit`` as its head, where the gate looked."""
    from agentreview.verify.exports import _note_docs, scan_export_dir, target_of

    if options.notes:
        return bool(_note_docs(root, commit, []))
    given = options.path if options.path is None or options.path.is_absolute() else options.cwd / options.path
    export_dir = parsed.manifest.verdict.exportDir
    directory = given if given is not None and given.is_dir() else (root / export_dir if export_dir else None)
    if directory is None or not directory.is_dir():
        return False
    docs, _ = scan_export_dir(directory)
    return any(target_of(doc.raw).get("headSha") == commit for doc in docs)


def merge_commit_hint(options: VerifyOptions, root: Path, parsed: ParsedReview, head_sha: str) -> str | None:
    """:data:`MERGE_COMMIT` when ``head_sha`` has two parents and either ``GITHUB_REF`` is a pull
    request's merge ref or an attestation exists for the second parent; ``None`` otherwise."""
    second = _second_parent(root, head_sha)
    if second is None:
        return None
    if _PULL_MERGE.match(os.environ.get("GITHUB_REF", "")):
        return MERGE_COMMIT
    # the pull request's head, or its parent when the head only commits the export
    heads = [second, *_parents(root, second)[:1]]
    return MERGE_COMMIT if any(_attested(options, root, parsed, commit) for commit in heads) else None
