"""Read and validate the one verdict file a reviewer leaves (reference-notes 1.4, 2.21): anything short of a
well-formed file skips the lane, never a pass. ``decision`` is checked for shape and dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentreview.api import (
    MissingFileError,
    ReportedFinding,
    UnreadableFileError,
    loads_strict,
    read_regular_file,
    whole_number,
)
from agentreview_agent.excerpt import concern_excerpt, finding_excerpt, looks_like_finding

MAX_VERDICT_BYTES = 1024 * 1024
SEVERITIES = ("high", "medium", "low")
DECISIONS = ("approve", "request_changes")
_FENCE_OPEN = re.compile(r"^```(?:json)?\s*\n")
_FENCE_CLOSE = re.compile(r"\n```\s*$")


class VerdictError(Exception):
    """The verdict file is missing or unusable; the message is the lane's error."""


@dataclass(frozen=True)
class Verdict:
    findings: tuple[ReportedFinding, ...]
    summary: str | None


def strip_fence(text: str) -> str:
    """Drop a leading BOM (JavaScript's ``trim``, the reference's first step, does), trim, then drop one
    surrounding Markdown code fence (```` ``` ```` or ```` ```json ````)."""
    text = text.removeprefix("\ufeff").strip()
    text = _FENCE_OPEN.sub("", text, count=1)
    return _FENCE_CLOSE.sub("", text, count=1)


def parse_verdict_text(text: str) -> Verdict:
    """Parse verdict text (fence tolerated) into findings and summary, or raise :class:`VerdictError`."""
    try:
        data = loads_strict(strip_fence(text))
    except (ValueError, RecursionError) as exc:
        raise VerdictError(f"verdict file is not valid JSON — {exc}{_evidence(None, text)}") from None
    problems: list[str] = []
    verdict = _validate(data, problems)
    if problems or verdict is None:
        raise VerdictError(
            "verdict file does not match the lane contract — " + "; ".join(problems[:10]) + _evidence(data, text)
        )
    return verdict


def _evidence(data: Any, text: str) -> str:
    """What a refused verdict said, so the operator sees the finding it may hold (wrapper contract: a
    fail-closed stop carries its evidence): its findings, else its finding-shaped lines; redacted, bounded."""
    excerpt = finding_excerpt(data) or (concern_excerpt(text) if looks_like_finding(text) else "")
    return f" — excerpt: {excerpt}" if excerpt else ""


def _validate(data: Any, problems: list[str]) -> Verdict | None:
    if not isinstance(data, dict):
        problems.append(f"(root): expected an object, got {type(data).__name__}")
        return None
    if "decision" in data and data["decision"] not in DECISIONS:
        problems.append("decision: must be 'approve' or 'request_changes'")
    summary = data.get("summary")
    if "summary" in data and not isinstance(summary, str):
        problems.append("summary: must be a string")
    raw = data.get("findings")
    if "findings" not in data:
        problems.append("findings: required")
        return None
    if not isinstance(raw, list):
        problems.append("findings: must be an array")
        return None
    findings = [f for i, item in enumerate(raw) if (f := _finding(i, item, problems)) is not None]
    return Verdict(tuple(findings), summary if isinstance(summary, str) else None)


def _finding(index: int, item: Any, problems: list[str]) -> ReportedFinding | None:
    where = f"findings.{index}"
    if not isinstance(item, dict):
        problems.append(f"{where}: must be an object")
        return None
    before = len(problems)
    severity, title = item.get("severity"), item.get("title")
    if severity not in SEVERITIES:
        problems.append(f"{where}.severity: must be one of high, medium, low")
    if not isinstance(title, str) or not title:
        problems.append(f"{where}.title: must be a non-empty string")
    detail = item.get("detail", "")
    if not isinstance(detail, str):
        problems.append(f"{where}.detail: must be a string")
    file = item.get("file")
    if "file" in item and not isinstance(file, str):
        problems.append(f"{where}.file: must be a string")
    line = whole_number(item.get("line"))  # 3.0 and 1e1 are whole numbers, as JSON.parse reads them
    if "line" in item and (line is None or line < 1):
        problems.append(f"{where}.line: must be a positive integer")
    if len(problems) > before:
        return None
    return ReportedFinding(severity=severity, title=title, detail=detail, file=file, line=line)  # type: ignore[arg-type]  # checked above


def read_verdict(path: Path) -> Verdict:
    """Read the verdict file at ``path`` without following a symlink or blocking on a FIFO."""
    try:
        raw = read_regular_file(path, limit=MAX_VERDICT_BYTES, follow_symlinks=False)
    except MissingFileError:
        raise VerdictError(f"reviewer ended its turn without writing {path}") from None
    except UnreadableFileError as exc:  # a symlink, a FIFO, more than 1 MiB: never followed, blocked on or read whole
        raise VerdictError(f"verdict file {path} cannot be read: {exc}") from None
    if not raw.strip():
        raise VerdictError(f"verdict file {path} is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VerdictError(f"verdict file is not valid JSON — not UTF-8 ({exc.reason})") from None
    return parse_verdict_text(text)
