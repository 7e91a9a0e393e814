"""The run's first git question, asked once: the repository root and the head's commit.

``root_and_commit`` answers what ``repo_root`` and ``rev_parse_commit`` answer, in one git
process; these tests hold it to them on real repositories, including the cases where one
process cannot answer unambiguously and the two separate calls do.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentreview.host import git


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(path),
            "-c",
            "user.email=a@example.test",
            "-c",
            "user.name=A",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "one",
        ],
        check=True,
    )
    return path


@pytest.mark.parametrize("name", ["repo", "with space", "line\nbreak"])
def test_root_and_commit_agree_with_the_two_separate_questions(tmp_path: Path, name: str) -> None:
    repo = make_repo(tmp_path / name)
    (repo / "sub").mkdir()
    for cwd in (repo, repo / "sub"):
        root, head = git.root_and_commit(cwd, "HEAD")
        assert root == git.repo_root(cwd)
        assert head == git.rev_parse_commit(root, "HEAD")


@pytest.mark.parametrize("ref", ["nope", "--upload-pack=evil", "HEAD:path", ""])
def test_a_ref_that_names_no_commit_leaves_the_error_to_the_caller(tmp_path: Path, ref: str) -> None:
    repo = make_repo(tmp_path / "repo")
    root, head = git.root_and_commit(repo, ref)
    assert (root, head) == (git.repo_root(repo), None)
    with pytest.raises(git.GitError):
        git.rev_parse_commit(root, ref)


def test_outside_a_repository_it_is_the_repository_error(tmp_path: Path) -> None:
    with pytest.raises(git.GitError, match="is not inside a git repository"):
        git.root_and_commit(tmp_path, "HEAD")
