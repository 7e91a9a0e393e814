"""Launching and lifecycle of reviewer lanes, against the fake CLIs and the interposer in front of them
(``fakes/interpose.py``): the belt/gate write side, refreshed credentials, what every provider sees,
the Node check, a stalled stream, the host-remediation retry and the same-family exclusion.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agentreview_agent.providers.claude import ClaudeProvider
from agentreview_agent.providers.codex import CodexProvider
from agentreview_agent.providers.kimi import KimiProvider
from agentreview_agent.providers.opencode import OpenCodeProvider
from agentreview_agent.runtime import node_problem, shebang_interpreter

from agentreview.model.contracts import PresetSpec
from conftest import FAKES, git

PROVIDERS = {"claude": ClaudeProvider, "codex": CodexProvider, "kimi": KimiProvider, "opencode": OpenCodeProvider}


def interposed(lane, fake, name: str, **options) -> Path:
    """Install the interposer in front of the fake ``name`` and make the built-in preset run it."""
    target = fake.bin_dir / f"{name}-interposed"
    prelude = f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(FAKES)!r})  # for fakelib\n"
    target.write_text(prelude + (FAKES / "interpose.py").read_text())
    target.chmod(0o755)
    lane.use_builtin(PROVIDERS[name]())
    lane.presets[name] = PresetSpec(name=name, provider=name, options={"binary": str(target), **options})
    return target


def interpose(fake, **settings) -> None:
    fake.play(interpose=settings)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the write side


def test_codex_refusing_a_belt_setting_runs_once_more_without_it(lane, fake_cli) -> None:
    codex = fake_cli("codex")
    interposed(lane, codex, "codex")
    interpose(codex, reject='web_search="disabled"')
    _, outcome = lane.run_scenario(codex, "codex", "success", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "codex", outcome.error
    refused, ran = codex.calls()
    assert refused["interposed"] == "rejected" and "interposed" not in ran
    # the strict subset: exactly the first invocation without the belt settings, nothing else changed
    belt = ["-c", 'web_search="disabled"', "--ignore-rules"]
    assert [a for a in refused["argv"] if a not in belt] == ran["argv"]
    assert 'web_search="disabled"' not in ran["argv"] and "--ignore-rules" not in ran["argv"]
    assert {"--sandbox", "read-only", "--ignore-user-config", "--ephemeral"} <= set(ran["argv"])
    (note,) = outcome.fallbacks
    assert note.preset == "codex" and note.error.startswith("codex refused its invocation before starting; ran it")
    assert "web_search" in note.error and "also guaranteed by the event audit" in note.error


def test_codex_refusing_a_gate_setting_is_never_dropped(lane, fake_cli) -> None:
    codex = fake_cli("codex")
    interposed(lane, codex, "codex")
    interpose(codex, reject="read-only")  # the sandbox mode has no second path: it stays, and the lane fails closed
    _, outcome = lane.run_scenario(codex, "codex", "success", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup"
    calls = codex.calls()
    assert len(calls) == 2 and all(c["interposed"] == "rejected" for c in calls)
    assert all(c["argv"][c["argv"].index("--sandbox") + 1] == "read-only" for c in calls)
    note, failure = outcome.fallbacks
    assert note.preset == failure.preset == "codex"
    assert failure.error.startswith("capability_missing: codex refused its invocation: Error loading config.toml")


def test_claude_refusing_an_optional_flag_runs_once_more_without_the_belt_flags(lane, fake_cli) -> None:
    claude = fake_cli("claude")
    interposed(lane, claude, "claude")
    interpose(claude, reject="--safe-mode")
    _, outcome = lane.run_scenario(claude, "claude", "success")
    assert outcome.kind == "reported" and outcome.preset == "claude", outcome.error
    refused, ran = claude.calls()
    assert "--safe-mode" in refused["argv"] and "--safe-mode" not in ran["argv"]
    assert "--disable-slash-commands" not in ran["argv"] and "--no-session-persistence" not in ran["argv"]
    for gate in ("--strict-mcp-config", "--setting-sources", "--tools", "--permission-mode"):
        assert gate in ran["argv"]
    assert ran["argv"][ran["argv"].index("--tools") + 1] == "Read,Grep,Glob"


# ----------------------------------------------------------------------------- credentials


def _claude_credentials(fake) -> Path:
    return fake.home / ".claude" / ".credentials.json"


def test_a_token_refreshed_by_rename_reaches_the_users_file(lane, fake_cli) -> None:
    claude = fake_cli("claude")
    interposed(lane, claude, "claude")
    user = _claude_credentials(claude)
    user.write_text(json.dumps({"claudeAiOauth": {"accessToken": "old", "refreshToken": "r1", "expiresAt": 1000}}))
    user.chmod(0o600)
    fresh = {"claudeAiOauth": {"accessToken": "new", "refreshToken": "r2", "expiresAt": 2000}}
    interpose(claude, refresh={"dir_env": "CLAUDE_CONFIG_DIR", "name": ".credentials.json", "content": fresh})
    _, outcome = lane.run_scenario(claude, "claude", "success")
    assert outcome.kind == "reported", outcome.error
    assert json.loads(user.read_text()) == fresh and not user.is_symlink()
    assert user.stat().st_mode & 0o777 == 0o600
    assert not outcome.fallbacks  # saved: nothing to note
    assert sorted(p.name for p in user.parent.iterdir() if p.name.startswith(".agentreview-")) == []


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ({"claudeAiOauth": {"accessToken": "stale", "refreshToken": "r0", "expiresAt": 10}}, "older than yours"),
        ({"something": "else"}, "another kind of credential"),
        ("not json at all", "not a JSON object"),
    ],
)
def test_a_refreshed_file_that_is_not_a_newer_credential_is_noted_not_saved(lane, fake_cli, content, why) -> None:
    claude = fake_cli("claude")
    interposed(lane, claude, "claude")
    user = _claude_credentials(claude)
    original = json.dumps({"claudeAiOauth": {"accessToken": "old", "refreshToken": "r1", "expiresAt": 1000}})
    user.write_text(original)
    interpose(claude, refresh={"dir_env": "CLAUDE_CONFIG_DIR", "name": ".credentials.json", "content": content})
    _, outcome = lane.run_scenario(claude, "claude", "success")
    assert outcome.kind == "reported", outcome.error
    assert user.read_text() == original
    (note,) = outcome.fallbacks
    assert note.preset == "claude" and "was not saved to" in note.error and why in note.error


# ----------------------------------------------------------------------------- every provider sees the change


def test_kimi_gets_the_range_files_in_its_folder_and_a_prompt_without_commands(lane, fake_cli) -> None:
    kimi = fake_cli("kimi")
    lane.use_builtin(KimiProvider())
    _, outcome = lane.run_scenario(kimi, "kimi", "success")
    assert outcome.kind == "reported", outcome.error
    (call,) = kimi.calls()
    where, prompt = lane.run_dir / "reviewers" / "correctness.1" / "cwd", call["argv"][1]
    assert call["cwd"] == str(where)
    assert f"`git diff` to {where / 'range.diff'}" in prompt and f"`git log` to {where / 'range.log'}" in prompt
    assert "Run the touched packages' tests" not in prompt and "run no commands and no tests" in prompt


def test_opencode_prompt_file_names_the_range_files(lane, fake_cli, monkeypatch) -> None:
    fake = fake_cli("opencode")
    lane.use_builtin(OpenCodeProvider())
    seen: dict[str, str] = {}
    real = OpenCodeProvider.run

    def spy(self, request, argv, **kw):  # read the prompt file while the attempt's folder still exists
        if "--file" in argv:
            seen["prompt"] = Path(argv[argv.index("--file") + 1]).read_text()
            seen["diff"] = (request.work_dir / "range.diff").read_text()
        return real(self, request, argv, **kw)

    monkeypatch.setattr(OpenCodeProvider, "run", spy)
    _, outcome = lane.run_scenario(fake, "opencode", "success")
    assert outcome.kind == "reported", outcome.error
    assert "-x = 1\n+x = 2" in seen["diff"]
    assert "`git diff` to " in seen["prompt"] and "run no commands and no tests" in seen["prompt"]
    assert "Run the touched packages' tests" not in seen["prompt"]
    # the model and provider that actually answered, from `opencode export`
    assert outcome.model == "anthropic/claude-sonnet-4"


def test_codex_prompt_allows_read_only_commands_but_no_tests(lane, fake_cli) -> None:
    codex = fake_cli("codex")
    lane.use_builtin(CodexProvider())
    _, outcome = lane.run_scenario(codex, "codex", "success")
    assert outcome.kind == "reported", outcome.error
    (call,) = codex.calls()
    assert "You may run read-only commands" in call["stdin"] and "run no tests" in call["stdin"]
    assert f"`git diff {lane.repo.base}..{lane.repo.head}`" in call["stdin"]


def test_kimi_model_comes_from_the_private_config_when_the_preset_names_none(lane, fake_cli) -> None:
    kimi = fake_cli("kimi")
    lane.use_builtin(KimiProvider())
    _, outcome = lane.run_scenario(kimi, "kimi", "success")
    assert outcome.kind == "reported" and outcome.model == "kimi-k2", outcome.error


def _node(bin_dir: Path, version: str) -> None:
    node = bin_dir / "node"
    # A stand-in Node: it reports ``version`` and runs a script with Python (the fake Kimi is a Python script).
    body = f'if [ "$1" = "--version" ]; then echo {version}; exit 0; fi\nexec {sys.executable} "$@"\n'
    node.write_text("#!/bin/sh\n" + body)
    node.chmod(0o755)


@pytest.mark.parametrize(("version", "runs"), [("v20.11.1", False), ("v22.19.0", True)])
def test_kimi_under_an_old_node_says_so_before_launching(lane, fake_cli, version, runs) -> None:
    kimi = fake_cli("kimi")
    script = kimi.bin_dir / "kimi"
    lines = script.read_text().splitlines()
    script.write_text("\n".join(["#!/usr/bin/env node", *lines[1:]]) + "\n")  # as npm installs Kimi Code
    _node(kimi.bin_dir, version)
    lane.use_builtin(KimiProvider())
    _, outcome = lane.run_scenario(kimi, "kimi", "success", fallbackPresets=["backup"])
    if runs:
        assert outcome.kind == "reported" and outcome.preset == "kimi", outcome.error
        return
    assert outcome.preset == "backup" and kimi.calls() == [] and kimi.probe_calls() == []
    (failure,) = outcome.fallbacks
    assert failure.error.startswith("Kimi Code needs Node ≥ 22.19 (found v20.11.1 at ")


def test_the_node_check_never_starts_a_node_from_the_checkout(tmp_path: Path, monkeypatch) -> None:
    # The attack: the reviewed repository ships its own ./node, and PATH has an empty or relative entry
    # (PATH=":$PATH"); the Node check must resolve only on absolute entries, as the host finds every program.
    checkout, system = tmp_path / "checkout", tmp_path / "system"
    checkout.mkdir()
    system.mkdir()
    marker = tmp_path / "planted-node-ran"
    planted = checkout / "node"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\necho v99.0.0\n")
    planted.chmod(0o755)
    _node(system, "v20.11.1")
    script = tmp_path / "kimi"
    script.write_text("#!/usr/bin/env node\n")
    monkeypatch.chdir(checkout)
    for path in (f":{system}", f".:{system}", f"node_modules/.bin:{system}"):
        assert shebang_interpreter(str(script), path) == str(system / "node")
        problem = node_problem(str(script), path, "Kimi Code", (22, 19))
        assert problem == f"Kimi Code needs Node ≥ 22.19 (found v20.11.1 at {system / 'node'})"
    assert node_problem(str(script), ".", "Kimi Code", (22, 19)) is None  # no absolute entry: nothing to start
    script.write_text("#!node\n")  # a relative interpreter is never started by the check
    assert shebang_interpreter(str(script), f":{system}") is None
    assert not marker.exists()


def test_a_stalled_stream_falls_back_instead_of_burning_the_lane(lane, fake_cli) -> None:
    kimi = fake_cli("kimi")
    interposed(lane, kimi, "kimi", idle_timeout=1)
    interpose(kimi, stall={"role": "meta", "type": "system.version", "version": "2.1.0"})
    _, outcome = lane.run_scenario(kimi, "kimi", "success", fallbackPresets=["backup"], timeoutMs=120000)
    assert outcome.kind == "reported" and outcome.preset == "backup"
    (failure,) = outcome.fallbacks
    assert failure.preset == "kimi" and failure.error.startswith("stream_stalled: kimi produced no output")


# ----------------------------------------------------------------------------- host-remediation retry


def test_codex_sandbox_start_failure_is_retried_once_by_the_host(lane, fake_cli) -> None:
    codex = fake_cli("codex")
    interposed(lane, codex, "codex")
    interpose(codex, host_path=2)  # the first attempt (and its belt retry) fails; the host's rerun succeeds
    _, outcome = lane.run_scenario(codex, "codex", "success", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "codex", outcome.error
    assert [c.get("interposed") for c in codex.calls()] == ["host_path", "host_path", None]
    assert [f.error.split(":")[0] for f in outcome.fallbacks] == [
        "codex refused its invocation before starting; ran it once more without the belt settings",
        "host_path_unavailable",
    ]


def test_codex_sandbox_failing_again_after_the_host_retry_falls_back(lane, fake_cli) -> None:
    codex = fake_cli("codex")
    interposed(lane, codex, "codex")
    interpose(codex, host_path=99)
    _, outcome = lane.run_scenario(codex, "codex", "success", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup"
    assert len(codex.calls()) == 4  # two attempts, each with its belt retry
    assert outcome.fallbacks[-1].error.startswith("host_path_unavailable: ")
    assert "host_path_unavailable_after_host_retry" in outcome.fallbacks[-1].error


@pytest.mark.parametrize("name", ["claude", "kimi"])
def test_an_auth_failure_is_retried_once_by_the_host(lane, fake_cli, name) -> None:
    fake = fake_cli(name)
    interposed(lane, fake, name)
    interpose(fake, auth=1)
    _, outcome = lane.run_scenario(fake, name, "success", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == name, outcome.error
    assert len(fake.calls()) == 2
    (note,) = outcome.fallbacks
    assert note.error == "auth_path_unavailable: the first run failed; the host ran the preset once more"


# ----------------------------------------------------------------------------- same-family exclusion


def _agent_commit(lane, trailer: str) -> None:
    lane.repo.head = lane.repo.commit("app.py", "x = 3\n", f"raise x\n\n{trailer}\n")


def test_a_change_co_authored_by_claude_is_not_reviewed_by_claude(lane, fake_cli) -> None:
    claude = fake_cli("claude")
    lane.use_builtin(ClaudeProvider())
    _agent_commit(lane, "Co-authored-by: Claude <noreply@anthropic.com>")
    _, outcome = lane.run_scenario(claude, "claude", "success", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup"
    assert claude.calls() == []
    (skip,) = outcome.fallbacks
    assert skip.preset == "claude" and skip.error.startswith(
        "same_family_as_implementer: the change was written by the anthropic family (commit "
    )
    assert "Co-authored-by: Claude <noreply@anthropic.com>" in skip.error


def test_no_independent_reviewer_left_skips_the_lane(lane, fake_cli) -> None:
    codex = fake_cli("codex")
    lane.use_builtin(CodexProvider())
    lane.presets["codex-2"] = PresetSpec(name="codex-2", provider="codex")
    lane.repo.head = lane.repo.commit("app.py", "x = 4\n", "change")
    request = lane.request(lane.check(preset="codex", fallbackPresets=["codex-2"]))
    from dataclasses import replace

    from agentreview_agent.executor import AgentLaneExecutor

    outcome = AgentLaneExecutor().run_lane(replace(request, authored_by=frozenset({"openai"})))
    assert outcome.kind == "skipped" and codex.calls() == []
    assert outcome.error.startswith("no_independent_reviewer_available: every preset of this lane is of a family")
    assert [f.preset for f in outcome.fallbacks] == ["codex", "codex-2"]
    assert all("agentreview run --authored-by" in f.error for f in outcome.fallbacks)


def test_opencode_answering_with_the_authors_family_is_not_used(lane, fake_cli) -> None:
    opencode = fake_cli("opencode")
    lane.use_builtin(OpenCodeProvider())
    opencode.play(ran="openai/gpt-5", verdict=json.dumps({"findings": []}))
    _agent_commit(lane, "Co-authored-by: Codex <codex@openai.com>")
    _, outcome = lane.run_scenario(opencode, "opencode", "success", fallbackPresets=["backup"])
    assert len(opencode.calls()) == 1  # its family was only known once it had answered
    assert outcome.kind == "reported" and outcome.preset == "backup"
    (skip,) = outcome.fallbacks
    assert skip.error.startswith("same_family_as_implementer: the change was written by the openai family")
    assert skip.error.endswith("answered, so its verdict is not used")


def test_a_human_named_in_a_trailer_excludes_nobody(lane, fake_cli) -> None:
    claude = fake_cli("claude")
    lane.use_builtin(ClaudeProvider())
    trailers = "Co-authored-by: Claude Monet <claude@example.org>\nReviewed-by: Claude <noreply@anthropic.com>"
    _agent_commit(lane, trailers)
    _, outcome = lane.run_scenario(claude, "claude", "success")
    assert outcome.kind == "reported" and outcome.preset == "claude", outcome.error
    assert git(lane.repo.root, "log", "-1", "--format=%(trailers:only)").count("Claude") == 2
