"""The host starts git and ssh-keygen by absolute path: an empty or relative ``PATH`` entry never
runs the checkout's own ``./git`` or ``./ssh-keygen``.

The attack: the reviewed change commits executable ``git`` and ``ssh-keygen`` scripts at the
repository root. A CI job whose ``PATH`` holds an empty entry (``PATH=":$PATH"``, what
``PATH="$EXTRA:$PATH"`` leaves when ``EXTRA`` is unset) or ``.`` runs ``agentreview`` with the
checkout as working directory; every program the host looked up on such a ``PATH`` would be the
change's. Through the real CLI, ``run --export`` and ``verify --require-signed`` (which spawn
both programs) leave no mark of the planted scripts, and still pass. The scripts pass on to the
real program after marking, so only the mark can tell which one ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentreview.host.programs import ProgramNotFoundError, find_program, program, safe_path
from tests.report_helpers import GateRepo, git

PLANTED = """#!/bin/sh
echo "$0 $*" >> {marker}
exec {real} "$@"
"""


@pytest.fixture
def planted(tmp_path: Path) -> tuple[GateRepo, Path]:
    gate = GateRepo(tmp_path)
    gate.reviewer_mode("approve")
    marker = tmp_path / "planted-ran"
    for name in ("git", "ssh-keygen"):
        real = shutil.which(name)
        assert real is not None
        script = gate.root / name
        script.write_text(PLANTED.format(marker=marker, real=real))
        script.chmod(0o755)
    git(gate.root, "add", "git", "ssh-keygen")
    git(gate.root, "commit", "-q", "-m", "tools")
    return gate, marker


@pytest.mark.parametrize("prefix", ["", "."], ids=["empty-entry", "dot-entry"])
def test_run_and_verify_never_start_the_checkouts_git_or_ssh_keygen(planted, prefix: str) -> None:
    gate, marker = planted
    env = {**gate.env, "PATH": f"{prefix}:{os.environ['PATH']}"}
    run = gate.agentreview("run", "--export", env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    git(gate.root, "add", ".reviews")
    git(gate.root, "commit", "-q", "-m", "review export")
    verify = gate.agentreview("verify", "--policy-from", "origin/main", "--require-signed", env=env)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "signature" in verify.stdout
    assert not marker.exists(), marker.read_text()


def test_gitpython_probes_the_absolute_git_on_import(planted) -> None:
    """GitPython runs ``git version`` when first imported: the git pack reader sets it to git's absolute path."""
    gate, marker = planted
    code = (
        "from agentreview_packs_git.cache import _objects; _objects(); "
        "import git; print(git.Git.GIT_PYTHON_GIT_EXECUTABLE)"
    )
    env = {**gate.env, "PATH": f":{os.environ['PATH']}"}
    env.pop("GIT_PYTHON_GIT_EXECUTABLE", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=gate.root, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert os.path.isabs(proc.stdout.strip()), proc.stdout
    assert not marker.exists(), marker.read_text()


def test_lookup_skips_empty_and_relative_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "bin" / "only-here"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert safe_path(f":bin:./bin:{tool.parent}:") == str(tool.parent)
    assert find_program("only-here", ":bin:./bin") is None
    assert find_program("only-here", f"bin:{tool.parent}") == str(tool)
    monkeypatch.setenv("PATH", "bin")
    with pytest.raises(ProgramNotFoundError, match=r"^only-here is not installed: .*relative entries are ignored"):
        program("only-here")


def test_no_git_on_an_absolute_entry_is_the_hosts_failure_in_one_line(planted) -> None:
    gate, marker = planted
    proc = gate.agentreview("verify", "--policy-from", "origin/main", env={**gate.env, "PATH": ".:bin:"})
    assert proc.returncode == 3, proc.stdout + proc.stderr  # the tool's own error, not a verdict on the change
    assert "git is not installed" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not marker.exists(), marker.read_text()
