"""The one place a lane's status is decided: executor outcome → ``LaneResult``.

A plugin cannot declare a lane ``pass``: an ``exited`` outcome passes only on code 0, a ``reported`` one only
when no finding reaches the check's ``blockOn`` (or, for a plugin's kind without ``blockOn``, no finding at all).
"""

from __future__ import annotations

from typing import Any

from agentreview.model.attestation import LaneResult
from agentreview.model.contracts.lanes import DeltaRange, FallbackAttempt, LaneOutcome

TAIL_CHARS = 4000
SEVERITY_RANK = {"low": 1, "medium": 2, "high": 3}


def tail(text: str | None, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters, prefixed with an ellipsis when cut."""
    if not text:
        return ""
    return text if len(text) <= limit else "…" + text[-limit:]


def meets_severity(severity: str, block_on: str) -> bool:
    return SEVERITY_RANK.get(severity, 0) >= SEVERITY_RANK[block_on]


def _session_fields(outcome: LaneOutcome) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, key in (("session_id", "sessionId"), ("preset", "preset"), ("model", "model")):
        value = getattr(outcome, name)
        if value:
            fields[key] = value
    if outcome.fallbacks:
        fields["fallbacks"] = [{"preset": f.preset, "error": f.error, **_buckets(f)} for f in outcome.fallbacks]
    fields.update(_buckets(outcome))
    return fields


def _buckets(source: LaneOutcome | FallbackAttempt) -> dict[str, list[str]]:
    """The reviewer audit's two buckets, when it named anything (``ReviewerResult``)."""
    named = (("unknownFields", source.unknown_fields), ("unsafeValues", source.unsafe_values))
    return {key: list(values) for key, values in named if values}


def to_lane_result(
    check: Any,
    outcome: LaneOutcome,
    duration_ms: int,
    delta: DeltaRange | None = None,
) -> LaneResult:
    """Turn an outcome into the lane record of the attestation (reference-notes 2.5)."""
    base: dict[str, Any] = {
        "id": check.id,
        "kind": check.kind,
        "blocking": check.blocking,
        "findings": [],
        "durationMs": max(0, int(duration_ms)),
    }
    if outcome.kind == "exited":
        if check.kind == "agent":
            return LaneResult.from_json(
                {**base, "status": "skipped", "error": "internal: agent lane reported a process exit"}
            )
        code = outcome.exit_code if outcome.exit_code is not None else 1
        if code == 0:
            return LaneResult.from_json({**base, "status": "pass", "exitCode": 0})
        finding = {"severity": "high", "title": f"'{check.id}' exited with code {code}", "detail": tail(outcome.output)}
        return LaneResult.from_json({**base, "status": "fail", "exitCode": code, "findings": [finding]})
    if outcome.kind == "reported":
        if check.kind == "command":
            return LaneResult.from_json(
                {**base, "status": "skipped", "error": "internal: command lane reported an agent verdict"}
            )
        findings = [
            {
                key: value
                for key, value in (
                    ("severity", f.severity),
                    ("title", f.title),
                    ("detail", f.detail or ""),
                    ("file", f.file),
                    ("line", f.line),
                )
                if value is not None
            }
            for f in outcome.findings
        ]
        block_on = getattr(check, "blockOn", None)
        if block_on in SEVERITY_RANK:
            failed = any(meets_severity(f.severity, block_on) for f in outcome.findings)
        else:  # a plugin kind without blockOn: every finding it reports fails the lane
            failed = bool(outcome.findings)
        result: dict[str, Any] = {**base, "status": "fail" if failed else "pass", "findings": findings}
        if outcome.summary:
            result["summary"] = outcome.summary
        if check.kind != "agent":
            return LaneResult.from_json(result)
        result.update(_session_fields(outcome))
        if delta is not None:
            result["composedFrom"] = {
                "rangeSha": delta.prior_range_sha,
                "headSha": delta.prior_head_sha,
                "attestationSha256": delta.prior_attestation_sha256,
            }
        return LaneResult.from_json(result)
    if outcome.kind == "timeout":
        error = outcome.error or f"exceeded {check.timeoutMs}ms and was killed"
        if outcome.output:
            error = f"{error}\n{tail(outcome.output)}"
        return LaneResult.from_json({**base, "status": "timeout", "error": error, **_session_fields(outcome)})
    return LaneResult.from_json(
        {**base, "status": "skipped", "error": outcome.error or "lane was skipped", **_session_fields(outcome)}
    )


def skipped_result(check: Any, error: str, duration_ms: int = 0) -> LaneResult:
    return to_lane_result(check, LaneOutcome.skipped(error), duration_ms)
