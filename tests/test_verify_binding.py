"""A gate names the binding it requires, and reports a verdict only for an attestation that verified.

Real parts: a repository on a branch off ``main`` pushed to a bare remote (``--policy-from
refs/remotes/origin/main`` as in CI), reviews run by the real CLI and signed with a real SSH key.
``--ci-binding`` requires the policy's binding meant for CI, so a quick ``local`` review does not
pass a gate meant for the full ``ci`` one; ``attestedVerdict`` is null for an export whose claim
nothing vouches for (unsigned, forged), and the verdict of a signed, valid one (a block too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_helpers import MANIFEST, GateRepo, forge_unsigned_pass, git

POLICY = "refs/remotes/origin/main"
TWO_BINDINGS = MANIFEST.replace(
    "verdict: { exportDir: .reviews }\n",
    "verdict: { exportDir: .reviews }\n"
    "bindings:\n"
    "  local: { on: pre-push, checks: [tests] }\n"
    "  ci: { on: pull_request, checks: [tests, correctness] }\n",
)
NO_CI = TWO_BINDINGS.replace("  ci: {", "  full: {")


def verify(gate: GateRepo, *args: str) -> tuple[int, dict[str, Any]]:
    proc = gate.agentreview("verify", "--json", "--policy-from", POLICY, "--require-signed", *args)
    return proc.returncode, json.loads(proc.stdout)


def export(gate: GateRepo, *args: str) -> Path:
    proc = gate.agentreview("run", "--export", "--json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    path = Path(json.loads(proc.stdout)["exportPath"])
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    return path


def test_ci_binding_refuses_an_attestation_of_the_quick_local_binding(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path, TWO_BINDINGS)
    gate.reviewer_mode("approve")
    export(gate, "--binding", "local")
    code, report = verify(gate)  # the gate that names no binding accepts any the policy declares
    assert code == 0 and report["binding"] == "local"
    code, report = verify(gate, "--ci-binding")
    assert code == 4 and report["reason"] == "not_found" and report["attestedVerdict"] is None
    assert "(binding 'ci')" in report["error"]
    code, report = verify(gate, "--binding", "ci")
    assert code == 4


def test_ci_binding_accepts_the_ci_binding_and_says_it_checked_it(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path, TWO_BINDINGS)
    gate.reviewer_mode("approve")
    export(gate, "--binding", "ci")
    code, report = verify(gate, "--ci-binding")
    assert code == 0, report
    line = next(c for c in report["checks"] if c["check"] == "binding")
    assert line == {"check": "binding", "ok": True, "expected": "ci", "actual": "ci"}
    assert report["attestedVerdict"] == "pass" and report["principal"] == gate.principal


def test_a_named_export_of_another_binding_is_invalid(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path, TWO_BINDINGS)
    gate.reviewer_mode("approve")
    path = export(gate, "--binding", "local")
    code, report = verify(gate, "--ci-binding", str(path))
    assert code == 1 and "binding mismatch" in report["problems"]
    assert report["attestedVerdict"] is None


def test_ci_binding_is_the_only_binding_of_a_policy_without_ci(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path)  # no bindings: the implied 'default'
    gate.reviewer_mode("approve")
    export(gate)
    code, report = verify(gate, "--ci-binding")
    assert code == 0 and report["binding"] == "default", report


def test_ci_binding_with_several_bindings_and_none_named_ci_says_to_name_one(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path, NO_CI)
    proc = gate.agentreview("verify", "--policy-from", POLICY, "--ci-binding")
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.strip() == (
        "agentreview verify: --ci-binding: review 'demo' declares several bindings (local, full) and none named "
        "'ci' — add a 'ci' binding to REVIEW.md or name the one the gate requires with --binding"
    )


def test_binding_and_ci_binding_together_are_a_usage_error(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path, TWO_BINDINGS)
    proc = gate.agentreview("verify", "--ci-binding", "--binding", "ci")
    assert proc.returncode == 64
    assert "--binding and --ci-binding both name the binding — give one" in proc.stderr


def test_a_signed_block_is_an_attested_block(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path)
    export(gate)  # the reviewer blocks
    code, report = verify(gate)
    assert code == 1 and report["verdict"] == "block" and report["attestedVerdict"] == "block"
    assert report["problems"] == ["verdict is 'block', expected 'pass'"]


@pytest.mark.parametrize("require_signed", [True, False])
def test_a_forged_unsigned_pass_has_no_attested_verdict(tmp_path: Path, require_signed: bool) -> None:
    """The attack of issue 19 item 5: a blocked review rewritten to pass, its signature dropped."""
    gate = GateRepo(tmp_path)
    path = export(gate)
    forge_unsigned_pass(gate.root, path)
    args = ("--require-signed",) if require_signed else ()
    proc = gate.agentreview("verify", "--json", "--policy-from", POLICY, *args)
    report = json.loads(proc.stdout)
    assert report["verdict"] == "pass"  # the export's own claim
    assert report["attestedVerdict"] is None and report["principal"] is None
    assert proc.returncode == (6 if require_signed else 0)


def test_a_signed_export_of_another_range_has_no_attested_verdict(tmp_path: Path) -> None:
    gate = GateRepo(tmp_path)
    gate.reviewer_mode("approve")
    path = export(gate)
    (gate.root / "app.py").write_text("x = 2\n")
    git(gate.root, "commit", "-q", "-am", "an unreviewed change")
    code, report = verify(gate, str(path))
    assert code == 1 and report["verdict"] == "pass" and report["attestedVerdict"] is None
