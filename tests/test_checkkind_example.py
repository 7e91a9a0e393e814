"""The third-party check-kind example in docs/examples is complete: installed as a distribution (a dist-info on
PYTHONPATH, built from its pyproject.toml, as the provider example's test installs that one), its ``notebook`` kind
is accepted by ``agentreview check``, runs in ``agentreview run --export`` (a clean notebook passes, one with a cell
that raised blocks), is recorded in the attestation as a ``notebook`` lane, and the export verifies. Without the
plugin the same manifest is invalid (exit 3), naming the kind and what to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import git

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "agentreview-checkkind-example"

REVIEW = """---
kind: review
id: notebooks
target: { kind: git-range, base: main }
checks:
  - id: demo-notebook
    kind: notebook
    path: notebooks/demo.ipynb
verdict:
  exportDir: .reviews
---
"""


def notebook(*outputs: dict[str, Any]) -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# demo"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["1 + 1"], "outputs": list(outputs)},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


CLEAN = notebook({"output_type": "execute_result", "data": {"text/plain": ["2"]}, "metadata": {}, "execution_count": 1})
BROKEN = notebook({"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": []})


@pytest.fixture(scope="module")
def example_site(install_example: Callable[[str], Path]) -> Path:
    return install_example("agentreview-checkkind-example")


@pytest.fixture
def agentreview(example_site: Path, agentreview_home: Path):
    """``agentreview(cwd, *args, **env)``: the CLI as a real process with the example installed."""

    def run(cwd: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(example_site), "AGENTREVIEW_HOME": str(agentreview_home)}
        env.pop("AGENTREVIEW_PLUGINS", None)
        env.pop("AGENTREVIEW_DISABLE_PLUGINS", None)
        env.update(extra_env)
        return subprocess.run(
            [sys.executable, "-m", "agentreview", *args],
            cwd=cwd, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    return run


@pytest.fixture
def repo(git_repo) -> Path:
    root = git_repo(files={"REVIEW.md": REVIEW, "notebooks/demo.ipynb": CLEAN, ".gitignore": ".reviews/\n"})
    git(root, "checkout", "-q", "-b", "feature")
    return root


def commit(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text(text)
    git(root, "add", rel)
    git(root, "commit", "-q", "-m", f"change {rel}")


def test_check_accepts_the_kind_and_shows_its_plugin_and_fields(agentreview, repo: Path) -> None:
    proc = agentreview(repo, "check", "--json")
    assert proc.returncode == 0, proc.stderr
    (lane,) = json.loads(proc.stdout)["bindings"][0]["lanes"]
    assert lane == {
        "id": "demo-notebook",
        "kind": "notebook",
        "blocking": True,
        "timeoutMs": 600_000,
        "plugin": "checkkind-example",
        "fields": {"path": "notebooks/demo.ipynb"},
    }
    text = agentreview(repo, "check").stdout
    assert 'demo-notebook  notebook  blocking  timeout 600s  plugin checkkind-example  path "notebooks/demo.ipynb"' in (
        text
    )


def test_the_plugin_model_validates_the_check(agentreview, repo: Path) -> None:
    (repo / "REVIEW.md").write_text(REVIEW.replace("path: notebooks/demo.ipynb", "path: ../outside.ipynb\n    x: 1"))
    proc = agentreview(repo, "check")
    assert proc.returncode == 3 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert f"{repo / 'REVIEW.md'}:8: checks[0].path: path '../outside.ipynb' must be relative" in lines[0]
    assert lines[1].startswith(f"{repo / 'REVIEW.md'}:9: checks[0].x: unknown key 'x'; fix: remove it")
    assert "(allowed here: id, kind, description, blocking, timeoutMs, path)" in lines[1]


def test_run_export_and_verify_a_passing_and_a_failing_notebook(agentreview, repo: Path) -> None:
    commit(repo, "notebooks/demo.ipynb", CLEAN.replace('"# demo"', '"# demo, reworded"'))
    proc = agentreview(repo, "run", "--export", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"] == "pass"
    (lane,) = result["attestation"]["lanes"]
    assert lane["id"] == "demo-notebook" and lane["kind"] == "notebook" and lane["status"] == "pass"
    assert lane["summary"] == "1 code cells, 0 error output(s)" and lane["findings"] == []
    exported = json.loads(Path(result["exportPath"]).read_text())
    assert exported["lanes"][0]["kind"] == "notebook"
    verify = agentreview(repo, "verify", "--json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    report = json.loads(verify.stdout)
    assert report["ok"] is True and report["verdict"] == "pass"

    commit(repo, "notebooks/demo.ipynb", BROKEN)
    proc = agentreview(repo, "run", "--export", "--json")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"] == "block"
    (lane,) = result["attestation"]["lanes"]
    assert lane["kind"] == "notebook" and lane["status"] == "fail"
    assert lane["findings"] == [
        {
            "severity": "high",
            "title": "cell 2 raised ZeroDivisionError",
            "detail": "division by zero",
            "file": "notebooks/demo.ipynb",
        }
    ]
    assert agentreview(repo, "verify").returncode == 1  # a blocked review does not pass the gate
    verify = agentreview(repo, "verify", "--verdict", "block", "--json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout)["verdict"] == "block"


def test_without_the_plugin_the_manifest_is_invalid_and_says_what_to_install(agentreview, repo: Path) -> None:
    proc = agentreview(repo, "check", AGENTREVIEW_DISABLE_PLUGINS="checkkind-example")
    assert proc.returncode == 3 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        f"{repo / 'REVIEW.md'}:6: checks[0]: check kind 'notebook' is not provided by any installed plugin — "
        "install the plugin that provides it (agentreview plugins lists what is installed"
    )
    proc = agentreview(repo, "run", AGENTREVIEW_DISABLE_PLUGINS="checkkind-example")
    assert proc.returncode == 3 and "check kind 'notebook' is not provided by any installed plugin" in proc.stderr
