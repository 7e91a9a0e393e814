"""What the shipped CLI providers share beyond ``agentreview.api.CliReviewer``: the variables no preset may
grant, how an audited stream becomes a result, and the belt retry: a refused invocation runs once more
without the settings a second path guarantees, so admission never widens (docs/providers.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentreview.api import CliReviewer, ProcessResult, ReviewerBase, ReviewerResult
from agentreview_agent.answer import record_answer
from agentreview_agent.audit import AuditOutcome, name_of
from agentreview_agent.excerpt import note
from agentreview_agent.streams import parse_jsonl

# The private-home and configuration variables of the shipped CLIs. Every shipped provider (exec included)
# refuses them in a preset's ``env``, so no preset can point any reviewer at the user's own configuration.
REDIRECTING_ENV = (
    *ReviewerBase.redirecting_env,
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_SAFE_MODE",
    "CODEX_HOME",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_PERMISSION",
    "KIMI_CODE_HOME",
    "KIMI_SHARE_DIR",
)


IDLE_TIMEOUT_S = 300.0  # no output for this long after a reviewer's stream began: a broken stream


class ShippedCli(CliReviewer):
    """A CLI provider shipped with this plugin."""

    redirecting_env = REDIRECTING_ENV
    idle_timeout_s = IDLE_TIMEOUT_S


@dataclass(frozen=True)
class Setting:
    """Arguments a provider generates for its CLI. ``guaranteed_by`` names the second, independent path
    to what they guarantee (then they are belt, dropped on a refusal); empty for a gate."""

    args: tuple[str, ...]
    guaranteed_by: str = ""


def setting_args(settings: Sequence[Setting], strict: bool = False) -> list[str]:
    """The arguments of ``settings``; ``strict``: without the belt ones."""
    return [arg for s in settings if not (strict and s.guaranteed_by) for arg in s.args]


T = TypeVar("T")


def with_belt_retry(
    who: str, settings: Sequence[Setting], run: Callable[[bool], T], refused: Callable[[T], bool]
) -> tuple[T, tuple[str, ...]]:
    """``run(False)``; when it was ``refused`` and belt settings were present, ``run(True)`` without them.
    Returns the run that counts and the lane note saying what was dropped and why that is safe."""
    first = run(False)
    belt = [s for s in settings if s.guaranteed_by]
    if not belt or not refused(first):
        return first, ()
    dropped = "; ".join(f"{' '.join(s.args)} (also guaranteed by {s.guaranteed_by})" for s in belt)
    note = f"{who} refused its invocation before starting; ran it once more without the belt settings: {dropped}"
    return run(True), (note,)


def session_label(review_id: str, check_id: str, attempt: int = 1) -> str:
    """The reviewer session's name, as the spec's §Reviewer sessions and the reference host give it:
    ``review:<reviewId>:<checkId>``, ``:retry<n>`` on a retry. Used where a CLI can name a session."""
    label = f"review:{review_id}:{check_id}"
    return label + (f":retry{attempt - 1}" if attempt > 1 else "")


def tail(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else "…" + text[-limit:]


def clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def tool_note(tool: Any, tool_input: Any = None) -> str:
    """The breach note for a tool use outside the allow-list, with a bounded, redacted excerpt of its input."""
    text = f"reviewer used tool {name_of(tool)!r} outside the allow-list"
    if tool_input not in (None, "", {}, []):
        shown = tool_input if isinstance(tool_input, str) else json.dumps(tool_input, ensure_ascii=False, default=str)
        text += f" (input: {note(shown, 120)})"
    return text


def refused_at_admission(proc: ProcessResult) -> bool:
    """The CLI refused its invocation before starting a session: a non-zero exit with no event at all (an
    unknown flag, a config it could not load; a failed model call, auth included, comes after the first
    event). Told by shape, never by the error's wording."""
    if proc.spawn_error or proc.timed_out or proc.cancelled or proc.stalled or not proc.returncode:
        return False
    return not parse_jsonl(proc.stdout_text()).events


def stream_end(name: str, audit: AuditOutcome, proc: ProcessResult, **ids: Any) -> ReviewerResult | None:
    """What an audited run ended in before its answer counts: a breach (``boundary_violation``,
    terminal) outranks a spawn failure, timeout or cancel; ``None`` otherwise."""
    if audit.unsafe_values:
        return audit.result("boundary_violation", "; ".join(dict.fromkeys(audit.unsafe_values)), **ids)
    abnormal = ReviewerBase.ended_abnormally(proc, name)
    if abnormal:
        return ReviewerResult(abnormal.end, abnormal.error, **ids)
    return None


def stream_failed(who: str, detail: str, **ids: Any) -> ReviewerResult:
    """``stream_failed``: the model stream or connection broke (no HTTP status) after the CLI's own retries;
    unavailable and not retried by the lane, which moves to its next preset at once."""
    return ReviewerResult(
        "unavailable",
        f"stream_failed: {who}'s model stream failed (the connection broke or could not be made, and the CLI "
        f"gave up after its own retries): {clip(detail, 300)}",
        retryable=False,
        **ids,
    )


def drifted(audit: AuditOutcome, **ids: Any) -> ReviewerResult | None:
    """``capability_missing`` (unavailable: another reviewer may try) when the audit met a shape it
    cannot verify; the answer of such a run is never used. ``None`` when there was no drift."""
    if not audit.unknown_fields:
        return None
    reason = "capability_missing: " + "; ".join(dict.fromkeys(audit.unknown_fields))
    return audit.result("unavailable", reason, **ids)


def answered(answer: Any, verdict_path: Path, who: str, **ids: Any) -> ReviewerResult:
    """``verdict`` once the final answer is written as the verdict file, else why it could not be."""
    recorded = record_answer(answer, verdict_path, who=who)
    if recorded is not None:
        return ReviewerResult(recorded.end, recorded.error, **ids)
    return ReviewerResult("verdict", **ids)
