"""Attacks through ``verdict.exportDir``: the reviewed REVIEW.md must not make the reviewer's
host write an export outside the repository (``..``, absolute, or a committed symlink)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from reviewrepo import AGENTREVIEW, Repo, manifest

CHECK = '  - id: types\n    kind: command\n    run: "true"\n'


def _recorded(tmp_path: Path, export_dir: str, *, link_to: Path | None = None) -> tuple[Repo, str]:
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    repo.commit("base", README="base\n")
    repo.git("checkout", "-q", "-b", "feature")
    if link_to is not None:
        link_to.mkdir(parents=True, exist_ok=True)
        (repo.path / export_dir).symlink_to(link_to, target_is_directory=True)
    repo.write("REVIEW.md", manifest(CHECK, extra=f"verdict:\n  exportDir: {export_dir}\n"))
    repo.commit("review")
    data = repo.run_json("--base", "main", expect=0)
    return repo, data["runId"]


def _export(repo: Repo, run_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTREVIEW, "export", run_id, "--cwd", str(repo.path)],
        cwd=repo.path, capture_output=True, text=True, timeout=60, env=repo.env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize("form", ["dotdot", "absolute"])
def test_export_dir_outside_the_repository_is_refused(tmp_path: Path, form: str) -> None:
    outside = tmp_path / "outside"
    export_dir = "../outside" if form == "dotdot" else str(outside)
    repo, run_id = _recorded(tmp_path, export_dir)
    proc = _export(repo, run_id)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "outside the repository" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not outside.exists() or not any(outside.iterdir())


def test_export_dir_symlinked_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    repo, run_id = _recorded(tmp_path, ".reviews", link_to=outside)
    proc = _export(repo, run_id)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert not any(outside.iterdir())


def test_export_dir_inside_the_repository_still_exports(tmp_path: Path) -> None:
    repo, run_id = _recorded(tmp_path, "review/exports")
    proc = _export(repo, run_id)
    assert proc.returncode == 0, proc.stderr
    assert len(list((repo.path / "review" / "exports").glob("demo-default-*.json"))) == 1
