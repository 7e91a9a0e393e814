"""action.yml, the gate as a composite GitHub Action: its shape, and its verify step run for real.

The verify step's ``run:`` script is run with bash as the runner runs a composite step
(``bash --noprofile --norc -eo pipefail``), on a real repository whose main is pushed to a
real bare remote (so ``origin/main`` is the policy ref), with every ``${{ }}`` expression
of the step (in its ``env:`` and its script) replaced by the value the runner would give it:
the inputs (their defaults, themselves expressions, evaluated the same way) and the
``github`` context. It passes on a branch with a signed export, fails without one, fails on
a blocked one, and an input cannot inject shell.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from report_helpers import GateRepo, git, validate_sarif

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
VENV_BIN = Path(sys.executable).parent


def load_action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text())


def step(action: dict[str, Any], name_or_id: str) -> dict[str, Any]:
    (found,) = [s for s in action["runs"]["steps"] if name_or_id in (s.get("id"), s.get("name"))]
    return found


def evaluate(text: str, inputs: dict[str, str], github: dict[str, str]) -> str:
    """``text`` with each ``${{ inputs.X }}`` / ``${{ github.X }}`` replaced as the runner would."""

    def value(match: re.Match[str]) -> str:
        scope, _, name = match.group(1).partition(".")
        table = {"inputs": inputs, "github": github}.get(scope)
        assert table is not None and name in table, f"unexpected expression {match.group(0)}"
        return table[name]

    return EXPR.sub(value, text)


def resolved_inputs(action: dict[str, Any], given: dict[str, str], github: dict[str, str]) -> dict[str, str]:
    inputs = {}
    for name, spec in action["inputs"].items():
        inputs[name] = given.get(name, evaluate(str(spec.get("default", "")), {}, github))
    return inputs


def run_verify_step(gate: GateRepo, tmp: Path, given: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    action = load_action()
    github = {"base_ref": "main", "action_path": str(ROOT), "workspace": str(gate.root)}
    inputs = resolved_inputs(action, given or {}, github)
    verify = step(action, "verify")
    env = {k: evaluate(str(v), inputs, github) for k, v in verify["env"].items()}
    script = tmp / "verify-step.sh"
    script.write_text(evaluate(verify["run"], inputs, github))
    outputs, summary = tmp / "github_output", tmp / "step_summary.md"
    outputs.write_text("")
    runner_env = {
        **gate.env,
        **env,
        "PATH": f"{VENV_BIN}{os.pathsep}{gate.env.get('PATH', '')}",
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(tmp),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
    }
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=gate.root, env=runner_env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
    return proc.returncode, values, summary.read_text() if summary.exists() else proc.stdout + proc.stderr


@pytest.fixture
def gate(tmp_path: Path) -> GateRepo:
    return GateRepo(tmp_path / "w")


def test_action_shape() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert set(inputs) >= {"version", "policy-ref", "require-signed", "binding", "sarif"}
    assert inputs["policy-ref"]["default"] == "refs/remotes/origin/${{ github.base_ref }}"
    assert inputs["require-signed"]["default"] == "true" and inputs["sarif"]["default"] == "agentreview.sarif"
    assert inputs["version"]["default"] == ""
    steps = action["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    install = step(action, "install agentreview")
    assert install["env"]["AGENTREVIEW_ACTION_PATH"] == "${{ github.action_path }}"
    assert "pip install" in install["run"] and '"agentreview==$AGENTREVIEW_VERSION"' in install["run"]
    verify = step(action, "verify")
    assert "agentreview" in verify["run"] and "--policy-from" in verify["run"] and "--sarif" in verify["run"]
    assert set(action["outputs"]) >= {"verdict", "sarif"}
    for output in action["outputs"].values():
        assert output["value"].startswith("${{ steps.verify.outputs.")
    # no input is spliced into a script: every run: is free of expressions, inputs come through env
    for each in steps:
        if "run" in each:
            assert not EXPR.search(each["run"]), each["run"]
            assert each["shell"] == "bash"
            subprocess.run(["bash", "-n"], input=each["run"], text=True, check=True, timeout=30)


def test_verify_step_passes_on_a_branch_with_a_signed_export(gate: GateRepo, tmp_path: Path) -> None:
    gate.reviewer_mode("approve")
    assert gate.agentreview("run", "--export").returncode == 0
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    code, outputs, summary = run_verify_step(gate, tmp_path)
    assert code == 0, summary
    assert outputs == {"verdict": "pass", "verified": "true", "exit-code": "0", "sarif": "agentreview.sarif"}
    doc = json.loads((gate.root / "agentreview.sarif").read_text())
    validate_sarif(doc)
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["properties"]["principal"] == gate.principal
    assert summary.startswith("### agentreview verify: ✅ verified")


def test_verify_step_fails_on_a_branch_without_an_export(gate: GateRepo, tmp_path: Path) -> None:
    code, outputs, summary = run_verify_step(gate, tmp_path)
    assert code == 4, summary
    assert outputs["verified"] == "false" and outputs["verdict"] == "" and outputs["exit-code"] == "4"
    doc = json.loads((gate.root / "agentreview.sarif").read_text())
    validate_sarif(doc)
    assert doc["runs"][0]["results"][0]["ruleId"] == "verify/not_found"
    assert "NOT verified (not_found)" in summary


def test_verify_step_fails_on_a_blocked_review_and_reports_its_verdict(gate: GateRepo, tmp_path: Path) -> None:
    assert gate.agentreview("run", "--export").returncode == 1
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    code, outputs, _ = run_verify_step(gate, tmp_path, {"sarif": "out/gate.sarif"})
    assert code == 1
    assert outputs["verdict"] == "block" and outputs["sarif"] == "out/gate.sarif"
    validate_sarif(json.loads((gate.root / "out" / "gate.sarif").read_text()))


def test_an_input_cannot_inject_shell(gate: GateRepo, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = f'x"; touch {marker}; echo "$(touch {marker})'
    code, outputs, _ = run_verify_step(gate, tmp_path, {"binding": hostile, "policy-ref": f"main`touch {marker}`"})
    assert code != 0 and not marker.exists()
    assert outputs["verified"] == "false"
    again = tmp_path / "again"
    again.mkdir()
    code, _, text = run_verify_step(gate, again, {"require-signed": "yes"})
    assert code == 64 and "require-signed must be true or false" in text
