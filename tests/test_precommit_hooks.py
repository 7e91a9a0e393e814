"""``.pre-commit-hooks.yaml`` run by real pre-commit on a real repository.

The hooks repository is a temporary clone of this checkout's HEAD with the working tree's
``.pre-commit-hooks.yaml`` committed on top, referenced by ``repo:`` path and ``rev:`` sha exactly
as a user's ``.pre-commit-config.yaml`` references it. pre-commit builds the hook environment
itself (``language: python``: a virtualenv, ``pip install .`` plus the file's
``additional_dependencies``, resolved by pip from this machine's configured indexes), installs its
pre-push hook into the reviewed repository, and ``git push`` to a bare remote runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import GitRepoFactory, git

CHECKOUT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
REVIEWER = CHECKOUT / "agentreview" / "demo" / "reviewer.py"
PY_FILES = {
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
    '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n',
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    ".gitignore": ".pytest_cache/\n__pycache__/\n",
}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("AGENTREVIEW_DISABLE_PLUGINS", None)
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def test_the_hooks_file_declares_both_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text())}
    review = hooks["agentreview"]
    assert review["entry"] == "agentreview run --binding local --pre-push"
    assert review["language"] == "python" and review["stages"] == ["pre-push"]
    assert review["pass_filenames"] is False and review["always_run"] is True
    assert hooks["agentreview-verify"]["entry"] == "agentreview verify"


@pytest.fixture
def hooks_repo(tmp_path: Path) -> tuple[Path, str]:
    """A clone of HEAD with the working tree's .pre-commit-hooks.yaml committed: (path, rev)."""
    clone = tmp_path / "agentreview-hooks"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{CHECKOUT}", str(clone))
    (clone / ".pre-commit-hooks.yaml").write_bytes((CHECKOUT / ".pre-commit-hooks.yaml").read_bytes())
    git(clone, "add", ".pre-commit-hooks.yaml")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "hooks")
    return clone, git(clone, "rev-parse", "HEAD").strip()


def test_pre_commit_runs_the_review_on_push_and_verify(
    git_repo: GitRepoFactory, hooks_repo: tuple[Path, str], tmp_path: Path, agentreview_home: Path
) -> None:
    env = _env(tmp_path)
    (agentreview_home / "presets.toml").write_text(
        '[presets.team-bot]\nprovider = "exec"\n'
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(REVIEWER))}]\n"
    )
    repo = git_repo(files=PY_FILES)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    init = _run([sys.executable, "-m", "agentreview", "init", "--hook", "none", "--reviewer", "team-bot"], repo, env)
    assert init.returncode == 0, init.stderr
    path, rev = hooks_repo
    config = {
        "repos": [
            {
                "repo": str(path),
                "rev": rev,
                "hooks": [
                    {"id": "agentreview"},
                    {
                        "id": "agentreview-verify",
                        "args": ["--policy-from", "refs/remotes/origin/main", "--require-signed"],
                    },
                ],
            }
        ]
    }
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "adopt agentreview")
    git(repo, "push", "-q", "origin", "main")  # the policy lands on the base branch first
    installed = _run([str(BIN / "pre-commit"), "install", "--hook-type", "pre-push"], repo, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # Build the hook environment once (pip from this machine's indexes), outside the push.
    built = _run([str(BIN / "pre-commit"), "install-hooks"], repo, env, timeout=900)
    assert built.returncode == 0, built.stdout + built.stderr
    hook_bin = next((tmp_path / "pre-commit-home").glob("repo*/py_env-*/bin"))
    assert (hook_bin / "agentreview").exists()  # the review runs from pre-commit's own environment

    git(repo, "switch", "-q", "-c", "topic")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(repo, "commit", "-qam", "break add")
    blocked = _run(["git", "push", "origin", "topic"], repo, env)
    assert blocked.returncode != 0, blocked.stdout + blocked.stderr
    assert "verdict: block" in blocked.stdout + blocked.stderr
    assert "1 failed" in blocked.stdout, blocked.stdout  # the project's own test failed, run from the hook's PATH
    assert git(bare, "branch", "--list", "topic") == ""

    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "fix add")
    # No export committed yet: the verify hook stops the push although the review passes.
    unverified = _run(["git", "push", "origin", "topic"], repo, env)
    assert unverified.returncode != 0, unverified.stdout + unverified.stderr
    assert re.search(r"agentreview review\.+Passed", unverified.stdout), unverified.stdout
    assert re.search(r"agentreview verify\.+Failed", unverified.stdout), unverified.stdout
    assert "does not exist" in unverified.stdout and git(bare, "branch", "--list", "topic") == ""

    exported = _run([sys.executable, "-m", "agentreview", "run", "--binding", "local", "--export"], repo, env)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    git(repo, "add", ".reviews")
    git(repo, "commit", "-q", "-m", "review: attest")
    manual = _run([str(BIN / "pre-commit"), "run", "agentreview-verify", "--hook-stage", "manual"], repo, env)
    assert manual.returncode == 0, manual.stdout + manual.stderr
    passed = _run(["git", "push", "origin", "topic"], repo, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert git(bare, "rev-parse", "topic").strip() == git(repo, "rev-parse", "HEAD").strip()
