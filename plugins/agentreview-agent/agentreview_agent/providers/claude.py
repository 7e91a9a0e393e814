"""``claude``: Claude Code as a read-only reviewer (reviewer-clis.md §1.4, §2; wrapper contract).

Read tools only (git itself can write files, so no shell), no MCP servers or user settings, a private config
dir per attempt, an audited stream; its structured answer is written to the verdict file (docs/providers.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentreview.api import (
    CliInfo,
    PresetSpec,
    ProcessResult,
    ReviewerRequest,
    ReviewerResult,
    attempt_dir,
    user_dir,
)
from agentreview_agent.answer import VERDICT_SCHEMA
from agentreview_agent.audit import (
    AuditOutcome,
    is_container,
    list_of_strings,
    name_of,
    unknown_event,
    unknown_member,
)
from agentreview_agent.excerpt import note
from agentreview_agent.probe import PROBE_KEY, probe_request, refusing_server, verdict
from agentreview_agent.providers.base import (
    Setting,
    ShippedCli,
    answered,
    clip,
    drifted,
    refused_at_admission,
    setting_args,
    stream_end,
    tail,
    tool_note,
    with_belt_retry,
)
from agentreview_agent.range_files import range_prompt
from agentreview_agent.streams import AUTH_TEXT, QUOTA_TEXT, parse_jsonl, unavailable_reason

HELP_ARGS = ("--help",)
REQUIRED_FLAGS = (
    "--print",
    "--tools",
    "--strict-mcp-config",
    "--mcp-config",
    "--setting-sources",
    "--permission-mode",
    "--add-dir",
    "--output-format",
    "--verbose",
    "--json-schema",
)
OPTIONAL_SETTINGS = (
    Setting(("--safe-mode",), 'the tools allow-list, --setting-sources "" and the empty strict MCP config'),
    Setting(("--disable-slash-commands",), "the exact tools allow-list, which offers no skill tool"),
    Setting(("--no-session-persistence",), "the private config dir, deleted after the attempt"),
)
READ_TOOLS = ("Read", "Grep", "Glob")
# Anthropic API access: key or bearer token, endpoint (a gateway), its headers, model choice, and the long-lived
# subscription token of `claude setup-token`. Bedrock/Vertex/Foundry are not here: they need cloud account
# credentials (AWS_*, GOOGLE_APPLICATION_CREDENTIALS) that grant far more than the model; a preset names them.
MODEL_ENV = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_OAUTH_TOKEN",
)  # fmt: skip
STRUCTURED_TOOL = "StructuredOutput"
EXPECTED_TOOLS = frozenset((*READ_TOOLS, STRUCTURED_TOOL))
SAFE_PERMISSION_MODES = frozenset(("default", "plan"))
PERMISSION_MODE = "plan"

# The init's pinned fields, judged by value (the wrapper contract): `tools`, `mcp_servers`, `permissionMode`.
PINNED = frozenset(("tools", "mcp_servers", "permissionMode"))
# Skill, command and plugin lists are vocabulary, not a boundary: never judged by name, shape or origin.
VOCABULARY = frozenset(("slash_commands", "terminal_slash_commands", "skills", "plugins"))
# Host metadata with a shape check: a list of strings, no value vocabulary.
LIST_OF_STRINGS = frozenset(("agents", "capabilities"))
# Host metadata: the directories the model may read besides the cwd; each must be one this provider passed.
DIRECTORY_LISTS = frozenset(("additional_directories",))
# Host metadata containers known to be safe whatever they hold (the contract's KNOWN_SAFE_INIT_METADATA_FIELDS);
# a scalar needs no entry: an unknown scalar or empty container is tolerated by shape.
KNOWN_METADATA_CONTAINERS: frozenset[str] = frozenset()
# Stream event types; any other is drift. `system` events other than init are the host's notices about
# itself (api_retry, ui_invalidate, ...): the model acts only through assistant content blocks.
EVENT_TYPES = frozenset(("system", "assistant", "user", "result", "rate_limit_event", "stream_event"))
# Assistant content blocks: tool invocations (judged by the allow-list) and blocks that invoke nothing.
TOOL_BLOCKS = frozenset(("tool_use", "server_tool_use", "mcp_tool_use"))
INERT_BLOCKS = frozenset(("text", "thinking", "redacted_thinking"))
CLEAN_SUBTYPES = (None, "success", "completed", "stop_turn", "end_turn")


@dataclass
class Audit:
    """What the event stream proves (``outcome``) and what it reports."""

    outcome: AuditOutcome = field(default_factory=AuditOutcome)
    inits: int = 0
    session_id: str | None = None
    model: str | None = None
    result: dict[str, Any] | None = None
    auth_signal: str | None = None
    quota_signal: str | None = None


def _within(value: str, allowed: Sequence[Path]) -> bool:
    try:
        resolved = Path(value).resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return any(value == str(d) or resolved == d.resolve() for d in allowed)


def audit_init(event: dict[str, Any], allowed_dirs: Sequence[Path] = ()) -> AuditOutcome:
    """Judge one ``system``/``init`` event: the pinned fields by value, every other field by shape. A directory
    listed beyond ``allowed_dirs`` (cwd and each ``--add-dir``) came from configuration this did not control."""
    out = AuditOutcome()
    tools = event.get("tools")
    if not list_of_strings(tools):
        out.drift("init 'tools' is not a list of strings")
    else:
        extra, missing = set(tools) - EXPECTED_TOOLS, EXPECTED_TOOLS - set(tools)
        if extra:
            out.breach("init offers tools outside the allow-list: " + ", ".join(name_of(t) for t in sorted(extra)))
        if missing:
            out.drift("init lacks tools: " + ", ".join(sorted(missing)))
    servers = event.get("mcp_servers", [])
    if not is_container(servers):
        out.drift("init 'mcp_servers' is not a list")
    elif servers:
        names = [s.get("name", "?") if isinstance(s, dict) else s for s in servers]
        out.breach("init lists MCP servers: " + ", ".join(name_of(n) for n in names))
    if "permissionMode" not in event:
        out.drift("init has no permissionMode")
    elif event["permissionMode"] not in SAFE_PERMISSION_MODES:
        out.breach(f"unsafe permissionMode {note(str(event['permissionMode']), 40)!r}")
    for name, value in event.items():
        if name in PINNED or name in VOCABULARY or name in KNOWN_METADATA_CONTAINERS:
            continue
        if name in LIST_OF_STRINGS or name in DIRECTORY_LISTS:
            if not list_of_strings(value):
                out.drift(f"init field '{name}' is not a list of strings")
            elif name in DIRECTORY_LISTS:
                outside = [v for v in value if not _within(v, allowed_dirs)]
                if outside:
                    shown = ", ".join(name_of(Path(v).name or v) for v in outside)
                    out.breach(f"init '{name}' names directories agentreview did not pass: {shown}")
            continue
        drift = unknown_member("init", name, value)
        if drift:
            out.drift(drift)
    return out


def audit_event(event: dict[str, Any]) -> AuditOutcome:
    """Judge one event other than init: its type by shape, every tool invocation by value."""
    out = AuditOutcome()
    kind = event.get("type")
    if kind not in EVENT_TYPES:
        out.add(unknown_event(f"unknown event type '{name_of(kind)}'", event))
    elif kind == "assistant":
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            block_type = block.get("type") if isinstance(block, dict) else None
            if block_type in TOOL_BLOCKS:
                tool = block.get("name")
                if not isinstance(tool, str) or tool not in EXPECTED_TOOLS:
                    out.breach(tool_note(tool, block.get("input")))
            elif block_type not in INERT_BLOCKS:
                out.drift(f"assistant message has an unknown content block type '{name_of(block_type)}'")
    elif kind == "result":
        denials = event.get("permission_denials")
        if denials:
            names = sorted({str(d.get("tool_name")) for d in denials if isinstance(d, dict)})
            out.breach("permission denied for " + ", ".join(name_of(n) for n in names or ["a tool"]))
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def audit_stream(text: str, allowed_dirs: Sequence[Path] = ()) -> Audit:
    """Audit Claude's stream-json output (see :func:`audit_init` and :func:`audit_event`)."""
    stream = parse_jsonl(text)
    audit = Audit()
    for stray in stream.stray:
        audit.outcome.drift(stray)
    for event in stream.events:
        kind, subtype = event.get("type"), event.get("subtype")
        if kind == "system" and subtype == "init":
            audit.inits += 1
            audit.session_id = audit.session_id or _str(event.get("session_id"))
            audit.model = _str(event.get("model")) or audit.model
            audit.outcome.add(audit_init(event, allowed_dirs))
            continue
        audit.outcome.add(audit_event(event))
        if kind == "system" and subtype == "api_retry":
            if event.get("error") == "authentication_failed" or event.get("error_status") == 401:
                audit.auth_signal = "authentication_failed (api_retry)"
        elif kind == "rate_limit_event":
            info = event.get("rate_limit_info")
            if isinstance(info, dict) and info.get("status") == "rejected":
                audit.quota_signal = "rate limit rejected"
        elif kind == "assistant" and event.get("error") == "authentication_failed":
            audit.auth_signal = "authentication_failed"
        elif kind == "result":
            audit.result = event
            audit.session_id = audit.session_id or _str(event.get("session_id"))
    return audit


def classify(audit: Audit, proc: ProcessResult) -> ReviewerResult | Any:
    """Turn the audit into a result, or return the final answer (dict or text) to record."""
    ids: dict[str, Any] = {"session_id": audit.session_id, "model": audit.model}
    ended = stream_end("claude", audit.outcome, proc, **ids)
    if ended:
        return ended
    result = audit.result
    if result is None:
        stderr = tail(proc.stderr_text())
        if audit.quota_signal or QUOTA_TEXT.search(stderr):
            return ReviewerResult("unavailable", f"quota or rate limit: {audit.quota_signal or stderr}", **ids)
        if audit.auth_signal or AUTH_TEXT.search(stderr):
            return ReviewerResult("unavailable", f"authentication failed: {audit.auth_signal or stderr}", **ids)
        if proc.returncode:
            return ReviewerResult(
                "unavailable", f"claude exited with code {proc.returncode} before finishing its turn: {stderr}", **ids
            )
        return drifted(audit.outcome, **ids) or ReviewerResult(
            "unavailable", "claude produced an empty turn (commonly an auth failure or an invalid model id)", **ids
        )
    answer = result.get("result")
    text = answer if isinstance(answer, str) else ""
    status = result.get("api_error_status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else 0
    failed = bool(result.get("is_error")) or status >= 400 or result.get("subtype") not in CLEAN_SUBTYPES
    if failed or proc.returncode:
        detail = clip(text or str(result.get("subtype")), 300)
        if status == 429 or audit.quota_signal or QUOTA_TEXT.search(text):
            return ReviewerResult("unavailable", f"quota or rate limit: {detail}", **ids)
        if status == 401 or audit.auth_signal or AUTH_TEXT.search(text):
            return ReviewerResult("unavailable", f"authentication failed: {detail}", **ids)
        reason, retryable = unavailable_reason(text)
        return ReviewerResult("unavailable", f"{reason}: {detail}", retryable=retryable, **ids)
    if audit.inits == 0:
        return ReviewerResult("unavailable", "claude's stream has no init event, so isolation is unverified", **ids)
    drift = drifted(audit.outcome, **ids)
    if drift:
        return drift
    structured = result.get("structured_output")
    return structured if isinstance(structured, dict) else text


class ClaudeProvider(ShippedCli):
    name = "claude"
    binary = "claude"
    help_args = HELP_ARGS
    required_flags = REQUIRED_FLAGS
    model_env = MODEL_ENV

    def argv(self, info: CliInfo, request: ReviewerRequest, add_dirs: list[Path], strict: bool = False) -> list[str]:
        argv = [
            info.binary, "--print",
            "--tools", ",".join(READ_TOOLS),
            "--permission-mode", PERMISSION_MODE,
            "--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}',
            "--setting-sources", "",
        ]  # fmt: skip
        argv += setting_args(self.optional(info), strict)
        for directory in add_dirs:
            argv += ["--add-dir", str(directory)]
        if request.preset.model:
            argv += ["--model", request.preset.model]
        argv += ["--output-format", "stream-json", "--verbose", "--json-schema", json.dumps(VERDICT_SCHEMA)]
        return argv

    def admission_probe(self, info: CliInfo, spec: PresetSpec) -> str | None:
        """Start Claude as a lane would, against a local server that refuses every request, with no credential
        linked; audit the init event it prints before its first model request."""
        with refusing_server() as url, probe_request(spec) as request:
            env = self.environment(request)
            if isinstance(env, str):
                return f"would fall back: {env}"
            for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
                env.pop(name, None)
            env.update(
                ANTHROPIC_BASE_URL=url,
                ANTHROPIC_API_KEY=PROBE_KEY,
                CLAUDE_CONFIG_DIR=str(attempt_dir(request, "claude-config")),
                CLAUDE_CODE_MAX_RETRIES="0",
                DISABLE_AUTOUPDATER="1",
                DISABLE_TELEMETRY="1",
            )

            def attempt(strict: bool) -> ProcessResult:
                argv = self.argv(info, request, [request.work_dir], strict)
                return self.run(request, argv, env=env, stdin=b"Answer with {} only.")

            proc, notes = with_belt_retry("claude", self.optional(info), attempt, refused_at_admission)
            audit = audit_stream(proc.stdout_text(), [request.repo_root, request.work_dir])
        found = audit.outcome
        if not found.unsafe_values and audit.inits == 0:
            return f"would fall back: claude printed no init event: {tail(proc.stderr_text() or proc.stdout_text())}"
        drift = found.unknown_fields and ["capability_missing: " + "; ".join(dict.fromkeys(found.unknown_fields))]
        return verdict(found.unsafe_values, drift, notes)

    @staticmethod
    def optional(info: CliInfo) -> list[Setting]:
        """The belt flags this CLI's help lists."""
        return [setting for setting in OPTIONAL_SETTINGS if info.offers(setting.args[0])]

    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        config_dir = attempt_dir(request, "claude-config")
        credentials = user_dir("CLAUDE_CONFIG_DIR", ".claude") / ".credentials.json"
        self.link_credential(request, credentials, config_dir / ".credentials.json")
        prompt = range_prompt(request, request.work_dir, "claude")
        if isinstance(prompt, ReviewerResult):
            return prompt
        add_dirs = [request.work_dir]
        rubric_dir = request.rubric_path.parent
        if not rubric_dir.resolve().is_relative_to(request.repo_root.resolve()):
            add_dirs.append(rubric_dir)
        env = {
            **env,
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
            "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_MAX_RETRIES": os.environ.get("CLAUDE_CODE_MAX_RETRIES", "3"),
        }

        def attempt(strict: bool) -> ProcessResult:
            argv = self.argv(info, request, add_dirs, strict)
            return self.run(request, argv, env=env, stdin=prompt.encode("utf-8"))

        proc, notes = with_belt_retry("claude", self.optional(info), attempt, refused_at_admission)
        audit = audit_stream(proc.stdout_text(), [request.repo_root, *add_dirs])
        outcome = classify(audit, proc)
        model = audit.model or request.preset.model
        if isinstance(outcome, ReviewerResult):
            auth = outcome.end == "unavailable" and (outcome.error or "").startswith("authentication failed")
            return replace(
                outcome,
                model=outcome.model or model,
                notes=notes,
                host_retry="auth_path_unavailable" if auth else None,
            )
        result = answered(outcome, request.verdict_path, "claude", session_id=audit.session_id, model=model)
        return replace(result, notes=notes)
