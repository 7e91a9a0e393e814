"""A run asks ``git status`` once, whatever it finds: on a real miss and on a dirty tree.

``git status`` costs what the work tree's size costs, so a run that asked it at the cache and
again at the freeze paid it twice. Real parts: a real repository, the real CLI in a subprocess,
and a ``git`` first on ``PATH`` that logs each start and runs the real git (the host finds git
on ``PATH`` and starts it by that absolute path, so the log sees every git it starts; the test
checks that the log saw the run's other git commands too).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reviewrepo import Repo, counting_git, feature_repo, manifest


def statuses(log: Path) -> tuple[int, int]:
    """(``git status`` starts, all git starts) in ``log``."""
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(" status --porcelain" in f" {line}" for line in lines), len(lines)


@pytest.fixture(name="repo")
def repo_fixture(tmp_path: Path) -> Repo:
    repo = feature_repo(tmp_path)
    repo.commit("review", **{"REVIEW.md": manifest("  - id: ok\n    kind: command\n    run: 'true'\n"), "a.txt": "a\n"})
    return repo


@pytest.mark.parametrize("dirty", [False, True], ids=["clean-miss", "dirty-tree"])
def test_a_run_asks_git_status_once(repo: Repo, tmp_path: Path, dirty: bool) -> None:
    if dirty:
        repo.write("a.txt", "changed\n")
    folder, log = counting_git(tmp_path)
    env = {**repo.env, "PATH": f"{folder}{os.pathsep}{repo.env.get('PATH', '')}"}
    data = repo.run_json(env=env, expect=0)
    assert data["attestation"]["verdict"] == "pass" and data["cached"] is False
    assert data["attestation"].get("dirty", False) is dirty
    count, total = statuses(log)
    assert total > 3, "the logging git saw none of the run's git commands"
    assert count == 1, log.read_text()


def test_a_prepare_step_has_the_tree_asked_again_after_it(repo: Repo, tmp_path: Path) -> None:
    """A prepare step may change the tree: the freeze asks again after it, and sees the change."""
    text = manifest(
        "  - id: touch\n    kind: command\n    effects: true\n    run: 'echo more >> a.txt'\n"
        "  - id: ok\n    kind: command\n    run: 'true'\n",
        "  default:\n    prepare: [touch]\n    checks: [ok]\n",
    )
    repo.commit("prepare", **{"REVIEW.md": text})
    folder, log = counting_git(tmp_path)
    env = {**repo.env, "PATH": f"{folder}{os.pathsep}{repo.env.get('PATH', '')}"}
    data = repo.run_json(env=env, expect=0)
    assert data["attestation"]["dirty"] is True
    assert statuses(log)[0] == 2
