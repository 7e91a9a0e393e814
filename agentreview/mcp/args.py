"""Argument checks shared by the MCP tools: each raises :class:`ToolFailure` with one line naming the
argument and its fix, so a bad argument is an error result, never a crash of the server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agentreview.model.errors import AgentreviewError

FULL_SHA = re.compile(r"^[0-9a-f]{40}\Z")
RANGE_SHA = re.compile(r"^[0-9a-f]{64}\Z")
PR_REPO = re.compile(r"^[^/\s]+/[^/\s]+\Z")


class ToolFailure(AgentreviewError):
    """What a tool answers as an error result (``isError``): one line for the agent."""


def directory(value: str | None, name: str = "cwd") -> Path | None:
    """An existing directory given as an absolute path (the server's own cwd means nothing to the agent)."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise ToolFailure(f"{name} {value!r} must be an absolute path (the repository the agent works in)")
    if not path.is_dir():
        raise ToolFailure(f"{name} {value!r} is not a directory")
    return path


def required_directory(value: str, name: str = "cwd") -> Path:
    found = directory(value, name)
    assert found is not None
    return found


def run_id(value: str) -> str:
    """A runId as the run registry names runs (``review-<uuid>``); anything else is not a run of this host."""
    from agentreview.runs.registry import RUN_ID

    if not RUN_ID.match(value):
        raise ToolFailure(f"review run '{value}' not found (a runId looks like review-<uuid>)")
    return value


def unknown_run(value: str) -> ToolFailure:
    """The answer for a well-formed runId that resolves to nothing: never run here, or expired."""
    from agentreview.runs.registry import KEEP_DAYS, KEEP_FINISHED

    return ToolFailure(
        f"review run '{value}' not found: unknown on this host, or expired (a finished run's record is kept "
        f"{KEEP_DAYS} days, at most the newest {KEEP_FINISHED}) with no attestation in the ledger under that runId "
        "— list the reviews with review_ledger (cwd, range) and use a runId it shows"
    )


def range_sha(value: str, cwd: Path | None) -> str:
    """The rangeSha ``value`` names: ``BASE..HEAD`` (split at the first ``..``) or a 64-hex rangeSha.
    Refs are resolved in ``cwd``'s repository, so refs without ``cwd`` are refused (two 40-hex shas need none)."""
    from agentreview.model.digests import range_sha as digest

    value = value.strip()
    if ".." not in value:
        if RANGE_SHA.match(value):
            return value
        raise ToolFailure(f"range {value!r} must be BASE..HEAD or a 64-hex rangeSha")
    base, _, head = value.partition("..")
    if not base or not head:
        raise ToolFailure(f"range {value!r} must name both ends: BASE..HEAD")
    if FULL_SHA.match(base) and FULL_SHA.match(head):
        return digest(base, head)
    if cwd is None:
        raise ToolFailure(f"range {value!r}: refs in range need cwd (or give two 40-hex shas, or a 64-hex rangeSha)")
    from agentreview.host import git

    try:
        root = git.repo_root(cwd)
        return digest(git.rev_parse_commit(root, base), git.rev_parse_commit(root, head))
    except git.GitError as exc:
        raise ToolFailure(f"range {value!r}: {exc}") from exc


def repo_identity(cwd: Path) -> str:
    """The repository identity at ``cwd`` (normalized origin, or ``local:<root>``)."""
    from agentreview.host import git

    try:
        return git.repo_remote(git.repo_root(cwd))
    except git.GitError as exc:
        raise ToolFailure(f"cwd {str(cwd)!r} is not a git repository: {exc}") from exc


def pr_ref(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``pr`` argument, strict as the reference: ``{provider: "github", repo, number, url}``."""
    if value is None:
        return None
    keys = {"provider", "repo", "number", "url"}
    if set(value) != keys:
        raise ToolFailure(f"pr must be exactly {{provider, repo, number, url}}, got keys {sorted(value)}")
    provider, repo, number, url = value["provider"], value["repo"], value["number"], value["url"]
    if provider != "github":
        raise ToolFailure(f"pr.provider must be 'github', not {provider!r}")
    if not isinstance(repo, str) or not PR_REPO.match(repo):
        raise ToolFailure(f"pr.repo {repo!r} must be owner/name")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise ToolFailure(f"pr.number {number!r} must be a positive integer")
    if not isinstance(url, str) or not re.match(r"^https?://\S+\Z", url):
        raise ToolFailure(f"pr.url {url!r} must be a URL")
    return {"provider": "github", "repo": repo, "number": number, "url": url}
