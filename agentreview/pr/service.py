"""``link_pr``: link a ledger entry to its GitHub pull request and record a status snapshot.

Shared by MCP ``review_pr`` and ``agentreview pr``; the snapshot goes to the annotations sidecar, never the
(possibly signed) attestation. Nothing raises: a bad argument is a reply.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentreview.host import git
from agentreview.host.files import FileWriteError
from agentreview.host.home import ledger_root
from agentreview.model.digests import range_sha as digest
from agentreview.pr.github import GitHub, GitHubError, PullState, api_base, api_host
from agentreview.store.ledger import Ledger, LedgerError

GITHUB_REMOTE = re.compile(r"^(?:ssh\.)?github\.com(?:-[A-Za-z0-9._-]+)?/([^/]+/[^/]+)\Z", re.IGNORECASE)
PR_URL = re.compile(r"^(?:https?://)?([^/]+)/([^/]+/[^/]+)/pull/(\d+)(?:[/?#].*)?\Z", re.IGNORECASE)
HEX40 = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
RUN_ID = re.compile(r"^review-[A-Za-z0-9._-]{1,200}\Z")
MAX_ROWS = 500


class PrError(Exception):
    """A ``{ok: false}`` reply: ``code`` and one-line ``message``."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def link_pr(
    *,
    home: Path | str | None = None,
    run_id: str | None = None,
    range_sha: str | None = None,
    range: str | None = None,  # the reference's parameter name (shadows the builtin here only)
    cwd: Path | str | None = None,
    pr_url: str | None = None,
) -> dict[str, Any]:
    """Link the selected entry to its PR and snapshot the PR's status (see the module docstring)."""
    warnings: list[str] = []
    try:
        for name, value in (("runId", run_id), ("rangeSha", range_sha), ("range", range), ("prUrl", pr_url)):
            if value is not None and not isinstance(value, str):
                raise PrError("invalid_argument", f"{name} must be a string")
        with Ledger(ledger_root(Path(home).expanduser() if home else None), warn=warnings.append) as led:
            reply = _Linker(led, Path(cwd).expanduser() if cwd else None).link(run_id, range_sha, range, pr_url)
    except (PrError, GitHubError) as exc:
        reply = {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    except (LedgerError, FileWriteError) as exc:
        reply = {"ok": False, "error": {"code": "ledger_failed", "message": str(exc)}}
    if warnings:
        reply["warnings"] = warnings
    return reply


def github_repo_of(remote: str, extra_host: str | None = None) -> str | None:
    """``owner/name`` of a normalized remote on github.com (or on the GITHUB_API_URL host), else None."""
    remote = git.normalize_remote(remote)
    match = GITHUB_REMOTE.match(remote)
    if match:
        return match.group(1)
    host, _, path = remote.partition("/")
    if extra_host and host.lower() == extra_host and re.fullmatch(r"[^/]+/[^/]+", path):
        return path
    return None


def parse_pr_url(url: str, extra_host: str | None = None) -> dict[str, Any]:
    """``{provider, repo, number, url}`` of a PR URL on github.com (or the API host); PrError otherwise."""
    match = PR_URL.match(url.strip())
    host = match.group(1).lower() if match else ""
    if not match or host not in ("github.com", extra_host) or int(match.group(3)) < 1:
        raise PrError(
            "invalid_argument",
            f"prUrl {url!r} is not a GitHub pull request URL — expected https://github.com/<owner>/<repo>/pull/<n>",
        )
    repo, number = match.group(2), int(match.group(3))
    return {"provider": "github", "repo": repo, "number": number, "url": f"https://{host}/{repo}/pull/{number}"}


def _now() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class _Linker:
    """One ``link_pr`` call: the ledger, the checkout, and a GitHub client made on first need."""

    def __init__(self, led: Any, cwd: Path | None):
        self.led = led
        self.cwd = cwd
        self._gh: GitHub | None = None
        self._root: Path | None = None

    @property
    def gh(self) -> GitHub:
        if self._gh is None:
            self._gh = GitHub.from_env()
        return self._gh

    def host(self) -> str | None:
        host = api_host(api_base())
        return None if host == "github.com" else host

    # ------------------------------------------------------------------ the checkout

    def root(self) -> Path:
        if self._root is None:
            assert self.cwd is not None
            try:
                self._root = git.repo_root(self.cwd)
            except git.GitError as exc:
                raise PrError("invalid_argument", f"cwd {self.cwd}: {exc}") from exc
        return self._root

    def repo_filter(self) -> str | None:
        return git.repo_remote(self.root()) if self.cwd is not None else None

    def resolve(self, ref: str, what: str) -> str:
        if HEX40.match(ref):
            return ref
        if self.cwd is None:
            raise PrError("invalid_argument", f"{what}: refs in range need cwd (or pass full 40-hex shas)")
        try:
            return git.rev_parse_commit(self.root(), ref)
        except git.GitError as exc:
            raise PrError("invalid_argument", f"{what}: {exc}") from exc

    # ------------------------------------------------------------------ selection

    def newest(self, what: str, **filters: Any) -> Any:
        rows = self.led.list(limit=MAX_ROWS, **filters)
        if not rows:
            raise PrError("not_found", f"no ledger entry for {what} — see 'agentreview ledger'")
        return rows[0]

    def range_sha_of(self, range_sha: str | None, range_: str | None) -> str:
        value = (range_sha or range_ or "").strip()
        if HEX64.fullmatch(value):
            return value
        if ".." not in value:
            raise PrError("invalid_argument", f"range {value!r} must be BASE..HEAD or a 64-hex rangeSha")
        base, _, head = value.partition("..")
        if not base or not head:
            raise PrError("invalid_argument", f"range {value!r} must name both ends: BASE..HEAD")
        return digest(self.resolve(base, f"range {value!r}"), self.resolve(head, f"range {value!r}"))

    def select(
        self, run_id: str | None, range_sha: str | None, range_: str | None, pr: dict[str, Any] | None
    ) -> tuple[Any, PullState | None]:
        """The entry's row, and the PR's state when finding the entry already fetched it."""
        if run_id:
            if not RUN_ID.match(run_id):
                raise PrError("invalid_argument", f"runId {run_id!r} must look like review-<id>")
            return self.newest(f"run '{run_id}'", run_id=run_id), None
        if range_sha or range_:
            rsha = self.range_sha_of(range_sha, range_)
            return self.newest(f"range {range_sha or range_}", range_sha=rsha, repo=self.repo_filter()), None
        if pr is not None:
            for row in self.led.list(limit=MAX_ROWS, repo=self.repo_filter()):
                linked = row.data.get("pr")
                if isinstance(linked, dict) and linked.get("url") == pr["url"]:
                    return row, None
            state, _ = self.fetch(pr)
            if not state.head_sha:
                raise PrError("not_found", f"pull request {pr['url']} has no head sha to match a ledger entry")
            return self.newest(f"the head {state.head_sha} of {pr['url']}", head_sha=state.head_sha), state
        if self.cwd is not None:
            head = self.resolve("HEAD", f"cwd {self.cwd}")
            return self.newest(f"HEAD {head} of {self.root()}", head_sha=head, repo=self.repo_filter()), None
        raise PrError("invalid_argument", "pass runId, rangeSha or range, prUrl, or cwd to pick the ledger entry")

    # ------------------------------------------------------------------ GitHub

    def fetch(self, pr: dict[str, Any]) -> tuple[PullState, dict[str, Any]]:
        try:
            return self.gh.pull(pr["repo"], pr["number"])
        except GitHubError as exc:
            if exc.status == 404:
                raise PrError("no_pr", f"pull request {pr['url']} was not found on GitHub ({exc})") from exc
            raise

    def find_pr(self, row: Any, ann: dict[str, Any], pr_url_ref: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
        """The entry's PR reference and how it was found (linkedVia)."""
        if pr_url_ref is not None:
            return pr_url_ref, "prUrl"
        if isinstance(ann.get("pr"), dict):
            return ann["pr"], "annotation"
        attested = row.data.get("pr")
        if isinstance(attested, dict):
            return attested, "attestation"
        remote = row.data["repoRemote"]
        repo = github_repo_of(remote, self.host())
        if repo is None:
            raise PrError(
                "unsupported_remote",
                f"repository {remote} is not on GitHub (github.com or the GITHUB_API_URL host) — pass prUrl",
            )
        head = row.data["headSha"]
        found = self.gh.find_pull_for_head(repo, head)
        if found is None:
            raise PrError("no_pr", f"no pull request of {repo} contains the head {head} of run {row.run_id}")
        return {"provider": "github", "repo": found.repo, "number": found.number, "url": found.url}, "resolved"

    # ------------------------------------------------------------------ the call

    def link(
        self, run_id: str | None, range_sha: str | None, range_: str | None, pr_url: str | None
    ) -> dict[str, Any]:
        pr_ref = parse_pr_url(pr_url, self.host()) if pr_url else None
        row, fetched = self.select(run_id, range_sha, range_, pr_ref)
        key = row.key
        ann = self.led.annotations(*key)
        pr, linked_via = self.find_pr(row, ann, pr_ref)
        state = fetched if fetched is not None and fetched.number == pr["number"] else self.fetch(pr)[0]
        snapshot: dict[str, Any] = {
            "fetchedAt": _now(),
            "state": state.state,
            "reviews": self.gh.reviews(pr["repo"], pr["number"]),
        }
        if state.head_sha:
            checks = self.gh.check_runs(pr["repo"], state.head_sha)
            if checks is not None:
                snapshot["checks"] = checks
            snapshot["headSha"] = state.head_sha
        if not isinstance(ann.get("pr"), dict) and not isinstance(row.data.get("pr"), dict):
            self.led.set_pr(*key, pr)
        self.led.append_pr_status(*key, snapshot)
        after = self.led.annotations(*key)
        fresh = [r for r in self.led.list(run_id=row.run_id, limit=MAX_ROWS) if r.key == key]
        return {
            "ok": True,
            "attestation": (fresh[0] if fresh else row).to_json(),
            "pr": pr,
            "linkedVia": linked_via,
            "status": snapshot,
            "snapshots": after.get("prStatus", []),
        }
