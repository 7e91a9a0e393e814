"""``run --sarif`` and ``verify --sarif``: SARIF 2.1.0 logs, valid against the OASIS schema.

Real runs in a real repository (tests/report_helpers.py): a reviewer (the ``exec`` provider)
blocks with a high finding at ``app.py:1``, a medium one without a file, and a low one whose
``file`` climbs out of the repository, which must not become a location. Writing a report
never changes a pass or a block; a named report that cannot be written turns a pass into 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_helpers import HOSTILE_TITLE, GateRepo, git, validate_sarif

from agentreview.report.sarif import run_sarif, safe_relative_uri, verify_sarif


@pytest.fixture
def gate(tmp_path: Path) -> GateRepo:
    return GateRepo(tmp_path)


def test_run_sarif_validates_and_carries_rule_level_and_location(gate: GateRepo) -> None:
    proc = gate.agentreview("run", "--sarif", "out/review.sarif")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the reviewer blocks; the SARIF changes nothing
    doc = json.loads((gate.root / "out" / "review.sarif").read_text())
    validate_sarif(doc)
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "agentreview" and driver["version"]
    assert [rule["id"] for rule in driver["rules"]] == ["tests", "correctness"]
    props = run["properties"]
    head, base = git(gate.root, "rev-parse", "HEAD"), git(gate.root, "rev-parse", "main")
    assert props["verdict"] == "block" and props["binding"] == "default"
    assert props["range"] == f"{base}..{head}" and props["principal"] == gate.principal
    high, medium, low = run["results"]
    assert high["ruleId"] == "correctness" and high["level"] == "error"
    assert driver["rules"][high["ruleIndex"]]["id"] == "correctness"
    assert high["message"]["text"].startswith(HOSTILE_TITLE)  # data, JSON-escaped by the writer
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


def test_verify_sarif_lists_each_failed_step(gate: GateRepo) -> None:
    assert gate.agentreview("run", "--export").returncode == 1  # a signed export of a blocked review
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    proc = gate.agentreview("verify", "--policy-from", "origin/main", "--require-signed", "--sarif", "v.sarif")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # expected pass, the export says block
    doc = json.loads((gate.root / "v.sarif").read_text())
    validate_sarif(doc)
    (run,) = doc["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["verify/verdict"]
    (result,) = run["results"]
    assert result["level"] == "error" and "expected pass, actual block" in result["message"]["text"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith(".reviews/") and uri.endswith(".json")
    assert run["properties"]["verdict"] == "block" and run["properties"]["reason"] == "invalid"
    assert run["properties"]["principal"] == gate.principal


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
    assert result["ruleId"] == "x-y" and result["level"] == "error" and "timeout" in result["message"]["text"]
    validate_sarif(verify_sarif({"ok": False, "reason": "error", "error": "git failed"}, version="0.1.0"))
