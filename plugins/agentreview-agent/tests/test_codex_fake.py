"""The ``codex`` provider against a fake Codex CLI replaying recorded output
(reviewer-clis.md section 6): status and error per case, and the exact argv and
environment — read-only sandbox, user config ignored, private CODEX_HOME with only a
linked auth.json, the planted MCP server never reached."""

from __future__ import annotations

import json

import pytest
from agentreview_agent.providers.codex import CodexProvider, audit_stream, config_overrides

from agentreview.model.contracts import PresetSpec
from agentreview.model.lanes import to_lane_result


@pytest.fixture
def codex(lane, fake_cli):
    cli = fake_cli("codex")
    lane.use_builtin(CodexProvider())
    return cli


def run(lane, fake, scenario: str, **check):
    return lane.run_scenario(fake, "codex", scenario, **check)


def test_success_exact_argv_and_private_home(lane, codex) -> None:
    finding = {"severity": "high", "title": "bug", "detail": "d", "file": "app.py", "line": 1}
    codex.play(verdict=json.dumps({"decision": "approve", "summary": "s", "findings": [finding]}))
    check, outcome = run(lane, codex, "success")
    assert outcome.kind == "reported", outcome.error
    assert (outcome.preset, outcome.session_id) == ("codex", "01a2293e-fake")
    assert to_lane_result(check, outcome, 1).status == "fail"
    (call,) = codex.calls()
    work = lane.run_dir / "reviewers" / "correctness.1"
    disables = []
    for feature in ("hooks", "unified_exec", "multi_agent", "goals", "apps", "plugins"):
        disables += ["--disable", feature]
    assert call["argv"] == [
        "exec", "--sandbox", "read-only", "--ephemeral", "--skip-git-repo-check", "--ignore-user-config",
        "--ignore-rules", *disables, "-c", 'web_search="disabled"',
        "--json", "--output-schema", str(work / "verdict.schema.json"), "-o", str(work / "last-message.json"),
        "-C", str(lane.repo.root), "-",
    ]  # fmt: skip
    assert call["home"] == str(work / "codex-home") == call["env"]["CODEX_HOME"]
    assert call["listing"] == {"auth.json": f"link:{codex.home / '.codex' / 'auth.json'}"}  # no config.toml
    assert "final answer ONLY this JSON" in call["stdin"]


def test_user_codex_home_variable_is_where_auth_is_linked_from(lane, codex, monkeypatch, tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere-codex"
    elsewhere.mkdir()
    (elsewhere / "auth.json").write_text('{"OPENAI_API_KEY": "other"}')
    (elsewhere / "config.toml").write_text('[mcp_servers.evil]\ncommand = "sh"\n')
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    _, outcome = run(lane, codex, "success")
    assert outcome.kind == "reported", outcome.error
    (call,) = codex.calls()
    assert call["listing"] == {"auth.json": f"link:{elsewhere / 'auth.json'}"}
    assert call["env"]["CODEX_HOME"] != str(elsewhere)


def test_config_option_allows_model_selection_only(lane, codex) -> None:
    stub = {"base_url": "http://127.0.0.1:9/v1", "wire_api": "responses"}
    assert config_overrides({"config": {"model_provider": "stub", "model_providers": {"stub": stub}}}) == [
        "-c", 'model_provider="stub"', "-c", 'model_providers.stub.base_url="http://127.0.0.1:9/v1"',
        "-c", 'model_providers.stub.wire_api="responses"',
    ]  # fmt: skip
    lane.presets["codex"] = PresetSpec(
        name="codex", provider="codex", options={"config": {"sandbox_mode": "danger-full-access"}}
    )
    _, outcome = run(lane, codex, "success")
    assert outcome.kind == "skipped" and "config.sandbox_mode is not allowed" in outcome.error
    assert codex.calls() == []


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("auth", "authentication failed: unexpected status 401 Unauthorized: invalid x-api-key, url: "),
        ("quota", "quota or rate limit: You've hit your usage limit."),
    ],
)
def test_unavailable_falls_back(lane, codex, scenario: str, error: str) -> None:
    _, outcome = run(lane, codex, scenario, fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup"
    assert outcome.fallbacks[0].preset == "codex" and outcome.fallbacks[0].error.startswith(error)


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("tool_breach", "reviewer used 'file_change', which a read-only review may not"),
        ("unknown_item", "reviewer used 'collab_tool_call', which a read-only review may not"),
        ("declined", "reviewer's command was declined by the sandbox policy: [path] -lc 'rm -rf x'"),  # redacted
    ],
)
def test_boundary_violation_is_terminal(lane, codex, scenario: str, error: str) -> None:
    _, outcome = run(lane, codex, scenario, fallbackPresets=["backup"])
    assert outcome.kind == "skipped" and not outcome.fallbacks
    assert outcome.error == "reviewer boundary violation: " + error


def test_an_unknown_item_type_is_drift_and_falls_back(lane, codex) -> None:
    _, outcome = run(lane, codex, "new_item", fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup"
    [fallback] = outcome.fallbacks
    assert fallback.error == "capability_missing: unknown item type 'plan_update'"
    assert fallback.unknown_fields == ("unknown item type 'plan_update'",) and fallback.unsafe_values == ()
    _, alone = run(lane, codex, "new_item")
    assert alone.kind == "skipped" and alone.error == fallback.error
    assert alone.unknown_fields == fallback.unknown_fields and not alone.unsafe_values


def test_user_mcp_config_would_be_a_breach_if_reached(codex, tmp_path) -> None:
    # Run the fake as a naive wrapper would (user CODEX_HOME, user config): the planted MCP server is used and the
    # audit stops it. The provider's private home and --ignore-user-config are what keep it out.
    import subprocess

    out = subprocess.run(
        [str(codex.bin_dir / "codex"), "exec", "--json", "-"],
        input="hi", capture_output=True, text=True, timeout=30, cwd=tmp_path,
    ).stdout  # fmt: skip
    audit = audit_stream(out).outcome
    assert audit.unsafe_values == ["reviewer used 'mcp_tool_call', which a read-only review may not"]
    assert audit.unknown_fields == []


def test_harmless_noise_and_commands_in_the_sandbox_are_tolerated(lane, codex) -> None:
    _, outcome = run(lane, codex, "drift")
    assert outcome.kind == "reported", outcome.error


def test_malformed_answer_stops_with_excerpt(lane, codex) -> None:
    _, outcome = run(lane, codex, "malformed", fallbackPresets=["backup"])
    assert outcome.kind == "skipped" and not outcome.fallbacks
    assert "looks like a finding" in outcome.error and "src/app.py:12 user input reaches eval()" in outcome.error


def test_hang_is_killed_at_the_deadline(lane, codex) -> None:
    _, outcome = run(lane, codex, "hang", fallbackPresets=["backup"], timeoutMs=1500)
    assert outcome.kind == "timeout" and not outcome.fallbacks


def test_missing_required_flag_is_capability_missing(lane, codex) -> None:
    codex.play(help_drop="--ignore-user-config")
    _, outcome = run(lane, codex, "success", fallbackPresets=["backup"])
    assert outcome.preset == "backup" and "its help lacks --ignore-user-config" in outcome.fallbacks[0].error
    assert codex.calls() == []
