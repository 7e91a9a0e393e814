"""End to end with the real reviewer CLIs (scripts/install-reviewer-clis) against a scripted model
server on 127.0.0.1: a verdict passes or blocks the lane; a forbidden tool never reaches the
repository. Skipped only when the CLI binary is absent. Where a real CLI cannot be made to print
what a case needs, ``fakes/stream_shim.py`` edits its stream; the CLI itself runs unchanged.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import reviewer_clis
from model_server import ModelServer, Reply

from agentreview.model.contracts import PresetSpec
from agentreview.model.lanes import to_lane_result
from conftest import APPROVING_REVIEWER, git

pytestmark = pytest.mark.slow

# A lane's budget: far above what a reviewer CLI takes alone, with the margin a loaded 2-core
# machine needs while other real CLIs (the MCP host tests) run beside it. A lane that works
# finishes as soon as it is done, so the bound costs a passing test nothing.
LANE_BUDGET_MS = 360_000

FAKES = Path(__file__).parent / "fakes"
OK = {"decision": "approve", "summary": "stub review", "findings": []}
HIGH = {"severity": "high", "title": "x is now 2", "detail": "breaks callers", "file": "app.py", "line": 1}


def cli(name: str) -> str:
    """The pinned release of ``name`` (the matrix in test_cli_matrix.py drives every installed release)."""
    found = reviewer_clis.binary(name)
    if not found:
        pytest.skip(reviewer_clis.missing(name))
    return found


def cli_at(release: str, name: str) -> str:
    """The ``pinned`` or the ``newest`` tested release of CLI ``name``."""
    found = reviewer_clis.binary(name, release)
    if not found:
        pytest.skip(reviewer_clis.missing(f"{release} {name}"))
    return found


def shim(tmp_path: Path, real: str, **fixture) -> str:
    """``fakes/stream_shim.py`` in front of the real CLI ``real``, editing its stream per ``fixture``."""
    bin_dir = tmp_path / "shim"
    bin_dir.mkdir()
    target = bin_dir / Path(real).name
    target.write_text(f"#!{sys.executable}\n" + (FAKES / "stream_shim.py").read_text())
    target.chmod(0o755)
    (bin_dir / "shim.json").write_text(json.dumps({"real": real, **fixture}))
    return str(target)


def _codex_preset(binary: str, url: str) -> PresetSpec:
    stub = {"name": "stub", "base_url": url + "/v1", "env_key": "STUB_API_KEY", "wire_api": "responses"}
    return PresetSpec(
        name="codex",
        provider="codex",
        model="gpt-5",
        options={"binary": binary, "config": {"model_provider": "stub", "model_providers": {"stub": stub}}},
    )


@pytest.fixture
def codex_lane(lane, monkeypatch, tmp_path: Path):
    from agentreview_agent.providers.codex import CodexProvider

    binary = cli("codex")
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    monkeypatch.setenv("STUB_API_KEY", "stub-key")
    monkeypatch.delenv("CODEX_HOME", raising=False)
    lane.providers["codex"] = CodexProvider()
    return lane, binary


@pytest.mark.parametrize(("findings", "status"), [([], "pass"), ([HIGH], "fail")])
def test_codex_verdict_passes_or_blocks(codex_lane, findings, status) -> None:
    lane, binary = codex_lane
    verdict = {"decision": "approve", "summary": "stub review", "findings": findings}
    with ModelServer(lambda api, body: Reply(text=json.dumps(verdict))) as server:
        lane.presets["codex"] = _codex_preset(binary, server.url)
        check = lane.check(preset="codex", timeoutMs=LANE_BUDGET_MS)
        outcome = lane.run(check)
    assert outcome.kind == "reported", outcome.error
    assert outcome.preset == "codex" and outcome.model == "gpt-5" and outcome.session_id
    assert to_lane_result(check, outcome, 1).status == status
    assert [api for api, _ in server.requests] and server.requests[0][0] == "responses"
    body = server.requests[0][1]
    tool_names = {t.get("name") or t.get("type") for t in body.get("tools", [])}
    # reading through the sandboxed shell is the one tool surface left (wrapper contract's Codex exception)
    assert not tool_names & {"apply_patch", "web_search", "spawn_agent", "create_goal", "image_generation"}, tool_names


def test_codex_unknown_item_type_falls_back_with_capability_missing(codex_lane, tmp_path: Path) -> None:
    lane, binary = codex_lane
    lane.presets["backup"] = PresetSpec(
        name="backup", provider="exec", options={"command": [sys.executable, "-c", APPROVING_REVIEWER]}
    )
    plan = {"type": "item.completed", "item": {"id": "item_p", "type": "plan_update", "steps": ["read the diff"]}}
    shimmed = shim(tmp_path, binary, after_first=[json.dumps(plan)])
    with ModelServer(lambda api, body: Reply(text=json.dumps(OK))) as server:
        lane.presets["codex"] = _codex_preset(shimmed, server.url)
        check = lane.check(preset="codex", fallbackPresets=["backup"], timeoutMs=LANE_BUDGET_MS)
        outcome = lane.run(check)
    assert server.requests, "codex never reached the model server"
    assert outcome.kind == "reported" and outcome.preset == "backup", outcome
    [fallback] = outcome.fallbacks
    assert fallback.error == "capability_missing: unknown item type 'plan_update'"
    assert fallback.unknown_fields == ("unknown item type 'plan_update'",) and not fallback.unsafe_values
    assert to_lane_result(check, outcome, 1).to_json_dict()["fallbacks"][0]["unknownFields"] == [
        "unknown item type 'plan_update'"
    ]


def test_codex_answer_breaking_the_contract_stops_and_shows_its_finding(codex_lane) -> None:
    # Codex does not hold the answer to --output-schema itself (the model server does), so a finding with a
    # severity outside the contract reaches the verdict file; the stop quotes it instead of only the schema problem.
    lane, binary = codex_lane
    lane.exec_preset("backup", Path(__file__))  # an answer that may hold a finding never falls back
    rce = {"severity": "critical", "title": "RCE in app.py", "detail": "eval of input", "file": "app.py", "line": 1}
    with ModelServer(lambda api, body: Reply(text=json.dumps({**OK, "findings": [rce]}))) as server:
        lane.presets["codex"] = _codex_preset(binary, server.url)
        outcome = lane.run(lane.check(preset="codex", fallbackPresets=["backup"], timeoutMs=LANE_BUDGET_MS))
    assert outcome.kind == "skipped" and not outcome.fallbacks, outcome
    assert "findings.0.severity: must be one of high, medium, low" in outcome.error
    assert outcome.error.endswith("excerpt: findings.0: [critical] RCE in app.py at app.py:1 — eval of input")


def _once(tool: str, tool_input: dict):
    """Ask for ``tool`` first, then answer with a passing verdict (which must not be accepted)."""

    def script(api, body):
        outputs = [i for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "function_call_output"]
        return Reply(tool=tool, tool_input=tool_input) if not outputs else Reply(text='{"findings": []}')

    return script


@pytest.mark.parametrize(
    ("tool", "tool_input", "error"),
    [
        # Codex 0.171 drops the command_execution events of a command that ends within ~0 ms (observed), so
        # the audit of shell commands is best effort and the read-only sandbox is the boundary; this command
        # lives long enough to be reported.
        ("exec_command", {"cmd": "sleep 0.5; touch pwned.txt"}, "reviewer tried to write through its shell"),
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Add File: pwned.txt\n+pwned\n*** End Patch\n"},
            "reviewer called tool 'apply_patch', which was not offered",
        ),
    ],
)
def test_codex_write_attempt_never_reaches_the_repo_and_skips(codex_lane, tool, tool_input, error) -> None:
    lane, binary = codex_lane
    lane.exec_preset("backup", Path(__file__))  # would be wrong to reach: a breach never falls back
    with ModelServer(_once(tool, tool_input)) as server:
        lane.presets["codex"] = _codex_preset(binary, server.url)
        outcome = lane.run(lane.check(preset="codex", fallbackPresets=["backup"], timeoutMs=LANE_BUDGET_MS))
    assert not (lane.repo.root / "pwned.txt").exists()
    assert outcome.kind == "skipped" and not outcome.fallbacks
    assert outcome.error.startswith("reviewer boundary violation: " + error), outcome.error


# ----------------------------------------------------------------------------- Claude Code


def _has_tool_result(body: dict) -> bool:
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _claude_script(verdict: dict, first_tool: tuple[str, dict] | None = None):
    """Answer the review turn with a StructuredOutput call (after ``first_tool``, if any); side requests get text."""

    def script(api, body):
        tools = {t.get("name") for t in body.get("tools") or []}
        if "StructuredOutput" not in tools:
            return Reply(text="ok")
        results = sum(
            1
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
        )
        if first_tool and results == 0:
            return Reply(tool=first_tool[0], tool_input=first_tool[1])
        if results <= (1 if first_tool else 0):
            return Reply(tool="StructuredOutput", tool_input=verdict)
        return Reply(text="Done.")

    return script


@pytest.fixture(params=["pinned", "newest"])
def claude_lane(request, lane, monkeypatch, tmp_path: Path):
    """A lane with the ``claude`` preset on the pinned or the newest Claude Code (``lane.claude_binary``)."""
    from agentreview_agent.providers.claude import ClaudeProvider

    binary = cli_at(request.param, "claude")
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "stub-key")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    lane.providers["claude"] = ClaudeProvider()
    lane.presets["claude"] = PresetSpec(name="claude", provider="claude", options={"binary": binary})
    lane.claude_binary = binary
    return lane


def _claude_with(lane, tmp_path: Path, **fixture) -> None:
    """Run the ``claude`` preset's real CLI behind the stream shim with ``fixture``."""
    spec = lane.presets["claude"]
    lane.presets["claude"] = PresetSpec(
        name="claude", provider="claude", options={"binary": shim(tmp_path, lane.claude_binary, **fixture)}
    )
    assert spec.options["binary"] == lane.claude_binary


def _run_claude(lane, monkeypatch, verdict: dict, first_tool=None, **check):
    with ModelServer(_claude_script(verdict, first_tool=first_tool)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        checked = lane.check(preset="claude", timeoutMs=LANE_BUDGET_MS, **check)
        return checked, lane.run(checked), server


@pytest.mark.parametrize(("findings", "status"), [([], "pass"), ([HIGH], "fail")])
def test_claude_verdict_passes_or_blocks(claude_lane, monkeypatch, findings, status) -> None:
    lane = claude_lane
    verdict = {"decision": "approve", "summary": "stub review", "findings": findings}
    check, outcome, server = _run_claude(lane, monkeypatch, verdict)
    assert outcome.kind == "reported", outcome.error
    assert outcome.preset == "claude" and outcome.session_id and outcome.model
    assert not outcome.fallbacks and not outcome.unknown_fields and not outcome.unsafe_values
    assert to_lane_result(check, outcome, 1).status == status
    review = [b for api, b in server.requests if "StructuredOutput" in {t.get("name") for t in b.get("tools") or []}]
    assert review, "the review turn never reached the model server"
    # Claude Code 2.1.332 also sends an empty, deferred placeholder ("never call this tool"); a call to it would
    # be a tool use outside the allow-list, a breach like any other
    placeholders = [t for t in review[0]["tools"] if t.get("defer_loading") is True]
    assert all(t["input_schema"].get("properties") in (None, {}) for t in placeholders), placeholders
    offered = {t.get("name") for t in review[0]["tools"] if t not in placeholders}
    assert offered == {"Read", "Grep", "Glob", "StructuredOutput"}, offered


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", {"command": "touch pwned.txt"}),
        ("DeferredToolPlaceholder", {}),
        ("Write", {"file_path": "pwned.txt", "content": "pwned"}),
    ],
)
def test_claude_forbidden_tool_never_reaches_the_repo_and_skips(claude_lane, monkeypatch, tool, tool_input) -> None:
    lane = claude_lane
    lane.exec_preset("backup", Path(__file__))  # would be wrong to reach: a breach never falls back
    tool_input = {k: (str(lane.repo.root / v) if k == "file_path" else v) for k, v in tool_input.items()}
    _, outcome, _ = _run_claude(lane, monkeypatch, {"findings": []}, (tool, tool_input), fallbackPresets=["backup"])
    assert not (lane.repo.root / "pwned.txt").exists()
    assert outcome.kind == "skipped" and not outcome.fallbacks, outcome
    breach = f"reviewer used tool '{tool}' outside the allow-list" + (" (input: " if tool_input else "")
    assert outcome.error.startswith("reviewer boundary violation: " + breach), outcome.error
    assert [v for v in outcome.unsafe_values if v.startswith(breach)], outcome.unsafe_values


@pytest.mark.parametrize(
    "extra",
    [
        {"sandbox_enabled": False, "dangerously_skip_permissions": False, "admin_mode": "off", "new_list": []},
        {"plugins": [{"name": "anything", "path": "/x"}], "skills": ["x"], "slash_commands": ["/y"]},
    ],
    ids=["authority-named-scalars", "vocabulary"],
)
def test_claude_new_scalars_and_vocabulary_are_tolerated(claude_lane, monkeypatch, tmp_path: Path, extra) -> None:
    lane = claude_lane
    _claude_with(lane, tmp_path, init_extra=extra, before=["Update available! Run: claude update"])
    _, outcome, _ = _run_claude(lane, monkeypatch, OK)
    assert outcome.kind == "reported" and outcome.preset == "claude" and not outcome.fallbacks, outcome.error


@pytest.mark.parametrize(
    ("fixture", "drift"),
    [
        ({"init_extra": {"connectors": ["gmail"]}}, "init has an unknown non-empty list 'connectors'"),
        ({"before": ['{"type": "notice", "text": "garbled']}, "stdout line 1 is not JSON"),
    ],
    ids=["new-init-container", "stray-line"],
)
def test_claude_drift_falls_back_with_capability_missing(claude_lane, monkeypatch, tmp_path: Path, fixture, drift):
    lane = claude_lane
    lane.presets["backup"] = PresetSpec(
        name="backup", provider="exec", options={"command": [sys.executable, "-c", APPROVING_REVIEWER]}
    )
    _claude_with(lane, tmp_path, **fixture)
    check, outcome, _ = _run_claude(lane, monkeypatch, OK, fallbackPresets=["backup"])
    assert outcome.kind == "reported" and outcome.preset == "backup", outcome
    [fallback] = outcome.fallbacks
    assert fallback.preset == "claude" and fallback.error.startswith("capability_missing: " + drift), fallback.error
    assert fallback.unknown_fields and fallback.unknown_fields[0].startswith(drift) and not fallback.unsafe_values
    recorded = to_lane_result(check, outcome, 1).to_json_dict()
    assert recorded["fallbacks"][0]["unknownFields"] == list(fallback.unknown_fields)


@pytest.mark.parametrize(
    ("extra", "breach"),
    [
        ({"permissionMode": "bypassPermissions"}, "unsafe permissionMode 'bypassPermissions'"),
        ({"mcp_servers": [{"name": "evil", "status": "connected"}]}, "init lists MCP servers: evil"),
        (
            {"additional_directories": ["/"], "connectors": ["gmail"]},  # a breach outranks drift beside it
            "init 'additional_directories' names directories agentreview did not pass: /",
        ),
    ],
    ids=["permissionMode", "mcp_servers", "additional_directories"],
)
def test_claude_known_unsafe_value_is_terminal(claude_lane, monkeypatch, tmp_path: Path, extra, breach) -> None:
    lane = claude_lane
    lane.exec_preset("backup", Path(__file__))  # would be wrong to reach: a breach never falls back
    _claude_with(lane, tmp_path, init_extra=extra)
    check, outcome, _ = _run_claude(lane, monkeypatch, OK, fallbackPresets=["backup"])
    assert outcome.kind == "skipped" and not outcome.fallbacks, outcome
    assert outcome.error == "reviewer boundary violation: " + breach
    assert outcome.unsafe_values == (breach,)
    recorded = to_lane_result(check, outcome, 1).to_json_dict()
    assert recorded["status"] == "skipped" and recorded["unsafeValues"] == [breach]


def _agentreview_run(tmp_path: Path, binary: str, url: str) -> dict:
    """``agentreview run --json`` as a process, in a real repository whose one agent lane runs the
    ``claude`` provider on ``binary`` with an approving exec ``backup`` as its fallback."""
    import subprocess

    repo, home = tmp_path / "runrepo", tmp_path / "runhome"
    home.mkdir()
    (home / "presets.toml").write_text(
        f'[presets.shimmed]\nprovider = "claude"\nbinary = {json.dumps(binary)}\n'
        f'[presets.backup]\nprovider = "exec"\ncommand = {json.dumps([sys.executable, "-c", APPROVING_REVIEWER])}\n'
    )
    review = (
        "---\nkind: review\nid: demo\ntarget: { kind: git-range, base: main }\nchecks:\n"
        "  - id: review\n    kind: agent\n    preset: shimmed\n    fallbackPresets: [backup]\n"
        "    rubric: ./rubric.md\n    timeoutMs: 120000\n---\n\n# demo\n"
    )
    repo.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "t@example.invalid"],
        ["config", "user.name", "T"],
    ):
        git(repo, *args)
    (repo / "REVIEW.md").write_text(review)
    (repo / "rubric.md").write_text("Look for bugs.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "switch", "-qc", "feature")
    (repo / "app.py").write_text("x = 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "change")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update(AGENTREVIEW_HOME=str(home), CI="true", ANTHROPIC_BASE_URL=url)
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "run", "--json"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_claude_buckets_reach_agentreview_run_json(claude_lane, monkeypatch, tmp_path: Path) -> None:
    # drift: the lane falls back and passes; the fallback records what the audit could not verify
    (tmp_path / "drift").mkdir()
    (tmp_path / "unsafe").mkdir()
    drifting = shim(tmp_path / "drift", claude_lane.claude_binary, init_extra={"connectors": ["gmail"]})
    with ModelServer(_claude_script(OK)) as server:
        data = _agentreview_run(tmp_path / "drift", drifting, server.url)
    [lane] = data["attestation"]["lanes"]
    assert data["verdict"] == "pass" and lane["status"] == "pass" and lane["preset"] == "backup", lane
    assert lane["fallbacks"] == [
        {
            "preset": "shimmed",
            "error": "capability_missing: init has an unknown non-empty list 'connectors'",
            "unknownFields": ["init has an unknown non-empty list 'connectors'"],
        }
    ]
    assert "unsafeValues" not in lane
    # an unsafe value: the lane stops, never falls back, and records the breach in its own bucket
    unsafe = shim(tmp_path / "unsafe", claude_lane.claude_binary, init_extra={"permissionMode": "bypassPermissions"})
    with ModelServer(_claude_script(OK)) as server:
        data = _agentreview_run(tmp_path / "unsafe", unsafe, server.url)
    [lane] = data["attestation"]["lanes"]
    assert data["verdict"] == "incomplete" and lane["status"] == "skipped" and "fallbacks" not in lane, lane
    assert lane["unsafeValues"] == ["unsafe permissionMode 'bypassPermissions'"] and "unknownFields" not in lane


# ----------------------------------------------------------------------------- OpenCode


OPENCODE_PRESET = """\
[presets.opencode-stub]
provider = "opencode"
model = "stub/stub-model"
binary = {binary}
env = ["OPENCODE_DISABLE_MODELS_FETCH"]  # no models.dev catalogue fetch: the stub's model is declared below
[presets.opencode-stub.config.provider.stub]
npm = "@ai-sdk/openai-compatible"
name = "Stub"
options = {{ baseURL = {base_url}, apiKey = "{{env:STUB_API_KEY}}" }}
models = {{ stub-model = {{ name = "Stub model" }} }}
"""


@pytest.fixture
def opencode_lane(lane, monkeypatch, tmp_path: Path):
    """A lane whose presets come from a real presets.toml; the user's own OpenCode config allows everything
    and starts an MCP server (OpenCode 1.18.33 runs it even for a deny-all agent) that leaves ``mcp-ran``."""
    from agentreview_agent.providers.opencode import OpenCodeProvider

    binary = cli("opencode")
    home = tmp_path / "userhome"
    widening = {
        "permission": {"*": "allow"},
        "agent": {"agentreview-review": {"permission": {"*": "allow"}}},
        "mcp": {"evil": {"type": "local", "command": ["sh", "-c", f"touch {tmp_path / 'mcp-ran'}"]}},
    }
    (home / ".config" / "opencode").mkdir(parents=True)
    (home / ".config" / "opencode" / "opencode.json").write_text(json.dumps(widening))
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("STUB_API_KEY", "stub-key")
    monkeypatch.setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
    lane.providers["opencode"] = OpenCodeProvider()
    return lane, binary


def _opencode_presets(lane, binary: str, url: str, extra: str = "") -> None:
    from agentreview.host.presets import load_presets

    arhome = Path(os.environ["AGENTREVIEW_HOME"])
    arhome.mkdir(parents=True, exist_ok=True)
    toml = OPENCODE_PRESET.format(binary=json.dumps(binary), base_url=json.dumps(url + "/v1")) + extra
    (arhome / "presets.toml").write_text(toml)
    lane.presets.update(load_presets(arhome, {"opencode": lane.providers["opencode"]}))


def _opencode_script(answer: str, first_tool: tuple[str, dict] | None = None):
    """The title request (no tools) gets a title; the review turn calls ``first_tool`` once, then answers."""

    def script(api, body):
        if not body.get("tools"):
            return Reply(text="Stub review")
        called = any(m.get("role") == "tool" for m in body.get("messages") or [])
        return Reply(tool=first_tool[0], tool_input=first_tool[1]) if first_tool and not called else Reply(text=answer)

    return script


def _review_turns(server: ModelServer) -> list[dict]:
    return [body for api, body in server.requests if api == "chat" and body.get("tools")]


def _tool_messages(server: ModelServer) -> list[str]:
    return [str(m.get("content")) for b in _review_turns(server) for m in b["messages"] if m.get("role") == "tool"]


@pytest.mark.parametrize(("findings", "status"), [([], "pass"), ([HIGH], "fail")])
def test_opencode_verdict_passes_or_blocks(opencode_lane, tmp_path: Path, findings, status) -> None:
    lane, binary = opencode_lane
    verdict = json.dumps({"decision": "approve", "summary": "stub review", "findings": findings})
    read = ("read", {"filePath": str(lane.repo.root / "app.py")})  # the reviewer reaches the repository read-only
    with ModelServer(_opencode_script(verdict, first_tool=read), api_key="stub-key") as server:
        _opencode_presets(lane, binary, server.url)
        check = lane.check(preset="opencode-stub", timeoutMs=LANE_BUDGET_MS)
        outcome = lane.run(check)
    assert outcome.kind == "reported", outcome.error
    assert outcome.preset == "opencode-stub" and outcome.model == "stub/stub-model"
    assert outcome.session_id and outcome.session_id.startswith("ses_")
    assert to_lane_result(check, outcome, 1).status == status
    turns = _review_turns(server)
    assert len(turns) == 2 and all(body["model"] == "stub-model" and body["stream"] for body in turns)
    for body in turns:  # the user's allow-everything config and its MCP server never reached the reviewer
        assert {t["function"]["name"] for t in body["tools"]} == {"read", "grep", "glob"}
    assert "1: x = 2" in _tool_messages(server)[0]
    # the key came through the preset's {env:STUB_API_KEY} grant
    assert {h.get("Authorization") for h in server.request_headers} == {"Bearer stub-key"}
    assert not (tmp_path / "mcp-ran").exists()


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("bash", {"command": "touch {repo}/pwned.txt", "description": "touch a file"}),
        ("write", {"filePath": "{repo}/pwned.txt", "content": "pwned"}),
        ("edit", {"filePath": "{repo}/app.py", "oldString": "x = 2", "newString": "x = 3"}),
    ],
)
def test_opencode_forbidden_tool_never_reaches_the_repo_and_skips(opencode_lane, tool, tool_input) -> None:
    lane, binary = opencode_lane
    root = lane.repo.root
    tool_input = {key: value.format(repo=root) for key, value in tool_input.items()}
    lane.exec_preset("backup", Path(__file__))  # would be wrong to reach: a breach never falls back
    with ModelServer(_opencode_script('{"findings": []}', first_tool=(tool, tool_input))) as server:
        _opencode_presets(lane, binary, server.url)
        outcome = lane.run(lane.check(preset="opencode-stub", fallbackPresets=["backup"], timeoutMs=LANE_BUDGET_MS))
    assert not (root / "pwned.txt").exists() and (root / "app.py").read_text() == "x = 2\n"
    assert git(root, "status", "--porcelain") == ""
    # never offered, so OpenCode refused the call itself ...
    assert all(tool not in {t["function"]["name"] for t in body["tools"]} for body in _review_turns(server))
    assert "unavailable tool" in _tool_messages(server)[0]
    # ... and the attempt still voids the review: a breach is terminal, never a fallback
    assert outcome.kind == "skipped" and not outcome.fallbacks, outcome
    breach = f"reviewer used tool '{tool}' outside the allow-list (input: "
    assert outcome.error.startswith("reviewer boundary violation: " + breach), outcome.error
    assert [v for v in outcome.unsafe_values if v.startswith(breach)], outcome.unsafe_values


@pytest.mark.parametrize(
    ("fixture", "drift"),
    [
        ({"after_first": ['{"type": "patch", "part": {"files": ["app.py"]}}']},
         "unknown event type 'patch' carries a non-empty dict 'part'"),
        ({"before": ['{"type": "step_start", "part": {']}, "stdout line 1 is not JSON"),
    ],
    ids=["new-event-with-content", "stray-line"],
)  # fmt: skip
def test_opencode_drift_falls_back_with_capability_missing(opencode_lane, tmp_path: Path, fixture, drift) -> None:
    lane, binary = opencode_lane
    lane.presets["backup"] = PresetSpec(
        name="backup", provider="exec", options={"command": [sys.executable, "-c", APPROVING_REVIEWER]}
    )
    with ModelServer(_opencode_script(json.dumps(OK))) as server:
        _opencode_presets(lane, shim(tmp_path, binary, subcommand="run", **fixture), server.url)
        check = lane.check(preset="opencode-stub", fallbackPresets=["backup"], timeoutMs=LANE_BUDGET_MS)
        outcome = lane.run(check)
    assert _review_turns(server), "opencode never reached the model server"
    assert outcome.kind == "reported" and outcome.preset == "backup", outcome
    [fallback] = outcome.fallbacks
    assert fallback.error.startswith("capability_missing: " + drift), fallback.error
    assert fallback.unknown_fields[0].startswith(drift) and not fallback.unsafe_values


def test_opencode_rejected_key_is_unavailable_and_falls_back(opencode_lane) -> None:
    lane, binary = opencode_lane
    lane.use_builtin(lane.providers["opencode"])  # an approving exec backup
    with ModelServer(_opencode_script('{"findings": []}'), api_key="another-key") as server:
        _opencode_presets(lane, binary, server.url)
        outcome = lane.run(lane.check(preset="opencode-stub", fallbackPresets=["backup"], timeoutMs=LANE_BUDGET_MS))
    assert server.requests, "opencode never reached the model server"
    assert outcome.kind == "reported" and outcome.preset == "backup", outcome
    [fallback] = outcome.fallbacks
    assert fallback.preset == "opencode-stub"
    assert fallback.error == "authentication failed: Incorrect API key provided", fallback.error


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (
            '[presets.opencode-stub.config.permission]\nbash = "allow"\n',
            "preset 'opencode-stub': config.permission is not allowed for opencode",
        ),
        (
            '[presets.opencode-stub.config.mcp.evil]\ntype = "local"\ncommand = ["sh", "-c", "touch {mark}"]\n',
            "preset 'opencode-stub': config.mcp is not allowed for opencode",
        ),
        (
            '[presets.opencode-stub.config.provider.other.options]\napiKey = "{env:HOME}"\n',
            "preset 'opencode-stub': config {env:NAME} may not name HOME",
        ),
    ],
    ids=["permission", "mcp", "env-HOME"],
)
def test_opencode_preset_config_cannot_widen_the_reviewer(opencode_lane, tmp_path: Path, extra, error) -> None:
    lane, binary = opencode_lane
    with ModelServer(_opencode_script('{"findings": []}')) as server:
        _opencode_presets(lane, binary, server.url, extra.replace("{mark}", str(tmp_path / "mcp-ran")))
        outcome = lane.run(lane.check(preset="opencode-stub", timeoutMs=LANE_BUDGET_MS))
    assert outcome.kind == "skipped" and outcome.error.startswith(error), outcome.error
    assert not server.requests and not (tmp_path / "mcp-ran").exists()


# ----------------------------------------------------------------------------- OpenCode (no inference)


def test_opencode_generated_agent_is_read_only_per_the_real_cli(tmp_path: Path, monkeypatch) -> None:
    # `opencode debug agent` (no model call) resolves the generated agent: every tool but the reads must be off.
    import threading
    import time

    from agentreview_agent.providers.opencode import build_home, preflight

    from agentreview.api import reviewer_env

    binary = cli("opencode")
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    project, xdg = build_home(tmp_path / "work")
    env = reviewer_env({**xdg, "HOME": str(tmp_path / "work" / "home")})  # as CliReviewer.review builds it
    assert preflight(binary, project, env, time.monotonic() + 120, threading.Event()) is None
    # and the check has teeth: an agent that allows bash is refused
    agent = next((project / ".opencode" / "agent").iterdir())
    agent.write_text(agent.read_text().replace("  read: allow", "  read: allow\n  bash: allow"))
    why = preflight(binary, project, env, time.monotonic() + 120, threading.Event())
    assert why == "capability_missing: the generated agent still has tools: bash"
