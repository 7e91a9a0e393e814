"""The Markdown job summary of a run or a verification (``GITHUB_STEP_SUMMARY``, ``--summary PATH``).

Pure: built from plain JSON data (an attestation as its JSON object, a verification as the
``verify --json`` object), like :mod:`agentreview.report.sarif`.

GitHub renders a step summary as GitHub-flavoured Markdown with HTML, on the pull request's
checks page. Every string that is not agentreview's own (finding titles and details, file
names, lane ids, the signer's principal, an export's fields and a verification's messages) is
the change's or a reviewer's to write, so :func:`md_text` makes it plain text: it becomes one
line, and every character Markdown or HTML gives a meaning to is written as a numeric character
reference (``|`` cannot end a table cell, ``<`` cannot open a tag, ``[`` and ``!`` cannot start a
link or an image, a backtick cannot open a code span, ``:`` and ``@`` cannot start an autolink),
then :func:`~agentreview.report.neutral.neutralize` guards the line against CI workflow
commands should the file ever be printed. The text reads the same once rendered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentreview.report.neutral import neutralize

__all__ = ["md_text", "run_summary", "verify_summary"]

# Markdown/HTML-significant ASCII punctuation, plus ':' and '@' (autolinks) and '$' (math).
_SPECIAL = "&<>|`[]()*_~#!\\:@${}=+-.\"'"
_ESCAPES = {ord(c): f"&#{ord(c)};" for c in _SPECIAL}
MAX_CELL = 300
MAX_FINDINGS = 50
VERDICT_MARK = {"pass": "✅", "block": "❌", "incomplete": "⚠️"}


def md_text(value: object, limit: int = MAX_CELL) -> str:
    """``value`` as inert Markdown text on one line, at most ``limit`` characters of it."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[:limit] + "…"
    return neutralize(text.translate(_ESCAPES))


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _range(target: Mapping[str, Any]) -> str:
    base, head = str(target.get("baseSha", "?"))[:10], str(target.get("headSha", "?"))[:10]
    return f"{md_text(base)}..{md_text(head)}"


def _principal(att: Mapping[str, Any]) -> str | None:
    signature = _map(_map(att.get("attestor")).get("signature"))
    principal = signature.get("principal")
    return principal if isinstance(principal, str) else None


def _lanes_table(att: Mapping[str, Any]) -> list[str]:
    lanes = [lane for lane in _list(att.get("lanes")) if isinstance(lane, Mapping)]
    if not lanes:
        return []
    lines = ["| lane | kind | role | status | findings | time |", "|---|---|---|---|---|---|"]
    for lane in lanes:
        role = "blocking" if lane.get("blocking") is True else "advisory"
        duration = lane.get("durationMs")
        seconds = f"{duration / 1000:.1f}s" if isinstance(duration, int | float) else "?"
        lines.append(
            f"| {md_text(lane.get('id'))} | {md_text(lane.get('kind'))} | {role} | {md_text(lane.get('status'))} "
            f"| {len(_list(lane.get('findings')))} | {seconds} |"
        )
    return lines


def _findings(att: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for lane in _list(att.get("lanes")):
        for finding in _list(_map(lane).get("findings")):
            finding = _map(finding)
            if len(lines) == MAX_FINDINGS:
                lines.append("- … and more (see the SARIF log or `agentreview ledger`)")
                return lines
            where = ""
            if isinstance(finding.get("file"), str):
                where = md_text(finding["file"])
                if isinstance(finding.get("line"), int):
                    where += f"&#58;{finding['line']}"
                where = f" {where}"
            detail = md_text(finding.get("detail"), 200)
            lines.append(
                f"- **{md_text(finding.get('severity'))}** ({md_text(_map(lane).get('id'))}){where} — "
                f"{md_text(finding.get('title'))}" + (f"<br>{detail}" if detail else "")
            )
    return lines


def _attestation_block(att: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    table = _lanes_table(att)
    if table:
        lines += ["", *table]
    findings = _findings(att)
    if findings:
        lines += ["", "**Findings**", "", *findings]
    return lines


def run_summary(attestation: Mapping[str, Any] | None, *, status: str, error: str | None = None) -> str:
    """The summary of one ``agentreview run``: verdict, range, signer, lanes and findings."""
    if attestation is None:
        title = "cancelled" if status == "cancelled" else "could not run"
        return f"### agentreview run: ⚠️ {title}\n\n{md_text(error, 1000)}\n"
    verdict = str(attestation.get("verdict", "?"))
    lines = [f"### agentreview run: {VERDICT_MARK.get(verdict, '')} {md_text(verdict)}".replace("  ", " "), ""]
    subject = (
        f"review **{md_text(attestation.get('reviewId'))}**, binding **{md_text(attestation.get('binding'))}**, "
        f"range {_range(_map(attestation.get('target')))}"
    )
    principal = _principal(attestation)
    subject += f", signed by **{md_text(principal)}**" if principal else ", **unsigned**"
    lines.append(subject)
    lines += _attestation_block(attestation)
    return "\n".join(lines) + "\n"


def verify_summary(report: Mapping[str, Any], attestation: Mapping[str, Any] | None) -> str:
    """The summary of one ``agentreview verify``: outcome, every step, and the attestation's lanes."""
    ok = report.get("ok") is True
    reason = md_text(report.get("reason"))
    head = "✅ verified" if ok else f"❌ NOT verified ({reason})"
    lines = [f"### agentreview verify: {head}", ""]
    att = _map(attestation)
    if att:
        verdict = md_text(att.get("verdict"))
        subject = (
            f"review **{md_text(att.get('reviewId'))}**, binding **{md_text(att.get('binding'))}**, "
            f"range {_range(_map(att.get('target')))}, verdict **{verdict}**"
        )
        principal = report.get("principal")
        subject += f", signature verified for **{md_text(principal)}**" if isinstance(principal, str) else ""
        lines.append(subject)
    elif report.get("error"):
        lines.append(md_text(report.get("error"), 1000))
    checks = [_map(c) for c in _list(report.get("checks"))]
    if checks:
        lines += ["", "| step | result | expected | actual |", "|---|---|---|---|"]
        for check in checks:
            mark = "unverified" if check.get("unverified") else ("ok" if check.get("ok") is True else "**failed**")
            lines.append(
                f"| {md_text(check.get('check'))} | {mark} | {md_text(check.get('expected'))} "
                f"| {md_text(check.get('actual'))} |"
            )
    problems = [p for p in _list(report.get("problems")) if isinstance(p, str)]
    if problems:
        lines += ["", "**Problems**", "", *(f"- {md_text(p, 1000)}" for p in problems)]
    if att:
        lines += _attestation_block(att)
    return "\n".join(lines) + "\n"
