"""``run --sarif`` and ``verify --sarif``: SARIF 2.1.0 logs, valid against the OASIS schema.

Real runs in a real repository (tests/report_helpers.py): a reviewer (the ``exec`` provider)
blocks with a high finding at ``app.py:1``, a medium one without a file, and a low one whose
``file`` climbs out of the repository, which must not become a location. The blocked pull
request's gate (``verify`` of the signed export) carries the finding at ``app.py:1`` beside its
own ``verify/verdict`` result; a tampered export's findings never reach a line of code. Every
rule has help and a ``security-severity``, every result a ``partialFingerprints`` hash. Writing a
report never changes a pass or a block; a named report that cannot be written turns a pass into 3.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_helpers import HOSTILE_DETAIL, HOSTILE_TITLE, GateRepo, git, validate_sarif

from agentreview.report.sarif import FINGERPRINT, run_sarif, safe_relative_uri, verify_sarif

HOSTILE_PATHS = [
    "../x.py", "src/../../x.py", "/etc/passwd", "//evil.example/x", "file:///etc/passwd", "https://evil.example/x",
    "javascript:alert(1)", "C:\\x.py", "src\\..\\..\\x", "src/\x1b[31mred.py", "a\nb.py", "a\rb.py", "a\x00b",
    "a\x7fb", "a\x85b", "..", ".", "",
]


def export_of(gate: GateRepo) -> Path:
    (path,) = (gate.root / ".reviews").glob("*.json")
    return path


def commit_export(gate: GateRepo) -> None:
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")


def rule_of(doc: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    rule: dict[str, Any] = doc["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == result["ruleId"]
    return rule


def assert_rules_documented(doc: dict[str, Any]) -> None:
    """Every rule has a name, descriptions, help (text and Markdown) and a numeric security-severity."""
    for rule in doc["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["name"] and rule["name"] != rule["id"]
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert 0.0 <= float(rule["properties"]["security-severity"]) <= 10.0
        assert "agentreview" in rule["properties"]["tags"]
    for result in doc["runs"][0]["results"]:
        assert re.fullmatch(r"[0-9a-f]{64}", result["partialFingerprints"][FINGERPRINT])


@pytest.fixture
def gate(tmp_path: Path) -> GateRepo:
    return GateRepo(tmp_path)


def test_run_sarif_validates_and_carries_rule_level_and_location(gate: GateRepo) -> None:
    proc = gate.agentreview("run", "--sarif", "out/review.sarif")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the reviewer blocks; the SARIF changes nothing
    doc = json.loads((gate.root / "out" / "review.sarif").read_text())
    validate_sarif(doc)
    assert_rules_documented(doc)
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "agentreview" and driver["version"]
    # one rule per kind of finding: check and severity
    assert [rule["id"] for rule in driver["rules"]] == [
        "finding/correctness/high", "finding/correctness/medium", "finding/correctness/low"
    ]
    assert [rule["properties"]["security-severity"] for rule in driver["rules"]] == ["8.0", "5.0", "2.0"]
    assert all("security" in rule["properties"]["tags"] for rule in driver["rules"])
    props = run["properties"]
    head, base = git(gate.root, "rev-parse", "HEAD"), git(gate.root, "rev-parse", "main")
    assert props["verdict"] == "block" and props["binding"] == "default"
    assert props["range"] == f"{base}..{head}" and props["principal"] == gate.principal
    high, medium, low = run["results"]
    assert high["ruleId"] == "finding/correctness/high" and high["level"] == "error"
    assert rule_of(doc, high)["defaultConfiguration"]["level"] == "error"
    assert high["message"]["text"].startswith(HOSTILE_TITLE)  # data, JSON-escaped by the writer
    # the reviewer's Markdown link is no SARIF embedded link: its brackets are escaped
    assert "\\[click me\\](https://evil.example)" in high["message"]["text"]
    assert high["locations"] == [
        {"physicalLocation": {"artifactLocation": {"uri": "app.py"}, "region": {"startLine": 1}}}
    ]
    assert medium["level"] == "warning" and "locations" not in medium
    # a reviewer's path out of the repository is kept as data, never as a location
    assert low["level"] == "note" and "locations" not in low and low["properties"]["file"] == "../../etc/passwd"


def test_a_passing_run_writes_an_empty_valid_log_and_still_exits_0(gate: GateRepo) -> None:
    gate.reviewer_mode("approve")
    proc = gate.agentreview("run", "--sarif", str(gate.root.parent / "pass.sarif"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((gate.root.parent / "pass.sarif").read_text())
    validate_sarif(doc)
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["properties"]["verdict"] == "pass"


def test_a_blocked_pr_has_the_finding_on_its_line_beside_the_gate_result(gate: GateRepo) -> None:
    assert gate.agentreview("run", "--export").returncode == 1  # a signed export of a blocked review
    commit_export(gate)
    proc = gate.agentreview("verify", "--policy-from", "origin/main", "--require-signed", "--sarif", "v.sarif")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # expected pass, the export says block
    doc = json.loads((gate.root / "v.sarif").read_text())
    validate_sarif(doc)
    assert_rules_documented(doc)
    (run,) = doc["runs"]
    assert [r["ruleId"] for r in run["results"]] == [
        "verify/verdict", "finding/correctness/high", "finding/correctness/medium", "finding/correctness/low"
    ]
    verdict, high, medium, low = run["results"]
    export_uri = export_of(gate).relative_to(gate.root).as_posix()
    # the gate's own result, at the export
    assert verdict["level"] == "error" and "expected pass, actual block" in verdict["message"]["text"]
    assert verdict["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == export_uri
    assert rule_of(doc, verdict)["properties"]["tags"] == ["agentreview", "gate"]
    # the reviewer's finding, at its file and line
    assert high["level"] == "error" and high["message"]["text"].startswith(HOSTILE_TITLE)
    assert high["locations"] == [
        {"physicalLocation": {"artifactLocation": {"uri": "app.py"}, "region": {"startLine": 1}}}
    ]
    assert rule_of(doc, high)["properties"]["security-severity"] == "8.0"
    # no file, or a file outside the repository: shown at the export, the path kept only as data
    for result in (medium, low):
        assert result["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": export_uri}}}]
    assert low["properties"]["file"] == "../../etc/passwd"
    assert run["properties"]["verdict"] == "block" and run["properties"]["reason"] == "invalid"
    assert run["properties"]["principal"] == gate.principal and run["properties"]["findingsVerified"] is True
    # the same finding has the same fingerprint in run's log and in the gate's
    assert gate.agentreview("run", "--sarif", "r.sarif").returncode == 1
    (run_high, *_) = json.loads((gate.root / "r.sarif").read_text())["runs"][0]["results"]
    assert run_high["partialFingerprints"] == high["partialFingerprints"]


def test_a_tampered_export_puts_no_finding_on_a_line(gate: GateRepo) -> None:
    """The attack: an export edited after signing moves a finding onto a line of its choosing
    (and invents one). Its signature no longer verifies: every finding is a note at the export
    that says it is unverified, and no result points into the code."""
    assert gate.agentreview("run", "--export").returncode == 1
    path = export_of(gate)
    doc = json.loads(path.read_text())
    lane = next(lane for lane in doc["lanes"] if lane["id"] == "correctness")
    lane["findings"][0].update(file="REVIEW.md", line=9)
    lane["findings"].append({"severity": "high", "title": "forged", "detail": HOSTILE_DETAIL, "file": "app.py",
                             "line": 1})
    path.write_text(json.dumps(doc))
    commit_export(gate)
    proc = gate.agentreview("verify", "--policy-from", "origin/main", "--sarif", "v.sarif")
    assert proc.returncode in (1, 6), proc.stdout + proc.stderr
    log = json.loads((gate.root / "v.sarif").read_text())
    validate_sarif(log)
    assert_rules_documented(log)
    (run,) = log["runs"]
    export_uri = path.relative_to(gate.root).as_posix()
    notes = [r for r in run["results"] if r["ruleId"] == "verify/unverified-finding"]
    assert len(notes) == 4 and all(r["level"] == "note" for r in notes)
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]} == {export_uri}
    assert not any("region" in r["locations"][0]["physicalLocation"] for r in run["results"])
    assert "Unverified finding (the attestation's signature did not verify" in notes[0]["message"]["text"]
    assert "at REVIEW.md:9" in notes[0]["message"]["text"] and notes[0]["properties"]["claimedLine"] == 9
    assert "security" not in rule_of(log, notes[0])["properties"]["tags"]
    assert run["properties"]["findingsVerified"] is False and run["properties"]["principal"] == ""


def test_findings_of_a_signed_attestation_of_another_range_stay_unverified() -> None:
    att = {"lanes": [{"id": "c", "kind": "agent", "blocking": True, "status": "fail",
                      "findings": [{"severity": "high", "title": "t", "detail": "", "file": "app.py", "line": 3}]}]}
    report = {"ok": False, "reason": "invalid", "principal": "dev@example.test",
              "checks": [{"check": "rangeSha", "ok": False, "expected": "a", "actual": "b"}]}
    doc = verify_sarif(report, version="0.1.0", anchor=".reviews/x.json", attestation=att)
    validate_sarif(doc)
    results = doc["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["verify/rangeSha", "verify/unverified-finding"]
    assert "not of the range being verified" in results[1]["message"]["text"]
    report.update(ok=True, reason="verified", checks=[{"check": "rangeSha", "ok": True}])
    doc = verify_sarif(report, version="0.1.0", anchor=".reviews/x.json", attestation=att)
    (finding,) = doc["runs"][0]["results"]
    assert finding["locations"][0]["physicalLocation"]["region"] == {"startLine": 3}


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_a_hostile_finding_path_is_never_a_uri(path: str) -> None:
    """A signed attestation's path is still the reviewer's to write: it never becomes a uri that
    leaves the repository, names a scheme or carries a control character."""
    att = {"lanes": [{"id": "c", "kind": "agent", "blocking": True, "status": "fail",
                      "findings": [{"severity": "high", "title": "t", "detail": "", "file": path, "line": 2}]}]}
    report = {"ok": True, "reason": "verified", "principal": "p", "checks": [{"check": "rangeSha", "ok": True}]}
    doc = verify_sarif(report, version="0.1.0", anchor=".reviews/x.json", attestation=att)
    validate_sarif(doc)
    (result,) = doc["runs"][0]["results"]
    assert result["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": ".reviews/x.json"}}}]
    assert result["properties"].get("file", "") == path


def test_fingerprints_follow_rule_path_and_text_not_line() -> None:
    def fingerprint(**finding: Any) -> str:
        finding = {"severity": "high", "title": "Eval  on input", "detail": "d", "file": "app.py", "line": 1,
                   **finding}
        att = {"lanes": [{"id": "c", "kind": "agent", "blocking": True, "status": "fail", "findings": [finding]}]}
        (result,) = run_sarif(att, version="0.1.0")["runs"][0]["results"]
        value: str = result["partialFingerprints"][FINGERPRINT]
        return value

    same = fingerprint()
    assert fingerprint(line=40) == same  # the code moved
    assert fingerprint(title="eval on\ninput") == same  # whitespace and case
    assert fingerprint(file="other.py") != same
    assert fingerprint(title="another finding") != same
    assert fingerprint(severity="low") != same  # another rule


def test_a_known_end_line_is_the_region_end() -> None:
    att = {"lanes": [{"id": "c", "kind": "agent", "blocking": False, "status": "pass", "findings": [
        {"severity": "low", "title": "t", "detail": "", "file": "a.py", "line": 3, "endLine": 5},
        {"severity": "low", "title": "u", "detail": "", "file": "a.py", "line": 3, "endLine": 2},
    ]}]}
    doc = run_sarif(att, version="0.1.0")
    validate_sarif(doc)
    spans = [r["locations"][0]["physicalLocation"]["region"] for r in doc["runs"][0]["results"]]
    assert spans == [{"startLine": 3, "endLine": 5}, {"startLine": 3}]


def test_verify_sarif_when_no_export_is_found(gate: GateRepo) -> None:
    proc = gate.agentreview("verify", "--policy-from", "origin/main", "--require-signed", "--sarif", "v.sarif")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    doc = json.loads((gate.root / "v.sarif").read_text())
    validate_sarif(doc)
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "verify/not_found" and result["level"] == "error"


def test_a_sarif_that_cannot_be_written_fails_a_pass_but_keeps_a_block(gate: GateRepo) -> None:
    blocker = gate.root.parent / "not-a-dir"
    blocker.write_text("a file where a directory is needed\n")
    proc = gate.agentreview("run", "--sarif", str(blocker / "out.sarif"))
    assert proc.returncode == 1, proc.stderr  # the block stands
    assert f"--sarif: cannot write {blocker / 'out.sarif'}" in proc.stderr
    gate.reviewer_mode("approve")
    proc = gate.agentreview("run", "--no-cache", "--sarif", str(blocker / "out.sarif"))
    assert proc.returncode == 3, proc.stderr  # a gate asked for SARIF it cannot write does not pass quietly
    lines = [line for line in proc.stderr.splitlines() if "--sarif" in line]
    assert len(lines) == 1 and "Traceback" not in proc.stderr


def test_detach_with_sarif_is_a_usage_error(gate: GateRepo) -> None:
    proc = gate.agentreview("run", "--detach", "--sarif", "x.sarif")
    assert proc.returncode == 64 and "--detach cannot be combined with --sarif" in proc.stderr


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("app.py", "app.py"),
        ("src/a b.py", "src/a%20b.py"),
        ("./src//x.py", "src/x.py"),
        ("/etc/passwd", None),
        ("../x.py", None),
        ("src/../../x.py", None),
        ("..", None),
        ("file:///etc/passwd", None),
        ("C:\\x.py", None),
        ("https://evil.example/x", None),
        ("//evil.example/x", None),
        ("src/\x1b[31m.py", None),
        ("a\nb.py", None),
        ("a\x85b.py", None),
        ("%2e%2e/x.py", "%252e%252e/x.py"),  # a file literally named so, encoded again
        ("", None),
        (None, None),
    ],
)
def test_only_a_path_inside_the_repository_is_a_location(path: object, uri: str | None) -> None:
    assert safe_relative_uri(path) == uri


def test_logs_of_odd_inputs_still_validate() -> None:
    validate_sarif(run_sarif(None, version="0.1.0", error="could not run: no git", status="failed"))
    att = {"verdict": "incomplete", "lanes": [{"id": "x y", "kind": "agent", "blocking": True, "status": "timeout",
                                               "findings": [], "error": "timed out"}, "junk"]}
    doc = run_sarif(att, version="0.1.0")
    validate_sarif(doc)
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "lane/x-y/timeout" and result["level"] == "error"
    assert "timeout" in result["message"]["text"]
    assert_rules_documented(doc)
    validate_sarif(verify_sarif({"ok": False, "reason": "error", "error": "git failed"}, version="0.1.0"))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("./\\:%ab~ \x00\x1b\n\u202e@?#")), max_size=20))
def test_any_uri_made_stays_inside_the_repository(path: str) -> None:
    uri = safe_relative_uri(path)
    if uri is None:
        return
    assert re.fullmatch(r"[A-Za-z0-9/\-._~%]+", uri)  # no scheme, no control character, nothing unencoded
    assert not uri.startswith("/")
    parts = unquote(uri).split("/")
    assert ".." not in parts and "." not in parts and "" not in parts
