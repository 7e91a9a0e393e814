"""The third-party provider example in docs/examples is complete: installed as a
distribution (a dist-info on PYTHONPATH, built from its pyproject.toml) it registers through the hook, shows in
``agentreview presets`` as a built-in preset, and runs an agent lane to a verdict in a
real ``agentreview`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "agentreview-provider-example"


@pytest.fixture(scope="module")
def example_site(install_example: Callable[[str], Path]) -> Path:
    return install_example("agentreview-provider-example")


def _env(site: Path, home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(site), "AGENTREVIEW_HOME": str(home)}


def test_example_provider_registers_and_lists(example_site: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "presets", "--json"],
        capture_output=True, text=True, timeout=60, env=_env(example_site, tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert rows["example-linter"]["source"] == "builtin" and rows["example-linter"]["usable"] is True


def test_example_provider_runs_an_agent_lane(example_site: Path, repo, tmp_path: Path) -> None:
    repo.head = repo.commit("app.py", "x = eval(input())  # TODO tidy\n", "use eval")
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    program = f"""
import json, sys, threading
from pathlib import Path
from agentreview.model.contracts import LaneRequest
from agentreview.model.manifest import AgentCheck
from agentreview.model.reader import read
from agentreview.model.lanes import to_lane_result
from agentreview.plugins.registry import load_registry
from agentreview.host.presets import load_presets

registry = load_registry()
providers = registry.objects("providers")
check = read(AgentCheck, {{"id": "lint", "kind": "agent", "preset": "example-linter", "rubric": "r.md"}})
request = LaneRequest(
    check=check, review_id="rev", repo_root=Path({str(repo.root)!r}), base_sha={repo.base!r}, head_sha={repo.head!r},
    placeholders={{}}, run_dir=Path({str(run_dir)!r}), cancel=threading.Event(), rubric_path=Path({str(repo.rubric)!r}),
    presets=load_presets(Path({str(tmp_path)!r}), providers), providers=providers,
)
outcome = registry.get("lane_executors", "agent").run_lane(request)
print(json.dumps(to_lane_result(check, outcome, 1).to_json_dict()))
"""
    proc = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, env=_env(example_site, tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    lane = json.loads(proc.stdout)
    assert lane["status"] == "fail" and lane["preset"] == "example-linter" and lane["model"] == "example-linter-1"
    assert {f["title"] for f in lane["findings"]} == {"eval() added"}  # the one line carries eval(, so it is high


def test_example_provider_checks_its_own_preset_option(example_site: Path, tmp_path: Path) -> None:
    presets = tmp_path / "presets.toml"
    presets.write_text('[presets.strict-lint]\nprovider = "example-linter"\nmax_findings = 0\n')
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "presets"],
        capture_output=True, text=True, timeout=60, env=_env(example_site, tmp_path),
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip() == (
        f"agentreview presets: {presets}: [presets.strict-lint]: max_findings must be an integer from 1 to 1000"
    )
    presets.write_text('[presets.strict-lint]\nprovider = "example-linter"\nmax_findings = 5\n')
    proc = subprocess.run(
        [sys.executable, "-m", "agentreview", "presets", "--json"],
        capture_output=True, text=True, timeout=60, env=_env(example_site, tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert {row["name"] for row in json.loads(proc.stdout)} >= {"example-linter", "strict-lint"}
