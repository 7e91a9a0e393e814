"""CI checkout mistakes get one line naming what happened and the fix, with a documented exit code.

Real clones of a real repository, made the way CI makes them: ``git clone --depth 1`` (what
``actions/checkout`` does by default), a clone of the pull request's branch only (no base ref),
the same on a detached HEAD, and a merge commit of the pull request into its base (what
``pull_request`` checks out unless told otherwise). ``run`` and ``verify`` run as processes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

SHALLOW = "this is a shallow clone: fetch the full history (actions/checkout: fetch-depth: 0)"
MERGE = (
    "HEAD is the merge commit GitHub made; check out the pull request's head "
    "(actions/checkout: ref: ${{ github.event.pull_request.head.sha }})"
)
POLICY = manifest(
    "  - id: types\n    kind: command\n    run: 'true'\n",
    extra="verdict:\n  exportDir: .reviews\n",
).replace("base: main", "base: origin/main")


@pytest.fixture
def upstream(tmp_path: Path) -> Repo:
    """The hosted repository: main with history and REVIEW.md, and a feature branch two commits ahead."""
    repo = Repo(tmp_path / "upstream", tmp_path / "home")
    repo.commit("one", **{"README.md": "hello\n", "REVIEW.md": POLICY})
    repo.commit("two", **{"a.txt": "a\n"})
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("feature one", **{"b.txt": "b\n"})
    repo.commit("feature two", **{"c.txt": "c\n"})
    repo.git("switch", "-q", "main")
    repo.commit("main moves on", **{"d.txt": "d\n"})
    return repo


def _clone(upstream: Repo, dest: Path, *args: str) -> Path:
    subprocess.run(["git", "clone", "-q", *args, f"file://{upstream.path}", str(dest)], check=True, timeout=60,
                   capture_output=True)  # fmt: skip
    for key, value in (("user.email", "ci@example.test"), ("user.name", "CI"), ("commit.gpgsign", "false")):
        subprocess.run(["git", "config", key, value], cwd=dest, check=True, timeout=30)
    return dest


def _agentreview(upstream: Repo, clone: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """One command with --json; returns (exit code, the one-line error from the JSON object)."""
    proc = subprocess.run([*AGENTREVIEW, *args, "--json"], cwd=clone, env=env or upstream.env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    data = json.loads(proc.stdout)
    return proc.returncode, data.get("error") or ""


def test_a_shallow_clone_says_so_and_names_the_workflow_key(upstream: Repo, tmp_path: Path) -> None:
    # fetch-depth: 1 of every branch: origin/main exists, but the histories never meet
    clone = _clone(upstream, tmp_path / "ci", "--depth", "1", "--no-single-branch", "-b", "feature")
    assert subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=clone, capture_output=True,
                          text=True, check=True).stdout.strip() == "true"  # fmt: skip
    for command in (["verify", "--if-exported"], ["run", "--headless"]):
        code, error = _agentreview(upstream, clone, *command)
        assert code == 3, (command, error)
        assert error.startswith(SHALLOW), error
        assert "\n" not in error
    # the pull request's ref alone, one commit deep: still the shallow clone that is the cause
    only = _clone(upstream, tmp_path / "ci-single", "--depth", "1", "-b", "feature")
    code, error = _agentreview(upstream, only, "verify", "--if-exported")
    assert code == 3 and error.startswith(SHALLOW), error


def test_a_missing_base_ref_is_named_with_the_fetch_that_fixes_it(upstream: Repo, tmp_path: Path) -> None:
    clone = _clone(upstream, tmp_path / "ci", "--single-branch", "-b", "feature")
    code, error = _agentreview(upstream, clone, "verify", "--if-exported")
    assert code == 3, error
    fetch = "git fetch origin main:refs/remotes/origin/main"
    assert error.startswith("the base 'origin/main' (REVIEW.md's target.base) does not exist in this clone"), error
    assert fetch in error and "fetch-depth: 0" in error and "\n" not in error
    code, error = _agentreview(upstream, clone, "run", "--headless", "--base", "origin/nope")
    assert code == 3 and "the base 'origin/nope' (--base) does not exist in this clone" in error, error
    # the fix the line names works: the base resolves and the gate goes on to look for the attestation
    subprocess.run(fetch.split(), cwd=clone, check=True, timeout=60, capture_output=True)
    code, error = _agentreview(upstream, clone, "verify", "--if-exported")
    assert code == 4, error  # not found: nothing exported yet, which is the change's business


def test_a_detached_head_without_the_base_fetched_says_both(upstream: Repo, tmp_path: Path) -> None:
    clone = _clone(upstream, tmp_path / "ci", "--single-branch", "-b", "feature")
    subprocess.run(["git", "checkout", "-q", "--detach"], cwd=clone, check=True, timeout=30)
    code, error = _agentreview(upstream, clone, "verify", "--if-exported")
    assert code == 3, error
    assert error.startswith("HEAD is detached and the base 'origin/main' (REVIEW.md's target.base) is not fetched")
    assert "git fetch origin main:refs/remotes/origin/main" in error and "\n" not in error


def _merge_checkout(upstream: Repo, tmp_path: Path) -> Path:
    """A full clone on a merge of the feature branch into main, made as GitHub makes refs/pull/N/merge."""
    clone = _clone(upstream, tmp_path / "ci")
    subprocess.run(["git", "checkout", "-q", "--detach", "origin/main"], cwd=clone, check=True, timeout=30)
    subprocess.run(["git", "merge", "-q", "--no-ff", "--no-edit", "origin/feature"], cwd=clone, check=True,
                   timeout=30, capture_output=True)  # fmt: skip
    return clone


def test_the_merge_commit_github_made_is_named_when_the_head_is_attested(upstream: Repo, tmp_path: Path) -> None:
    # the pull request's head is reviewed and its export committed, as the recipe does
    upstream.git("switch", "-q", "feature")
    upstream.git("remote", "add", "origin", f"file://{upstream.path}")  # the same repoRemote as CI's clone
    upstream.git("update-ref", "refs/remotes/origin/main", "main")  # the developer's clone knows its base
    done = upstream.run("--export")
    assert done.returncode == 0, done.stdout + done.stderr
    upstream.git("add", ".reviews")
    upstream.git("commit", "-q", "-m", "review: attest")
    upstream.git("switch", "-q", "main")
    clone = _merge_checkout(upstream, tmp_path)
    code, error = _agentreview(upstream, clone, "verify", "--if-exported")
    assert code == 4, error
    assert error.startswith(MERGE), error
    assert "\n" not in error
    # on the pull request's head itself, the same attestation verifies
    subprocess.run(["git", "checkout", "-q", "--detach", "HEAD^2"], cwd=clone, check=True, timeout=30)
    assert _agentreview(upstream, clone, "verify", "--if-exported")[0] == 0


def test_the_merge_commit_is_named_from_github_ref(upstream: Repo, tmp_path: Path) -> None:
    clone = _merge_checkout(upstream, tmp_path)  # nothing attested at all
    env = {**upstream.env, "GITHUB_REF": "refs/pull/7/merge"}
    code, error = _agentreview(upstream, clone, "verify", env=env)
    assert code == 4 and error.startswith(MERGE), error
    # a two-parent HEAD alone, with nothing attested and no GITHUB_REF, is just not found
    code, error = _agentreview(upstream, clone, "verify")
    assert code == 4 and not error.startswith(MERGE), error
