"""SARIF 2.1.0 logs of a run and of a verification, for code scanning (``--sarif PATH``).

Pure: the functions here build the SARIF document as a dict from plain JSON data (an
attestation as its JSON object, a verification as the ``verify --json`` object), so the same
code serves ``run`` and ``verify`` and the report layer needs neither the engine nor the
verifier. :mod:`agentreview.report.outputs` writes it.

What goes where (docs/cli.md, "SARIF"):

* ``run``: each finding is a result whose ``ruleId`` is its check's id and whose ``level``
  follows its severity (high → error, medium → warning, low → note); a blocking lane that did
  not pass and reported no finding still gets one result, so a blocked log is never empty. A
  finding's ``file`` (and ``line``) becomes a location only when it is a plain path inside the
  repository: a reviewer writes it, and an absolute path or one that climbs out with ``..``
  would point code scanning at a file that is not the change's. The verdict, binding, range and
  signing principal are the run's ``properties``.
* ``verify``: each failed verification step is a result (``ruleId`` ``verify/<step>``); a
  verification that stopped before its steps (not found, not exported, could not run) is one
  result naming why.

Reviewer and export text is data: it only ever lands in JSON strings (the writer escapes it).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "run_sarif", "safe_relative_uri", "verify_sarif"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"high": "error", "medium": "warning", "low": "note"}
# A lane that did not pass without a finding of its own: how loud its one result is.
LANE_STATUS_LEVEL = {"fail": "error", "error": "error", "timeout": "error", "skipped": "warning"}
_RULE_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]+")


def safe_relative_uri(path: object) -> str | None:
    """``path`` as a URI reference relative to the repository root, or None when it is not a
    plain relative path inside it (absolute, ``..`` out of the root, a scheme, a NUL, empty)."""
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        return None
    if path.startswith("/") or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path):
        return None
    norm = posixpath.normpath(path)
    if norm in (".", "") or norm == ".." or norm.startswith("../"):
        return None
    return quote(norm, safe="/-._~")


def _rule_id(text: str) -> str:
    return _RULE_ID_UNSAFE.sub("-", text).strip("-") or "unnamed"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


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


def _location(file: object, line: object) -> dict[str, Any] | None:
    uri = safe_relative_uri(file)
    if uri is None:
        return None
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if isinstance(line, int) and not isinstance(line, bool) and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


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


def _lanes(att: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [lane for lane in _list(att.get("lanes")) if isinstance(lane, Mapping)]


def run_sarif(
    attestation: Mapping[str, Any] | None, *, version: str, error: str | None = None, status: str = "done"
) -> dict[str, Any]:
    """The SARIF log of one ``agentreview run``: its attestation's findings, or (no attestation)
    an empty log whose invocation says why the run could not happen."""
    rules: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    run: dict[str, Any] = {}
    if attestation is not None:
        index: dict[str, int] = {}
        for lane in _lanes(attestation):
            check = _text(lane.get("id")) or "unnamed"
            rule = _rule_id(check)
            blocking = lane.get("blocking") is True
            if rule not in index:
                index[rule] = len(rules)
                rules.append(
                    {
                        "id": rule,
                        "name": check,
                        "shortDescription": {"text": f"{_text(lane.get('kind')) or 'check'} check '{check}'"},
                        "defaultConfiguration": {"level": "error" if blocking else "warning"},
                        "properties": {"kind": _text(lane.get("kind")), "blocking": blocking},
                    }
                )
            findings = _list(lane.get("findings"))
            for finding in findings:
                if not isinstance(finding, Mapping):
                    continue
                results.append(_finding_result(rule, index[rule], check, lane, finding))
            status_text = _text(lane.get("status"))
            if blocking and not findings and status_text in LANE_STATUS_LEVEL:
                message = f"{check}: {status_text}"
                if _text(lane.get("error")):
                    message += f" — {_text(lane.get('error'))}"
                results.append(
                    {
                        "ruleId": rule,
                        "ruleIndex": index[rule],
                        "level": LANE_STATUS_LEVEL[status_text],
                        "message": {"text": message},
                        "properties": {"laneStatus": status_text, "blocking": blocking},
                    }
                )
        run["properties"] = attestation_properties(attestation)
        run["invocations"] = [_invocation(True, None)]
    else:
        run["properties"] = {"status": status}
        run["invocations"] = [_invocation(False, error or status)]
    return _log({**_driver(version, rules), "results": results, **run})


def _finding_result(
    rule: str, rule_index: int, check: str, lane: Mapping[str, Any], finding: Mapping[str, Any]
) -> dict[str, Any]:
    severity = _text(finding.get("severity"))
    title = _text(finding.get("title")) or "(untitled finding)"
    detail = _text(finding.get("detail")).strip()
    result: dict[str, Any] = {
        "ruleId": rule,
        "ruleIndex": rule_index,
        "level": LEVELS.get(severity, "warning"),
        "message": {"text": f"{title}\n\n{detail}" if detail else title},
        "properties": {
            "check": check,
            "severity": severity,
            "blocking": lane.get("blocking") is True,
            "laneStatus": _text(lane.get("status")),
        },
    }
    location = _location(finding.get("file"), finding.get("line"))
    if location is not None:
        result["locations"] = [location]
    elif isinstance(finding.get("file"), str):
        # Not a path inside the repository: kept as data, never as a location.
        result["properties"]["file"] = finding["file"]
    return result


def verify_sarif(report: Mapping[str, Any], *, version: str, anchor: str | None = None) -> dict[str, Any]:
    """The SARIF log of one ``agentreview verify``, from its ``--json`` object.

    ``anchor`` (the export's or the manifest's path relative to the repository root) is the
    location of every result, so code scanning can show them; None leaves them unlocated."""
    rules: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    index: dict[str, int] = {}

    def rule_for(name: str, description: str) -> tuple[str, int]:
        rule = f"verify/{_rule_id(name)}"
        if rule not in index:
            index[rule] = len(rules)
            rules.append(
                {
                    "id": rule,
                    "name": name,
                    "shortDescription": {"text": description},
                    "defaultConfiguration": {"level": "error"},
                }
            )
        return rule, index[rule]

    location = _location(anchor, None)
    for check in _list(report.get("checks")):
        if not isinstance(check, Mapping) or check.get("ok") is True or check.get("unverified") is True:
            continue
        name = _text(check.get("check")) or "unnamed"
        rule, rule_index = rule_for(name, f"verification step '{name}'")
        expected, actual = _text(check.get("expected")), _text(check.get("actual"))
        result: dict[str, Any] = {
            "ruleId": rule,
            "ruleIndex": rule_index,
            "level": "error",
            "message": {"text": f"{name}: expected {expected}, actual {actual}"},
            "properties": {"step": name, "expected": expected, "actual": actual},
        }
        if location is not None:
            result["locations"] = [location]
        results.append(result)
    ok = report.get("ok") is True
    reason = _text(report.get("reason"))
    if not ok and not results:
        # Stopped before (or without) a failed step: not found, not exported, could not run, usage.
        why = _text(report.get("error")) or "; ".join(_lines(report.get("problems"))) or reason
        rule, rule_index = rule_for(reason or "failed", f"verification outcome '{reason}'")
        result = {"ruleId": rule, "ruleIndex": rule_index, "level": "error", "message": {"text": why or reason}}
        if location is not None:
            result["locations"] = [location]
        results.append(result)
    properties: dict[str, Any] = {
        "ok": ok,
        "reason": reason,
        "exitCode": report.get("exitCode"),
        "verdict": _text(report.get("verdict")),
        "binding": _text(report.get("binding")),
        "reviewId": _text(report.get("reviewId")),
        "range": f"{_text(report.get('baseSha'))}..{_text(report.get('headSha'))}",
        "principal": _text(report.get("principal")),
        "problems": _lines(report.get("problems")),
        "notes": _lines(report.get("notes")),
    }
    if report.get("path"):
        properties["attestation"] = _text(report.get("path"))
    failed_to_run = reason in ("error", "usage")
    error = _text(report.get("error")) if failed_to_run else None
    return _log(
        {
            **_driver(version, rules),
            "results": results,
            "properties": properties,
            "invocations": [_invocation(not failed_to_run, error)],
        }
    )


def _lines(value: object) -> list[str]:
    items: Iterable[object] = value if isinstance(value, Sequence) and not isinstance(value, str) else []
    return [item for item in items if isinstance(item, str)]
