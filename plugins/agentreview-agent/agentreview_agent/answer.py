"""Turn a reviewer's final structured answer into the verdict file: the built-in reviewers get no write tool,
and the executor then reads the file as an ``exec`` reviewer's, one validation for every provider."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentreview.api import ReviewerResult, atomic_write_text, loads_strict
from agentreview_agent.excerpt import concern_excerpt, looks_like_finding
from agentreview_agent.verdict import strip_fence

_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.S)

# JSON Schema handed to CLIs with structured output (Claude --json-schema, Codex
# --output-schema). Strict-mode compatible: every property required, optional ones
# nullable; nulls are dropped before the file is written.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["decision", "summary", "findings"],
    "properties": {
        "decision": {"type": ["string", "null"], "enum": ["approve", "request_changes", None]},
        "summary": {"type": ["string", "null"]},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["severity", "title", "detail", "file", "line"],
                "properties": {
                    "severity": {"type": "string", "enum": ["high", "medium", "low"]},
                    "title": {"type": "string"},
                    "detail": {"type": ["string", "null"]},
                    "file": {"type": ["string", "null"]},
                    "line": {"type": ["integer", "null"]},
                },
            },
        },
    },
}


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def write_verdict(path: Path, verdict: dict[str, Any]) -> None:
    """Write ``verdict`` (nulls dropped) to ``path`` atomically, as ASCII JSON: a lone surrogate an
    answer's escape produced is written as that escape, never an encoding error."""
    atomic_write_text(path, json.dumps(_drop_nulls(verdict), indent=2) + "\n", durable=False)


def _candidate(text: str) -> Any:
    for attempt in (strip_fence(text), *(m.group(1) for m in _FENCED.finditer(text))):
        try:
            return loads_strict(attempt)
        except (ValueError, RecursionError):
            continue
    return None


def record_answer(answer: Any, path: Path, *, who: str) -> ReviewerResult | None:
    """Write the verdict file from ``answer`` (a dict, or text holding one JSON object); ``None`` when written,
    else why not: an empty turn or prose is ``unavailable`` (another reviewer may try), text that looks like a
    finding ``malformed`` (terminal, with a redacted excerpt)."""
    if isinstance(answer, dict):
        write_verdict(path, answer)
        return None
    text = answer if isinstance(answer, str) else ""
    if not text.strip():
        return ReviewerResult(
            "unavailable", f"{who} produced an empty turn (commonly an auth failure or an invalid model id)"
        )
    parsed = _candidate(text)
    if isinstance(parsed, dict):
        write_verdict(path, parsed)
        return None
    if looks_like_finding(text):
        return ReviewerResult(
            "malformed",
            f"{who}'s answer is not the verdict JSON but looks like a finding; not falling back — "
            f"excerpt: {concern_excerpt(text)}",
        )
    return ReviewerResult("unavailable", f"{who}'s answer is not the verdict JSON (invalid model output)")
