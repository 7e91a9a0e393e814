"""The ``opencode`` and ``kimi`` providers against fake CLIs replaying recorded output
(reviewer-clis.md section 6): status and error per case, and the argv and environment
used — a private project/XDG dirs for OpenCode, a private KIMI_CODE_HOME with the tool
allow-list for Kimi, credentials linked, the planted user MCP config never reached."""

from __future__ import annotations

import json

import pytest
from agentreview_agent.providers.kimi import KimiProvider
from agentreview_agent.providers.opencode import AGENT, OpenCodeProvider

from agentreview.model.lanes import to_lane_result

PROVIDERS = {"opencode": OpenCodeProvider, "kimi": KimiProvider}


@pytest.fixture(params=["opencode", "kimi"])
def reviewer(request, lane, fake_cli):
    name = request.param
    cli = fake_cli(name)
    lane.use_builtin(PROVIDERS[name]())
    return name, cli


def run(lane, reviewer, scenario: str, **check):
    name, fake = reviewer
    return lane.run_scenario(fake, name, scenario, **check)


def test_success_blocks_on_a_high_finding(lane, reviewer) -> None:
    name, cli = reviewer
    cli.play(verdict=json.dumps({"findings": [{"severity": "high", "title": "bug"}]}))
    check, outcome = run(lane, reviewer, "success")
    assert outcome.kind == "reported", outcome.error
    assert outcome.preset == name and outcome.session_id
    assert to_lane_result(check, outcome, 1).status == "fail"
    (call,) = cli.calls()
    work = lane.run_dir / "reviewers" / "correctness.1"
    if name == "opencode":
        project = work / "opencode" / "project"
        assert call["argv"][:9] == [
            "run",
            "--dir",
            str(project),
            "--agent",
            AGENT,
            "--format",
            "json",
            "--pure",
            "--file",
        ]
        # the spec's reviewer session label, where the CLI can name a session (opencode run --title)
        assert call["argv"][10:12] == ["--title", "review:rev:correctness"]
        assert call["cwd"] == str(project)
        assert call["env"]["XDG_CONFIG_HOME"] == str(work / "opencode" / "xdg_config_home")
        assert call["env"]["XDG_DATA_HOME"] == str(work / "opencode" / "xdg_data_home")
    else:
        assert call["argv"][0] == "-p" and "final answer ONLY this JSON" in call["argv"][1]
        assert call["argv"][2:] == [
            "--output-format", "stream-json", "--add-dir", str(lane.repo.root), "--skills-dir", str(work / "skills"),
        ]  # fmt: skip
        assert call["cwd"] == str(work / "cwd")
        assert call["env"]["KIMI_CODE_HOME"] == str(work / "kimi-home")
        assert call["env"]["KIMI_DISABLE_TELEMETRY"] == "1"
        assert call["env"]["KIMI_LOOP_MAX_ATTEMPTS_PER_STEP"] == "3"  # its own retries, capped
        # only provider/model settings kept (no [mcp]), the allow-list added, credentials linked
        assert call["config"] == {
            "default_model": "kimi-k2",
            "providers": {"moonshot": {"api_key": "user-key"}},
            "tools": {"enabled": ["Read", "Grep", "Glob"]},
        }
        assert call["listing"] == {
            "config.toml": "file",
            "credentials": f"link:{cli.home / '.kimi-code' / 'credentials'}",
        }


@pytest.mark.parametrize(("scenario", "error"), [("auth", "authentication failed"), ("quota", "quota or rate limit")])
def test_auth_and_quota_fall_back(lane, reviewer, scenario: str, error: str) -> None:
    name, _ = reviewer
    _, outcome = run(lane, reviewer, scenario, fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup"
    assert outcome.fallbacks[0].preset == name and outcome.fallbacks[0].error.startswith(error)


def test_tool_breach_is_terminal(lane, reviewer) -> None:
    name, _ = reviewer
    _, outcome = run(lane, reviewer, "tool_breach", fallbackPresets=["backup"])
    tool = "bash" if name == "opencode" else "Bash"
    assert outcome.kind == "skipped" and not outcome.fallbacks
    breach = f"reviewer used tool '{tool}' outside the allow-list"
    assert outcome.error.startswith(f"reviewer boundary violation: {breach} (input: "), outcome.error
    assert "touch pwned" in outcome.error and outcome.unsafe_values == (outcome.error.split(": ", 1)[1],)


def test_drift(lane, reviewer) -> None:
    name, _ = reviewer
    _, outcome = run(lane, reviewer, "drift", fallbackPresets=["backup"])
    if name == "opencode":  # the preflight shows a tool the generated agent should have turned off
        assert outcome.preset == "backup"
        assert outcome.fallbacks[0].error == "capability_missing: the generated agent still has tools: bash"
    else:  # an unknown meta event and an allowed read are tolerated
        assert outcome.kind == "reported" and outcome.preset == "kimi", outcome.error


def test_malformed_answer_stops(lane, reviewer) -> None:
    _, outcome = run(lane, reviewer, "malformed", fallbackPresets=["backup"])
    assert outcome.kind == "skipped" and not outcome.fallbacks and "looks like a finding" in outcome.error
    assert "app.py:1 x changed" in outcome.error


def test_hang_is_a_timeout(lane, reviewer) -> None:
    _, outcome = run(lane, reviewer, "hang", fallbackPresets=["backup"], timeoutMs=2500)
    assert outcome.kind == "timeout" and not outcome.fallbacks


def test_a_preflight_that_outlasts_the_lane_is_its_timeout_not_a_missing_capability(lane, fake_cli) -> None:
    """``opencode debug agent`` is bounded by the lane's own budget (at least a minute, or half of what
    remains): one that does not answer in it ends the lane as a timeout, never as ``capability_missing``."""
    lane.use_builtin(OpenCodeProvider())
    _, outcome = lane.run_scenario(fake_cli("opencode"), "opencode", "slow_preflight", timeoutMs=2500)
    assert outcome.kind == "timeout" and not outcome.fallbacks, outcome.error


def test_a_broken_stream_falls_back_at_once(lane, reviewer) -> None:
    """The CLI retried the broken stream itself and then gave up: ``stream_failed``, and the lane runs it no
    more (one run of the CLI) but falls back."""
    name, cli = reviewer
    _, outcome = run(lane, reviewer, "broken", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup", outcome
    (failure,) = outcome.fallbacks
    assert failure.preset == name and failure.error.startswith(f"stream_failed: {name}'s model stream failed")
    assert ("terminated" if name == "kimi" else "Connection reset by server") in failure.error
    assert len(cli.calls()) == 1


def test_a_server_error_is_no_stream_failure(lane, reviewer) -> None:
    """The same retries ending on an HTTP status (a 503) are the model's server answering, not a broken stream:
    a transient error the lane retries once before falling back."""
    name, cli = reviewer
    _, outcome = run(lane, reviewer, "server_error", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup", outcome
    (failure,) = outcome.fallbacks
    assert failure.preset == name and failure.error.startswith("reviewer's turn ended with an error")
    assert "stream_failed" not in failure.error
    assert len(cli.calls()) == 2


def test_a_preset_may_choose_kimis_own_attempts(lane, fake_cli, monkeypatch) -> None:
    from agentreview.model.contracts import PresetSpec

    cli = fake_cli("kimi")
    lane.use_builtin(KimiProvider())
    granted = {"env": ["KIMI_LOOP_MAX_ATTEMPTS_PER_STEP"]}
    lane.presets["kimi"] = PresetSpec(name="kimi", provider="kimi", options=granted)
    monkeypatch.setenv("KIMI_LOOP_MAX_ATTEMPTS_PER_STEP", "7")
    _, outcome = lane.run_scenario(cli, "kimi", "success")
    assert outcome.kind == "reported" and outcome.preset == "kimi", outcome.error
    assert cli.calls()[0]["env"]["KIMI_LOOP_MAX_ATTEMPTS_PER_STEP"] == "7"
