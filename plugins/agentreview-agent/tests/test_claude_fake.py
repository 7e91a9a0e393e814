"""The ``claude`` provider against a fake Claude Code CLI replaying recorded output
(reviewer-clis.md section 6): lane status and error for each case, and the exact argv
and environment used — isolation flags present, a private config dir with only a
linked credential, and the planted user config (MCP servers, bypassPermissions) never
reached."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from agentreview_agent.answer import VERDICT_SCHEMA
from agentreview_agent.providers.claude import ClaudeProvider, audit_stream

from agentreview.model.contracts import PresetSpec
from agentreview.model.lanes import to_lane_result

FINDING = {"severity": "high", "title": "SQL injection", "detail": "f-string", "file": "app.py", "line": 1}


@pytest.fixture
def claude(lane, fake_cli):
    cli = fake_cli("claude")
    lane.use_builtin(ClaudeProvider())
    return cli


def run(lane, fake, scenario: str, **check):
    return lane.run_scenario(fake, "claude", scenario, **check)


def test_success_exact_argv_private_home_and_no_user_config(lane, claude) -> None:
    claude.play(
        verdict=json.dumps(
            {"decision": "approve", "summary": "one bug", "findings": [{**FINDING, "detail": None, "line": None}]}
        ),
    )
    check, outcome = run(lane, claude, "success")
    assert outcome.kind == "reported", outcome.error
    assert (outcome.preset, outcome.model, outcome.session_id) == ("claude", "claude-opus-4-8[1m]", "1ed4-fake")
    assert outcome.summary == "one bug" and outcome.findings[0].line is None  # nulls from the schema dropped
    assert to_lane_result(check, outcome, 1).status == "fail"
    (call,) = claude.calls()
    work = lane.run_dir / "reviewers" / "correctness.1"
    assert call["argv"] == [
        "--print", "--tools", "Read,Grep,Glob", "--permission-mode", "plan",
        "--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}', "--setting-sources", "",
        "--safe-mode", "--disable-slash-commands", "--no-session-persistence",
        "--add-dir", str(work),
        "--output-format", "stream-json", "--verbose", "--json-schema", json.dumps(VERDICT_SCHEMA),
    ]  # fmt: skip
    assert Path(call["cwd"]).resolve() == lane.repo.root.resolve()
    assert call["config_dir"] == str(work / "claude-config")
    # only the credential, and linked, not copied; no settings.json, no .claude.json
    assert call["config_listing"] == {".credentials.json": f"link:{claude.home / '.claude' / '.credentials.json'}"}
    assert call["env"]["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert call["env"]["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] == "1"
    assert call["env"]["AGENTREVIEW_HEAD"] == lane.repo.head and "AGENTREVIEW_VERDICT_PATH" not in call["env"]
    # no shell: the range's diff and log were written for it and the prompt points at them
    assert call["work_listing"] == ["claude-config", "home", "range.diff", "range.log"]
    assert "-x = 1\n+x = 2" in call["diff_text"]
    assert f"`git diff` to {work / 'range.diff'}" in call["stdin"]
    assert "write EXACTLY ONE file" not in call["stdin"] and "final answer ONLY this JSON" in call["stdin"]
    assert not work.exists(), "the private home outlived the attempt"


def test_preset_model_is_passed(lane, claude) -> None:
    lane.presets["claude"] = PresetSpec(name="claude", provider="claude", model="sonnet")
    _, outcome = run(lane, claude, "success")
    assert outcome.kind == "reported"
    argv = claude.calls()[0]["argv"]
    assert argv[argv.index("--model") + 1] == "sonnet"


# An auth failure is retried once by the host (auth_path_unavailable) before the lane falls back.
AFTER_HOST_RETRY = " (auth_unavailable_after_host_retry: it failed the same way after one rerun by the host)"


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("auth", "authentication failed: Not logged in · Please run /login" + AFTER_HOST_RETRY),
        ("bad_key", "authentication failed: Invalid API key · Fix external API key" + AFTER_HOST_RETRY),
        ("quota", "quota or rate limit: You've hit your limit · resets 5pm"),
        ("prose", "claude's answer is not the verdict JSON (invalid model output)"),
        ("drift_container", "capability_missing: init has an unknown non-empty list 'connectors'"),
    ],
)
def test_unavailable_reviewer_falls_back(lane, claude, scenario: str, error: str) -> None:
    _, outcome = run(lane, claude, scenario, fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup"
    assert [(f.preset, f.error) for f in outcome.fallbacks] == [("claude", error)]
    _, alone = run(lane, claude, scenario)
    assert alone.kind == "skipped" and alone.error == error and alone.preset == "claude"


def test_drift_is_recorded_in_its_own_bucket_and_never_as_unsafe(lane, claude) -> None:
    check, outcome = run(lane, claude, "drift_container", fallbackPresets=["backup"])
    [fallback] = outcome.fallbacks
    assert fallback.unknown_fields == ("init has an unknown non-empty list 'connectors'",)
    assert fallback.unsafe_values == ()
    recorded = to_lane_result(check, outcome, 1).to_json_dict()
    assert recorded["fallbacks"] == [
        {"preset": "claude", "error": fallback.error, "unknownFields": list(fallback.unknown_fields)}
    ]
    assert "unsafeValues" not in recorded and "unknownFields" not in recorded  # the lane itself passed on backup


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("tool_breach", """reviewer used tool 'Bash' outside the allow-list (input: {"command": "touch pwned"})"""),
        ("unsafe_mode", "unsafe permissionMode 'bypassPermissions'"),
    ],
)
def test_boundary_violation_is_terminal(lane, claude, scenario: str, error: str) -> None:
    check, outcome = run(lane, claude, scenario, fallbackPresets=["backup"])
    assert outcome.kind == "skipped" and outcome.error == "reviewer boundary violation: " + error
    assert outcome.preset == "claude" and not outcome.fallbacks
    assert outcome.unsafe_values == (error,) and outcome.unknown_fields == ()
    assert to_lane_result(check, outcome, 1).to_json_dict()["unsafeValues"] == [error]
    assert not (lane.repo.root / "pwned").exists()


def test_drifted_scalar_and_empty_fields_are_tolerated(lane, claude) -> None:
    _, outcome = run(lane, claude, "drift_tolerated")
    assert outcome.kind == "reported", outcome.error


def test_malformed_answer_that_looks_like_a_finding_stops_with_redacted_excerpt(lane, claude) -> None:
    _, outcome = run(lane, claude, "malformed", fallbackPresets=["backup"])
    assert outcome.kind == "skipped" and not outcome.fallbacks
    assert outcome.error.startswith("malformed reviewer answer: claude's answer is not the verdict JSON but looks like")
    assert "src/app.py:12 SQL injection" in outcome.error
    assert "sk-abcdefghij" not in outcome.error and "token=[redacted]" in outcome.error


def test_hang_until_killed_is_a_timeout_without_fallback(lane, claude) -> None:
    _, outcome = run(lane, claude, "hang", fallbackPresets=["backup"], timeoutMs=1500)
    assert outcome.kind == "timeout" and outcome.error == "reviewer exceeded 1500ms and was killed"
    assert not outcome.fallbacks


def test_missing_isolation_flag_is_capability_missing(lane, claude) -> None:
    claude.play(help_drop="--strict-mcp-config")
    _, outcome = run(lane, claude, "success", fallbackPresets=["backup"])
    assert outcome.preset == "backup"
    assert "cannot run isolated: its help lacks --strict-mcp-config" in outcome.fallbacks[0].error
    assert claude.calls() == []  # never ran without the flag


def test_the_planted_config_would_be_caught_if_it_were_reached(claude, tmp_path: Path) -> None:
    # Run the fake the way a naive wrapper would: the planted MCP server and bypass mode show up, and the audit
    # treats them as a breach. This is what the provider's flags and private home keep out.
    out = subprocess.run(
        [str(claude.bin_dir / "claude"), "-p", "--output-format", "stream-json", "--verbose"],
        input="hi", capture_output=True, text=True, timeout=30, cwd=tmp_path,
    ).stdout  # fmt: skip
    unsafe = audit_stream(out).outcome.unsafe_values
    assert any("MCP servers: evil" in b for b in unsafe)
    assert any("bypassPermissions" in b for b in unsafe)
    assert any("Bash" in b for b in unsafe)


INIT = {"type": "system", "subtype": "init", "tools": ["Read", "Grep", "Glob", "StructuredOutput"],
        "mcp_servers": [], "permissionMode": "plan"}  # fmt: skip
TOOL_USE = {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash", "input": {}}]}}


def test_a_stray_line_is_drift_never_a_breach_and_the_events_after_it_are_still_audited() -> None:
    notice = "Update available: 2.1.400 · run claude update"  # no brace: cannot be (or hide) an event
    clean = audit_stream(f"{notice}\n{json.dumps(INIT)}\n").outcome
    assert clean.unsafe_values == [] and clean.unknown_fields == []
    mangled = audit_stream(f"{json.dumps(INIT)}\n{{not json\n").outcome
    assert mangled.unsafe_values == []
    assert mangled.unknown_fields == ["stdout line 2 is not JSON (Expecting property name enclosed in double quotes: "
                                      "line 1 column 2 (char 1)): {not json"]  # fmt: skip
    after = audit_stream(f"{json.dumps(INIT)}\n{{not json\n{json.dumps(TOOL_USE)}\n").outcome
    assert after.unsafe_values == ["reviewer used tool 'Bash' outside the allow-list"]
