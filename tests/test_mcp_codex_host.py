"""A real agent host: Codex (installed by scripts/install-reviewer-clis) with ``agentreview mcp`` as its MCP
server, under Codex's default approval settings, driven by the scripted Responses API server of the
agent-lane tests (see ``mcp_hosts.py``).

The server's configuration is the ``~/.codex/config.toml`` entry docs/cli.md shows, read from there: the
command, a start-up bound with the margin a loaded machine needs, ``required`` (``codex exec`` otherwise
sends its first model request before the server has listed its tools) and a tool-call bound that a
waiting review_run fits in. No approval policy, sandbox or trust setting is given: Codex approves the
calls by the tools' annotations alone. Skipped only when the codex binary is absent.
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
    codex_output,
    documented,
    host_binary,
    host_env,
    releases,
    review_repo,
    server_command,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def codex_config(model_url: str, home: Path) -> str:
    """``config.toml``: the scripted model as the provider, and the agentreview server as docs/cli.md shows
    it, with the script's absolute path and the test's home."""
    server = documented("Codex", "toml")
    assert 'command = "agentreview"\n' in server, server
    server = server.replace('command = "agentreview"', f"command = {json.dumps(server_command())}")
    return (
        'model = "gpt-5"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n'
        f"{server}env = {{ AGENTREVIEW_HOME = {json.dumps(str(home))} }}\n"
        "[model_providers.stub]\n"
        f'name = "stub"\nbase_url = {json.dumps(model_url + "/v1")}\nenv_key = "STUB_API_KEY"\nwire_api = "responses"\n'
        "[analytics]\nenabled = false\n"
    )


@pytest.mark.parametrize("release", releases("codex"))
def test_codex_with_default_approvals_runs_status_ledger_export(tmp_path: Path, release: str) -> None:
    binary = host_binary("codex", release)
    repo, head = review_repo(tmp_path)
    chain = Chain({step: step for step in STEPS}, repo.path, f"codex-{release}", namespace="mcp__agentreview",
                  unwrap=codex_output)  # fmt: skip
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    with ModelServer(chain, api_key="stub-key") as server:
        config = codex_config(server.url, repo.home)
        # Codex's defaults decide: no approval policy, sandbox mode or project trust is configured
        assert not any(word in config for word in ("approval", "sandbox", "trust")), config
        (codex_home / "config.toml").write_text(config)
        env = host_env(tmp_path, CODEX_HOME=str(codex_home), STUB_API_KEY="stub-key")
        proc = subprocess.run([binary, "exec", "--json", "I changed src/app.txt; review it."], cwd=repo.path, env=env,
                              capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    items = [e["item"] for e in events if e["type"] == "item.completed"]
    calls = [item for item in items if item["type"] == "mcp_tool_call"]
    # every call went to the agentreview server and succeeded: none was refused for want of an approval
    assert [(c["server"], c["tool"], c["status"], c["error"]) for c in calls] == [
        ("agentreview", step, "completed", None) for step in STEPS
    ], calls
    answers = [item["text"] for item in items if item["type"] == "agent_message"]
    assert_chain(chain, repo, head, answers[-1] if answers else "")
