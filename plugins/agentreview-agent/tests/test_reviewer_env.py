"""What a reviewer process may see of the host's environment (AIP-62: no credentials beyond the
model). The host here is hostile (tokens, cloud keys, an ssh agent, code-injection variables, git
redirections); every provider's reviewer and ``--help`` probe gets exactly the basics, its private
homes, its model key and what its preset names.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from agentreview_agent.providers.claude import ClaudeProvider
from agentreview_agent.providers.codex import CodexProvider
from agentreview_agent.providers.kimi import KimiProvider
from agentreview_agent.providers.opencode import OpenCodeProvider

from agentreview.model.contracts import PresetSpec
from conftest import script

BASICS = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "dumb",
    "TZ": "UTC",
    "USER": "reviewer",
    "https_proxy": "http://proxy.invalid:3128",
    "NO_PROXY": "127.0.0.1",
    "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
    "NODE_EXTRA_CA_CERTS": "/etc/ssl/certs/corp.pem",
}
HOSTILE = {
    "GITHUB_TOKEN": "ghp_host_secret",
    "AWS_SECRET_ACCESS_KEY": "aws-host-secret",
    "AWS_ACCESS_KEY_ID": "AKIAHOST",
    "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
    "NPM_TOKEN": "npm_host_secret",
    "LD_PRELOAD": "/nonexistent/evil.so",
    "NODE_OPTIONS": "--require /nonexistent/evil.js",
    "GIT_SSH_COMMAND": "evil-ssh",
    "GIT_ASKPASS": "evil-askpass",
    "OPENCODE_CONFIG": "/nonexistent/opencode.json",
    "MY_GATEWAY_KEY": "only-when-a-preset-names-it",
}
MODEL_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-model",
    "OPENAI_API_KEY": "sk-openai-model",
    "CODEX_API_KEY": "codex-model",
    "KIMI_MODEL_API_KEY": "kimi-model",
}
LANE_FACTS = {"AGENTREVIEW_BASE", "AGENTREVIEW_HEAD", "AGENTREVIEW_RUBRIC", "AGENTREVIEW_CHECK_ID"}
# What each provider adds beyond the basics, the lane facts and HOME.
PROVIDER_VARS = {
    "claude": {
        "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_DISABLE_AUTO_MEMORY", "CLAUDE_CODE_DISABLE_CLAUDE_MDS", "DISABLE_AUTOUPDATER",
        "DISABLE_TELEMETRY", "CLAUDE_CODE_MAX_RETRIES", "ANTHROPIC_API_KEY",
    },
    "codex": {"CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY"},
    "opencode": {
        "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_CLAUDE_CODE", "OPENCODE_DISABLE_EXTERNAL_SKILLS", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
    },
    "kimi": {"KIMI_CODE_HOME", "KIMI_DISABLE_TELEMETRY", "KIMI_LOOP_MAX_ATTEMPTS_PER_STEP", "KIMI_MODEL_API_KEY"},
}  # fmt: skip
PROVIDERS = {"claude": ClaudeProvider, "codex": CodexProvider, "opencode": OpenCodeProvider, "kimi": KimiProvider}


@pytest.fixture
def hostile_host(lane, fake_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Replace the host environment with the basics, the hostile variables and the model keys (PATH, HOME
    and AGENTREVIEW_HOME kept as the ``fake_cli`` and ``repo`` fixtures set them); returns the file the
    injected ``sitecustomize`` creates if any Python reviewer ever runs it."""
    keep = {"PATH", "HOME", "AGENTREVIEW_HOME"}
    for name in list(os.environ):
        if name not in keep:
            monkeypatch.delenv(name)
    injected = tmp_path / "pythonpath"
    injected.mkdir()
    marker = tmp_path / "sitecustomize-ran"
    (injected / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    for name, value in {**BASICS, **HOSTILE, **MODEL_KEYS, "TMPDIR": str(tmpdir), "PYTHONPATH": str(injected)}.items():
        monkeypatch.setenv(name, value)
    return marker


def expected_basics() -> dict[str, str]:
    return {**BASICS, "TMPDIR": os.environ["TMPDIR"], "PATH": os.environ["PATH"]}


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_a_cli_reviewer_gets_the_basics_its_model_key_and_a_private_home_only(
    lane, fake_cli, hostile_host: Path, name: str
) -> None:
    cli = fake_cli(name)
    lane.use_builtin(PROVIDERS[name]())
    _, outcome = lane.run_scenario(cli, name, "success")
    assert outcome.kind == "reported" and outcome.preset == name, outcome.error
    (call,) = cli.calls()
    env = call["env"]
    assert set(env) == set(BASICS) | {"TMPDIR", "PATH", "HOME"} | LANE_FACTS | PROVIDER_VARS[name]
    assert {k: env[k] for k in expected_basics()} == expected_basics()
    assert env["HOME"] == str(lane.run_dir / "reviewers" / "correctness.1" / "home")
    assert not set(HOSTILE) & set(env) and "AGENTREVIEW_HOME" not in env and "PYTHONPATH" not in env
    assert all(env[key] == value for key, value in MODEL_KEYS.items() if key in env)
    assert not hostile_host.exists(), "PYTHONPATH reached the reviewer and ran its sitecustomize"
    # the --help probe: the basics only, with a throwaway HOME
    probes = cli.probe_calls()
    assert probes
    for probe in probes:
        assert set(probe["env"]) == set(BASICS) | {"TMPDIR", "PATH", "HOME", "NO_COLOR"}
        assert probe["env"]["HOME"] != os.environ["HOME"]


def test_an_exec_reviewer_gets_the_basics_the_users_home_and_the_lane_facts_only(
    lane, hostile_host: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.json"
    body = f"json.dump(dict(os.environ), open({str(seen)!r}, 'w'))\n"
    body += "open(os.environ['AGENTREVIEW_VERDICT_PATH'], 'w').write('{\"findings\": []}')\n"
    lane.exec_preset("bot", script(tmp_path, "r.py", body))
    outcome = lane.run()
    assert outcome.kind == "reported", outcome.error
    env = json.loads(seen.read_text())
    assert set(env) == set(BASICS) | {"TMPDIR", "PATH", "HOME", "AGENTREVIEW_VERDICT_PATH"} | LANE_FACTS
    assert env["HOME"] == os.environ["HOME"]  # a team script keeps its own configuration there
    assert not hostile_host.exists()


def test_a_preset_grants_the_variables_it_names(lane, fake_cli, hostile_host: Path, tmp_path: Path) -> None:
    cli = fake_cli("claude")
    lane.use_builtin(ClaudeProvider())
    lane.presets["claude"] = PresetSpec(name="claude", provider="claude", options={"env": ["MY_GATEWAY_KEY"]})
    _, outcome = lane.run_scenario(cli, "claude", "success")
    assert outcome.kind == "reported", outcome.error
    env = cli.calls()[0]["env"]
    assert env["MY_GATEWAY_KEY"] == "only-when-a-preset-names-it" and "GITHUB_TOKEN" not in env
    # an exec preset too, and a variable the host does not have is simply absent
    seen = tmp_path / "seen.json"
    body = f"json.dump(dict(os.environ), open({str(seen)!r}, 'w'))\n"
    body += "open(os.environ['AGENTREVIEW_VERDICT_PATH'], 'w').write('{\"findings\": []}')\n"
    lane.exec_preset("bot", script(tmp_path, "r.py", body), env=["MY_GATEWAY_KEY", "UNSET_ON_THIS_HOST"])
    assert lane.run().kind == "reported"
    env = json.loads(seen.read_text())
    assert env["MY_GATEWAY_KEY"] == "only-when-a-preset-names-it" and "UNSET_ON_THIS_HOST" not in env


@pytest.mark.parametrize(
    ("env", "error"),
    [
        ("MY_GATEWAY_KEY", "env must be an array of variable names"),
        (["AWS_*"], "env entry 'AWS_*' is not a variable name"),
        (["HOME"], "env may not name HOME: it points the reviewer at a home or configuration other than its private"),
        (["CLAUDE_CONFIG_DIR"], "env may not name CLAUDE_CONFIG_DIR"),
        (["OPENCODE_CONFIG"], "env may not name OPENCODE_CONFIG"),
        (["AGENTREVIEW_HOME"], "env may not name AGENTREVIEW_HOME"),
    ],
)
@pytest.mark.parametrize("provider", ["claude", "exec"])
def test_a_preset_cannot_grant_what_undoes_isolation(
    lane, fake_cli, hostile_host: Path, provider: str, env, error: str
) -> None:
    cli = fake_cli("claude")
    lane.use_builtin(ClaudeProvider())
    command = {"command": [sys.executable, "-c", "raise SystemExit(3)"]} if provider == "exec" else {}
    lane.presets["bot"] = PresetSpec(name="bot", provider=provider, options={"env": env, **command})
    outcome = lane.run(lane.check(preset="bot", fallbackPresets=["backup"]))
    assert outcome.kind == "reported" and outcome.preset == "backup"
    (fallback,) = outcome.fallbacks
    assert fallback.error.startswith("preset 'bot': ") and error in fallback.error, fallback.error
    assert fallback.error.endswith("[presets.bot] in presets.toml")
    assert cli.calls() == []


def test_codex_gets_the_variables_its_preset_model_provider_reads(lane, fake_cli, hostile_host, monkeypatch) -> None:
    cli = fake_cli("codex")
    lane.use_builtin(CodexProvider())
    monkeypatch.setenv("STUB_API_KEY", "stub-key")
    monkeypatch.setenv("TEAM_HEADER", "team")
    stub = {
        "base_url": "http://127.0.0.1:9/v1",
        "env_key": "STUB_API_KEY",
        "env_http_headers": {"X-Team": "TEAM_HEADER"},
    }
    config = {"model_provider": "stub", "model_providers": {"stub": stub}}
    lane.presets["codex"] = PresetSpec(name="codex", provider="codex", options={"config": config})
    _, outcome = lane.run_scenario(cli, "codex", "success")
    assert outcome.kind == "reported", outcome.error
    env = cli.calls()[0]["env"]
    assert (env["STUB_API_KEY"], env["TEAM_HEADER"]) == ("stub-key", "team") and "GITHUB_TOKEN" not in env
    # the same rule as env: a model provider cannot name agentreview's own variables
    stub["env_key"] = "AGENTREVIEW_HOME"
    outcome = lane.run(lane.check(preset="codex"))
    assert outcome.kind == "skipped"
    assert "config.model_providers env_key/env_http_headers may not name AGENTREVIEW_HOME" in outcome.error
    assert len(cli.calls()) == 1


def test_relative_path_entries_never_pick_the_reviewer_nor_reach_it(lane, fake_cli, hostile_host, monkeypatch) -> None:
    # A reviewer runs in the reviewed repository: with '.' (or '' or 'bin') on PATH, the change's author could put
    # their own `claude`, `git` or `node` there. Such entries neither find the CLI nor reach the reviewer.
    cli = fake_cli("claude")
    lane.use_builtin(ClaudeProvider())
    marker = lane.run_dir / "trap-ran"
    for trap in (lane.repo.root / "claude", lane.repo.root / "bin" / "claude"):
        trap.parent.mkdir(exist_ok=True)
        trap.write_text(f"#!/bin/sh\ntouch {marker}\n")
        trap.chmod(0o755)
    monkeypatch.chdir(lane.repo.root)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "", "bin", os.environ["PATH"]]))
    _, outcome = lane.run_scenario(cli, "claude", "success")
    assert outcome.kind == "reported", outcome.error
    assert not marker.exists()
    path = cli.calls()[0]["env"]["PATH"].split(os.pathsep)
    assert all(os.path.isabs(entry) for entry in path) and path[0] == str(cli.bin_dir)
