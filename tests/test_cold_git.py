"""The git processes of a hot command, counted: each costs a cold command milliseconds.

A ``git`` first on ``PATH`` logs its arguments and runs the real one. A cache hit of an ordinary
commit (one that changes more than exports) settles the "commit the export" rule with one diff and
never lists the export folder's trees; ``verify`` reads the root and HEAD in one ``rev-parse``.
And the bounded wait for git: a git that closes its output but never exits is still stopped at
its timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, counting_git, manifest

from agentreview.host.gitrun import GitError, run_git


def test_a_cache_hit_and_a_gate_start_few_git_processes(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    checks = "  - id: ok\n    kind: command\n    run: 'true'\n"
    repo.commit("init", **{"REVIEW.md": manifest(checks, extra="verdict:\n  exportDir: .reviews\n")})
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("change", **{"app.txt": "x\n"})
    first = repo.run_json("--export", expect=0)
    assert first["cached"] is False
    folder, log = counting_git(tmp_path)
    env = {**repo.env, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}

    def started(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        log.unlink(missing_ok=True)
        proc = subprocess.run([*AGENTREVIEW, *args], cwd=repo.path, env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
        lines = log.read_text().splitlines()
        return proc, [next(w for w in line.split() if not w.startswith("-") and "=" not in w) for line in lines]

    proc, subcommands = started("run", "--json")
    assert json.loads(proc.stdout)["cached"] is True, proc.stderr
    assert "ls-tree" not in subcommands, subcommands
    assert subcommands.count("diff-tree") == 1, subcommands
    assert len(subcommands) <= 7, subcommands
    proc, subcommands = started("verify", first["exportPath"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert subcommands.count("rev-parse") == 1, subcommands


@pytest.mark.parametrize("body", ["exec sleep 60", "exec >&- 2>&-; exec sleep 60"], ids=["silent", "closes-its-output"])
def test_a_git_that_never_exits_is_stopped_at_its_timeout(tmp_path: Path, body: str) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "git"
    fake.write_text(f"#!/bin/sh\n{body}\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    with pytest.raises(GitError, match=r"git rev-parse did not finish within 1s"):
        run_git(["rev-parse", "HEAD"], tmp_path, timeout=1.0, env=env)
