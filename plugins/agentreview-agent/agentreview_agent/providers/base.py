"""What the shipped CLI providers share beyond the core's reviewer base (``agentreview.api.CliReviewer``).

The core base builds the allow-listed environment, the private ``HOME``, probes the
CLI's help and runs it in its own process group. What is left here is this plugin's
own: the configuration variables of the CLIs it ships (a preset may never grant
them: they would point a reviewer back at the user's configuration), and how an
audited event stream and a final answer become a result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentreview.api import CliReviewer, ProcessResult, ReviewerBase, ReviewerResult
from agentreview_agent.answer import record_answer
from agentreview_agent.audit import AuditOutcome, name_of, note

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


class ShippedCli(CliReviewer):
    """A CLI provider shipped with this plugin."""

    redirecting_env = REDIRECTING_ENV


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


def stream_end(name: str, audit: AuditOutcome, proc: ProcessResult, **ids: Any) -> ReviewerResult | None:
    """What an audited run ended in before its answer counts: a breach (``boundary_violation``,
    terminal) outranks a spawn failure, timeout or cancel; ``None`` otherwise."""
    if audit.unsafe_values:
        return audit.result("boundary_violation", "; ".join(dict.fromkeys(audit.unsafe_values)), **ids)
    abnormal = ReviewerBase.ended_abnormally(proc, name)
    if abnormal:
        return ReviewerResult(abnormal.end, abnormal.error, **ids)
    return None


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
