"""A real agent host: OpenCode (installed by scripts/install-reviewer-clis) with ``agentreview mcp`` as its
MCP server, driven by the scripted Chat Completions server of the agent-lane tests (see ``mcp_hosts.py``)
behind an ``@ai-sdk/openai-compatible`` provider.

The configuration is the user's own ``opencode.json`` with the ``mcp`` entry docs/cli.md shows, read from
there: the command and a bound for listing its tools with the margin a loaded machine needs (OpenCode's
default is five seconds). No permission is set: OpenCode's defaults run the tools. Skipped
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
    documented,
    host_binary,
    host_env,
    releases,
    review_repo,
    server_command,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

PREFIX = "agentreview_"


def opencode_config(model_url: str, home: Path) -> dict:
    """``opencode.json``: the scripted model as the provider, and the agentreview server as docs/cli.md
    shows it, with the script's absolute path and the test's home."""
    stub = {"npm": "@ai-sdk/openai-compatible", "name": "Stub", "models": {"stub-model": {"name": "Stub model"}},
            "options": {"baseURL": model_url + "/v1", "apiKey": "{env:STUB_API_KEY}"}}  # fmt: skip
    config = json.loads(documented("OpenCode", "json"))
    server = config["mcp"]["agentreview"]
    assert server["command"] == ["agentreview", "mcp"], server
    server.update(command=[server_command(), "mcp"], environment={"AGENTREVIEW_HOME": str(home)})
    return {"model": "stub/stub-model", "provider": {"stub": stub}, "autoupdate": False, "share": "disabled", **config}


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
            cwd=repo.path, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    calls = [e["part"] for e in events if e["type"] == "tool_use"]
    # every call ran on the agentreview server and completed, with no permission asked
    assert [(c["tool"], c["state"]["status"]) for c in calls] == [(PREFIX + step, "completed") for step in STEPS], calls
    texts = [e["part"]["text"] for e in events if e["type"] == "text"]
    assert_chain(chain, repo, head, texts[-1] if texts else "")
