"""``claude``: Claude Code as a read-only reviewer (reviewer-clis.md §1.4, §2; wrapper contract).

Isolation, in two layers. What the model is offered: ``--tools Read,Grep,Glob`` (no
shell, since git itself can write files), no MCP servers (``--strict-mcp-config`` with
an empty ``--mcp-config``), no user/project/local settings (``--setting-sources ""``),
``--safe-mode`` and ``--disable-slash-commands`` when the installed CLI has them, and
a private ``CLAUDE_CONFIG_DIR`` built fresh per attempt holding only a *link* to the
user's credentials. What it did: the stream-json events are audited — a tool use
outside the allow-list, a non-empty ``mcp_servers``, an unsafe ``permissionMode`` or a
permission denial is a boundary violation (terminal); init fields are judged by
shape, never by a list of names. The final answer arrives as ``--json-schema``
structured output and this provider writes the verdict file from it. With no shell,
the reviewer reads the range's ``git diff`` and ``git log`` from files this provider
writes into the attempt's work dir.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.api import (
    CliInfo,
    GitError,
    ProcessResult,
    ReviewerRequest,
    ReviewerResult,
    attempt_dir,
    link_if_exists,
    run_git,
    user_dir,
)
from agentreview_agent.answer import VERDICT_SCHEMA
from agentreview_agent.providers.base import ShippedCli, answered, clip, stream_end, tail
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
OPTIONAL_FLAGS = ("--safe-mode", "--disable-slash-commands", "--no-session-persistence")
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

# Init fields known to be host metadata (parse_probe_result's KNOWN_SAFE_INIT_METADATA_FIELDS).
KNOWN_METADATA = frozenset(
    (
        "type", "subtype", "cwd", "session_id", "model", "permissionMode", "apiKeySource", "claude_code_version",
        "output_style", "agents", "analytics_disabled", "product_feedback_disabled", "uuid", "fast_mode_state",
    )
)  # fmt: skip
LIST_OF_STRINGS = frozenset(("agents", "capabilities"))
VOCABULARY = frozenset(("slash_commands", "terminal_slash_commands", "skills", "plugins"))  # never judged
AUTHORITY_STEMS = (
    "permission", "bypass", "dangerous", "sandbox", "privileg", "escalat", "elevat", "unrestricted", "authorit",
    "admin", "superuser",
)  # fmt: skip
CLEAN_SUBTYPES = (None, "success", "completed", "stop_turn", "end_turn")


def _segments(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [s.lower() for s in re.split(r"[\s_.:\-]+", spaced) if s]


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]", "?", name)[:60]


@dataclass
class Audit:
    """What the event stream proves. ``breach`` is terminal, ``drift`` may fall back."""

    breach: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    inits: int = 0
    session_id: str | None = None
    model: str | None = None
    result: dict[str, Any] | None = None
    auth_signal: str | None = None
    quota_signal: str | None = None


def _audit_init(event: dict[str, Any], audit: Audit) -> None:
    audit.inits += 1
    audit.session_id = audit.session_id or _str(event.get("session_id"))
    audit.model = _str(event.get("model")) or audit.model
    tools = event.get("tools")
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        audit.drift.append("init 'tools' is not a list of strings")
    else:
        extra, missing = set(tools) - EXPECTED_TOOLS, EXPECTED_TOOLS - set(tools)
        if extra:
            audit.breach.append("init offers tools outside the allow-list: " + ", ".join(sorted(extra)))
        if missing:
            audit.drift.append("init lacks tools: " + ", ".join(sorted(missing)))
    servers = event.get("mcp_servers", [])
    if not isinstance(servers, (list, dict)):
        audit.drift.append("init 'mcp_servers' is not a list")
    elif servers:
        names = [s.get("name", "?") if isinstance(s, dict) else str(s) for s in servers]
        audit.breach.append("init lists MCP servers: " + ", ".join(_safe_name(str(n)) for n in names))
    if "permissionMode" not in event:
        audit.drift.append("init has no permissionMode")
    elif event["permissionMode"] not in SAFE_PERMISSION_MODES:
        audit.breach.append(f"unsafe permissionMode {clip(str(event['permissionMode']), 40)!r}")
    for name, value in event.items():
        if name in ("tools", "mcp_servers", "permissionMode") or name in VOCABULARY:
            continue
        if name in LIST_OF_STRINGS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                audit.drift.append(f"init field '{name}' is not a list of strings")
            continue
        container = isinstance(value, (list, dict))
        if name in KNOWN_METADATA:
            if container and value:
                audit.drift.append(f"known init field '{name}' holds a non-empty {type(value).__name__}")
            continue
        if any(seg.startswith(AUTHORITY_STEMS) for seg in _segments(name)):
            audit.drift.append(f"unverifiable authority-shaped init field '{_safe_name(name)}'")
        elif container and value:
            audit.drift.append(f"unrecognized surface-shaped init field '{_safe_name(name)}'")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def audit_stream(text: str) -> tuple[Audit, str | None]:
    """Audit Claude's stream-json output; the second value says why it cannot be audited."""
    stream = parse_jsonl(text)
    audit = Audit()
    for event in stream.events:
        kind, subtype = event.get("type"), event.get("subtype")
        if kind == "system" and subtype == "init":
            _audit_init(event, audit)
        elif kind == "system" and subtype == "api_retry":
            if event.get("error") == "authentication_failed" or event.get("error_status") == 401:
                audit.auth_signal = "authentication_failed (api_retry)"
        elif kind == "rate_limit_event":
            info = event.get("rate_limit_info")
            if isinstance(info, dict) and info.get("status") == "rejected":
                audit.quota_signal = "rate limit rejected"
        elif kind in ("assistant", "user"):
            message = event.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                    name = block.get("name")
                    if not isinstance(name, str) or name not in EXPECTED_TOOLS:
                        audit.breach.append(f"reviewer used tool {clip(str(name), 60)!r} outside the allow-list")
            if kind == "assistant" and event.get("error") == "authentication_failed":
                audit.auth_signal = "authentication_failed"
        elif kind == "result":
            audit.result = event
            audit.session_id = audit.session_id or _str(event.get("session_id"))
            denials = event.get("permission_denials")
            if denials:
                tools = sorted({str(d.get("tool_name")) for d in denials if isinstance(d, dict)})
                audit.breach.append("permission denied for " + ", ".join(tools or ["a tool"]))
    return audit, stream.corrupt


def classify(audit: Audit, corrupt: str | None, proc: ProcessResult) -> ReviewerResult | Any:
    """Turn the audit into a result, or return the final answer (dict or text) to record."""
    ids: dict[str, Any] = {"session_id": audit.session_id, "model": audit.model}
    ended = stream_end("claude", corrupt, audit.breach, proc, **ids)
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
        return ReviewerResult(
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
    if audit.drift:
        return ReviewerResult("unavailable", "capability_missing: " + "; ".join(dict.fromkeys(audit.drift)), **ids)
    structured = result.get("structured_output")
    return structured if isinstance(structured, dict) else text


def write_range_files(request: ReviewerRequest) -> tuple[Path, Path]:
    """``git diff`` and ``git log`` of the reviewed range, for a reviewer without a shell.

    Through the host's hardened git (``agentreview.api.run_git``): the reviewed repository's
    configuration and attributes run no fsmonitor, external diff, textconv or gpg program."""
    rng = f"{request.base_sha}..{request.head_sha}"
    diff, log = request.work_dir / "range.diff", request.work_dir / "range.log"
    quote = {"core.quotePath": "false"}
    with diff.open("wb") as fh:
        run_git(["diff", "--no-color", "--full-index", rng], request.repo_root, stdout=fh, config=quote, timeout=60)
    with log.open("wb") as fh:
        run_git(["log", "--no-color", "--stat", "--format=fuller", rng], request.repo_root, stdout=fh, config=quote,
                timeout=60)  # fmt: skip
    return diff, log


class ClaudeProvider(ShippedCli):
    name = "claude"
    binary = "claude"
    help_args = HELP_ARGS
    required_flags = REQUIRED_FLAGS
    model_env = MODEL_ENV

    def argv(self, info: CliInfo, request: ReviewerRequest, add_dirs: list[Path]) -> list[str]:
        argv = [
            info.binary, "--print",
            "--tools", ",".join(READ_TOOLS),
            "--permission-mode", PERMISSION_MODE,
            "--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}',
            "--setting-sources", "",
        ]  # fmt: skip
        argv += [flag for flag in OPTIONAL_FLAGS if info.offers(flag)]
        for directory in add_dirs:
            argv += ["--add-dir", str(directory)]
        if request.preset.model:
            argv += ["--model", request.preset.model]
        argv += ["--output-format", "stream-json", "--verbose", "--json-schema", json.dumps(VERDICT_SCHEMA)]
        return argv

    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        config_dir = attempt_dir(request, "claude-config")
        link_if_exists(user_dir("CLAUDE_CONFIG_DIR", ".claude") / ".credentials.json", config_dir / ".credentials.json")
        try:
            diff, log = write_range_files(request)
        except (OSError, GitError) as exc:
            return ReviewerResult("unavailable", f"could not write the range's diff and log for claude: {exc}")
        add_dirs = [request.work_dir]
        rubric_dir = request.rubric_path.parent
        if not rubric_dir.resolve().is_relative_to(request.repo_root.resolve()):
            add_dirs.append(rubric_dir)
        prompt = (
            request.answer_prompt
            + f"\n\nYou have no shell. The host wrote the range's `git diff` to {diff} and its `git log` to {log}; "
            "read those files instead of running git, then read the touched files in the repository."
        )
        env = {
            **env,
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
            "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_MAX_RETRIES": os.environ.get("CLAUDE_CODE_MAX_RETRIES", "3"),
        }
        proc = self.run(request, self.argv(info, request, add_dirs), env=env, stdin=prompt.encode("utf-8"))
        audit, corrupt = audit_stream(proc.stdout_text())
        outcome = classify(audit, corrupt, proc)
        if isinstance(outcome, ReviewerResult):
            return outcome
        return answered(outcome, request.verdict_path, "claude", session_id=audit.session_id, model=audit.model)
