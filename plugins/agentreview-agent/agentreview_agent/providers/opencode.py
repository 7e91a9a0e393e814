"""``opencode``: OpenCode as a read-only reviewer (reviewer-clis.md §1.5, §4; wrapper contract).

It imports plugin code from its project's folders, so it runs in a private project whose generated agent may
only read, checked by a preflight; ``opencode export`` names the model that answered (docs/providers.md).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentreview.api import (
    CliInfo,
    PresetSpec,
    ProcessResult,
    ReviewerRequest,
    ReviewerResult,
    env_names_problem,
    fresh_dir,
    reviewer_env,
    run_git,
    run_process_group,
    user_dir,
)
from agentreview_agent.audit import AuditOutcome, name_of, unknown_event
from agentreview_agent.families import family_of
from agentreview_agent.probe import probe_request
from agentreview_agent.providers.base import (
    Setting,
    ShippedCli,
    answered,
    clip,
    drifted,
    refused_at_admission,
    session_label,
    stream_end,
    stream_failed,
    tail,
    tool_note,
    with_belt_retry,
)
from agentreview_agent.range_files import range_prompt
from agentreview_agent.streams import parse_jsonl, unavailable_reason

HELP_ARGS = ("run", "--help")
REQUIRED_FLAGS = ("--agent", "--format", "--dir", "--file")
PURE = Setting(("--pure",), "the private XDG config and project, which hold no plugin")
AGENT = "agentreview-review"
READ_TOOLS = frozenset(("read", "grep", "glob", "list"))
# The API keys OpenCode picks up for its common model providers (auth.json, linked in, covers `opencode auth login`).
MODEL_ENV = (
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
    "GROQ_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "MISTRAL_API_KEY", "OPENCODE_API_KEY",
)  # fmt: skip
# A side command (no inference) gets at least this long, or half the lane's remaining budget when that is
# more: nine OpenCode lanes starting together on a loaded 2-core machine have taken over a minute to answer.
SIDE_COMMAND_MIN_S = 60.0
# Preset `config` keys written to the private opencode.json: model provider selection only.
CONFIG_KEYS = ("provider", "small_model", "enabled_providers", "disabled_providers")
ENV_REFERENCE = re.compile(r"\{env:([^}]*)\}")
AGENT_FILE = """---
description: agentreview read-only reviewer (generated per attempt)
mode: primary
permission:
  "*": deny
  read: allow
  grep: allow
  glob: allow
  list: allow
  external_directory: allow
---
You review a committed git range read-only and answer with one JSON object.
"""


def preset_config(options: Mapping[str, Any], preset: str) -> dict[str, Any] | str:
    """A preset's ``config`` table (the private ``opencode.json``), or why it is refused."""
    where = f"[presets.{preset}.config] in presets.toml"
    table = options.get("config", {})
    if not isinstance(table, Mapping):
        return f"preset '{preset}': config must be a table: [presets.{preset}.config.provider.<id>] in presets.toml"
    for key in table:
        if key not in CONFIG_KEYS:
            return (
                f"preset '{preset}': config.{key} is not allowed for opencode (only {', '.join(CONFIG_KEYS)}: "
                f"a reviewer's agent and permissions are agentreview's) — remove it from {where}"
            )
    try:
        json.dumps(table)
    except (TypeError, ValueError) as exc:
        return f"preset '{preset}': config holds a value JSON cannot carry ({exc}) — use strings in {where}"
    return dict(table)


def config_env_names(config: Mapping[str, Any]) -> list[str]:
    """The variables OpenCode substitutes into ``config`` (``{env:NAME}`` in any string of it)."""
    return ENV_REFERENCE.findall(json.dumps(config))


def build_home(
    work_dir: Path, config: Mapping[str, Any] | None = None, link: Any = None
) -> tuple[Path, dict[str, str]]:
    """The private project (with the generated agent) and the XDG environment of one attempt;
    ``config``, when given, is the private global ``opencode.json``; ``link(source, target)`` links the
    credential in (default: a plain symlink)."""
    root = fresh_dir(work_dir / "opencode")
    xdg = {name: str(fresh_dir(root / name.lower())) for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME",
                                                                   "XDG_STATE_HOME", "XDG_CACHE_HOME")}  # fmt: skip
    if config:
        settings = Path(xdg["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
        settings.parent.mkdir(mode=0o700)
        settings.write_text(json.dumps(config, indent=2))
    source = user_dir("XDG_DATA_HOME", ".local", "share") / "opencode" / "auth.json"
    target = Path(xdg["XDG_DATA_HOME"]) / "opencode" / "auth.json"
    if link is not None:
        link(source, target)
    elif source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)
    project = fresh_dir(root / "project")
    run_git(["init", "-q", str(project)], root, env=reviewer_env({}), timeout=30)
    agent = project / ".opencode" / "agent" / f"{AGENT}.md"
    agent.parent.mkdir(parents=True)
    agent.write_text(AGENT_FILE)
    env = {
        **xdg,
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
        "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    }
    return project, env


def _side_deadline(deadline: float) -> float:
    """A side command's deadline: SIDE_COMMAND_MIN_S or half of what remains of the lane's budget,
    whichever is longer, never past the lane's own deadline."""
    now = time.monotonic()
    return min(deadline, now + max(SIDE_COMMAND_MIN_S, (deadline - now) / 2))


def _side_command(
    argv: list[str], project: Path, env: dict[str, str], deadline: float, cancel: Any
) -> tuple[ProcessResult, Any]:
    """A short opencode subcommand (no inference), bounded by :func:`_side_deadline`, and the JSON its stdout
    holds from its first ``{`` (after any banner), or None."""
    proc = run_process_group(
        argv, cwd=project, env=env, deadline=_side_deadline(deadline), cancel=cancel, kill_grace_s=1.0
    )
    text = proc.stdout_text()
    try:
        return proc, json.loads(text[text.index("{") :])
    except (ValueError, RecursionError):
        return proc, None


def preflight(binary: str, project: Path, env: dict[str, str], deadline: float, cancel) -> str | None:
    """``opencode debug agent``: every tool but the reads must be off; return why not (with its class:
    ``capability_missing``, or ``preflight_timeout`` when OpenCode did not answer in time), or None."""
    proc, described = _side_command([binary, "debug", "agent", AGENT], project, env, deadline, cancel)
    if described is None and proc.timed_out:
        return "preflight_timeout: opencode debug agent did not answer in time (an overloaded machine?)"
    if described is None:
        text = proc.stderr_text() or proc.stdout_text()
        return f"capability_missing: opencode debug agent printed no agent description: {tail(text, 200)}"
    tools = described.get("tools") if isinstance(described, dict) else None
    if not isinstance(tools, dict):
        return "capability_missing: opencode debug agent shows no tools table, so the read-only agent is unverified"
    widened = sorted(name for name, on in tools.items() if on is not False and name not in READ_TOOLS)
    return "capability_missing: the generated agent still has tools: " + ", ".join(widened) if widened else None


# `--format json` event types; any other is drift. Only `tool_use` invokes anything.
EVENT_TYPES = frozenset(("step_start", "step_finish", "text", "reasoning", "tool_use", "error"))


def audit_event(event: dict[str, Any]) -> AuditOutcome:
    """Judge one event: a tool use outside the reads (a call OpenCode refused included) is a breach,
    an event type this audit does not know is drift."""
    out = AuditOutcome()
    kind = event.get("type")
    if kind not in EVENT_TYPES:
        out.add(unknown_event(f"unknown event type '{name_of(kind)}'", event))
    elif kind == "tool_use":
        raw = event.get("part")
        part: dict[str, Any] = raw if isinstance(raw, dict) else {}
        tool = part.get("tool")
        if tool not in READ_TOOLS:
            state = part.get("state")
            out.breach(tool_note(tool, state.get("input") if isinstance(state, dict) else None))
    return out


def audit(text: str) -> tuple[AuditOutcome, str | None, str, list[dict]]:
    """(audit, session id, final text, error payloads) of a ``--format json`` stream."""
    stream = parse_jsonl(text)
    outcome = AuditOutcome(unknown_fields=list(stream.stray))
    errors: list[dict] = []
    session_id, final, finished = None, "", False
    for event in stream.events:
        session_id = session_id or (event.get("sessionID") if isinstance(event.get("sessionID"), str) else None)
        outcome.add(audit_event(event))
        raw = event.get("part")
        part: dict[str, Any] = raw if isinstance(raw, dict) else {}
        kind = event.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            final = part["text"]
        elif kind == "step_finish":
            finished = part.get("reason") == "stop"
        elif kind == "error" and isinstance(event.get("error"), dict):
            errors.append(event["error"])
    return outcome, session_id, final if finished else "", errors


def exported_model(
    binary: str, project: Path, env: dict[str, str], session_id: str, deadline: float, cancel: Any
) -> str | None:
    """``providerID/modelID`` of the session's last assistant message, from ``opencode export`` (no
    inference); None when the export does not say."""
    _, exported = _side_command([binary, "export", session_id], project, env, deadline, cancel)
    if exported is None:
        return None
    messages = exported.get("messages") if isinstance(exported, dict) else None
    for message in reversed(messages if isinstance(messages, list) else []):
        info = message.get("info") if isinstance(message, dict) else None
        if isinstance(info, dict) and info.get("role") == "assistant":
            provider, model = info.get("providerID"), info.get("modelID")
            if isinstance(provider, str) and isinstance(model, str) and provider and model:
                return f"{provider}/{model}"
    return None


def _data(error: dict[str, Any]) -> dict[str, Any]:
    data = error.get("data")
    return data if isinstance(data, dict) else {}


def _classify_errors(errors: list[dict]) -> ReviewerResult | None:
    for error in errors:
        data = _data(error)
        status, message = data.get("statusCode"), clip(str(data.get("message") or error.get("name")), 300)
        if status == 401:
            return ReviewerResult("unavailable", f"authentication failed: {message}")
        if status in (402, 429):
            return ReviewerResult("unavailable", f"quota or rate limit: {message}")
    if errors:
        data = _data(errors[-1])
        message = str(data.get("message") or errors[-1].get("name"))
        if data.get("isRetryable") is True and not isinstance(data.get("statusCode"), int):
            return stream_failed("opencode", message)  # no HTTP status, and OpenCode retried it itself already
        reason, retryable = unavailable_reason(message)
        return ReviewerResult("unavailable", f"{reason}: {clip(message, 300)}", retryable=retryable)
    return None


class OpenCodeProvider(ShippedCli):
    name = "opencode"
    binary = "opencode"
    help_args = HELP_ARGS
    required_flags = REQUIRED_FLAGS
    model_env = MODEL_ENV

    def allowed_env(self, request: ReviewerRequest) -> tuple[str, ...] | str:
        """Also the variables the preset's ``config`` names as ``{env:NAME}``."""
        granted = super().allowed_env(request)
        config = preset_config(request.preset.options, request.preset.name)
        if isinstance(granted, str) or isinstance(config, str):
            return granted
        names = config_env_names(config)
        problem = env_names_problem(names, request.preset.name, "config {env:NAME}", self.redirecting_env)
        return problem if problem else (*granted, *names)

    def admission_probe(self, info: CliInfo, spec: PresetSpec) -> str | None:
        """OpenCode's admission is the preflight: its own validation of the generated agent, no model call."""
        with probe_request(spec) as request:
            config = preset_config(spec.options, spec.name)
            env = self.environment(request)
            if isinstance(config, str) or isinstance(env, str):
                return f"would fall back: {config if isinstance(config, str) else env}"
            project, xdg = build_home(request.work_dir, config, lambda _s, _t: False)
            why = preflight(info.binary, project, {**env, **xdg}, request.deadline, request.cancel)
        return f"would fall back: {why}" if why else None

    def review_with(self, info: CliInfo, request: ReviewerRequest, env: dict[str, str]) -> ReviewerResult:
        config = preset_config(request.preset.options, request.preset.name)
        if isinstance(config, str):
            return ReviewerResult("unavailable", config)
        project, xdg = build_home(request.work_dir, config, lambda s, t: self.link_credential(request, s, t))
        env = {**env, **xdg}
        why = preflight(info.binary, project, env, request.deadline, request.cancel)
        if why and time.monotonic() >= request.deadline:
            return ReviewerResult("timeout", why)
        if why:
            return ReviewerResult("unavailable", why)
        prompt = range_prompt(request, request.work_dir, "opencode")
        if isinstance(prompt, ReviewerResult):
            return prompt
        prompt_file = request.work_dir / "prompt.md"
        prompt_file.write_text(prompt, encoding="utf-8")
        belt = [PURE] if info.offers("--pure") else []

        def attempt(strict: bool) -> ProcessResult:
            argv = [info.binary, "run", "--dir", str(project), "--agent", AGENT, "--format", "json"]
            argv += [arg for s in belt if not strict for arg in s.args]
            if request.preset.model:
                argv += ["-m", request.preset.model]
            argv += ["--file", str(prompt_file)]
            if info.offers("--title"):  # OpenCode names its session: the spec's reviewer session label
                argv += ["--title", session_label(request.review_id, request.check_id, request.attempt)]
            argv += ["--", f"Follow the attached instructions (repository: {request.repo_root})."]
            return self.run(request, argv, env=env, cwd=project)

        proc, notes = with_belt_retry("opencode", belt, attempt, refused_at_admission)
        outcome, session_id, final, errors = audit(proc.stdout_text())
        ids: dict[str, Any] = {"session_id": session_id, "model": request.preset.model, "notes": notes}
        ended = stream_end("opencode", outcome, proc, **ids)
        if ended:
            return ended
        failed = _classify_errors(errors)
        if failed:
            return ReviewerResult(failed.end, failed.error, failed.retryable, **ids)
        if proc.returncode:
            return ReviewerResult(
                "unavailable", f"opencode exited with code {proc.returncode}: {tail(proc.stderr_text())}", **ids
            )
        drift = drifted(outcome, **ids)
        if drift:
            return drift
        ran = None
        if session_id:
            ran = exported_model(info.binary, project, env, session_id, request.deadline, request.cancel)
        if ran:
            ids["model"] = ran
            ids["family"] = family_of(ran.split("/", 1)[0]) or ran.split("/", 1)[0].lower()
        else:
            ids["notes"] = (
                *notes,
                "opencode export did not name the model that answered; the lane records the "
                "preset's model and the same-family rule could not check the provider that ran",
            )
        return answered(final, request.verdict_path, "opencode", **ids)
