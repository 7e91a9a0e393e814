"""A real agent host: Claude Code (installed by scripts/install-reviewer-clis, the pinned and the newest
tested release) with ``agentreview mcp`` as its MCP server, driven by the scripted Anthropic-API server of
the agent-lane tests (see ``mcp_hosts.py``).

The scripted model calls review_run, review_status, review_ledger and review_export through Claude Code,
each with what the previous result said, and answers with the runId, verdict and export path it read:
the review really ran (its attestation is in the ledger and the export file is written) and every
result reached the model. The newest release defers MCP tools: the model is shown only their names
until it loads each one through ToolSearch, and the scripted model does so. The server is configured as
a user adds it, with one allow rule for all its tools. Skipped only when the claude binary is absent.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp_hosts import (
    STEPS,
    Chain,
    ModelServer,
    assert_chain,
    documented,
    host_binary,
    host_env,
    releases,
    review_repo,
    server_command,
)

from agentreview.mcp import descriptions

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

PREFIX = "mcp__agentreview__"


def mcp_config(home: Path) -> dict:
    """The ``--mcp-config``: the ``.mcp.json`` docs/cli.md shows, with the script's absolute path and the
    test's home."""
    config = json.loads(documented("Claude Code", "json"))
    server = config["mcpServers"]["agentreview"]
    assert server["command"] == "agentreview", server
    server.update(command=server_command(), env={"AGENTREVIEW_HOME": str(home)})
    return config


@pytest.mark.parametrize("release", releases("claude"))
def test_claude_code_runs_status_ledger_export(tmp_path: Path, release: str) -> None:
    binary = host_binary("claude", release)
    repo, head = review_repo(tmp_path)
    chain = Chain({step: PREFIX + step for step in STEPS}, repo.path, f"claude-{release}", search_tool="ToolSearch")
    with ModelServer(chain) as server:
        # --print connects MCP servers in the background: a first model request sent while the server still
        # starts (a loaded machine) lists no agentreview tool. MCP_CONNECTION_NONBLOCKING=false waits for it,
        # but only MCP_CONNECT_TIMEOUT_MS long (five seconds by default); that and MCP_TIMEOUT give the
        # server's start the margin a loaded 2-core machine needs, and MCP_TOOL_TIMEOUT a waiting review_run.
        env = host_env(tmp_path, ANTHROPIC_API_KEY="stub-key", ANTHROPIC_BASE_URL=server.url,
                       CLAUDE_CODE_MAX_RETRIES="0", MCP_CONNECTION_NONBLOCKING="false",
                       MCP_CONNECT_TIMEOUT_MS="180000", MCP_TIMEOUT="180000", MCP_TOOL_TIMEOUT="600000",
                       DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")  # fmt: skip
        proc = subprocess.run(
            [binary, "--print", "I changed src/app.txt; review it.", "--mcp-config", json.dumps(mcp_config(repo.home)),
             "--strict-mcp-config", "--allowedTools", "mcp__agentreview", "--setting-sources", "",
             "--output-format", "stream-json", "--verbose"],
            cwd=repo.path, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    final = events[-1]
    assert final["type"] == "result" and not final["is_error"], final
    assert_chain(chain, repo, head, final["result"])
    # the model was offered each tool with the server's own description (after ToolSearch, when deferred)
    for step in STEPS:
        assert chain.offered[step]["description"] == getattr(descriptions, step.upper()).description, step
    first = next(body for api, body in server.requests if body.get("tools"))
    if PREFIX + "review_run" not in {tool.get("name") for tool in first["tools"]}:
        # deferred: the first request names every tool without declaring it, and each was loaded by a search
        assert all(PREFIX + step in json.dumps(first) for step in STEPS), "deferred tools are not named"
        assert chain.searched == [PREFIX + step for step in STEPS], chain.searched
    if release == "newest":  # 2.1.332 defers MCP tools: the chain went through ToolSearch
        assert chain.searched, "the newest Claude Code offered the MCP tools without ToolSearch"
