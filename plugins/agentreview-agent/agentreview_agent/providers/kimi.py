"""``kimi``: Kimi Code as a read-only reviewer (reviewer-clis.md §1.5, §5.1; wrapper contract).

Prompt mode auto-approves tools, so the boundary is the private ``KIMI_CODE_HOME``'s tool allow-list and
the stream audit; failures come only on stderr, the prompt only through argv (docs/providers.md).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentreview.api import (
    CliInfo,
    ProcessResult,
    ReviewerRequest,
    ReviewerResult,
    attempt_dir,
    reviewer_env,
    user_dir,
)
from agentreview_agent.audit import AuditOutcome, name_of, unknown_event
from agentreview_agent.providers.base import (
    Setting,
    ShippedCli,
    answered,
    clip,
    drifted,
    refused_at_admission,
    stream_end,
    stream_failed,
    tool_note,
    with_belt_retry,
)
from agentreview_agent.range_files import range_prompt
from agentreview_agent.runtime import node_problem
from agentreview_agent.streams import AUTH_TEXT, QUOTA_TEXT, parse_jsonl, unavailable_reason

HELP_ARGS = ("--help",)
REQUIRED_FLAGS = ("--output-format", "--add-dir")
READ_TOOLS = ("Read", "Grep", "Glob")
# Kimi Code reads provider keys from config.toml, except the KIMI_MODEL_* family (name, key, provider type, base URL).
MODEL_ENV = ("KIMI_MODEL_*",)
KEPT_KEYS = ("default_model", "providers", "models", "thinking", "default_thinking")
FAILURE = re.compile(r"error: failed to run prompt: (.*)")
NODE_MINIMUM = (22, 19)
# Kimi Code's own cap on model calls per step (its `[loop_control] max_attempts_per_step`, 10 by default with
# backoff to 32 s: a broken stream costs minutes). Per invocation, so no release can refuse it; a preset may
# grant the variable to choose another cap.
ATTEMPTS_ENV = "KIMI_LOOP_MAX_ATTEMPTS_PER_STEP"
ATTEMPTS = "3"
SKILLS_DIR_BELT = "the private KIMI_CODE_HOME, which holds no skills, and the tools allow-list"


def configured_model(config_text: str) -> str | None:
    """``default_model`` of a generated private config."""
    try:
        value = tomllib.loads(config_text).get("default_model")
    except tomllib.TOMLDecodeError:
        return None
    return value if isinstance(value, str) and value else None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _toml_tables(prefix: str, table: dict[str, Any], out: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    if prefix:
        out.append(f"[{prefix}]")
    out += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in scalars.items()]
    for key, sub in table.items():
        if isinstance(sub, dict):
            _toml_tables(f"{prefix}.{json.dumps(key)}" if prefix else json.dumps(key), sub, out)


def private_config(user_config: Path) -> str:
    """The user's provider/model/thinking settings and nothing else, plus the read-only tool allow-list."""
    try:
        with user_config.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        data = {}
    lines: list[str] = []
    _toml_tables("", {k: v for k, v in data.items() if k in KEPT_KEYS}, lines)
    lines += ["[tools]", f"enabled = {_toml_value(list(READ_TOOLS))}"]
    return "\n".join(lines) + "\n"


# Stream roles; any other is drift. `meta` lines are the host's notices about itself (version, resume hint,
# retries, compaction); the model acts only through an assistant line's `tool_calls`.
ROLES = frozenset(("assistant", "tool", "meta", "user", "system"))


def audit_event(event: dict[str, Any]) -> AuditOutcome:
    """Judge one line: a tool call outside the allow-list is a breach, a role this audit does not know drift."""
    out = AuditOutcome()
    role = event.get("role")
    if role not in ROLES:
        out.add(unknown_event(f"unknown role '{name_of(role)}'", event))
    elif role == "assistant":
        calls = event.get("tool_calls") or []
        for call in calls if isinstance(calls, list) else [calls]:
            fn = call.get("function") if isinstance(call, dict) else None
            name = fn.get("name") if isinstance(fn, dict) else None
            if name not in READ_TOOLS:
                out.breach(tool_note(name, fn.get("arguments") if isinstance(fn, dict) else None))
    return out


def audit(text: str) -> tuple[AuditOutcome, str | None, str, int | None]:
    """(audit, session id, final answer, retry status code) of a stream-json run."""
    stream = parse_jsonl(text)
    outcome = AuditOutcome(unknown_fields=list(stream.stray))
    session_id, final, status = None, "", None
    for event in stream.events:
        outcome.add(audit_event(event))
        role, kind = event.get("role"), event.get("type")
        if role == "assistant" and isinstance(event.get("content"), str) and event["content"].strip():
            final = event["content"]
        elif role == "meta" and kind == "session.resume_hint" and isinstance(event.get("session_id"), str):
            session_id = event["session_id"]
        elif role == "meta" and kind == "turn.step.retrying" and isinstance(event.get("status_code"), int):
            status = event["status_code"]
    return outcome, session_id, final, status


def own_retries(text: str) -> list[dict[str, Any]]:
    """The retries Kimi Code reported making itself (``meta`` lines of type ``turn.step.retrying``)."""
    return [e for e in parse_jsonl(text).events if e.get("role") == "meta" and e.get("type") == "turn.step.retrying"]


class KimiProvider(ShippedCli):
    name = "kimi"
    binary = "kimi"
    help_args = HELP_ARGS
    required_flags = REQUIRED_FLAGS
    model_env = MODEL_ENV

    def runtime_problem(self, binary: str) -> str | None:
        path = reviewer_env({}).get("PATH", os.defpath)  # the reviewer's own PATH, which the shebang's env searches
        return node_problem(binary, path, "Kimi Code", NODE_MINIMUM)

    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        home = attempt_dir(request, "kimi-home")
        user = user_dir("KIMI_CODE_HOME", ".kimi-code")
        config = private_config(user / "config.toml")
        (home / "config.toml").write_text(config)
        for name in ("credentials", "oauth"):
            self.link_credential(request, user / name, home / name)
        cwd = attempt_dir(request, "cwd")
        prompt = range_prompt(request, cwd, "kimi")
        if isinstance(prompt, ReviewerResult):
            return prompt
        settings = []
        if info.offers("--skills-dir"):
            settings.append(Setting(("--skills-dir", str(attempt_dir(request, "skills"))), SKILLS_DIR_BELT))
        env = {**env, "KIMI_CODE_HOME": str(home), "KIMI_DISABLE_TELEMETRY": "1",
               ATTEMPTS_ENV: env.get(ATTEMPTS_ENV) or ATTEMPTS}  # fmt: skip

        def attempt(strict: bool) -> ProcessResult:
            argv = [info.binary, "-p", prompt, "--output-format", "stream-json", "--add-dir", str(request.repo_root)]
            argv += [arg for s in settings if not strict for arg in s.args]
            if request.preset.model:
                argv += ["-m", request.preset.model]
            return self.run(request, argv, env=env, cwd=cwd)

        proc, notes = with_belt_retry("kimi", settings, attempt, refused_at_admission)
        model = request.preset.model or configured_model(config) or env.get("KIMI_MODEL_NAME")
        result = self._classify(proc, request, model)
        if result.end == "unavailable" and refused_at_admission(proc):  # an invocation it refuses: not transient
            result = replace(result, error=f"capability_missing: kimi refused its invocation: {result.error}",
                             retryable=False)  # fmt: skip
        auth = result.end == "unavailable" and (result.error or "").startswith("authentication failed")
        return replace(result, notes=notes, host_retry="auth_path_unavailable" if auth else None)

    def _classify(self, proc: ProcessResult, request: ReviewerRequest, model: str | None) -> ReviewerResult:
        outcome, session_id, final, status = audit(proc.stdout_text())
        ids: dict[str, Any] = {"session_id": session_id, "model": model}
        ended = stream_end("kimi", outcome, proc, **ids)
        if ended:
            return ended
        if proc.returncode:
            found = FAILURE.search(proc.stderr_text())
            message = clip(found.group(1) if found else proc.stderr_text() or f"exit {proc.returncode}", 300)
            if status == 429 or QUOTA_TEXT.search(message):
                return ReviewerResult("unavailable", f"quota or rate limit: {message}", **ids)
            if "provider.auth_error" in message or AUTH_TEXT.search(message):
                return ReviewerResult("unavailable", f"authentication failed: {message}", **ids)
            retried = own_retries(proc.stdout_text())
            if retried and not isinstance(retried[-1].get("status_code"), int):  # no HTTP status: the connection
                return stream_failed("kimi", f"{message} ({len(retried) + 1} attempts by kimi)", **ids)
            reason, retryable = unavailable_reason(message)
            retryable = retryable or proc.returncode == 75 or "provider.connection_error" in message
            return ReviewerResult("unavailable", f"{reason}: {message}", retryable=retryable, **ids)
        return drifted(outcome, **ids) or answered(final, request.verdict_path, "kimi", **ids)
