"""How a :class:`VerifyResult` is shown: the text report (every check, expected and actual) and the
``--json`` object documented in docs/cli.md."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentreview.report.neutral import neutralize, printable

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.verify.result import VerifyResult


def _member(att: dict[str, Any], key: str) -> str | None:
    value = att.get(key)
    return value if isinstance(value, str) else None


def json_text(result: VerifyResult) -> str:
    """The ``--json`` output: :func:`result_json`, printable on any UTF-8 stdout."""
    return printable(json.dumps(result_json(result), indent=2, ensure_ascii=False))


def result_json(result: VerifyResult) -> dict[str, Any]:
    """The one JSON object ``agentreview verify --json`` prints."""
    att = result.attestation or {}
    payload: dict[str, Any] = {
        "ok": result.ok,
        "reason": result.reason,
        "problems": list(result.problems),
        "notes": list(result.notes),
        "path": str(result.path) if result.path else None,
        "verdict": result.verdict,
        "attestedVerdict": result.attested_verdict,
        "principal": result.principal,
        "exitCode": result.exit_code,
        "baseSha": result.base_sha,
        "headSha": result.head_sha,
        "refs": [ref.as_dict() for ref in result.refs],
        "runId": _member(att, "runId"),
        "reviewId": _member(att, "reviewId"),
        "binding": _member(att, "binding"),
        "checks": [c.as_dict() for c in result.checks],
    }
    if result.policy_change:
        payload["policyChange"] = result.policy_change
    if result.error:
        payload["error"] = result.error
    return payload


def final_line(result: VerifyResult) -> str:
    """The last line of the text report: verified, not verified (and why), or NOT verified."""
    att = result.attestation or {}
    value = att.get("target")
    target: dict[str, Any] = value if isinstance(value, dict) else {}
    base = str(target.get("baseSha", "?"))[:10]
    head = str(target.get("headSha", "?"))[:10]
    subject = f"{att.get('reviewId', '?')}/{att.get('binding', '?')} {base}..{head} → {att.get('verdict', '?')}"
    where = f" ({result.path})" if result.path else ""
    if result.ok:
        signed = f" [signed: {result.principal}]" if result.principal else ""
        return f"verified: {subject}{where}{signed}"
    if result.reason in ("not_found", "not_exported"):
        return f"not verified ({result.reason.replace('_', ' ')}): {result.error}"
    count = len(result.problems)
    return f"NOT verified ({result.reason}, {count} problem{'s' if count != 1 else ''}): {subject}{where}"


def render_text(result: VerifyResult) -> str:
    """Every check (✓/✗, or ? when it could not be made here, with expected and actual), then
    problems, notes and the final line."""
    lines: list[str] = []
    if result.path:
        lines.append(f"attestation: {result.path}")
    if result.base_sha and result.head_sha:
        lines.append(f"expected range: {result.base_sha}..{result.head_sha}")
    lines.extend(f"resolved: {ref.line}" for ref in result.refs)
    width = max((len(c.name) for c in result.checks), default=0)
    for check in result.checks:
        mark = "?" if check.unverified else "✓" if check.ok else "✗"
        lines.append(f"  {mark} {check.name.ljust(width)}  expected {check.expected}, actual {check.actual}")
    for heading, items in (("problems", result.problems), ("notes", result.notes)):
        if items:
            lines += [f"{heading}:", *(f"  - {item}" for item in items)]
    if result.ok and result.principal:
        lines.append(f"signature verified: principal {result.principal}")
    if result.ok and result.policy_change:
        lines.append(result.policy_change)
    lines.append(final_line(result))
    # The export's strings are the change's to write: no line of the report reads as a CI command.
    return printable(neutralize("\n".join(lines)))
