"""``agentreview pr`` and ``review_pr`` (``agentreview.pr.service.link_pr``) against a scripted GitHub API.

Real parts: a real git repository whose origin is ``https://github.com/acme/widget.git``, a real
review run recorded by the CLI (a command lane), the CLI as a real process, and an HTTP server
on 127.0.0.1 that plays the GitHub REST API, records every request and checks the token.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

from agentreview.pr.service import link_pr

TOKEN = "tok-123"
PASSING = manifest("  - id: ok\n    kind: command\n    run: 'true'\n")


class FakeGitHub:
    """A scripted GitHub API: ``routes`` maps a request path (with query) to ``(status, json, headers)``."""

    def __init__(self, token: str = TOKEN):
        self.token = token
        self.routes: dict[str, tuple[int, Any, dict[str, str]]] = {}
        self.fail_all: int | None = None
        self.requests: list[tuple[str, str | None]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's name
                auth = self.headers.get("Authorization")
                fake.requests.append((self.path, auth))
                if auth != f"Bearer {fake.token}":
                    status, body, headers = 401, {"message": "Bad credentials"}, {}
                elif fake.fail_all:
                    status, body, headers = fake.fail_all, {"message": "Server Error"}, {}
                else:
                    status, body, headers = fake.routes.get(self.path, (404, {"message": "Not Found"}, {}))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def script_pr(self, head: str, *, number: int = 7, state: str = "open", merged: bool = False) -> None:
        pull = {"number": number, "state": state, "merged_at": "2025-02-01T00:00:00Z" if merged else None,
                "head": {"sha": head}, "html_url": f"https://github.com/acme/widget/pull/{number}"}
        self.routes[f"/repos/acme/widget/commits/{head}/pulls?per_page=100"] = (200, [pull], {})
        self.routes[f"/repos/acme/widget/pulls/{number}"] = (200, pull, {})
        self.routes[f"/repos/acme/widget/pulls/{number}/reviews?per_page=100"] = (
            200, [{"user": {"login": "reviewer"}, "state": "APPROVED", "submitted_at": "2025-01-02T00:00:00Z"}], {})
        self.routes[f"/repos/acme/widget/commits/{head}/check-runs?per_page=100"] = (
            200, {"total_count": 1, "check_runs": [{"name": "ci", "conclusion": "success"}]}, {})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    yield fake
    fake.close()


def git_only_path(tmp_path: Path) -> str:
    """A PATH that holds git and nothing else (so no ``gh``)."""
    bin_dir = tmp_path / "bin-git-only"
    bin_dir.mkdir(exist_ok=True)
    git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    if not (bin_dir / "git").exists():
        (bin_dir / "git").symlink_to(git)
    return str(bin_dir)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo", tmp_path / "home")
    r.git("remote", "add", "origin", "https://github.com/acme/widget.git")
    r.commit("initial", **{"README.md": "hello\n"})
    r.git("switch", "-q", "-c", "feature")
    r.commit("add review", **{"REVIEW.md": PASSING})
    r.commit("feature work", **{"src__app.txt": "v1\n"})
    return r


def record_run(repo: Repo) -> dict[str, Any]:
    data = repo.run_json(expect=0)
    assert data["attestation"]["target"]["repoRemote"] == "github.com/acme/widget"
    return data


def env_for(repo: Repo, github: FakeGitHub, tmp_path: Path, **extra: str | None) -> dict[str, str]:
    env = {k: v for k, v in repo.env.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN", "GITHUB_API_URL")}
    env.update(GITHUB_API_URL=github.url, GH_TOKEN=TOKEN, PATH=git_only_path(tmp_path))
    for name, value in extra.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def pr_cli(repo: Repo, env: dict[str, str], *args: str, as_json: bool = True) -> tuple[int, Any, str]:
    proc = subprocess.run(
        [*AGENTREVIEW, "pr", *(["--json"] if as_json else []), *args], cwd=repo.path, env=env,
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    return proc.returncode, json.loads(proc.stdout) if as_json else proc.stdout, proc.stderr


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def annotations_of(entry: Path) -> Path:
    return entry.with_name(entry.name[: -len(".json")] + ".annotations.json")


# --------------------------------------------------------------------------- the way that works


def test_pr_found_by_head_linked_snapshotted_and_the_attestation_untouched(
    repo: Repo, github: FakeGitHub, tmp_path: Path
) -> None:
    data = record_run(repo)
    head, entry = data["attestation"]["target"]["headSha"], Path(data["ledgerPath"])
    before = sha256(entry)
    github.script_pr(head)
    env = env_for(repo, github, tmp_path)

    code, reply, err = pr_cli(repo, env)
    assert code == 0, (reply, err)
    assert reply["ok"] is True and reply["linkedVia"] == "resolved"
    assert reply["pr"] == {"provider": "github", "repo": "acme/widget", "number": 7,
                           "url": "https://github.com/acme/widget/pull/7"}
    status = reply["status"]
    assert status["state"] == "open" and status["headSha"] == head
    assert status["checks"] == [{"name": "ci", "conclusion": "success"}]
    assert status["reviews"] == [{"login": "reviewer", "state": "APPROVED", "submittedAt": "2025-01-02T00:00:00Z"}]
    assert reply["snapshots"] == [status]
    assert reply["attestation"]["runId"] == data["runId"] and reply["attestation"]["prState"] == "open"
    sidecar = json.loads(annotations_of(entry).read_text())
    assert sidecar["pr"] == reply["pr"] and sidecar["prStatus"] == [status]
    assert sha256(entry) == before, "the attestation's bytes must never change"
    assert github.requests and all(auth == f"Bearer {TOKEN}" for _, auth in github.requests)
    assert f"/repos/acme/widget/commits/{head}/pulls?per_page=100" in [p for p, _ in github.requests]

    # The second call finds the link in the annotations; the PR has been merged meanwhile.
    github.script_pr(head, state="closed", merged=True)
    github.requests.clear()
    code, reply, err = pr_cli(repo, env)
    assert code == 0, (reply, err)
    assert reply["linkedVia"] == "annotation" and reply["status"]["state"] == "merged"
    assert [s["state"] for s in reply["snapshots"]] == ["open", "merged"]
    assert not any("/pulls?" in p for p, _ in github.requests), "a linked PR is not searched for again"
    assert sha256(entry) == before

    ledger = subprocess.run([*AGENTREVIEW, "ledger", "--json"], cwd=repo.path, env=env, capture_output=True,
                            text=True, timeout=60, check=True)
    assert [row["prState"] for row in json.loads(ledger.stdout)] == ["merged"]
    table = subprocess.run([*AGENTREVIEW, "ledger"], cwd=repo.path, env=env, capture_output=True, text=True,
                           timeout=60, check=True).stdout.splitlines()
    assert table[0].split()[-1] == "PR" and table[1].split()[-1] == "merged"

    code, text, _ = pr_cli(repo, env, data["runId"], as_json=False)
    assert code == 0 and "https://github.com/acme/widget/pull/7 [annotation]: merged" in text


def test_selection_by_run_id_range_and_pr_url_and_the_service_call(
    repo: Repo, github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = record_run(repo)
    att = data["attestation"]
    head, base = att["target"]["headSha"], att["target"]["baseSha"]
    github.script_pr(head, number=9)
    env = env_for(repo, github, tmp_path)

    # --pr with no link yet: the entry whose head is the PR's head.
    code, reply, err = pr_cli(repo, env, "--pr", "https://github.com/acme/widget/pull/9")
    assert code == 0, (reply, err)
    assert reply["linkedVia"] == "prUrl" and reply["attestation"]["runId"] == data["runId"]
    # --range with refs, resolved in the checkout.
    code, reply, _ = pr_cli(repo, env, "--range", "main..feature")
    assert code == 0 and reply["linkedVia"] == "annotation" and reply["pr"]["number"] == 9
    # The MCP tool's call, in process: runId, then rangeSha.
    for name, value in {**env, "AGENTREVIEW_HOME": str(repo.home)}.items():
        monkeypatch.setenv(name, value)
    reply = link_pr(home=repo.home, run_id=data["runId"])
    assert reply["ok"] and reply["linkedVia"] == "annotation" and len(reply["snapshots"]) == 3
    reply = link_pr(home=repo.home, range_sha=att["rangeSha"])
    assert reply["ok"] and len(reply["snapshots"]) == 4
    reply = link_pr(home=repo.home, range=f"{base}..{head}")
    assert reply["ok"] and len(reply["snapshots"]) == 5
    assert link_pr(home=repo.home, range="main..feature")["error"]["code"] == "invalid_argument"  # refs need cwd
    assert link_pr(home=repo.home)["error"]["code"] == "invalid_argument"
    assert link_pr(home=repo.home, pr_url="https://gitlab.com/a/b/pull/1")["error"]["code"] == "invalid_argument"


def test_token_from_github_token_and_from_gh_auth_token(repo: Repo, github: FakeGitHub, tmp_path: Path) -> None:
    data = record_run(repo)
    github.script_pr(data["attestation"]["target"]["headSha"])
    code, reply, err = pr_cli(repo, env_for(repo, github, tmp_path, GH_TOKEN=None, GITHUB_TOKEN=TOKEN))
    assert code == 0, (reply, err)
    # No variable: the token `gh auth token` prints (a scripted gh on PATH).
    gh_dir = tmp_path / "gh-bin"
    gh_dir.mkdir()
    gh = gh_dir / "gh"
    gh.write_text(f"#!/bin/sh\n[ \"$1 $2\" = 'auth token' ] && echo {TOKEN} && exit 0\nexit 1\n")
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
    env = env_for(repo, github, tmp_path, GH_TOKEN=None)
    env["PATH"] = f"{gh_dir}{os.pathsep}{env['PATH']}"
    code, reply, err = pr_cli(repo, env)
    assert code == 0 and reply["linkedVia"] == "annotation", (reply, err)


# --------------------------------------------------------------------------- each error code


def test_no_credentials_is_gh_unavailable(repo: Repo, github: FakeGitHub, tmp_path: Path) -> None:
    data = record_run(repo)
    env = env_for(repo, github, tmp_path, GH_TOKEN=None, GITHUB_TOKEN=None)
    code, reply, _ = pr_cli(repo, env)
    assert code == 3 and set(reply) == {"ok", "error"} and reply["ok"] is False
    assert reply["error"]["code"] == "gh_unavailable"
    assert "GH_TOKEN" in reply["error"]["message"] and github.requests == []
    assert not annotations_of(Path(data["ledgerPath"])).exists()
    code, _, err = pr_cli(repo, env, as_json=False)
    assert code == 3 and err.startswith("agentreview pr: gh_unavailable: no GitHub credentials")


def test_server_error_is_gh_failed_and_nothing_is_written(repo: Repo, github: FakeGitHub, tmp_path: Path) -> None:
    data = record_run(repo)
    github.fail_all = 500
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path))
    assert code == 3 and reply["error"]["code"] == "gh_failed"
    assert "HTTP 500" in reply["error"]["message"] and "Server Error" in reply["error"]["message"]
    assert not annotations_of(Path(data["ledgerPath"])).exists()
    # A wrong token is a failure too (the server answers 401).
    github.fail_all = None
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path, GH_TOKEN="wrong"))
    assert code == 3 and reply["error"]["code"] == "gh_failed" and "HTTP 401" in reply["error"]["message"]


def test_a_remote_not_on_github_is_unsupported_remote(repo: Repo, github: FakeGitHub, tmp_path: Path) -> None:
    repo.git("remote", "set-url", "origin", "https://gitlab.com/acme/widget.git")
    data = repo.run_json(expect=0)
    assert data["attestation"]["target"]["repoRemote"] == "gitlab.com/acme/widget"
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path))
    assert code == 3 and reply["error"]["code"] == "unsupported_remote" and github.requests == []
    assert "gitlab.com/acme/widget" in reply["error"]["message"]


def test_no_pr_for_the_head_is_no_pr(repo: Repo, github: FakeGitHub, tmp_path: Path) -> None:
    data = record_run(repo)
    head = data["attestation"]["target"]["headSha"]
    github.routes[f"/repos/acme/widget/commits/{head}/pulls?per_page=100"] = (200, [], {})
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path))
    assert code == 4 and reply["error"]["code"] == "no_pr" and head in reply["error"]["message"]
    # A commit GitHub does not know (422) is no PR either.
    github.routes[f"/repos/acme/widget/commits/{head}/pulls?per_page=100"] = (
        422, {"message": f"No commit found for SHA: {head}"}, {})
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path))
    assert code == 4 and reply["error"]["code"] == "no_pr"


def test_no_ledger_entry_is_not_found(repo: Repo, github: FakeGitHub, tmp_path: Path) -> None:
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path))
    assert code == 4 and reply["error"]["code"] == "not_found"
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path), "review-nope")
    assert code == 4 and "review-nope" in reply["error"]["message"]
    code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path), "--pr", "not a url")
    assert code == 64 and reply["error"]["code"] == "invalid_argument"


# --------------------------------------------------------------------------- the token stays with the API


def test_plain_http_to_a_non_loopback_host_is_refused(repo: Repo, github: FakeGitHub, tmp_path: Path) -> None:
    record_run(repo)
    env = env_for(repo, github, tmp_path, GITHUB_API_URL="http://api.example.com")
    code, reply, _ = pr_cli(repo, env)
    assert code == 3 and reply["error"]["code"] == "gh_failed"
    assert "plain http to a non-loopback host" in reply["error"]["message"] and github.requests == []
    for url in ("ftp://api.github.com", "https://user:pw@api.github.com"):
        code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path, GITHUB_API_URL=url))
        assert code == 3 and reply["error"]["code"] == "gh_failed"


def test_a_redirect_to_another_origin_does_not_carry_the_token(
    repo: Repo, github: FakeGitHub, tmp_path: Path
) -> None:
    data = record_run(repo)
    head = data["attestation"]["target"]["headSha"]
    elsewhere = FakeGitHub()
    try:
        elsewhere.script_pr(head)
        path = f"/repos/acme/widget/commits/{head}/pulls?per_page=100"
        github.routes[path] = (302, {}, {"Location": elsewhere.url + path})
        code, reply, _ = pr_cli(repo, env_for(repo, github, tmp_path))
        assert code == 3 and reply["error"]["code"] == "gh_failed" and "another origin" in reply["error"]["message"]
        assert elsewhere.requests == [], "the token must not be sent to another origin"
    finally:
        elsewhere.close()


def test_github_repo_of_accepts_github_remotes_only() -> None:
    from agentreview.pr.service import github_repo_of

    assert github_repo_of("git@github.com:acme/widget.git") == "acme/widget"
    assert github_repo_of("https://github.com-work/acme/widget") == "acme/widget"
    assert github_repo_of("ssh://git@ssh.github.com/acme/widget") == "acme/widget"
    assert github_repo_of("ghe.example.com/acme/widget", "ghe.example.com") == "acme/widget"
    assert github_repo_of("ghe.example.com/acme/widget") is None
    assert github_repo_of("github.com.evil.example/acme/widget") is None
    assert github_repo_of(f"local:{sys.prefix}") is None
