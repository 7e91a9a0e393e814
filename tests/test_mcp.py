"""``agentreview mcp`` as a real subprocess, driven by the MCP SDK's own stdio client.

A real git repository with a REVIEW.md of command lanes: the tools are listed with their
descriptions; review_run with wait false, then review_status until done; review_run with wait
true reporting each finished lane as progress; review_ledger with includeRunning while a slow
lane runs; review_cancel mid-run (no lane process survives, nothing recorded); review_export;
bad arguments as error results while the server keeps serving; and the command without the
``mcp`` extra.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from reviewrepo import AGENTREVIEW, Repo, feature_repo, manifest, processes_matching

pytestmark = pytest.mark.timeout(300)

PASSING = manifest(
    "  - id: ok\n    kind: command\n    run: 'true'\n"
    "  - id: shows\n    kind: command\n    run: 'echo head={head}; exit 1'\n    blocking: false\n",
    extra="verdict: { exportDir: .reviews }\n",
)
TOOLS = {"review_run", "review_status", "review_cancel", "review_ledger", "review_export"}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return feature_repo(tmp_path)


def start_feature(repo: Repo, text: str = PASSING) -> str:
    repo.commit("add review", **{"REVIEW.md": text})
    return repo.commit("feature work", **{"src__app.txt": "v1\n"})


Session = Callable[[ClientSession], Awaitable[None]]


@contextlib.asynccontextmanager
async def connect(repo: Repo, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """``agentreview mcp`` started by the SDK's stdio client, initialized (not in the repository: every
    tool must be told its cwd)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentreview", "mcp"], env=env or repo.env, cwd=str(repo.home.parent)
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def serve(repo: Repo, body: Session, env: dict[str, str] | None = None) -> None:
    async def main() -> None:
        async with connect(repo, env) as session:
            await body(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, arguments: dict[str, Any], *, error: bool = False) -> Any:
    """The tool's reply (its JSON), asserting it is (or is not) an error result; an error's text as a str."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error is error, text
    return text if error else json.loads(text)


async def until(predicate: Callable[[], Awaitable[bool]], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "timed out"
        await anyio.sleep(0.1)


def test_tools_are_listed_with_descriptions_and_schemas(repo: Repo) -> None:
    async def body(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) >= TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 80, tool.name
        run = tools["review_run"].input_schema
        assert run["required"] == ["cwd"]
        for name in ("cwd", "manifestPath", "binding", "base", "head", "nocache", "compose", "wait",
                     "requesterSessionId", "pr", "supersede"):  # fmt: skip
            assert run["properties"][name]["description"], name
        limit = tools["review_ledger"].input_schema["properties"]["limit"]
        assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 500, 50)

    serve(repo, body)


def test_run_detached_then_status_until_done_ledger_and_export(repo: Repo) -> None:
    head = start_feature(repo)
    base = repo.git("merge-base", "main", "HEAD")

    async def body(session: ClientSession) -> None:
        started = await call(session, "review_run", {"cwd": str(repo.path), "wait": False, "requesterSessionId": "s-1"})
        assert started["status"] == "running" and started["runId"].startswith("review-")
        run_id = started["runId"]
        seen: dict[str, Any] = {}

        async def done() -> bool:
            seen.update(await call(session, "review_status", {"runId": run_id}))
            return seen["status"] != "running"

        await until(done)
        assert seen["status"] == "done" and seen["verdict"] == "pass", seen
        assert seen["attestation"]["target"]["headSha"] == head
        assert {lane["id"]: lane["status"] for lane in seen["lanes"]} == {"ok": "pass", "shows": "fail"}
        ledger = await call(session, "review_ledger", {"cwd": str(repo.path), "range": "main..HEAD"})
        assert ledger["total"] == 1
        row = ledger["attestations"][0]
        assert (row["baseSha"], row["headSha"], row["verdict"]) == (base, head, "pass")
        mine = await call(session, "review_ledger", {"requesterSessionId": "s-1"})
        assert [r["runId"] for r in mine["attestations"]] == [row["runId"]]
        assert (await call(session, "review_ledger", {"requesterSessionId": "someone-else"}))["total"] == 0
        # export: by runId into verdict.exportDir, by repoRemote + rangeSha to outPath
        exported = await call(session, "review_export", {"runId": row["runId"]})
        path = Path(exported["path"])
        assert path == repo.path / ".reviews" / f"demo-default-{head[:12]}.json"
        assert json.loads(path.read_text()) == seen["attestation"]
        assert (exported["runId"], exported["verdict"]) == (row["runId"], "pass")
        other = await call(session, "review_export", {
            "repoRemote": row["repoRemote"], "rangeSha": row["rangeSha"], "outPath": "out/x.json",
            "cwd": str(repo.path)})  # fmt: skip
        assert other["path"] == str(repo.path / "out" / "x.json")
        assert Path(other["path"]).read_text() == path.read_text()

    serve(repo, body)
    verify = subprocess.run([*AGENTREVIEW, "verify", "--json"], cwd=repo.path, env=repo.env, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_run_waiting_reports_each_lane_as_progress(repo: Repo) -> None:
    start_feature(repo)

    async def body(session: ClientSession) -> None:
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        result = await session.call_tool("review_run", {"cwd": str(repo.path)}, progress_callback=on_progress)
        view = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert not result.is_error and view["status"] == "done" and view["verdict"] == "pass", view
        assert view["runId"].startswith("review-") and view["attestation"]["verdict"] == "pass"
        # the runId first, then each lane started and finished (tests/test_mcp_runs.py has the order)
        assert progress[0] == (0, None, f"review {view['runId']}: started"), progress
        assert sorted(m for _, _, m in progress[1:]) == [
            "lane ok: pass", "lane ok: started", "lane shows: fail", "lane shows: started"], progress  # fmt: skip
        assert [(d, t) for d, t, _ in progress[1:]] == [(1, 4), (2, 4), (3, 4), (4, 4)]
        # a second call is answered from the ledger: the same attestation
        again = await call(session, "review_run", {"cwd": str(repo.path)})
        assert again["verdict"] == "pass" and again["attestation"]["runId"] == view["attestation"]["runId"]
        assert again["cached"] is True and view["cached"] is False

    serve(repo, body)


def test_ledger_lists_the_running_review_first_and_cancel_kills_its_lanes(repo: Repo) -> None:
    marker = f"agentreview-mcp-cancel-{os.getpid()}"
    start_feature(repo, manifest(f"  - id: slow\n    kind: command\n    run: 'sleep 301; true # {marker}'\n"
                                 "  - id: quick\n    kind: command\n    run: 'true'\n"))  # fmt: skip

    async def body(session: ClientSession) -> None:
        run_id = (await call(session, "review_run", {"cwd": str(repo.path), "wait": False}))["runId"]

        async def lane_runs() -> bool:
            return bool(processes_matching(marker))

        await until(lane_runs)
        ledger = await call(session, "review_ledger", {"cwd": str(repo.path), "includeRunning": True})
        first = ledger["attestations"][0]
        assert first["runId"] == run_id and first["status"] == "running", ledger
        assert {lane["id"] for lane in first["lanes"]} >= {"slow"}
        assert (await call(session, "review_ledger", {"cwd": str(repo.path)}))["total"] == 0
        cancelled = await call(session, "review_cancel", {"runId": run_id})
        assert cancelled == {"runId": run_id, "cancelled": True, "status": "cancelled"}

        async def lanes_gone() -> bool:
            return not processes_matching(marker)

        await until(lanes_gone, 15)
        assert (await call(session, "review_status", {"runId": run_id}))["status"] == "cancelled"
        again = await call(session, "review_cancel", {"runId": run_id})
        assert again == {"runId": run_id, "cancelled": False, "status": "cancelled"}
        assert (await call(session, "review_ledger", {"includeRunning": True}))["total"] == 0

    serve(repo, body)
    assert repo.ledger_files() == []


BAD = [
    ("review_run", {}, "cwd"),
    ("review_run", {"cwd": "relative/path"}, "must be an absolute path"),
    ("review_run", {"cwd": "/nonexistent/agentreview"}, "is not a directory"),
    ("review_run", {"cwd": "{repo}", "wait": "soon"}, "wait"),
    ("review_run", {"cwd": "{repo}", "binding": "--evil"}, "binding '--evil' is not a valid value"),
    ("review_run", {"cwd": "{repo}", "pr": {"provider": "gitlab", "repo": "a/b", "number": 1, "url": "https://x"}},
     "review_run: argument 'pr.provider' must be \"github\", not \"gitlab\""),
    ("review_run", {"cwd": "{repo}", "pr": {"repo": "a/b"}}, "review_run: argument 'pr.number' is required"),
    ("review_status", {"runId": "review-00000000-0000-4000-8000-000000000000"},
     "review run 'review-00000000-0000-4000-8000-000000000000' not found"),
    ("review_status", {"runId": "../../etc/passwd"}, "review run '../../etc/passwd' not found"),
    ("review_status", {}, "runId"),
    ("review_ledger", {"range": "main..HEAD"}, "refs in range need cwd"),
    ("review_ledger", {"range": "nonsense"}, "must be BASE..HEAD or a 64-hex rangeSha"),
    ("review_ledger", {"cwd": "{repo}", "range": "main..nosuchref"}, "nosuchref"),
    ("review_ledger", {"limit": 0}, "limit"),
    ("review_ledger", {"limit": 501}, "limit"),
    ("review_export", {}, "pass runId, or repoRemote + rangeSha"),
    ("review_export", {"repoRemote": "github.com/a/b"}, "pass runId, or repoRemote + rangeSha"),
    ("review_export", {"runId": "review-00000000-0000-4000-8000-000000000000"}, "no attestation in the ledger"),
    ("review_export", {"repoRemote": "github.com/a/b", "rangeSha": "xyz"}, "must be 64 hex characters"),
]


def test_bad_arguments_are_error_results_and_the_server_keeps_serving(repo: Repo) -> None:
    start_feature(repo)

    async def body(session: ClientSession) -> None:
        for tool, arguments, fragment in BAD:
            arguments = {k: (str(repo.path) if v == "{repo}" else v) for k, v in arguments.items()}
            text = await call(session, tool, arguments, error=True)
            assert fragment in text, (tool, arguments, text)
            assert "Traceback" not in text
        unknown = await call(session, "review_cancel", {"runId": "review-00000000-0000-4000-8000-000000000000"})
        assert unknown == {"runId": "review-00000000-0000-4000-8000-000000000000", "cancelled": False,
                           "status": "not_found"}  # fmt: skip
        assert (await call(session, "review_ledger", {}))["total"] == 0  # still serving

    serve(repo, body)
    assert repo.ledger_files() == []


def test_a_run_that_cannot_run_is_a_failed_error_result(repo: Repo) -> None:
    start_feature(repo, "---\nkind: review\nid: demo\nchecks: nonsense\n---\n")

    async def body(session: ClientSession) -> None:
        result = await session.call_tool("review_run", {"cwd": str(repo.path)})
        view = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert result.is_error and view["status"] == "failed" and "REVIEW.md" in view.get("error", ""), view

    serve(repo, body)


def test_without_the_mcp_extra_the_command_says_how_to_install_it(repo: Repo, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    (shadow / "mcp").mkdir(parents=True)
    (shadow / "mcp" / "__init__.py").write_text("")  # an `mcp` without the SDK's server
    env = {**repo.env, "PYTHONPATH": str(shadow)}
    proc = subprocess.run([*AGENTREVIEW, "mcp"], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr == "agentreview mcp: the MCP server needs the 'mcp' extra: pip install 'agentreview-core[mcp]'\n"


def test_other_commands_never_import_the_mcp_sdk(repo: Repo) -> None:
    code = (
        "import sys\nfrom agentreview.cli.app import run_app\n"
        "assert run_app(['ledger']) == 0\nassert run_app(['--help']) == 0\n"
        "bad = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'agentreview.mcp')))\n"
        "print(bad)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=repo.env, capture_output=True, text=True, timeout=60,
                          cwd=repo.path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


class GitHubStub:
    """A scripted GitHub REST API on 127.0.0.1: PR #7 of acme/widgets, open, whose head is ``head``."""

    def __init__(self, head: str, token: str):
        outer = self
        self.paths: list[str] = []
        routes = {
            f"/repos/acme/widgets/commits/{head}/pulls": [{"number": 7, "state": "open", "head": {"sha": head}}],
            "/repos/acme/widgets/pulls/7": {"number": 7, "state": "open", "head": {"sha": head}, "merged_at": None},
            "/repos/acme/widgets/pulls/7/reviews": [],
            f"/repos/acme/widgets/commits/{head}/check-runs": {"check_runs": [{"name": "ci", "conclusion": "success"}]},
        }

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                outer.paths.append(path)
                ok = self.headers.get("Authorization") in (f"Bearer {token}", f"token {token}")
                status, body = (200, routes[path]) if ok and path in routes else ((404, {}) if ok else (401, {}))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_review_pr_links_the_pull_request_found_by_head_and_never_touches_the_attestation(repo: Repo) -> None:
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    head = start_feature(repo)
    run_id = repo.run_json(expect=0)["runId"]
    (entry,) = repo.ledger_files()
    before = entry.read_bytes()
    stub = GitHubStub(head, "t0ken")
    env = {k: v for k, v in repo.env.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    try:
        async def linked(session: ClientSession) -> None:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert "review_pr" in tools
            got = await call(session, "review_pr", {"runId": run_id})
            assert got["ok"] is True and got["linkedVia"] == "resolved", got
            assert got["pr"] == {"provider": "github", "repo": "acme/widgets", "number": 7,
                                 "url": "https://github.com/acme/widgets/pull/7"}  # fmt: skip
            assert got["status"]["state"] == "open"
            assert got["status"]["checks"] == [{"name": "ci", "conclusion": "success"}]
            assert len(got["snapshots"]) == 1 and got["attestation"]["runId"] == run_id
            bad = await call(session, "review_pr", {"prUrl": "https://example.com/x"}, error=True)
            assert json.loads(bad)["error"]["code"] == "invalid_argument"

        serve(repo, linked, {**env, "GITHUB_API_URL": stub.url, "GH_TOKEN": "t0ken"})
    finally:
        stub.close()
    assert entry.read_bytes() == before  # the attestation's file is unchanged: the link is an annotation
    assert any(p.endswith("/pulls") for p in stub.paths)

    async def no_credentials(session: ClientSession) -> None:
        text = await call(session, "review_pr", {"runId": run_id}, error=True)
        assert json.loads(text)["error"]["code"] == "gh_unavailable", text

    serve(repo, no_credentials, {**env, "PATH": "/usr/bin:/bin", "GITHUB_API_URL": stub.url})
