"""GitHub Actions workflow commands for a run's outcome (``--annotate github``)."""

from __future__ import annotations

from typing import Any


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: Any) -> list[str]:
    """Workflow-command lines for a run result: errors for blocking findings, then the verdict."""
    lines: list[str] = []
    if result.status == "failed":
        lines.append(f"::error title={escape_property('review could not run')}::{escape_data(result.error or '')}")
        return lines
    att = result.attestation
    if att is None:
        return lines
    for lane in att.lanes:
        if not lane.blocking or lane.status != "fail":
            continue
        for finding in lane.findings:
            props = []
            if finding.file:
                props.append(f"file={escape_property(finding.file)}")
                if finding.line:
                    props.append(f"line={finding.line}")
            props.append(f"title={escape_property(f'review {lane.id}: {finding.title}')}")
            lines.append(f"::error {','.join(props)}::{escape_data(finding.detail)}")
    if att.verdict == "block":
        lines.append(f"::error title={escape_property('review blocked')}::{escape_data(_summary(att))}")
    elif att.verdict == "incomplete":
        lines.append(f"::warning title={escape_property('review incomplete')}::{escape_data(_summary(att))}")
    return lines


def _summary(att: Any) -> str:
    parts = [f"{lane.id}: {lane.status}" for lane in att.lanes if lane.blocking and lane.status != "pass"]
    return "; ".join(parts) or att.verdict
