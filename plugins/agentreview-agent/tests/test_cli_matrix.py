"""The reviewer-CLI matrix: every shipped CLI provider at each installed release (pinned and newest)
through a real ``agentreview run`` against a scripted model server on 127.0.0.1.

One review per release, one agent check per case, each falling back to an approving ``exec`` preset;
each cell checks its lane's outcome (pass, block, forbidden tool, malformed finding, 401, stall,
broken stream, drift, unsafe value). ``cli_shim.py`` rewrites what no model reply can make a CLI print.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import reviewer_clis
from model_server import ModelServer, Reply
from reviewer_clis import Release

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

AGENTREVIEW = [sys.executable, "-m", "agentreview"]
SHIM = Path(__file__).with_name("cli_shim.py")
CASES = ("pass", "block", "tool", "malformed", "auth", "stall", "broken", "drift", "unsafe")
HIGH = {"severity": "high", "title": "x is now 2", "detail": "breaks callers", "file": "app.py", "line": 1}
APPROVE = {"decision": "approve", "summary": "stub review", "findings": []}
BLOCK = {"decision": "request_changes", "summary": "stub review", "findings": [HIGH]}
# Not the verdict JSON, but a finding in the text contract's shape: never a pass, never a fallback.
MALFORMED = "P1 app.py:1 RCE in app.py | remove the eval"
# The lane budgets. A lane that ends on its own ends early, so the generous default costs nothing.
DEFAULT_TIMEOUT_MS = 300000
# Room for a prompt fallback after the CLI's own bounded retries, not for a retry loop that takes minutes
# (Kimi Code's default 10 attempts with backoff to 32 s took 150 s, twice over when the lane retried it).
BROKEN_TIMEOUT_MS = 120000

KEY = "stub-key"


# ----------------------------------------------------------------------------- the CLIs' wiring


def _tool_results(api: str, body: dict[str, Any]) -> int:
    """How many tool results the CLI has sent back to the model so far."""
    if api == "responses":
        items = body.get("input") or []
        return sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
    if api == "chat":
        return sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
    return sum(
        1
        for m in body.get("messages") or []
        if isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
    )


@dataclass(frozen=True)
class Wiring:
    """How one CLI is pointed at the model server and what its forbidden tool looks like."""

    preset: Callable[[str, str, str], str]  # (preset name, binary, server url) -> its presets.toml table
    env: Callable[[str], dict[str, str]]  # server url -> host variables
    forbidden: tuple[str, dict[str, Any]]  # a tool the reviewer is never offered, with input that would write
    structured: bool = False  # the verdict arrives as a StructuredOutput tool call (Claude --json-schema)
    model: str | None = None  # what the lane must record as its model
    # A stall runs out its budget, which must let the CLI reach the model server: the first is about what
    # the release's other lanes take anyway; a CLI that had not reached the server by then (a loaded
    # machine) runs the case once more alone with the second (docs/providers.md, the matrix).
    stall_ms: tuple[int, int] = (30000, 90000)
    broken_ms: int = BROKEN_TIMEOUT_MS  # the broken lane's budget
    broken_reason: str | None = None  # how the broken lane's fallback error must begin


def _toml(value: Any) -> str:
    return json.dumps(value)


WIRING = {
    "claude": Wiring(
        preset=lambda name, binary, url: (
            f'[presets.{name}]\nprovider = "claude"\nbinary = {_toml(binary)}\n'
            'env = ["CLAUDE_CODE_MAX_RETRIES"]  # no 2-minute retry loop on a 401\n'
        ),
        env=lambda url: {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": url, "CLAUDE_CODE_MAX_RETRIES": "0"},
        forbidden=("Bash", {"command": "touch pwned.txt"}),
        structured=True,
    ),
    "codex": Wiring(
        preset=lambda name, binary, url: (
            f'[presets.{name}]\nprovider = "codex"\nmodel = "gpt-5"\nbinary = {_toml(binary)}\n'
            f'[presets.{name}.config]\nmodel_provider = "stub"\n'
            f"[presets.{name}.config.model_providers.stub]\n"
            f'name = "stub"\nbase_url = {_toml(url + "/v1")}\nenv_key = "STUB_API_KEY"\nwire_api = "responses"\n'
        ),
        env=lambda url: {"STUB_API_KEY": KEY},
        # Codex 0.171 sometimes drops the events of a command that ends within ~0 ms, so whether the audit
        # sees a bare `touch` varies from run to run; this one lives long enough to be reported every time.
        forbidden=("exec_command", {"cmd": "sleep 0.5; touch pwned.txt"}),
        model="gpt-5",
    ),
    "opencode": Wiring(
        preset=lambda name, binary, url: (
            f'[presets.{name}]\nprovider = "opencode"\nmodel = "stub/stub-model"\nbinary = {_toml(binary)}\n'
            'env = ["OPENCODE_DISABLE_MODELS_FETCH"]\n'
            f"[presets.{name}.config.provider.stub]\n"
            'npm = "@ai-sdk/openai-compatible"\nname = "Stub"\n'
            f'options = {{ baseURL = {_toml(url + "/v1")}, apiKey = "{{env:STUB_API_KEY}}" }}\n'
            'models = { stub-model = { name = "Stub model" } }\n'
        ),
        env=lambda url: {"STUB_API_KEY": KEY, "OPENCODE_DISABLE_MODELS_FETCH": "1"},
        forbidden=("bash", {"command": "touch pwned.txt", "description": "touch a file"}),
        model="stub/stub-model",
        stall_ms=(150000, 240000),
        # OpenCode retries a dropped stream 5 times with waits of up to 30 s (about 70 s, fixed in the CLI:
        # no setting or variable changes it), after a start that took up to 160 s on a loaded machine (the
        # whole broken lane took 180 s there); the lane ends on its own, so the room costs nothing.
        broken_ms=420000,
        broken_reason="stream_failed: ",
    ),
    "kimi": Wiring(
        # Kimi Code speaks Chat Completions to a "kimi"-type provider; KIMI_MODEL_* defines it from the environment
        preset=lambda name, binary, url: f'[presets.{name}]\nprovider = "kimi"\nbinary = {_toml(binary)}\n',
        env=lambda url: {"KIMI_MODEL_NAME": "kimi-stub", "KIMI_MODEL_API_KEY": KEY, "KIMI_MODEL_BASE_URL": url + "/v1"},
        forbidden=("Bash", {"command": "touch pwned.txt"}),
        model="kimi-stub",
        stall_ms=(60000, 120000),
        broken_reason="stream_failed: ",
    ),
}


def model_script(wiring: Wiring, case: str) -> Callable[[str, dict[str, Any]], Reply]:
    """The scripted model of ``case``: side requests (no tools offered: titles and the like) get a short
    text; the review turn calls the forbidden tool first (case ``tool``), then answers."""
    verdict = BLOCK if case == "block" else APPROVE

    def script(api: str, body: dict[str, Any]) -> Reply:
        if case == "stall":
            return Reply(stall=True)
        if case == "broken":
            return Reply(broken=True)
        if case == "auth":
            return Reply(refuse=True)
        tools = {t.get("name") or (t.get("function") or {}).get("name") for t in body.get("tools") or []}
        if not tools or (wiring.structured and "StructuredOutput" not in tools):
            return Reply(text="Stub review")
        done = _tool_results(api, body)
        if case == "tool" and done == 0:
            return Reply(tool=wiring.forbidden[0], tool_input=wiring.forbidden[1])
        if done > (1 if case == "tool" else 0):
            return Reply(text="Done.")
        if case == "malformed":
            return Reply(text=MALFORMED)
        if wiring.structured:
            return Reply(tool="StructuredOutput", tool_input=verdict)
        return Reply(text=json.dumps(verdict))

    return script


# ----------------------------------------------------------------------------- one real review per release

HEAD = """---
kind: review
id: matrix
target: { kind: git-range, base: main }
checks:
"""
CHECK = """  - id: {case}
    kind: agent
    preset: {preset}
    fallbackPresets: [backup]
    rubric: ./rubrics/{case}.md
    blockOn: high
    timeoutMs: {timeout}
"""
APPROVING = "import json, os\njson.dump({'findings': []}, open(os.environ['AGENTREVIEW_VERDICT_PATH'], 'w'))\n"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.test",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.test"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=30, env=env
    ).stdout.strip()


def dispatch(wiring: Wiring) -> Callable[[str, dict[str, Any]], Reply]:
    """One model server for every lane of a release: each request belongs to the case whose rubric it names."""
    scripts = {case: model_script(wiring, case) for case in CASES}

    def script(api: str, body: dict[str, Any]) -> Reply:
        text = json.dumps(body)
        case = next((c for c in CASES if f"rubrics/{c}.md" in text), None)
        return scripts[case](api, body) if case else Reply(text="Stub review")

    return script


def run_release(tmp: Path, release: Release, cases: tuple[str, ...] = CASES, stall_ms: int = 0) -> dict[str, Any]:
    """``agentreview run --json`` on a fresh repository with one agent check per case of ``cases``, each on
    its own preset of ``release`` (the stall lane's budget ``stall_ms``, else the wiring's first); returns
    each case's lane, how many model requests it made, and the tree's state."""
    wiring = WIRING[release.cli]
    repo, home, userhome = tmp / "repo", tmp / "arhome", tmp / "userhome"
    for folder in (repo / "rubrics", home, userhome):
        folder.mkdir(parents=True)
    checks = []
    for case in cases:
        preset = f"{release.cli}-{case}"
        budget = {"stall": stall_ms or wiring.stall_ms[0], "broken": wiring.broken_ms}.get(case, DEFAULT_TIMEOUT_MS)
        checks.append(CHECK.format(case=case, preset=preset, timeout=budget))
        (repo / "rubrics" / f"{case}.md").write_text("Look for bugs.\n")
    (repo / "REVIEW.md").write_text(HEAD + "".join(checks) + "---\n\n# The reviewer-CLI matrix\n")
    (repo / "app.py").write_text("x = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "app.py").write_text("x = 2\n")
    git(repo, "commit", "-q", "-am", "change x")
    approving = tmp / "approve.py"  # the fallback: an exec reviewer that approves
    approving.write_text(APPROVING)
    presets = [f'[presets.backup]\nprovider = "exec"\ncommand = {_toml([sys.executable, str(approving)])}\n']
    server = ModelServer(dispatch(wiring), api_key=KEY)
    for case in cases:
        binary = str(release.launcher)
        if case in ("drift", "unsafe"):
            shim = tmp / f"{release.cli}-{case}"
            shim.write_text(f'#!/bin/sh\nexec {sys.executable} {SHIM} {binary} {release.cli} {case} "$@"\n')
            shim.chmod(0o755)
            binary = str(shim)
        presets.append(wiring.preset(f"{release.cli}-{case}", binary, server.url))
    (home / "presets.toml").write_text("\n".join(presets))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "ANTHROPIC_", "KIMI_"))}
    env.update(HOME=str(userhome), AGENTREVIEW_HOME=str(home), CI="true", **wiring.env(server.url))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env.pop(var, None)
    with server:
        proc = subprocess.run(
            [*AGENTREVIEW, "run", "--json"], cwd=repo, env=env, capture_output=True, text=True, timeout=600,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    if not proc.stdout:
        return {"error": f"agentreview run printed nothing (exit {proc.returncode}): {proc.stderr[-2000:]}"}
    lanes = {lane["id"]: lane for lane in json.loads(proc.stdout)["attestation"]["lanes"]}
    requests = {case: 0 for case in cases}
    for _, body in server.requests:
        text = json.dumps(body)
        for case in cases:
            requests[case] += f"rubrics/{case}.md" in text
    return {
        "lanes": lanes,
        "requests": requests,
        "pwned": (repo / "pwned.txt").exists(),
        "app": (repo / "app.py").read_text(),
        "status": git(repo, "status", "--porcelain"),
    }


def _run_checked(tmp: Path, release: Release) -> dict[str, Any]:
    if not os.access(release.launcher, os.X_OK):
        return {"missing": reviewer_clis.missing(f"{release.cli} {release.version}")}
    proc = subprocess.run([release.launcher, "--version"], capture_output=True, text=True, timeout=120)
    if release.version not in proc.stdout:
        return {"error": f"{release.launcher} --version says {proc.stdout.strip()!r}"}
    run = run_release(tmp / "all", release)
    if "lanes" in run and not run["requests"]["stall"]:
        # The CLI had not reached the model server when its stall lane's first budget ran out: once more,
        # the stall case alone, with the longer budget.
        again = run_release(tmp / "stall", release, ("stall",), WIRING[release.cli].stall_ms[1])
        if "lanes" not in again:
            return again
        run["lanes"]["stall"], run["requests"]["stall"] = again["lanes"]["stall"], again["requests"]["stall"]
        run["pwned"] = run["pwned"] or again["pwned"]
        run["status"] = run["status"] or again["status"]
        run["app"] = run["app"] if run["app"] != "x = 2\n" else again["app"]
    return run


@pytest.fixture(scope="session")
def matrix_runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Release], dict[str, Any]]:
    """One review per release, shared by its cells and across xdist workers: a worker that needs a
    release first runs every release no other worker has claimed (one at a time, under a lock each),
    then waits for the one it needs; each result is left as JSON for the others."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    shared = shared / "cli-matrix"
    shared.mkdir(exist_ok=True)
    releases = reviewer_clis.releases()

    def claim(release: Release, block: bool) -> None:
        done = shared / f"{release.id}.json"
        with (shared / f"{release.id}.lock").open("w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
            except BlockingIOError:
                return  # another worker is running it
            if not done.exists():
                result = _run_checked(tmp_path_factory.mktemp(release.id), release)
                tmp = done.with_suffix(".tmp")
                tmp.write_text(json.dumps(result))
                tmp.replace(done)

    def get(release: Release) -> dict[str, Any]:
        start = releases.index(release)
        for other in releases[start:] + releases[:start]:
            claim(other, block=False)
        claim(release, block=True)
        return json.loads((shared / f"{release.id}.json").read_text())

    return get


# ----------------------------------------------------------------------------- expectations


def expect(release: Release, case: str, run: dict[str, Any]) -> None:
    lane, preset = run["lanes"][case], f"{release.cli}-{case}"
    wiring = WIRING[release.cli]
    shown = json.dumps(lane)
    if case in ("pass", "block"):
        assert lane["preset"] == preset and not lane.get("fallbacks"), shown
        assert lane["status"] == ("pass" if case == "pass" else "fail"), shown
        if case == "block":
            assert [(f["severity"], f["title"]) for f in lane["findings"]] == [("high", "x is now 2")], shown
        assert lane.get("sessionId"), shown
        assert lane.get("model") and (wiring.model is None or lane["model"] == wiring.model), shown
    elif case in ("tool", "unsafe"):
        assert lane["status"] == "skipped" and not lane.get("fallbacks"), shown
        assert lane["error"].startswith("reviewer boundary violation"), shown
        if case == "unsafe":  # its own bucket, never drift's
            assert lane.get("unsafeValues") and "unknownFields" not in shown, shown
        if case == "unsafe" and release.cli == "claude":
            assert "permissionMode" in lane["error"], shown
    elif case == "malformed":
        assert lane["status"] == "skipped" and not lane.get("fallbacks"), shown
        assert "looks like a finding" in lane["error"] and "app.py:1" in lane["error"], shown
    elif case in ("auth", "broken", "drift"):
        assert lane["status"] == "pass" and lane["preset"] == "backup", shown
        [fallback] = lane["fallbacks"]
        assert fallback["preset"] == preset, shown
        if case != "drift":  # fell back for this case's own reason
            assert "capability_missing" not in fallback["error"], shown
        if case == "broken" and wiring.broken_reason:
            assert fallback["error"].startswith(wiring.broken_reason), shown
        if case == "auth":
            assert "authentication failed" in fallback["error"], shown
        if case == "drift":
            assert "capability_missing" in fallback["error"] and "unknownFields" in json.dumps(fallback), shown
    elif case == "stall":
        assert lane["status"] == "timeout" and not lane.get("fallbacks"), shown
    assert run["requests"][case], "the CLI never reached the model server"
    # no lane of the run wrote anything: the forbidden tool and the reported write never reached the tree
    assert not run["pwned"] and run["app"] == "x = 2\n" and run["status"] == "", run


# ----------------------------------------------------------------------------- the matrix

# Cells that fail for want of work still to do, as (cli or release id, case) -> what is needed: each gets a
# strict xfail mark that goes once that work is in. scripts/reviewer-cli-drift runs with --runxfail: its
# table shows what really happened.
NEEDS: dict[tuple[str, str], str] = {}


def _params() -> list[Any]:
    out = []
    for case in CASES:  # case-major: neighbouring cells (which xdist hands to different workers) differ in release
        for release in reviewer_clis.releases():
            why = NEEDS.get((release.id, case)) or NEEDS.get((release.cli, case))
            marks = [pytest.mark.xfail(strict=True, reason=f"needs {why}")] if why else []
            out.append(pytest.param(release, case, id=f"{release.id}-{case}", marks=marks))
    return out


@pytest.mark.parametrize(("release", "case"), _params())
def test_cli_matrix(matrix_runs: Callable[[Release], dict[str, Any]], release: Release, case: str) -> None:
    run = matrix_runs(release)
    if "missing" in run:
        pytest.skip(run["missing"])
    assert "error" not in run, run["error"]
    expect(release, case, run)
