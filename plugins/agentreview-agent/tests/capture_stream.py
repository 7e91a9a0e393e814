"""Capture a real reviewer CLI's event stream as a fixture (the audit's fixture recipe, docs/providers.md).

    .venv/bin/python plugins/agentreview-agent/tests/capture_stream.py claude /path/to/claude
    .venv/bin/python plugins/agentreview-agent/tests/capture_stream.py codex /path/to/codex
    .venv/bin/python plugins/agentreview-agent/tests/capture_stream.py opencode /path/to/opencode

runs one ordinary review lane with the real CLI against the scripted model server (a passing
verdict) and writes what the CLI printed on stdout to ``fixtures/<cli>/<version>/stream.jsonl``,
with this run's temporary paths replaced by ``{repo}``, ``{work}`` and ``{tmp}`` so the fixture
tests can put their own back. A run of the lane is the capture: there is no separate probe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from model_server import ModelServer, Reply  # noqa: E402

FIXTURES = HERE / "fixtures"
VERDICT = {"decision": "approve", "summary": "stub review", "findings": []}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _repo(root: Path) -> tuple[str, str]:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "t@example.invalid")
    _git(root, "config", "user.name", "T")
    (root / "rubrics").mkdir()
    (root / "rubrics" / "correctness.md").write_text("Look for bugs.\n")
    (root / "app.py").write_text("x = 1\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    base = _git(root, "rev-parse", "HEAD")
    (root / "app.py").write_text("x = 2\n")
    _git(root, "commit", "-qam", "change x")
    return base, _git(root, "rev-parse", "HEAD")


def _claude_script(api: str, body: dict[str, Any]) -> Reply:
    tools = {t.get("name") for t in body.get("tools") or []}
    if "StructuredOutput" not in tools:
        return Reply(text="ok")
    answered = any(
        isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
        for m in body.get("messages") or []
    )
    return Reply(text="Done.") if answered else Reply(tool="StructuredOutput", tool_input=VERDICT)


def _codex_script(api: str, body: dict[str, Any]) -> Reply:
    """Read the range through the sandboxed shell (the contract's Codex exception), then answer."""
    read = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in body.get("input", []))
    return (
        Reply(text=json.dumps(VERDICT)) if read else Reply(tool="exec_command", tool_input={"cmd": "git diff HEAD~1"})
    )


def _opencode_script(api: str, body: dict[str, Any]) -> Reply:
    """A title for the title request; the review turn reads app.py once, then answers."""
    if not body.get("tools"):
        return Reply(text="Stub review")
    if any(m.get("role") == "tool" for m in body.get("messages") or []):
        return Reply(text=json.dumps(VERDICT))
    return Reply(tool="read", tool_input={"filePath": os.environ["CAPTURE_READ"]})


SCRIPTS = {"claude": _claude_script, "codex": _codex_script, "opencode": _opencode_script}


def _version(binary: str) -> str:
    words = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout.split()
    numbers = [w for w in words if w[:1].isdigit()]
    return numbers[0] if numbers else "unknown"


def _setup(cli: str, binary: str, url: str) -> tuple[Any, Any]:
    """(the provider class, the preset) of ``cli`` talking to the model server at ``url``."""
    from agentreview_agent.providers.claude import ClaudeProvider
    from agentreview_agent.providers.codex import CodexProvider
    from agentreview_agent.providers.opencode import OpenCodeProvider

    from agentreview.model.contracts import PresetSpec

    if cli == "opencode":
        provider = {"npm": "@ai-sdk/openai-compatible", "name": "Stub", "models": {"stub-model": {"name": "Stub"}},
                    "options": {"baseURL": url + "/v1", "apiKey": "{env:STUB_API_KEY}"}}  # fmt: skip
        options = {
            "binary": binary,
            "env": ["OPENCODE_DISABLE_MODELS_FETCH"],
            "config": {"provider": {"stub": provider}},
        }
        return OpenCodeProvider, PresetSpec(
            name="opencode", provider="opencode", model="stub/stub-model", options=options
        )
    if cli == "claude":
        os.environ["ANTHROPIC_BASE_URL"] = url
        return ClaudeProvider, PresetSpec(name="claude", provider="claude", options={"binary": binary})
    stub = {"name": "stub", "base_url": url + "/v1", "env_key": "STUB_API_KEY", "wire_api": "responses"}
    config = {"model_provider": "stub", "model_providers": {"stub": stub}}
    return CodexProvider, PresetSpec(
        name="codex", provider="codex", model="gpt-5", options={"binary": binary, "config": config}
    )


def capture(cli: str, binary: str) -> Path:
    from agentreview_agent.executor import AgentLaneExecutor

    from agentreview.model.contracts import LaneRequest
    from agentreview.model.manifest import AgentCheck
    from agentreview.model.reader import read

    if cli not in SCRIPTS:
        raise SystemExit(f"capture_stream: no capture recipe for {cli!r} yet ({', '.join(SCRIPTS)})")
    captured: list[tuple[str, str]] = []

    with tempfile.TemporaryDirectory(prefix="agentreview-capture-") as tmp_name:
        tmp = Path(tmp_name).resolve()
        os.environ.update(
            HOME=str(tmp / "userhome"), AGENTREVIEW_HOME=str(tmp / "arhome"), ANTHROPIC_API_KEY="stub-key",
            CLAUDE_CODE_MAX_RETRIES="0", STUB_API_KEY="stub-key", OPENCODE_DISABLE_MODELS_FETCH="1",
            CAPTURE_READ=str(tmp / "repo" / "app.py"),
        )  # fmt: skip
        for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                    "XDG_CACHE_HOME"):  # fmt: skip
            os.environ.pop(var, None)
        repo = tmp / "repo"
        base, head = _repo(repo)
        run_dir = tmp / "run"
        run_dir.mkdir()
        check = read(
            AgentCheck, {"id": "correctness", "kind": "agent", "preset": cli, "rubric": "./rubrics/correctness.md"}
        )
        with ModelServer(SCRIPTS[cli]) as server:
            provider, preset = _setup(cli, binary, server.url)

            class Recording(provider):  # type: ignore[misc,valid-type]
                def run(self, request, argv, **kw):  # type: ignore[no-untyped-def]
                    proc = super().run(request, argv, **kw)
                    captured.append((proc.stdout_text(), str(request.work_dir)))
                    return proc

            outcome = AgentLaneExecutor().run_lane(
                LaneRequest(
                    check=check,
                    review_id="rev",
                    repo_root=repo,
                    base_sha=base,
                    head_sha=head,
                    placeholders={},
                    run_dir=run_dir,
                    cancel=threading.Event(),
                    rubric_path=repo / "rubrics" / "correctness.md",
                    presets={cli: preset},
                    providers={cli: Recording()},
                )
            )
        if not captured:
            raise SystemExit(f"capture_stream: the CLI never ran: {outcome.error}")
        text, work = captured[-1]
        text = text.replace(work, "{work}").replace(str(repo), "{repo}").replace(str(tmp), "{tmp}")
    out = FIXTURES / cli / _version(binary) / "stream.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(json.loads(line)) + "\n" for line in text.splitlines() if line.strip()))
    print(f"capture_stream: {out} ({outcome.kind}: {outcome.error or 'ok'})")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    capture(sys.argv[1], sys.argv[2])
