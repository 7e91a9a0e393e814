"""Exact ref resolution (agentreview.host.refs) on real repositories: one full ref or one commit, never a guess.

Each ambiguity git itself only warns about on stderr (and then takes its first candidate) is
refused here with one line naming both refs; what is exact (a full ref, a full object id,
HEAD) is taken as itself whatever else exists.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentreview.host import git as repo_git
from agentreview.host.refs import RefError, resolve


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, env=env, check=True)
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main with three commits; ``refs/remotes/origin/main`` at the second (as after a fetch)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for n in (1, 2, 3):
        git(root, "-c", "user.email=a@x.test", "-c", "user.name=A", "commit", "-q", "--allow-empty", "-m", f"c{n}")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD~1")
    return root


def sha(root: Path, rev: str) -> str:
    return git(root, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}")


def test_a_unique_short_name_resolves_to_its_one_full_ref(repo: Path) -> None:
    git(repo, "-c", "user.email=a@example.test", "-c", "user.name=A", "tag", "-a", "-m", "v1", "v1", "HEAD~2")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    cases = {
        "main": ("refs/heads/main", "HEAD"),
        "origin/main": ("refs/remotes/origin/main", "HEAD~1"),
        "v1": ("refs/tags/v1", "HEAD~2"),  # an annotated tag is peeled to its commit
        "origin": ("refs/remotes/origin/HEAD", "HEAD~1"),
    }
    for name, (full, rev) in cases.items():
        found = resolve(repo, name)
        assert (found.ref, found.commit) == (full, sha(repo, rev)), name
        assert found.shown == f"{full} at {sha(repo, rev)}"


@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        ("origin/main", "refs/tags/origin/main", "refs/remotes/origin/main"),  # the reported attack
        ("main", "refs/tags/main", "refs/heads/main"),  # a tag beside a branch
        ("heads/main", "refs/heads/main", "refs/remotes/heads/main"),  # refs/<name> before refs/remotes/<name>
        ("origin", "refs/heads/origin", "refs/remotes/origin/HEAD"),  # a branch beside the remote's HEAD
    ],
)
def test_a_name_two_refs_match_is_refused_naming_both(repo: Path, name: str, first: str, second: str) -> None:
    """git would silently take ``first`` (its lookup order); the refusal names both, in that order."""
    for full in (first, second):
        if not git(repo, "for-each-ref", full):
            git(repo, "update-ref", full, "HEAD~2")
    for given in (name, f"{name}~1", f"{name}^"):  # a ~N / ^ step does not hide the ambiguity
        with pytest.raises(RefError) as caught:
            resolve(repo, given)
        message = str(caught.value)
        assert "\n" not in message
        assert f"'{given}' is ambiguous: {first} and {second} both match" in message
        assert not caught.value.missing
    # the full refs stay exact
    for full in (first, second):
        found = resolve(repo, full)
        assert (found.ref, found.commit) == (full, sha(repo, full))


def test_exact_forms_are_taken_as_themselves_whatever_else_exists(repo: Path) -> None:
    head, parent = sha(repo, "HEAD"), sha(repo, "HEAD~1")
    git(repo, "update-ref", "refs/tags/HEAD", "HEAD~2")  # a tag named HEAD
    git(repo, "update-ref", f"refs/tags/{head}", "HEAD~2")  # a tag named like a full commit id
    git(repo, "update-ref", "refs/tags/origin/main", "HEAD~2")
    assert resolve(repo, "HEAD").commit == head
    assert resolve(repo, head).commit == head and resolve(repo, head).ref is None
    assert resolve(repo, head.upper()).commit == head
    assert resolve(repo, "refs/remotes/origin/main").commit == parent
    assert resolve(repo, "refs/heads/main").commit == head


def test_steps_apply_to_the_commit_the_name_resolved_to(repo: Path) -> None:
    found = resolve(repo, "origin/main~1")
    assert (found.ref, found.suffix, found.commit) == ("refs/remotes/origin/main", "~1", sha(repo, "HEAD~2"))
    assert found.exact == "refs/remotes/origin/main~1"
    assert resolve(repo, "main^").commit == sha(repo, "HEAD~1")
    assert resolve(repo, "HEAD~2").commit == sha(repo, "HEAD~2")
    assert resolve(repo, f"{sha(repo, 'HEAD')}^^").commit == sha(repo, "HEAD~2")
    with pytest.raises(RefError, match="cannot resolve 'main~9'") as caught:
        resolve(repo, "main~9")
    assert caught.value.missing


def test_an_abbreviated_id_that_is_also_a_ref_name_is_refused(repo: Path) -> None:
    head = sha(repo, "HEAD")
    short = head[:12]
    assert resolve(repo, short).commit == head  # alone, an abbreviated id names its commit
    git(repo, "branch", short, "HEAD~2")  # a branch named like the abbreviated id
    with pytest.raises(RefError) as caught:
        resolve(repo, short)
    assert f"'{short}' is ambiguous: refs/heads/{short} and the object {head} both match" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("main@{1}", "reflog and upstream selectors"),
        ("@{-1}", "reflog and upstream selectors"),
        ("@", "reflog and upstream selectors"),
        ("FETCH_HEAD", "only HEAD among the pseudo-refs"),
        ("--upload-pack=touch x", "is not a valid git revision"),
        ("HEAD:REVIEW.md", "is not a valid git revision"),
        ("", "is not a valid git revision"),
        ("main..HEAD", "cannot resolve"),
    ],
)
def test_forms_that_are_not_one_ref_are_refused_in_one_line(repo: Path, name: str, says: str) -> None:
    with pytest.raises(RefError, match=says) as caught:
        resolve(repo, name)
    assert "\n" not in str(caught.value)


def test_the_git_facts_the_core_uses_resolve_exactly(repo: Path) -> None:
    """rev_parse_commit, merge_base and root_and_commit: every caller of the core gets the exact lookup."""
    git(repo, "update-ref", "refs/tags/origin/main", "HEAD")
    with pytest.raises(RefError, match="refs/tags/origin/main and refs/remotes/origin/main both match"):
        repo_git.rev_parse_commit(repo, "origin/main")
    with pytest.raises(RefError, match="refs/tags/origin/main and refs/remotes/origin/main both match"):
        repo_git.merge_base(repo, "origin/main", "HEAD")
    assert repo_git.root_and_commit(repo, "origin/main") == (repo_git.repo_root(repo), None)
    assert repo_git.merge_base(repo, "refs/remotes/origin/main", "HEAD") == sha(repo, "HEAD~1")
    with pytest.raises(repo_git.GitError, match="fetch the base ref"):
        repo_git.merge_base(repo, "upstream/main", "HEAD")  # a base that names nothing keeps its hint
