"""Decide whether a malformed answer may hold a real finding, and quote it bounded and redacted: falling back
from it could launder a real block into another reviewer's pass, so the lane stops instead."""

from __future__ import annotations

import re
from typing import Any

MAX_LINES = 20
MAX_LINE_CHARS = 200
MAX_FINDINGS = 5
MAX_NOTE_CHARS = 160

_CONCERN = re.compile(
    r"""(?ix)
    \b(?:high|medium|low|critical|p[0-3]|severity|blocker|vulnerab\w*|injection|regression)\b
    | [\w./-]+\.[A-Za-z0-9]{1,8}:\d+          # file:line
    | "(?:findings|severity|concern_results)"\s*:
    | ^\s*CHECK\s+[a-z][a-z0-9_]*\s*\|
    """
)

_REDACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), "[key]"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+"), "Bearer [redacted]"),
    (
        re.compile(r"(?i)\b([A-Za-z0-9_]*(?:key|token|secret|password|passwd|pwd)[A-Za-z0-9_]*)\s*[=:]\s*\S+"),
        r"\1=[redacted]",
    ),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), "[url]"),
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"), "[email]"),
    (re.compile(r"(?<![\w/])(?:/[\w.@-]+){2,}"), "[path]"),
    (re.compile(r"\b[A-Za-z0-9_\-+/=]{32,}\b"), "[token]"),
)


def looks_like_finding(text: str) -> bool:
    """True when some line of ``text`` carries finding-shaped content."""
    return any(_CONCERN.search(line) for line in text.splitlines())


def redact(line: str) -> str:
    for pattern, replacement in _REDACTIONS:
        line = pattern.sub(replacement, line)
    return line


def note(value: Any, limit: int = MAX_NOTE_CHARS) -> str:
    """A value quoted as evidence: one line, redacted, bounded."""
    text = redact(" ".join(str(value).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def concern_excerpt(text: str) -> str:
    """At most 20 matched lines of at most 200 characters each, redacted, joined by `` / ``."""
    picked: list[str] = []
    for line in text.splitlines():
        if not _CONCERN.search(line):
            continue
        clean = redact(line.strip())
        if len(clean) > MAX_LINE_CHARS:
            clean = clean[: MAX_LINE_CHARS - 1] + "…"
        picked.append(clean)
        if len(picked) == MAX_LINES:
            break
    return " / ".join(picked)


def finding_excerpt(data: Any) -> str:
    """At most 5 findings of a structured answer that breaks the lane contract (severity, title, ``file:line``,
    the start of the detail), redacted and bounded; empty when ``data`` holds no finding-shaped object."""
    raw = data.get("findings") if isinstance(data, dict) else None
    shown: list[str] = []
    for index, item in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(item, dict) or not ({"severity", "title"} & item.keys()):
            continue
        parts = [f"findings.{index}: [{note(item.get('severity'), 20)}] {note(item.get('title'), 100)}"]
        if item.get("file") is not None:
            where = note(item["file"], 80)
            parts.append(f"at {where}:{note(item['line'], 10)}" if item.get("line") is not None else f"at {where}")
        if item.get("detail"):
            parts.append(f"— {note(item['detail'], 80)}")
        shown.append(" ".join(parts))
        if len(shown) == MAX_FINDINGS:
            break
    return " / ".join(shown)
