"""What a valid REVIEW.md needs that this host lacks: a command's program, a preset, a reviewer CLI.

Warnings, not errors (another host may have what this one lacks), so a misspelt preset is found before a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentreview.host.programs import find_program
from agentreview.model.suggest import did_you_mean
from agentreview.setup.choose import install_hint, programs_of

__all__ = ["lane_warnings", "unusable"]

_SHELL_WORDS = frozenset(
    {"true", "false", "test", "[", "exit", "cd", "echo", "printf", "set", ":", "exec", "env", "command", "!", "if"}
)


def lane_warnings(
    checks: Iterable[Any],
    presets: Callable[[], tuple[Mapping[str, Any], Mapping[str, Any]]],
    presets_file: str,
) -> list[str]:
    """One line per problem of ``checks`` on this host; ``presets`` is loaded only when an agent check needs it."""
    out: list[str] = []
    agent: list[Any] = []
    for check in checks:
        if check.kind == "command":
            for program in dict.fromkeys(programs_of(check.run)):
                if program not in _SHELL_WORDS and "/" not in program and find_program(program) is None:
                    out.append(
                        f"check '{check.id}': {program} is not on PATH, so this lane cannot run here — "
                        f"{install_hint(program)}"
                    )
        elif check.kind == "agent" and check.preset:
            agent.append(check)
    if not agent:
        return out
    known, providers = presets()
    if not providers:
        return [*out, "no plugin provides reviewer presets here (install agentreview-agent): agent lanes are skipped"]
    statuses: dict[str, str | None] = {}
    for check in agent:
        name = check.preset
        if name not in known:
            out.append(
                f"check '{check.id}': unknown preset '{name}'{did_you_mean(name, known)} — set preset in REVIEW.md "
                f"to one of {', '.join(sorted(known)) or '(none)'} or define [presets.{name}] in {presets_file}; "
                "`agentreview run` refuses it"
            )
            continue
        if name not in statuses:
            statuses[name] = unusable(known[name], providers)
        if statuses[name]:
            out.append(
                f"check '{check.id}': preset '{name}' cannot run here: {statuses[name]} (see agentreview presets)"
            )
    return out


def unusable(spec: Any, providers: Mapping[str, Any]) -> str | None:
    """Why the reviewer CLI of ``spec`` cannot run here, or None when it can."""
    provider = providers.get(spec.provider)
    if provider is None:
        return f"no plugin provides '{spec.provider}'"
    try:
        method = getattr(provider, "preset_status", None)
        status = method(spec) if method else provider.status()
    except Exception as exc:  # a provider's bug must not hide the other warnings
        return f"its status failed: {type(exc).__name__}: {exc}"
    if status.usable:
        return None
    return str(status.detail or ("not installed" if not status.installed else "not usable"))
