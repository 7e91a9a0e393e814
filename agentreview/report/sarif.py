"""SARIF 2.1.0 logs of a run and of a verification, for code scanning (``--sarif PATH``).

Pure, from plain JSON. An attestation's paths and text are the change's to write: a path outside the repository is
never a location, and an unverified finding lands on no line of code.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import quote

from agentreview.report.findings import unverified_reason
from agentreview.report.markdown import md_word

__all__ = [
    "FINGERPRINT",
    "SARIF_SCHEMA",
    "SARIF_VERSION",
    "SECURITY_SEVERITY",
    "fingerprint",
    "run_sarif",
    "safe_relative_uri",
    "verify_sarif",
]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"high": "error", "medium": "warning", "low": "note"}
# GitHub's scale: 9.0+ critical, 7.0-8.9 high, 4.0-6.9 medium, 0.1-3.9 low.
SECURITY_SEVERITY = {"high": "8.0", "medium": "5.0", "low": "2.0"}
# A lane that did not pass without a finding of its own: how loud its one result is.
LANE_STATUS_LEVEL = {"fail": "error", "error": "error", "timeout": "error", "skipped": "warning"}
LANE_SECURITY_SEVERITY = {"error": "7.0", "warning": "4.0"}
GATE_SECURITY_SEVERITY = "7.0"
UNVERIFIED_RULE = "verify/unverified-finding"
FINGERPRINT = "agentreviewFinding/v1"
_SEGMENT_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_LINK_BRACKET = re.compile(r"(\\*)([\[\]])")


def safe_relative_uri(path: object) -> str | None:
    """``path`` as a URI reference relative to the repository root, or None when it is not a
    plain relative path inside it (absolute, ``..`` out of the root, a scheme, a backslash, a
    control character, empty)."""
    if not isinstance(path, str) or not path or "\\" in path or _CONTROL.search(path):
        return None
    if path.startswith("/") or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path):
        return None
    norm = posixpath.normpath(path)
    if norm in (".", "") or norm == ".." or norm.startswith("../"):
        return None
    return quote(norm, safe="/-._~")


def _segment(text: str) -> str:
    return _SEGMENT_UNSAFE.sub("-", text).strip("-")[:100] or "unnamed"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _plain(text: str) -> str:
    """Message text with every square bracket escaped (a backslash before one doubled), so what
    a reviewer wrote is never a SARIF embedded link (``[text](target)``, §3.11.6)."""
    return _LINK_BRACKET.sub(lambda m: m.group(1) * 2 + "\\" + m.group(2), text)


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def fingerprint(rule: str, uri: str, title: str, detail: str) -> str:
    """The stable identity of a finding: rule, path and text (whitespace and case folded), not
    its line, so an alert follows the code when lines move."""
    material = "\x00".join((rule, uri, _normalised(title), _normalised(detail)))
    return hashlib.sha256(material.encode("utf-8", "backslashreplace")).hexdigest()


class _Rules:
    """``tool.driver.rules``, each id once, with the index results refer to."""

    def __init__(self) -> None:
        self.rules: list[dict[str, Any]] = []
        self._index: dict[str, int] = {}

    def ref(self, rule_id: str, make: Callable[[], dict[str, Any]]) -> tuple[str, int]:
        if rule_id not in self._index:
            self._index[rule_id] = len(self.rules)
            self.rules.append({"id": rule_id, **make()})
        return rule_id, self._index[rule_id]


def _descriptor(
    name: str, short: str, full: str, help_text: str, help_md: str, level: str, score: str, tags: list[str],
    **extra: Any,
) -> dict[str, Any]:
    """A rule: what it means, how to act, and the ``security-severity`` (``score``) and tags code scanning ranks by."""
    return {
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": help_md},
        "defaultConfiguration": {"level": level},
        "properties": {"security-severity": score, "tags": list(dict.fromkeys(tags)), **extra},
    }


def _finding_rule(check: str, kind: str, severity: str, blocking: bool) -> dict[str, Any]:
    role = "blocking" if blocking else "advisory"
    full = (
        f"A {severity}-severity finding that the {kind} check '{check}' reported on the reviewed change. "
        f"The check is {role}: "
        + ("a finding at or above its blockOn severity blocks the merge. " if blocking else "it never blocks. ")
        + "The message is the finding's title and detail, as the check wrote them."
    )
    act = (
        "Read the finding at its line, then fix the code (or answer the reviewer in the pull request) "
        "and record a new review with `agentreview run --export`. `agentreview ledger` lists every "
        "finding of the attestation."
    )
    md = (
        f"A **{md_word(severity)}**-severity finding of the {md_word(kind)} check {md_word(check)} "
        f"({role}).\n\n{act}"
    )
    return _descriptor(
        f"{_segment(check)}-{_segment(severity)}-finding",
        f"{severity} finding of the {kind} check '{check}'",
        full,
        f"{full}\n\n{act}",
        md,
        LEVELS.get(severity, "warning"),
        SECURITY_SEVERITY.get(severity, SECURITY_SEVERITY["medium"]),
        ["agentreview", "review", kind, "security"],
        check=check,
        kind=kind,
        severity=severity,
        blocking=blocking,
    )


def _lane_rule(check: str, kind: str, status: str) -> dict[str, Any]:
    level = LANE_STATUS_LEVEL[status]
    full = (
        f"The blocking {kind} check '{check}' ended '{status}' without a finding of its own, so the "
        "review could not pass. The message carries the lane's error."
    )
    act = "Look at the lane's error (`agentreview ledger`), fix the cause, and run the review again."
    md = f"The blocking {md_word(kind)} check {md_word(check)} ended **{md_word(status)}** without a finding.\n\n{act}"
    return _descriptor(
        f"{_segment(check)}-{_segment(status)}-lane",
        f"the {kind} check '{check}' ended {status}",
        full,
        f"{full}\n\n{act}",
        md,
        level,
        LANE_SECURITY_SEVERITY[level],
        ["agentreview", "review", kind, "lane"],
        check=check,
        kind=kind,
        status=status,
    )


def _gate_rule(name: str, short: str) -> dict[str, Any]:
    full = (
        f"The review gate ('agentreview verify') refused the change: {short} did not hold. "
        "The message names what the gate expected and what it found."
    )
    act = (
        "Record a review of this very range under the policy the gate reads "
        "(`agentreview run --export`, or publish it as a note) and push it; the message says what differed."
    )
    return _descriptor(
        f"verify-{_segment(name)}",
        short,
        full,
        f"{full}\n\n{act}",
        f"The review gate refused the change: **{md_word(name)}** did not hold.\n\n{act}",
        "error",
        GATE_SECURITY_SEVERITY,
        ["agentreview", "gate"],
    )


def _unverified_rule() -> dict[str, Any]:
    full = (
        "A finding the export claims a reviewer made, shown at the export, not at the line it names: "
        "the attestation's signature did not verify for this range, so anyone could have written it."
    )
    act = "Verify with a trusted key (`agentreview verify --require-signed`) to see the findings on their lines."
    return _descriptor(
        "unverified-finding", "a finding of an unverified attestation", full, f"{full}\n\n{act}",
        f"{full}\n\n{act}", "note", "1.0", ["agentreview", "gate", "unverified"],
    )


def _driver(version: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "tool": {
            "driver": {
                "name": "agentreview",
                "version": version,
                "semanticVersion": version,
                "rules": rules,
            }
        }
    }


def _log(run: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _line(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _location(uri: str, line: object = None, end_line: object = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    start = _line(line)
    if start is not None:
        region: dict[str, Any] = {"startLine": start}
        end = _line(end_line)
        if end is not None and end >= start:
            region["endLine"] = end
        physical["region"] = region
    return {"physicalLocation": physical}


def _result(
    ref: tuple[str, int], level: str, message: str, identity: tuple[str, str, str],
    properties: dict[str, Any] | None = None, location: str | None = None,
) -> dict[str, Any]:
    """One result of rule ``ref``; ``identity`` (path, title, detail) makes its fingerprint."""
    rule, index = ref
    result: dict[str, Any] = {
        "ruleId": rule,
        "ruleIndex": index,
        "level": level,
        "message": {"text": _plain(message)},
        "partialFingerprints": {FINGERPRINT: fingerprint(rule, *identity)},
    }
    if properties:
        result["properties"] = properties
    if location is not None:
        result["locations"] = [_location(location)]
    return result


def _invocation(ok: bool, error: str | None) -> dict[str, Any]:
    invocation: dict[str, Any] = {"executionSuccessful": ok}
    if error:
        invocation["toolExecutionNotifications"] = [{"level": "error", "message": {"text": error}}]
    return invocation


def attestation_properties(att: Mapping[str, Any]) -> dict[str, Any]:
    """The run-level facts code scanning shows beside the results: verdict, binding, range, signer."""
    target, attestor = _map(att.get("target")), _map(att.get("attestor"))
    signature = attestor.get("signature") if isinstance(attestor.get("signature"), Mapping) else None
    props: dict[str, Any] = {
        "verdict": _text(att.get("verdict")),
        "binding": _text(att.get("binding")),
        "reviewId": _text(att.get("reviewId")),
        "runId": _text(att.get("runId")),
        "range": f"{_text(target.get('baseSha'))}..{_text(target.get('headSha'))}",
        "baseSha": _text(target.get("baseSha")),
        "headSha": _text(target.get("headSha")),
        "signed": signature is not None,
    }
    if signature is not None:
        props["principal"] = _text(signature.get("principal"))
    return props


def _lanes(att: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    return (lane for lane in _list(att.get("lanes")) if isinstance(lane, Mapping))


def _attestation_results(
    att: Mapping[str, Any], rules: _Rules, *, anchor: str | None, unverified: str | None
) -> list[dict[str, Any]]:
    """One result per finding (and per blocking lane that did not pass without one): on its
    line when vouched for (``unverified`` None), else a note at ``anchor`` saying why not."""
    results: list[dict[str, Any]] = []
    anchor_uri = safe_relative_uri(anchor)
    for lane in _lanes(att):
        check = _text(lane.get("id")) or "unnamed"
        kind = _text(lane.get("kind")) or "check"
        blocking = lane.get("blocking") is True
        findings = [f for f in _list(lane.get("findings")) if isinstance(f, Mapping)]
        for finding in findings:
            if unverified is None:
                results.append(_finding_result(rules, check, kind, lane, finding, anchor_uri))
            else:
                results.append(_unverified_result(rules, check, finding, anchor_uri, unverified))
        status = _text(lane.get("status"))
        if unverified is None and blocking and not findings and status in LANE_STATUS_LEVEL:
            ref = rules.ref(f"lane/{_segment(check)}/{status}", partial(_lane_rule, check, kind, status))
            message = f"{check}: {status}" + (f" — {_text(lane.get('error'))}" if _text(lane.get("error")) else "")
            properties = {"laneStatus": status, "blocking": blocking}
            identity = (anchor_uri or "", status, "")
            results.append(_result(ref, LANE_STATUS_LEVEL[status], message, identity, properties, anchor_uri))
    return results


def _finding_result(
    rules: _Rules, check: str, kind: str, lane: Mapping[str, Any], finding: Mapping[str, Any], anchor: str | None
) -> dict[str, Any]:
    severity = _text(finding.get("severity")) or "unknown"
    blocking = lane.get("blocking") is True
    ref = rules.ref(
        f"finding/{_segment(check)}/{_segment(severity)}", partial(_finding_rule, check, kind, severity, blocking)
    )
    title = _text(finding.get("title")) or "(untitled finding)"
    detail = _text(finding.get("detail")).strip()
    uri = safe_relative_uri(finding.get("file"))
    properties = {"check": check, "severity": severity, "blocking": blocking, "laneStatus": _text(lane.get("status"))}
    if uri is None and isinstance(finding.get("file"), str):
        properties["file"] = finding["file"]  # not a path inside the repository: data, never a location
    message = f"{title}\n\n{detail}" if detail else title
    result = _result(ref, LEVELS.get(severity, "warning"), message, (uri or "", title, detail), properties, anchor)
    if uri is not None:
        result["locations"] = [_location(uri, finding.get("line"), finding.get("endLine"))]
    return result


def _unverified_result(
    rules: _Rules, check: str, finding: Mapping[str, Any], anchor: str | None, why: str
) -> dict[str, Any]:
    ref = rules.ref(UNVERIFIED_RULE, _unverified_rule)
    severity = _text(finding.get("severity")) or "unknown"
    title = _text(finding.get("title")) or "(untitled finding)"
    detail = _text(finding.get("detail")).strip()
    claimed = _text(finding.get("file"))
    line = _line(finding.get("line"))
    where = f" at {claimed}{f':{line}' if line else ''}" if claimed else ""
    message = f"Unverified finding ({why}): {check} reported a {severity} finding{where}: {title}"
    properties: dict[str, Any] = {"check": check, "severity": severity, "verified": False, "claimedFile": claimed}
    if line:
        properties["claimedLine"] = line
    return _result(ref, "note", message, (claimed, f"{check}\x00{severity}\x00{title}", detail), properties, anchor)


def run_sarif(
    attestation: Mapping[str, Any] | None, *, version: str, error: str | None = None, status: str = "done"
) -> dict[str, Any]:
    """The SARIF log of one ``agentreview run``: its attestation's findings, or (no attestation)
    an empty log whose invocation says why the run could not happen."""
    rules = _Rules()
    results: list[dict[str, Any]] = []
    run: dict[str, Any] = {}
    if attestation is not None:
        results = _attestation_results(attestation, rules, anchor=None, unverified=None)
        run["properties"] = attestation_properties(attestation)
        run["invocations"] = [_invocation(True, None)]
    else:
        run["properties"] = {"status": status}
        run["invocations"] = [_invocation(False, error or status)]
    return _log({**_driver(version, rules.rules), "results": results, **run})


def verify_sarif(
    report: Mapping[str, Any],
    *,
    version: str,
    anchor: str | None = None,
    attestation: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The SARIF log of one ``agentreview verify``: the gate's own results, then the attestation's findings.

    ``anchor`` (a path relative to the repository root) locates the gate's results and findings with no file.
    """
    rules = _Rules()
    results: list[dict[str, Any]] = []
    anchor_uri = safe_relative_uri(anchor)

    def gate_result(rule_id: str, name: str, short: str, message: str, **properties: Any) -> None:
        ref = rules.ref(rule_id, partial(_gate_rule, name, short))
        results.append(_result(ref, "error", message, (anchor_uri or "", name, ""), properties, anchor_uri))

    for check in _list(report.get("checks")):
        if not isinstance(check, Mapping) or check.get("ok") is True or check.get("unverified") is True:
            continue
        name = _text(check.get("check")) or "unnamed"
        expected, actual = _text(check.get("expected")), _text(check.get("actual"))
        gate_result(
            f"verify/{_segment(name)}", name, f"the verification step '{name}'",
            f"{name}: expected {expected}, actual {actual}", step=name, expected=expected, actual=actual,
        )
    ok = report.get("ok") is True
    reason = _text(report.get("reason"))
    if not ok and not results:
        # Stopped before (or without) a failed step: not found, not exported, could not run, usage.
        why = _text(report.get("error")) or "; ".join(_lines(report.get("problems"))) or reason
        name = reason or "failed"
        gate_result(f"verify/{_segment(name)}", name, f"the verification outcome '{name}'", why or name)
    unverified = unverified_reason(report)
    if attestation is not None:
        results += _attestation_results(attestation, rules, anchor=anchor, unverified=unverified)
    properties: dict[str, Any] = {
        "ok": ok,
        "reason": reason,
        "exitCode": report.get("exitCode"),
        "verdict": _text(report.get("verdict")),
        "attestedVerdict": _text(report.get("attestedVerdict")),
        "binding": _text(report.get("binding")),
        "reviewId": _text(report.get("reviewId")),
        "range": f"{_text(report.get('baseSha'))}..{_text(report.get('headSha'))}",
        "principal": _text(report.get("principal")),
        "findingsVerified": attestation is not None and unverified is None,
        "problems": _lines(report.get("problems")),
        "notes": _lines(report.get("notes")),
    }
    if attestation is not None and unverified is not None:
        properties["findingsUnverified"] = unverified
    if report.get("path"):
        properties["attestation"] = _text(report.get("path"))
    failed_to_run = reason in ("error", "usage")
    error = _text(report.get("error")) if failed_to_run else None
    return _log(
        {
            **_driver(version, rules.rules),
            "results": results,
            "properties": properties,
            "invocations": [_invocation(not failed_to_run, error)],
        }
    )


def _lines(value: object) -> list[str]:
    items: Iterable[object] = value if isinstance(value, Sequence) and not isinstance(value, str) else []
    return [item for item in items if isinstance(item, str)]
