"""Shared parsing of reviewer event streams and failure texts (reviewer-clis.md §7).

Strict (duplicate keys rejected), so the audit sees exactly what the CLI reported; a line that might be a
mangled event is drift (``Stream.stray``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentreview.api import loads_strict
from agentreview_agent.excerpt import note

AUTH_TEXT = re.compile(
    r"(?i)not logged in|please run /login|invalid api key|invalid x-api-key"
    r"|authentication(?:_| )?(?:failed|required|error)|auth_error"
    r"|token (?:has )?expired|401 unauthorized|\b401\b|unauthori[sz]ed"
)
QUOTA_TEXT = re.compile(
    r"(?i)\b429\b|\b402\b|rate.?limit|usage limit|quota|hit your limit|insufficient|billing|too many requests"
)
# An errored turn matching this is permanent: retrying it cannot help.
PERMANENT_TEXT = re.compile(
    r"(?i)\b40[134]\b|unauthori[sz]ed|forbidden|authenticat|invalid (?:api key|x-api-key|credential|token|model)"
    r"|usage limit|quota|insufficient|billing|model not (?:found|supported)|not logged in"
)


@dataclass
class Stream:
    events: list[dict[str, Any]] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)  # drift notes: lines that might be events but do not parse


def parse_jsonl(text: str) -> Stream:
    stream = Stream()
    for number, line in enumerate(text.splitlines(), 1):
        if "{" not in line:  # blank, or a line that cannot be an event
            continue
        try:
            event = loads_strict(line)
        except (ValueError, RecursionError) as exc:
            stream.stray.append(f"stdout line {number} is not JSON ({note(str(exc), 80)}): {note(line, 120)}")
            continue
        if not isinstance(event, dict):
            stream.stray.append(f"stdout line {number} is not a JSON object: {note(line, 120)}")
            continue
        stream.events.append(event)
    return stream


def unavailable_reason(text: str) -> tuple[str, bool]:
    """Classify a failure text: (reason prefix, retryable)."""
    if QUOTA_TEXT.search(text):
        return "quota or rate limit", False
    if AUTH_TEXT.search(text):
        return "authentication failed", False
    return "reviewer's turn ended with an error", not PERMANENT_TEXT.search(text)
