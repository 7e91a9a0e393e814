"""``codex``: the Codex CLI as a read-only reviewer (reviewer-clis.md §1.5, §3; wrapper contract).

``codex exec --sandbox read-only`` under a private ``CODEX_HOME``, every added surface off; commands in the
sandbox are the contract's one exception, a refused command or any tool item a breach (docs/providers.md).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentreview.api import (
    CliInfo,
    PresetSpec,
    ProcessResult,
    ReviewerRequest,
    ReviewerResult,
    attempt_dir,
    env_names_problem,
    reviewer_env,
    run_process_group,
    user_dir,
)
from agentreview_agent.answer import VERDICT_SCHEMA
from agentreview_agent.audit import AuditOutcome, name_of, unknown_event
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
    with_belt_retry,
)
from agentreview_agent.streams import AUTH_TEXT, QUOTA_TEXT, parse_jsonl, unavailable_reason

HELP_ARGS = ("exec", "--help")
REQUIRED_FLAGS = (
    "--sandbox",
    "--ephemeral",
    "--skip-git-repo-check",
    "--ignore-user-config",
    "--disable",
    "--json",
    "--output-schema",
    "--output-last-message",
    "--cd",
)
WEB_SEARCH_OFF = Setting(
    ("-c", 'web_search="disabled"'),
    "the event audit (a web_search item is a terminal boundary violation; a hosted search goes to the same "
    "provider)",
)
IGNORE_RULES = Setting(("--ignore-rules",), "the private CODEX_HOME, which holds no rules")
HOST_PATH_TEXT = "failed to initialize in-process app-server client: Operation not permitted"
# Features that add a surface beyond reading; each is disabled when this CLI lists it.
DISABLE_FEATURES = (
    "hooks", "unified_exec", "multi_agent", "goals", "apps", "plugins", "remote_plugin", "plugin_sharing",
    "browser_use", "browser_use_external", "computer_use", "image_generation", "in_app_browser", "tool_suggest",
    "skill_mcp_dependency_install", "realtime_conversation", "worktrees", "workspace_dependencies",
    "unbounded_connection_retries",
)  # fmt: skip
# Item types that invoke nothing; `command_execution` is judged on its own (the contract's Codex exception: reads
# through the read-only sandbox); a tool item is a breach; any other item type is drift (a new surface unverified).
INERT_ITEMS = frozenset(("agent_message", "reasoning", "error", "todo_list"))
TOOL_ITEMS = frozenset(("file_change", "mcp_tool_call", "web_search", "collab_tool_call", "image_generation"))
EVENT_TYPES = frozenset(
    ("thread.started", "turn.started", "turn.completed", "turn.failed", "item.started", "item.updated",
     "item.completed", "error")
)  # fmt: skip
# A command the sandbox refused or the policy declined: an attempt to step outside read-only, however fast it ended.
REFUSED = re.compile(r"Read-only file system|Operation not permitted")
UNSUPPORTED = re.compile(r"unsupported call: ([^\s,;]+)")
# OpenAI API access (key, endpoint, organization/project headers) and Codex's own key and automation token.
MODEL_ENV = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORGANIZATION", "OPENAI_PROJECT", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN",
)  # fmt: skip
# Preset `config` keys that may be passed as `-c`: model selection only, never access.
CONFIG_KEYS = (
    "model_provider", "model_providers", "model_reasoning_effort", "model_reasoning_summary", "model_verbosity",
)  # fmt: skip


def config_env_names(options: Mapping[str, Any]) -> list[str]:
    """The variables a preset's ``config.model_providers`` tell Codex to read: each ``env_key`` and the
    values of each ``env_http_headers`` table (a header taken from a variable)."""
    table = options.get("config")
    providers = table.get("model_providers") if isinstance(table, Mapping) else None
    names: list[str] = []
    for provider in providers.values() if isinstance(providers, Mapping) else []:
        if not isinstance(provider, Mapping):
            continue
        if "env_key" in provider:
            names.append(provider["env_key"])
        headers = provider.get("env_http_headers")
        names += list(headers.values()) if isinstance(headers, Mapping) else []
    return names


@lru_cache(maxsize=16)
def _features(binary: str, stamp: tuple[int, int]) -> frozenset[str]:
    with tempfile.TemporaryDirectory(prefix="agentreview-codex-probe-") as home:
        proc = run_process_group(
            [binary, "features", "list"],
            cwd=home,
            env=reviewer_env({"CODEX_HOME": home, "HOME": home}),
            deadline=time.monotonic() + 20,
            kill_grace_s=1.0,
        )
    return frozenset(line.split()[0] for line in proc.stdout_text().splitlines() if line.split())


def features(binary: str) -> frozenset[str]:
    st = os.stat(binary)
    return _features(binary, (st.st_mtime_ns, st.st_size))


def _flatten(prefix: str, value: Any, out: list[tuple[str, Any]]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out.append((prefix, value))


def config_overrides(options: Mapping[str, Any]) -> list[str] | str:
    """``-c key=value`` pairs from a preset's ``config`` table, or why they are refused."""
    table = options.get("config") or {}
    if not isinstance(table, Mapping):
        return "preset option 'config' must be a table"
    pairs: list[tuple[str, Any]] = []
    _flatten("", table, pairs)
    argv: list[str] = []
    for key, value in pairs:
        if key.split(".")[0] not in CONFIG_KEYS:
            return f"preset option config.{key} is not allowed for codex (only model selection may be configured)"
        argv += ["-c", f"{key}={json.dumps(value)}"]
    return argv


@dataclass
class Audit:
    outcome: AuditOutcome = field(default_factory=AuditOutcome)
    session_id: str | None = None
    completed: bool = False
    failed: str | None = None
    errors: list[str] = field(default_factory=list)
    last_message: str | None = None


def audit_item(item: dict[str, Any]) -> AuditOutcome:
    """Judge one item (started, updated or completed): any attempted write, patch or tool is a breach,
    an item type this audit does not know is drift."""
    out = AuditOutcome()
    item_type = item.get("type")
    if item_type == "command_execution":
        command = note(str(item.get("command")), 120)
        status, output = item.get("status"), str(item.get("aggregated_output", ""))
        if status == "declined":
            out.breach(f"reviewer's command was declined by the sandbox policy: {command}")
        elif REFUSED.search(output):
            out.breach(f"reviewer tried to write through its shell (the sandbox refused): {command}")
    elif item_type in TOOL_ITEMS:
        out.breach(f"reviewer used {name_of(item_type)!r}, which a read-only review may not")
    elif item_type not in INERT_ITEMS:
        out.drift(f"unknown item type '{name_of(item_type)}'")
    return out


def audit_stream(text: str) -> Audit:
    stream = parse_jsonl(text)
    audit = Audit()
    for stray in stream.stray:
        audit.outcome.drift(stray)
    for event in stream.events:
        kind = event.get("type")
        if kind not in EVENT_TYPES:
            audit.outcome.add(unknown_event(f"unknown event type '{name_of(kind)}'", event))
        elif kind == "thread.started" and isinstance(event.get("thread_id"), str):
            audit.session_id = event["thread_id"]
        elif kind in ("item.started", "item.updated", "item.completed"):
            raw = event.get("item")
            item: dict[str, Any] = raw if isinstance(raw, dict) else {}
            audit.outcome.add(audit_item(item))
            if item.get("type") == "agent_message" and kind == "item.completed" and isinstance(item.get("text"), str):
                audit.last_message = item["text"]
        elif kind == "error" and isinstance(event.get("message"), str):
            if not event["message"].startswith("Reconnecting..."):
                audit.errors.append(event["message"])
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            audit.failed = message if isinstance(message, str) else "turn failed"
        elif kind == "turn.completed":
            audit.completed = True
    return audit


def _refused_calls(stderr: str) -> list[str]:
    """Codex logs a call to a tool it did not offer on stderr only (``unsupported call: <name>``)."""
    return [f"reviewer called tool {clip(name, 60)!r}, which was not offered" for name in UNSUPPORTED.findall(stderr)]


def classify(audit: Audit, proc: ProcessResult, last_file: Path) -> ReviewerResult | str:
    ids: dict[str, Any] = {"session_id": audit.session_id}
    for refused in _refused_calls(proc.stderr_text()):
        audit.outcome.breach(refused)
    ended = stream_end("codex", audit.outcome, proc, **ids)
    if ended:
        return ended
    if audit.failed or proc.returncode or not audit.completed:
        text = " ".join(filter(None, [audit.failed, *audit.errors[-1:]])) or tail(proc.stderr_text())
        detail = clip(text, 300)
        if QUOTA_TEXT.search(text):
            return ReviewerResult("unavailable", f"quota or rate limit: {detail}", **ids)
        if AUTH_TEXT.search(text) or AUTH_TEXT.search(proc.stderr_text()):
            return ReviewerResult("unavailable", f"authentication failed: {detail}", **ids)
        if not text:
            return ReviewerResult(
                "unavailable", f"codex exited with code {proc.returncode} before finishing its turn", **ids
            )
        reason, retryable = unavailable_reason(text)
        return ReviewerResult("unavailable", f"{reason}: {detail}", retryable=retryable, **ids)
    drift = drifted(audit.outcome, **ids)
    if drift:
        return drift
    answer = _last_message(last_file)
    return answer if answer.strip() else (audit.last_message or "")


def _last_message(last: Path) -> str:
    """What Codex wrote to its ``-o`` file; empty when it wrote none."""
    try:
        return last.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def host_path_unavailable(proc: ProcessResult, last: Path) -> bool:
    """The sandbox helper could not start on this host (reviewer-clis.md §1.3: that exact message, no event,
    no answer): the host reruns the preset once before the lane falls back."""
    empty = not parse_jsonl(proc.stdout_text()).events and not _last_message(last).strip()
    return empty and HOST_PATH_TEXT in proc.stderr_text()


class CodexProvider(ShippedCli):
    name = "codex"
    binary = "codex"
    help_args = HELP_ARGS
    required_flags = REQUIRED_FLAGS
    model_env = MODEL_ENV

    def allowed_env(self, request: ReviewerRequest) -> tuple[str, ...] | str:
        """Also the variables the preset's own model providers read their key and headers from."""
        granted = super().allowed_env(request)
        if isinstance(granted, str):
            return granted
        names = config_env_names(request.preset.options)
        problem = env_names_problem(
            names, request.preset.name, "config.model_providers env_key/env_http_headers", self.redirecting_env
        )
        return problem if problem else (*granted, *names)

    def settings(self, info: CliInfo) -> list[Setting]:
        """What this provider generates for the installed CLI, in argv order (belt and gate)."""
        settings = [Setting(("--sandbox", "read-only", "--ephemeral", "--skip-git-repo-check", "--ignore-user-config"))]
        if info.offers("--ignore-rules"):
            settings.append(IGNORE_RULES)
        listed = features(info.binary)
        settings += [Setting(("--disable", feature)) for feature in DISABLE_FEATURES if feature in listed]
        settings.append(WEB_SEARCH_OFF)
        return settings

    def argv(
        self,
        info: CliInfo,
        request: ReviewerRequest,
        schema: Path,
        last: Path,
        extra: list[str],
        strict: bool = False,
    ) -> list[str]:
        argv = [info.binary, "exec", *setting_args(self.settings(info), strict), *extra]
        if request.preset.model:
            argv += ["-m", request.preset.model]
        argv += ["--json", "--output-schema", str(schema), "-o", str(last), "-C", str(request.repo_root), "-"]
        return argv

    def admission_probe(self, info: CliInfo, spec: PresetSpec) -> str | None:
        """Start Codex as a lane would (its generated settings, the belt retry) against a local model provider
        that refuses every request, with no credential linked: its config validation and thread start."""
        with refusing_server() as url, probe_request(spec) as request:
            env = self.environment(request)
            if isinstance(env, str):
                return f"would fall back: {env}"
            home = attempt_dir(request, "codex-home")
            env.update(CODEX_HOME=str(home), AGENTREVIEW_PROBE_KEY=PROBE_KEY)
            stub = {"name": "probe", "base_url": url + "/v1", "env_key": "AGENTREVIEW_PROBE_KEY",
                    "wire_api": "responses", "request_max_retries": 0, "stream_max_retries": 0}  # fmt: skip
            extra = config_overrides({"config": {"model_provider": "probe", "model_providers": {"probe": stub}}})
            schema, last = request.work_dir / "verdict.schema.json", request.work_dir / "last-message.json"
            schema.write_text(json.dumps(VERDICT_SCHEMA))

            def attempt(strict: bool) -> ProcessResult:
                argv = self.argv(info, request, schema, last, extra if isinstance(extra, list) else [], strict)
                return self.run(request, argv, env=env, stdin=b"Answer with {} only.")

            proc, notes = with_belt_retry("codex", self.settings(info), attempt, refused_at_admission)
        found = audit_stream(proc.stdout_text()).outcome
        for refused in _refused_calls(proc.stderr_text()):
            found.breach(refused)
        if not found.unsafe_values and refused_at_admission(proc):
            return f"would fall back: codex refused its invocation: {tail(proc.stderr_text(), 200)}"
        return verdict(found.unsafe_values, found.unknown_fields, notes)

    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        extra = config_overrides(request.preset.options)
        if isinstance(extra, str):
            return ReviewerResult("unavailable", extra)
        home = attempt_dir(request, "codex-home")
        self.link_credential(request, user_dir("CODEX_HOME", ".codex") / "auth.json", home / "auth.json")
        schema = request.work_dir / "verdict.schema.json"
        schema.write_text(json.dumps(VERDICT_SCHEMA))
        last = request.work_dir / "last-message.json"
        env = {**env, "CODEX_HOME": str(home)}

        def attempt(strict: bool) -> ProcessResult:
            argv = self.argv(info, request, schema, last, extra, strict)
            return self.run(request, argv, env=env, stdin=request.answer_prompt.encode("utf-8"))

        proc, notes = with_belt_retry("codex", self.settings(info), attempt, refused_at_admission)
        audit = audit_stream(proc.stdout_text())
        outcome = classify(audit, proc, last)
        model = request.preset.model
        if isinstance(outcome, ReviewerResult):
            if host_path_unavailable(proc, last):
                error = f"host_path_unavailable: {outcome.error}"
                return replace(
                    outcome, error=error, retryable=False, model=model, notes=notes, host_retry="host_path_unavailable"
                )
            if outcome.end == "unavailable" and refused_at_admission(proc):  # a config it cannot load: not transient
                error = f"capability_missing: codex refused its invocation: {tail(proc.stderr_text(), 300)}"
                return replace(outcome, error=error, retryable=False, model=model, notes=notes)
            return replace(outcome, model=model, notes=notes)
        result = answered(outcome, request.verdict_path, "codex", session_id=audit.session_id, model=model)
        return replace(result, notes=notes)
