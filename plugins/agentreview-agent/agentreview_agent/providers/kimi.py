"""``kimi``: Kimi Code as a read-only reviewer (reviewer-clis.md §1.5, §5.1; wrapper contract).

Prompt mode (``-p``) always auto-approves tools, so the only way to keep Kimi Code to
reading is its global tool allow-list: each attempt gets a private ``KIMI_CODE_HOME``
whose ``config.toml`` keeps only the user's provider, model and thinking settings
(no MCP, hooks, plugins or skills) and ends with ``[tools] enabled = ["Read", "Grep",
"Glob"]``; ``credentials/`` and ``oauth/`` are *linked* from the user's home so token
refresh is not lost. It runs in the attempt's empty work dir with the repository
added read-side via ``--add-dir``, an empty ``--skills-dir`` when the CLI has it, and
telemetry off. The stream is audited: a tool call outside the allow-list is a boundary
violation; a role the audit does not know, or a stray line that might be an event, is
drift (``capability_missing``). Kimi reports failures only on stderr (``error: failed to run prompt:
<code>: <message>``), which is classified per section 7. The prompt goes in argv
(Kimi Code 2.1 has no stdin prompt), so it is visible to other local users' ``ps``.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from agentreview.api import CliInfo, ReviewerRequest, ReviewerResult, attempt_dir, link_if_exists, user_dir
from agentreview_agent.audit import AuditOutcome, name_of, unknown_event
from agentreview_agent.providers.base import ShippedCli, answered, clip, drifted, stream_end, tool_note
from agentreview_agent.streams import AUTH_TEXT, QUOTA_TEXT, parse_jsonl, unavailable_reason

HELP_ARGS = ("--help",)
REQUIRED_FLAGS = ("--output-format", "--add-dir")
OPTIONAL_FLAGS = ("--skills-dir",)
READ_TOOLS = ("Read", "Grep", "Glob")
# Kimi Code reads provider keys from config.toml, except the KIMI_MODEL_* family (name, key, provider type, base URL).
MODEL_ENV = ("KIMI_MODEL_*",)
KEPT_KEYS = ("default_model", "providers", "models", "thinking", "default_thinking")
FAILURE = re.compile(r"error: failed to run prompt: (.*)")


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
    kept = {k: v for k, v in data.items() if k in KEPT_KEYS}
    lines: list[str] = []
    _toml_tables("", {k: v for k, v in kept.items() if not isinstance(v, dict)}, lines)
    for key, value in kept.items():
        if isinstance(value, dict):
            _toml_tables(json.dumps(key), value, lines)
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


class KimiProvider(ShippedCli):
    name = "kimi"
    binary = "kimi"
    help_args = HELP_ARGS
    required_flags = REQUIRED_FLAGS
    model_env = MODEL_ENV

    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        home = attempt_dir(request, "kimi-home")
        user = user_dir("KIMI_CODE_HOME", ".kimi-code")
        (home / "config.toml").write_text(private_config(user / "config.toml"))
        for name in ("credentials", "oauth"):
            link_if_exists(user / name, home / name)
        cwd = attempt_dir(request, "cwd")
        argv = [info.binary, "-p", request.answer_prompt, "--output-format", "stream-json"]
        argv += ["--add-dir", str(request.repo_root)]
        if info.offers("--skills-dir"):
            argv += ["--skills-dir", str(attempt_dir(request, "skills"))]
        if request.preset.model:
            argv += ["-m", request.preset.model]
        env = {**env, "KIMI_CODE_HOME": str(home), "KIMI_DISABLE_TELEMETRY": "1"}
        proc = self.run(request, argv, env=env, cwd=cwd)
        outcome, session_id, final, status = audit(proc.stdout_text())
        ids: dict[str, Any] = {"session_id": session_id, "model": request.preset.model}
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
            reason, retryable = unavailable_reason(message)
            retryable = retryable or proc.returncode == 75 or "provider.connection_error" in message
            return ReviewerResult("unavailable", f"{reason}: {message}", retryable=retryable, **ids)
        return drifted(outcome, **ids) or answered(final, request.verdict_path, "kimi", **ids)
