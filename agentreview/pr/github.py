"""A small GitHub REST client on the standard library, for ``agentreview pr`` and ``review_pr``.

Every request is bounded (timeout, read size), and the token goes only to the configured API origin.
"""

from __future__ import annotations

import ipaddress
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from agentreview.model.record import record

DEFAULT_API_URL = "https://api.github.com"
TIMEOUT_S = 30.0
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
GH_TIMEOUT_S = 30.0


class GitHubError(Exception):
    """A failure talking to GitHub; ``code`` is the ``review_pr`` error code, ``status`` the HTTP status."""

    def __init__(self, code: str, message: str, status: int | None = None):
        super().__init__(message)
        self.code = code
        self.status = status


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def api_base(env: Mapping[str, str] | None = None) -> str:
    """The API base URL without a trailing slash; http is refused unless the host is loopback."""
    env = os.environ if env is None else env
    raw = (env.get("GITHUB_API_URL") or "").strip() or DEFAULT_API_URL
    parts = urllib.parse.urlsplit(raw)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host or parts.username or parts.password:
        raise GitHubError("gh_failed", f"GITHUB_API_URL {raw!r} must be an https URL such as {DEFAULT_API_URL}")
    if parts.scheme == "http" and not _is_loopback(host):
        raise GitHubError(
            "gh_failed",
            f"GITHUB_API_URL {raw!r} uses plain http to a non-loopback host — the token would travel "
            "unencrypted; use https (http is accepted only for 127.0.0.1, ::1 or localhost)",
        )
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def api_host(base: str) -> str:
    """The GitHub host a base serves (``api.github.com`` and ``ghe.example/api/v3`` both name their web host)."""
    host = (urllib.parse.urlsplit(base).hostname or "").lower()
    return host[4:] if host.startswith("api.") else host


def token(env: Mapping[str, str] | None = None, base: str = DEFAULT_API_URL) -> str | None:
    """GH_TOKEN, else GITHUB_TOKEN, else ``gh auth token`` (when gh is on PATH), else None."""
    env = os.environ if env is None else env
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        value = (env.get(name) or "").strip()
        if value:
            return value
    from agentreview.host.procs.group import run_process_group
    from agentreview.host.programs import find_program

    gh = find_program("gh", env.get("PATH"))
    if gh is None:
        return None

    argv = [gh, "auth", "token"]
    host = api_host(base)
    if host and host != "github.com":
        argv += ["--hostname", host]
    result = run_process_group(
        argv, cwd=os.getcwd(), env=dict(env), deadline=time.monotonic() + GH_TIMEOUT_S, max_output=64 * 1024
    )
    value = result.stdout_text().strip()
    if result.returncode != 0 or not value or len(value.split()) != 1:
        return None
    return value


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only within the API's origin: the Authorization header must not leave it."""

    def __init__(self, origin: tuple[str, str]):
        self.origin = origin

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        parts = urllib.parse.urlsplit(newurl)
        if (parts.scheme, parts.netloc) != self.origin:
            raise GitHubError(
                "gh_failed", f"GitHub API redirected {req.full_url} to another origin ({newurl}) — refused", code
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@record
class PullState:
    """What a snapshot needs of one pull request."""

    repo: str
    number: int
    url: str
    state: str  # open | closed | merged
    head_sha: str | None


class GitHub:
    """Read-only calls to one GitHub API base with one token."""

    def __init__(self, base: str, auth: str):
        self.base = base
        self._auth = auth
        parts = urllib.parse.urlsplit(base)
        handlers: list[Any] = [_SameOriginRedirects((parts.scheme, parts.netloc))]
        if _is_loopback(parts.hostname or ""):
            handlers.append(urllib.request.ProxyHandler({}))  # a loopback API is never reached through a proxy
        self._opener = urllib.request.build_opener(*handlers)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GitHub:
        """The client for this environment; GitHubError ``gh_unavailable`` when there is no token."""
        base = api_base(env)
        auth = token(env, base)
        if not auth:
            raise GitHubError(
                "gh_unavailable",
                "no GitHub credentials: set GH_TOKEN (or GITHUB_TOKEN), or log in with 'gh auth login'",
            )
        return cls(base, auth)

    def get(self, path: str) -> Any:
        """GET ``path`` under the base and parse its JSON; GitHubError ``gh_failed`` on any failure."""
        url = self.base + path
        request = urllib.request.Request(url, method="GET", headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self._auth}",
            "User-Agent": "agentreview",
            "X-GitHub-Api-Version": "2022-11-28",
        })
        try:
            with self._opener.open(request, timeout=TIMEOUT_S) as resp:
                body = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = _error_message(exc)
            raise GitHubError("gh_failed", f"GitHub API GET {path}: HTTP {exc.code}{detail}", exc.code) from exc
        except GitHubError:
            raise
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GitHubError("gh_failed", f"GitHub API GET {path} failed: {reason}") from exc
        if len(body) > MAX_RESPONSE_BYTES:
            raise GitHubError("gh_failed", f"GitHub API GET {path}: response larger than {MAX_RESPONSE_BYTES} bytes")
        try:
            return json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise GitHubError("gh_failed", f"GitHub API GET {path}: the response is not JSON ({exc})") from exc

    def _get_unless(self, path: str, statuses: tuple[int, ...]) -> Any:
        """``get``, or None when GitHub answers one of ``statuses`` (a best-effort call)."""
        try:
            return self.get(path)
        except GitHubError as exc:
            if exc.status in statuses:
                return None
            raise

    def pull(self, repo: str, number: int) -> tuple[PullState, dict[str, Any]]:
        """The PR's state (merged when ``merged_at`` is set) and head sha, with the raw object."""
        data = self.get(f"/repos/{_quote_repo(repo)}/pulls/{int(number)}")
        if not isinstance(data, dict):
            raise GitHubError("gh_failed", f"GitHub API: pull request {repo}#{number} is not an object")
        return _pull_state(repo, data), data

    def pulls_for_commit(self, repo: str, sha: str) -> list[dict[str, Any]]:
        """The PRs that contain commit ``sha`` (an unknown commit is no PR, not a failure)."""
        data = self._get_unless(f"/repos/{_quote_repo(repo)}/commits/{_quote(sha)}/pulls?per_page=100", (404, 422))
        return [p for p in data if isinstance(p, dict)] if isinstance(data, list) else []

    def find_pull_for_head(self, repo: str, sha: str) -> PullState | None:
        """The PR for ``sha``: one whose head is the sha, else an open one, else the first (as the reference)."""
        pulls = self.pulls_for_commit(repo, sha)
        ranked = (
            [p for p in pulls if (p.get("head") or {}).get("sha") == sha]
            + [p for p in pulls if p.get("state") == "open"]
            + pulls
        )
        for p in ranked:
            if isinstance(p.get("number"), int) and p["number"] >= 1:
                return _pull_state(repo, p)
        return None

    def reviews(self, repo: str, number: int) -> list[dict[str, str]]:
        """``[{login, state, submittedAt}]`` of the PR's reviews (best effort: 403/404 give none)."""
        data = self._get_unless(f"/repos/{_quote_repo(repo)}/pulls/{int(number)}/reviews?per_page=100", (403, 404))
        out = []
        for r in data if isinstance(data, list) else []:
            if not isinstance(r, dict):
                continue
            login = (r.get("user") or {}).get("login") if isinstance(r.get("user"), dict) else None
            if isinstance(login, str) and isinstance(r.get("state"), str) and isinstance(r.get("submitted_at"), str):
                out.append({"login": login, "state": r["state"], "submittedAt": r["submitted_at"]})
        return out

    def check_runs(self, repo: str, sha: str) -> list[dict[str, Any]] | None:
        """``[{name, conclusion}]`` for the commit, or None when not available (403/404)."""
        data = self._get_unless(f"/repos/{_quote_repo(repo)}/commits/{_quote(sha)}/check-runs?per_page=100", (403, 404))
        runs = data.get("check_runs") if isinstance(data, dict) else None
        if not isinstance(runs, list):
            return None
        return [
            {"name": r["name"], "conclusion": r.get("conclusion") if isinstance(r.get("conclusion"), str) else None}
            for r in runs
            if isinstance(r, dict) and isinstance(r.get("name"), str)
        ]


def _pull_state(repo: str, data: Mapping[str, Any]) -> PullState:
    number = data.get("number")
    if not isinstance(number, int) or number < 1:
        raise GitHubError("gh_failed", f"GitHub API: a pull request of {repo} has no number")
    head = data.get("head")
    head_sha = head.get("sha") if isinstance(head, dict) and isinstance(head.get("sha"), str) else None
    state = "merged" if data.get("merged_at") else ("open" if data.get("state") == "open" else "closed")
    return PullState(repo, number, f"https://github.com/{repo}/pull/{number}", state, head_sha)


def _error_message(exc: urllib.error.HTTPError) -> str:
    """`` — <message>`` from GitHub's JSON error body, bounded; empty when there is none."""
    try:
        data = json.loads(exc.read(64 * 1024) or b"null")
    except (OSError, ValueError, RecursionError):
        return ""
    message = data.get("message") if isinstance(data, dict) else None
    return f" — {' '.join(str(message).split())[:200]}" if message else ""


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _quote_repo(repo: str) -> str:
    owner, _, name = repo.partition("/")
    return f"{_quote(owner)}/{_quote(name)}"
