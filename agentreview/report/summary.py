"""The Markdown job summary of a run or a verification (``GITHUB_STEP_SUMMARY``, ``--summary PATH``).

Pure, from plain JSON; every string not agentreview's own goes through :mod:`agentreview.report.markdown`, so no
reviewer can add HTML, a link, an image, a table cell, an ``@mention`` or a workflow command.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentreview.report.findings import unverified_reason
from agentreview.report.markdown import md_word
from agentreview.report.neutral import neutralize

__all__ = ["run_summary", "verify_summary"]

MAX_FINDINGS = 50
VERDICT_MARK = {"pass": "✅", "block": "❌", "incomplete": "⚠️"}


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(value: object, *, cell: bool = False) -> str:
    """A name as written (or in a code span when it is not a plain word); ``?`` when missing."""
    return md_word(value, cell=cell) or "?"


def _range(target: Mapping[str, Any]) -> str:
    base, head = str(target.get("baseSha", "?"))[:10], str(target.get("headSha", "?"))[:10]
    return f"{_name(base)}..{_name(head)}"


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
            f"| {_name(lane.get('id'), cell=True)} | {_name(lane.get('kind'), cell=True)} | {role} "
            f"| {_name(lane.get('status'), cell=True)} | {len(_list(lane.get('findings')))} | {seconds} |"
        )
    return lines


def _findings(att: Mapping[str, Any]) -> list[str]:
    """One list item per finding: severity, lane, ``file:line``, then the title and (on a
    continuation line) the detail, each as plain words or in a code span."""
    lines: list[str] = []
    for lane in _list(att.get("lanes")):
        for finding in _list(_map(lane).get("findings")):
            finding = _map(finding)
            if len(lines) == MAX_FINDINGS:
                lines.append("- … and more (see the SARIF log or `agentreview ledger`)")
                return lines
            where = ""
            if isinstance(finding.get("file"), str) and finding["file"]:
                line = finding.get("line")
                where = f" {md_word(finding['file'])}"
                where += f":{line}" if isinstance(line, int) and not isinstance(line, bool) else ""
            title = md_word(finding.get("title")) or "(untitled)"
            detail = md_word(finding.get("detail"), 200)
            lines.append(
                f"- **{_name(finding.get('severity'))}** ({_name(_map(lane).get('id'))}){where} — {title}"
                + (f"\n  {detail}" if detail else "")
            )
    return lines


def _attestation_block(att: Mapping[str, Any], unverified: str | None = None) -> list[str]:
    lines: list[str] = []
    table = _lanes_table(att)
    if table:
        lines += ["", *table]
    findings = _findings(att)
    if findings:
        heading = f"**Findings** (unverified: {unverified})" if unverified else "**Findings**"
        lines += ["", heading, "", *findings]
    return lines


def _document(lines: list[str]) -> str:
    # No line starts with reviewer text, and each code span is neutralized already: this only
    # keeps the promise for the whole file, should it ever be printed to a CI log.
    return neutralize("\n".join(lines) + "\n")


def run_summary(attestation: Mapping[str, Any] | None, *, status: str, error: str | None = None) -> str:
    """The summary of one ``agentreview run``: verdict, range, signer, lanes and findings."""
    if attestation is None:
        title = "cancelled" if status == "cancelled" else "could not run"
        return _document([f"### agentreview run: ⚠️ {title}", "", md_word(error, 1000)])
    verdict = str(attestation.get("verdict", "?"))
    lines = [f"### agentreview run: {VERDICT_MARK.get(verdict, '')} {_name(verdict)}".replace("  ", " "), ""]
    subject = (
        f"review **{_name(attestation.get('reviewId'))}**, binding **{_name(attestation.get('binding'))}**, "
        f"range {_range(_map(attestation.get('target')))}"
    )
    principal = _principal(attestation)
    subject += f", signed by **{_name(principal)}**" if principal else ", **unsigned**"
    lines.append(subject)
    lines += _attestation_block(attestation)
    return _document(lines)


def verify_summary(report: Mapping[str, Any], attestation: Mapping[str, Any] | None) -> str:
    """The summary of one ``agentreview verify``: outcome, every step, and the attestation's
    lanes and findings (headed as unverified unless its signature verified for this range)."""
    ok = report.get("ok") is True
    head = "✅ verified" if ok else f"❌ NOT verified ({_name(report.get('reason'))})"
    lines = [f"### agentreview verify: {head}", ""]
    att = _map(attestation)
    if att:
        subject = (
            f"review **{_name(att.get('reviewId'))}**, binding **{_name(att.get('binding'))}**, "
            f"range {_range(_map(att.get('target')))}, verdict **{_name(att.get('verdict'))}**"
        )
        principal = report.get("principal")
        subject += f", signature verified for **{_name(principal)}**" if isinstance(principal, str) else ""
        lines.append(subject)
    elif report.get("error"):
        lines.append(md_word(report.get("error"), 1000))
    checks = [_map(c) for c in _list(report.get("checks"))]
    if checks:
        lines += ["", "| step | result | expected | actual |", "|---|---|---|---|"]
        for check in checks:
            mark = "unverified" if check.get("unverified") else ("ok" if check.get("ok") is True else "**failed**")
            lines.append(
                f"| {md_word(check.get('check'), cell=True)} | {mark} | {md_word(check.get('expected'), cell=True)} "
                f"| {md_word(check.get('actual'), cell=True)} |"
            )
    problems = [p for p in _list(report.get("problems")) if isinstance(p, str)]
    if problems:
        lines += ["", "**Problems**", "", *(f"- {md_word(p, 1000)}" for p in problems)]
    if att:
        lines += _attestation_block(att, unverified_reason(report))
    return _document(lines)
