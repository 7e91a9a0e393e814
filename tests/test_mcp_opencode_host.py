"""A real agent host: OpenCode (installed by scripts/install-reviewer-clis) with ``agentreview mcp`` as its
MCP server, driven by the scripted Chat Completions server of the agent-lane tests (see ``mcp_hosts.py``)
behind an ``@ai-sdk/openai-compatible`` provider.

The configuration is the user's own ``opencode.json`` (docs/cli.md shows the same ``mcp`` entry): the
command, its environment and a bound for listing its tools with the margin a loaded machine needs
(OpenCode's default is five seconds). No permission is set: OpenCode's defaults run the tools. Skipped
only when the opencode binary is absent.
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
    host_binary,
    host_env,
    releases,
    review_repo,
    server_command,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

PREFIX = "agentreview_"


def opencode_config(model_url: str, home: Path) -> dict:
    """``opencode.json``: the scripted model as the provider, and the agentreview server as a user adds it."""
    stub = {"npm": "@ai-sdk/openai-compatible", "name": "Stub", "models": {"stub-model": {"name": "Stub model"}},
            "options": {"baseURL": model_url + "/v1", "apiKey": "{env:STUB_API_KEY}"}}  # fmt: skip
    server = {"type": "local", "command": [server_command(), "mcp"], "enabled": True, "timeout": 120000,
              "environment": {"AGENTREVIEW_HOME": str(home)}}  # fmt: skip
    return {"model": "stub/stub-model", "provider": {"stub": stub}, "mcp": {"agentreview": server}}


@pytest.mark.parametrize("release", releases("opencode"))
def test_opencode_runs_status_ledger_export(tmp_path: Path, release: str) -> None:
    binary = host_binary("opencode", release)
    repo, head = review_repo(tmp_path)
    chain = Chain({step: PREFIX + step for step in STEPS}, repo.path, f"opencode-{release}")
    with ModelServer(chain, api_key="stub-key") as server:
        # no models.dev catalogue fetch and no update check: nothing leaves 127.0.0.1
        env = host_env(tmp_path, STUB_API_KEY="stub-key", OPENCODE_DISABLE_MODELS_FETCH="1",
                       OPENCODE_DISABLE_AUTOUPDATE="1")  # fmt: skip
        config = Path(env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
        config.parent.mkdir(parents=True)
        config.write_text(json.dumps(opencode_config(server.url, repo.home)))
        proc = subprocess.run(
            [binary, "run", "--format", "json", "I changed src/app.txt; review it."],
            cwd=repo.path, env=env, capture_output=True, text=True, timeout=540, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    calls = [e["part"] for e in events if e["type"] == "tool_use"]
    # every call ran on the agentreview server and completed, with no permission asked
    assert [(c["tool"], c["state"]["status"]) for c in calls] == [(PREFIX + step, "completed") for step in STEPS], calls
    texts = [e["part"]["text"] for e in events if e["type"] == "text"]
    assert_chain(chain, repo, head, texts[-1] if texts else "")
