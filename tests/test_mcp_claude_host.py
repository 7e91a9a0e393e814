"""A real agent host: Claude Code (installed by scripts/install-reviewer-clis) with ``agentreview mcp``
as its MCP server, driven by the scripted Anthropic-API server the agent-lane tests use.

The scripted model calls ``review_run`` through Claude Code; Claude Code starts ``agentreview mcp``
from its ``--mcp-config``, relays the call, and hands the tool's result back to the model, which
answers with the verdict it read there. The review really ran (its attestation is in the ledger)
and the final answer names its verdict. Skipped only when the claude binary is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "agentreview-agent" / "tests"))
import reviewer_clis  # noqa: E402
from model_server import ModelServer, Reply  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOOL = "mcp__agentreview__review_run"
BLOCKING = manifest(
    "  - id: ok\n    kind: command\n    run: 'true'\n"
    "  - id: lint\n    kind: command\n    run: 'echo src/app.txt:1: trailing spaces; exit 1'\n"
)


def claude() -> str:
    found = reviewer_clis.binary("claude")
    if not found:
        pytest.skip(reviewer_clis.missing("claude"))
    return found


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every tool result the host sent back to the model."""
    out = []
    for message in body.get("messages") or []:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                out.append(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))
    return out


def test_claude_code_calls_review_run_and_reads_the_verdict(tmp_path: Path) -> None:
    binary = claude()
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    repo.commit("initial", **{"README.md": "hello\n"})
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("add review", **{"REVIEW.md": BLOCKING})
    head = repo.commit("feature work", **{"src__app.txt": "v1  \n"})
    offered: list[dict[str, Any]] = []

    def script(api: str, body: dict[str, Any]) -> Reply:
        tools = {t.get("name"): t for t in body.get("tools") or []}
        if TOOL not in tools:
            return Reply(text="ok")  # Claude Code's side requests (titles and the like)
        offered.append(tools[TOOL])
        results = tool_results(body)
        if not results:
            return Reply(tool=TOOL, tool_input={"cwd": str(repo.path), "requesterSessionId": "claude-host-test"})
        view = json.loads(results[-1])
        failing = [lane["id"] for lane in view["lanes"] if lane["status"] != "pass"]
        return Reply(text=f"The review verdict is {view['verdict']} ({view['runId']}); failing lanes: {failing}.")

    config = {"mcpServers": {"agentreview": {
        "command": str(Path(sys.executable).parent / "agentreview"), "args": ["mcp"],
        "env": {"AGENTREVIEW_HOME": str(repo.home)}}}}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREVIEW_", "ANTHROPIC_", "CLAUDE"))}
    (tmp_path / "userhome").mkdir()
    with ModelServer(script) as server:
        # --print connects MCP servers in the background: a first model request sent while the server still
        # starts (a loaded machine) lists no agentreview tool. MCP_CONNECTION_NONBLOCKING=false waits for it,
        # and MCP_TIMEOUT gives the server's start the margin a loaded 2-core machine needs (the default
        # bound is made for an idle one); the review itself stays within the tool-call default.
        env.update(HOME=str(tmp_path / "userhome"), ANTHROPIC_API_KEY="stub-key", ANTHROPIC_BASE_URL=server.url,
                   CLAUDE_CODE_MAX_RETRIES="0", MCP_CONNECTION_NONBLOCKING="false",
                   MCP_TIMEOUT="180000")  # fmt: skip
        proc = subprocess.run(
            [binary, "--print", "I changed src/app.txt; review it.", "--mcp-config", json.dumps(config),
             "--strict-mcp-config", "--allowedTools", TOOL, "--setting-sources", "",
             "--output-format", "stream-json", "--verbose"],
            cwd=repo.path, env=env, capture_output=True, text=True, timeout=420, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    final = events[-1]
    assert final["type"] == "result" and not final["is_error"], final
    # the model was offered the tool with the description written for it
    assert offered and offered[0]["description"].startswith("Call after changing code")
    # the review really ran: its attestation is in the ledger, requested by this session
    ledger = subprocess.run([*AGENTREVIEW, "ledger", "--json", "--requester", "claude-host-test"], env=repo.env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    rows = json.loads(ledger.stdout)
    assert len(rows) == 1 and rows[0]["headSha"] == head and rows[0]["verdict"] == "block", rows
    # and the answer names the verdict (and the run) the tool returned
    assert final["result"] == f"The review verdict is block ({rows[0]['runId']}); failing lanes: ['lint'].", final
