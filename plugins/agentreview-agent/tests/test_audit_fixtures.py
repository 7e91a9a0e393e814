"""The audits against real CLI output: ``fixtures/<cli>/<version>/stream.jsonl`` is what that release
printed in an ordinary review lane (``capture_stream.py``). Each recorded stream must audit clean;
each case adds one line and states the class the audit must give it, so a field a new release adds
is a one-line case here. Kimi Code's fixture is its recorded output in reviewer-clis.md section 6,
since ``capture_stream.py`` does not set up its Node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentreview_agent.audit import AuditOutcome
from agentreview_agent.providers import claude, codex, kimi, opencode

from agentreview.api import ProcessResult

FIXTURES = Path(__file__).parent / "fixtures"
REPO, WORK = Path("/srv/review/repo"), Path("/srv/review/run/reviewers/correctness.1")


def recorded(cli: str) -> list[Path]:
    return sorted((FIXTURES / cli).glob("*/stream.jsonl"))


def stream_text(path: Path) -> str:
    return path.read_text().replace("{work}", str(WORK)).replace("{repo}", str(REPO)).replace("{tmp}", "/srv/review")


def claude_init(path: Path) -> dict:
    events = [json.loads(line) for line in stream_text(path).splitlines()]
    [init] = [e for e in events if e.get("type") == "system" and e.get("subtype") == "init"]
    return init


def claude_audit(init: dict) -> AuditOutcome:
    return claude.audit_init(init, [REPO, WORK])


CLAUDE_STREAMS = recorded("claude")


def test_both_claude_releases_are_recorded() -> None:
    assert {p.parent.name for p in CLAUDE_STREAMS} >= {"2.1.197", "2.1.332"}


@pytest.mark.parametrize("path", CLAUDE_STREAMS, ids=lambda p: p.parent.name)
def test_a_recorded_claude_stream_audits_clean(path: Path) -> None:
    audit = claude.audit_stream(stream_text(path), [REPO, WORK])
    assert audit.outcome.unsafe_values == [] and audit.outcome.unknown_fields == []
    assert audit.inits == 1 and audit.result is not None and audit.result["structured_output"]["findings"] == []
    answer = claude.classify(audit, ProcessResult(returncode=0))  # exited 0, not killed
    assert answer == {"decision": "approve", "summary": "stub review", "findings": []}


def test_the_fields_claude_2_1_332_added_are_tolerated_by_shape() -> None:
    # The release that took the name-based audit down: ten new fields, none judged by its name.
    init = claude_init(FIXTURES / "claude" / "2.1.332" / "stream.jsonl")
    added = {"served_by_anthropic", "sandbox_enabled", "original_cwd", "additional_directories",
             "messaging_socket_path", "fast_mode_disabled_reason", "per_turn_effort_active", "ultrathink_available",
             "ultrathink_typed_raises", "view_mode"}  # fmt: skip
    assert added <= init.keys() and init["sandbox_enabled"] is False
    assert init["additional_directories"] == [str(WORK)]  # the --add-dir this provider passed
    assert claude_audit(init) == AuditOutcome()


# One line each: the field a release might add, and the class the audit must give it.
TOLERATED = [
    {"new_scalar": "x"},
    {"new_flag": True},
    {"new_empty_list": []},
    {"new_empty_dict": {}},
    {"sandbox_enabled": False},  # named like authority, still a scalar
    {"dangerouslySkipPermissions": False},
    {"admin_mode": "off"},
    {"plugins": [{"name": "anything", "path": "/x"}]},  # vocabulary: never judged
    {"slash_commands": ["/anything"], "skills": [{"name": "y"}]},
    {"capabilities": ["new_capability_v9"]},
    {"agents": ["claude", "NewAgent"]},
    {"additional_directories": [str(WORK)]},
    {"additional_directories": [str(WORK / ".." / WORK.name)]},  # the same directory, spelled differently
]
DRIFT = [
    ({"connectors": ["gmail"]}, "init has an unknown non-empty list 'connectors'"),
    ({"surfaces": {"browser": {}}}, "init has an unknown non-empty dict 'surfaces'"),
    ({"sandbox_enabled": {"mode": "off"}}, "init has an unknown non-empty dict 'sandbox_enabled'"),
    ({"capabilities": [{"name": "x"}]}, "init field 'capabilities' is not a list of strings"),
    ({"additional_directories": "/"}, "init field 'additional_directories' is not a list of strings"),
    ({"tools": "Read,Grep"}, "init 'tools' is not a list of strings"),
    ({"tools": ["Read", "StructuredOutput"]}, "init lacks tools: Glob, Grep"),
    ({"permissionMode": None, "_drop": "permissionMode"}, "init has no permissionMode"),
]
UNSAFE = [
    ({"permissionMode": "bypassPermissions"}, "unsafe permissionMode 'bypassPermissions'"),
    ({"permissionMode": "acceptEdits"}, "unsafe permissionMode 'acceptEdits'"),
    ({"mcp_servers": [{"name": "evil", "status": "connected"}]}, "init lists MCP servers: evil"),
    ({"tools": ["Read", "Grep", "Glob", "StructuredOutput", "Bash"]}, "init offers tools outside the allow-list: Bash"),
    ({"additional_directories": [str(WORK), "/home/user"]},
     "init 'additional_directories' names directories agentreview did not pass: user"),
]  # fmt: skip


def _with(path: Path, extra: dict) -> dict:
    init = {**claude_init(path), **{k: v for k, v in extra.items() if k != "_drop"}}
    init.pop(extra.get("_drop", ""), None)
    return init


@pytest.mark.parametrize("path", CLAUDE_STREAMS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("extra", TOLERATED, ids=lambda e: ",".join(e))
def test_claude_init_tolerated(path: Path, extra: dict) -> None:
    assert claude_audit(_with(path, extra)) == AuditOutcome()


@pytest.mark.parametrize("path", CLAUDE_STREAMS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize(("extra", "drift"), DRIFT, ids=[",".join(e) for e, _ in DRIFT])
def test_claude_init_drift(path: Path, extra: dict, drift: str) -> None:
    assert claude_audit(_with(path, extra)) == AuditOutcome(unknown_fields=[drift])


@pytest.mark.parametrize("path", CLAUDE_STREAMS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize(("extra", "unsafe"), UNSAFE, ids=[",".join(e) for e, _ in UNSAFE])
def test_claude_init_unsafe_value(path: Path, extra: dict, unsafe: str) -> None:
    assert claude_audit(_with(path, extra)) == AuditOutcome(unsafe_values=[unsafe])


@pytest.mark.parametrize(
    ("event", "drift", "unsafe"),
    [
        ({"type": "system", "subtype": "brand_new_notice", "data": {"x": 1}}, None, None),  # host notices
        ({"type": "tool_progress", "elapsed": 3}, None, None),  # an unknown event carrying nothing
        ({"type": "tool_progress", "tool": {"name": "Bash"}}, "unknown event type 'tool_progress' carries a non-empty "
                                                              "dict 'tool'", None),
        ({"type": "assistant", "message": {"content": [{"type": "code_run", "code": "x"}]}},
         "assistant message has an unknown content block type 'code_run'", None),
        ({"type": "assistant", "message": {"content": [{"type": "mcp_tool_use", "name": "mcp__x__y"}]}}, None,
         "reviewer used tool 'mcp__x__y' outside the allow-list"),
        ({"type": "result", "permission_denials": [{"tool_name": "Read"}]}, None, "permission denied for Read"),
    ],
)  # fmt: skip
def test_claude_events(event: dict, drift: str | None, unsafe: str | None) -> None:
    assert claude.audit_event(event) == AuditOutcome(
        unknown_fields=[drift] if drift else [], unsafe_values=[unsafe] if unsafe else []
    )


# ----------------------------------------------------------------------------- Codex

CODEX_STREAMS = recorded("codex")


@pytest.mark.parametrize("path", CODEX_STREAMS, ids=lambda p: f"{p.parent.name}-{p.parent.parent.name}")
def test_a_recorded_codex_stream_audits_clean(path: Path) -> None:
    audit = codex.audit_stream(stream_text(path))
    assert audit.outcome == AuditOutcome() and audit.completed and audit.last_message


ITEM = {"id": "item_9", "status": "completed"}


@pytest.mark.parametrize(
    ("line", "drift", "unsafe"),
    [
        ({"type": "item.completed", "item": {**ITEM, "type": "plan_update", "steps": ["a"]}},
         "unknown item type 'plan_update'", None),
        ({"type": "turn.plan_updated", "plan": []}, None, None),
        ({"type": "turn.plan_updated", "plan": [{"step": "a"}]},
         "unknown event type 'turn.plan_updated' carries a non-empty list 'plan'", None),
        ({"type": "item.started", "item": {**ITEM, "type": "file_change", "status": "in_progress"}}, None,
         "reviewer used 'file_change', which a read-only review may not"),
        ({"type": "item.completed", "item": {**ITEM, "type": "command_execution", "command": "rm -rf x",
                                             "status": "declined"}}, None,
         "reviewer's command was declined by the sandbox policy: rm -rf x"),
        ({"type": "item.completed", "item": {**ITEM, "type": "command_execution", "command": "touch x",
                                             "aggregated_output": "touch: x: Read-only file system", "exit_code": 1,
                                             "status": "failed"}}, None,
         "reviewer tried to write through its shell (the sandbox refused): touch x"),
        ({"type": "item.completed", "item": {**ITEM, "type": "command_execution", "command": "grep zzz app.py",
                                             "aggregated_output": "", "exit_code": 1, "status": "failed"}}, None, None),
    ],
    ids=["new-item", "empty-new-event", "new-event-with-content", "patch", "declined", "refused-write", "grep-miss"],
)  # fmt: skip
def test_codex_lines(line: dict, drift: str | None, unsafe: str | None) -> None:
    for path in CODEX_STREAMS:
        lines = stream_text(path).splitlines()
        audit = codex.audit_stream("\n".join([lines[0], json.dumps(line), *lines[1:]]))
        assert audit.outcome == AuditOutcome(
            unknown_fields=[drift] if drift else [], unsafe_values=[unsafe] if unsafe else []
        ), path


# ----------------------------------------------------------------------------- OpenCode and Kimi

OPENCODE_STREAMS, KIMI_STREAMS = recorded("opencode"), recorded("kimi")


@pytest.mark.parametrize("path", OPENCODE_STREAMS, ids=lambda p: p.parent.name)
def test_a_recorded_opencode_stream_audits_clean(path: Path) -> None:
    outcome, session_id, final, errors = opencode.audit(stream_text(path))
    assert outcome == AuditOutcome() and session_id and json.loads(final)["findings"] == [] and errors == []


@pytest.mark.parametrize("path", KIMI_STREAMS, ids=lambda p: p.parent.name)
def test_a_recorded_kimi_stream_audits_clean(path: Path) -> None:
    outcome, session_id, final, status = kimi.audit(stream_text(path))
    assert outcome == AuditOutcome() and session_id == "session_5672" and json.loads(final)["findings"] == []
    assert status is None


@pytest.mark.parametrize(
    ("line", "drift", "unsafe"),
    [
        ({"type": "snapshot", "timestamp": 1, "sessionID": "ses_x"}, None, None),
        ({"type": "patch", "sessionID": "ses_x", "part": {"files": ["app.py"]}},
         "unknown event type 'patch' carries a non-empty dict 'part'", None),
        ({"type": "tool_use", "part": {"tool": "bash", "state": {"status": "error", "input": {"command": "rm x"}}}},
         None, """reviewer used tool 'bash' outside the allow-list (input: {"command": "rm x"})"""),
        ({"type": "tool_use", "part": {"tool": "glob", "state": {"status": "completed"}}}, None, None),
    ],
    ids=["empty-new-event", "new-event-with-content", "bash", "glob"],
)  # fmt: skip
def test_opencode_lines(line: dict, drift: str | None, unsafe: str | None) -> None:
    for path in OPENCODE_STREAMS:
        lines = stream_text(path).splitlines()
        outcome = opencode.audit("\n".join([lines[0], json.dumps(line), *lines[1:]]))[0]
        assert outcome == AuditOutcome(
            unknown_fields=[drift] if drift else [], unsafe_values=[unsafe] if unsafe else []
        )


@pytest.mark.parametrize(
    ("line", "drift", "unsafe"),
    [
        ({"role": "meta", "type": "turn.new_notice", "data": {"a": 1}}, None, None),  # host notice
        ({"role": "planner", "steps": []}, None, None),
        ({"role": "planner", "steps": ["run tests"]}, "unknown role 'planner' carries a non-empty list 'steps'", None),
        ({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "Read", "arguments": "{}"}}]},
         None, None),
        ({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "Shell", "arguments": "{}"}}]},
         None, "reviewer used tool 'Shell' outside the allow-list (input: {})"),
    ],
    ids=["meta", "empty-new-role", "new-role-with-content", "read", "shell"],
)  # fmt: skip
def test_kimi_lines(line: dict, drift: str | None, unsafe: str | None) -> None:
    for path in KIMI_STREAMS:
        lines = stream_text(path).splitlines()
        outcome = kimi.audit("\n".join([lines[0], json.dumps(line), *lines[1:]]))[0]
        assert outcome == AuditOutcome(
            unknown_fields=[drift] if drift else [], unsafe_values=[unsafe] if unsafe else []
        )
