"""Path and npm pack loaders: trust by real path and git tracking, Node-style lookup, confinement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from https_git_server import Symlink, git, init_repo, write_files

from agentreview.model.contracts import PackLoadContext, PackLoadError, PackUnavailableError
from agentreview.packs.confine import read_confined
from agentreview.packs.npm_loader import NpmPackLoader, package_segments
from agentreview.packs.path_loader import PathPackLoader

PACK_MD = """---
kind: review-pack
id: core
version: 1.2.0
checks:
  - id: correctness
    kind: agent
    rubric: ./rubrics/correctness.md
  - id: lint
    kind: command
    run: echo lint
---
# core pack
"""
PACK_FILES = {"REVIEW.md": PACK_MD, "rubrics/correctness.md": "Look for bugs.\n"}


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))


def pack_files(prefix: str) -> dict[str, str]:
    return {f"{prefix}/{name}": content for name, content in PACK_FILES.items()}


def npm_package(prefix: str) -> dict[str, str]:
    return {f"{prefix}/package.json": "{}", **pack_files(prefix)}


def ctx_for(repo: Path, manifest_dir: Path | None = None) -> PackLoadContext:
    return PackLoadContext(repo_root=repo, manifest_dir=manifest_dir or repo, home=repo.parent / "home")


# --------------------------------------------------------------------------- path loader: trust


def test_tracked_pack_inside_repo_is_trusted(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", pack_files("packs/core"))
    loaded = PathPackLoader().load("./packs/core", ctx_for(repo))
    assert loaded.trusted is True
    assert loaded.root == (repo / "packs/core").resolve()
    assert loaded.source == PACK_MD.encode()


def test_untracked_pack_inside_repo_is_not_trusted(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"README": "x"})
    write_files(repo, pack_files("packs/core"))
    assert PathPackLoader().load("./packs/core", ctx_for(repo)).trusted is False


def test_tracked_pack_relative_to_a_nested_manifest(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {**pack_files("tools/packs/core"), "svc/REVIEW.md": "x"})
    loaded = PathPackLoader().load("../tools/packs/core", ctx_for(repo, repo / "svc"))
    assert loaded.trusted is True
    assert loaded.root == (repo / "tools/packs/core").resolve()


def test_pack_outside_repo_is_not_trusted_even_if_tracked_elsewhere(tmp_path: Path) -> None:
    other = init_repo(tmp_path / "other", pack_files("core"))  # tracked, but in another repository
    repo = init_repo(tmp_path / "repo", {"README": "x"})
    loaded = PathPackLoader().load(str(other / "core"), ctx_for(repo))
    assert loaded.trusted is False
    relative = PathPackLoader().load("../other/core", ctx_for(repo))
    assert relative.trusted is False


def test_symlink_inside_repo_pointing_outside_is_not_trusted(tmp_path: Path) -> None:
    write_files(tmp_path / "outside", PACK_FILES)
    # The symlink itself is tracked: only the real path decides.
    repo = init_repo(tmp_path / "repo", {"packs/core": Symlink(str(tmp_path / "outside"))})
    assert git(["ls-files", "packs/core"], repo) == "packs/core"
    loaded = PathPackLoader().load("./packs/core", ctx_for(repo))
    assert loaded.trusted is False
    assert loaded.root == (tmp_path / "outside").resolve()


def test_symlink_to_a_tracked_pack_inside_the_repo_is_trusted(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {**pack_files("packs/core"), "alias": Symlink("packs/core")})
    loaded = PathPackLoader().load("./alias", ctx_for(repo))
    assert loaded.trusted is True
    assert loaded.root == (repo / "packs/core").resolve()


def test_repo_reached_through_a_symlinked_path_still_trusted(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", pack_files("packs/core"))
    link = tmp_path / "repo-link"
    link.symlink_to(repo)
    assert PathPackLoader().load("./packs/core", ctx_for(link)).trusted is True


def test_tracked_review_md_symlink_to_untracked_content_is_not_trusted(tmp_path: Path) -> None:
    repo = init_repo(
        tmp_path / "repo",
        {"packs/core/REVIEW.md": Symlink("draft.md"), "packs/core/rubrics/correctness.md": "r"},
    )
    write_files(repo, {"packs/core/draft.md": PACK_MD})  # untracked content behind a tracked name
    loaded = PathPackLoader().load("./packs/core", ctx_for(repo))
    assert loaded.source == PACK_MD.encode()
    assert loaded.trusted is False


def test_glob_characters_in_pack_path_cannot_match_another_tracked_pack(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", pack_files("packs/core"))
    write_files(repo, pack_files("packs/c*"))  # untracked folder whose name is a pathspec glob
    assert PathPackLoader().load("./packs/c*", ctx_for(repo)).trusted is False


def test_pack_in_a_folder_that_is_not_a_repo_is_not_trusted(tmp_path: Path) -> None:
    write_files(tmp_path / "plain", pack_files("packs/core"))
    assert PathPackLoader().load("./packs/core", ctx_for(tmp_path / "plain")).trusted is False


def test_missing_path_pack_inside_repo_is_an_error_outside_unavailable(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"README": "x"})
    with pytest.raises(PackLoadError) as inside:
        PathPackLoader().load("./packs/none", ctx_for(repo))
    assert not isinstance(inside.value, PackUnavailableError)
    assert "packs/none is not a directory" in str(inside.value)
    with pytest.raises(PackUnavailableError):
        PathPackLoader().load(str(tmp_path / "nowhere"), ctx_for(repo))


def test_folder_without_review_md_names_the_file(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"packs/empty/x.md": "x"})
    with pytest.raises(PackLoadError, match=r"no REVIEW.md at .*packs/empty/REVIEW.md"):
        PathPackLoader().load("./packs/empty", ctx_for(repo))


def test_review_md_symlink_escaping_the_pack_root_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("---\nkind: review-pack\n---\n")
    repo = init_repo(tmp_path / "repo", {"packs/core/REVIEW.md": Symlink(str(secret))})
    with pytest.raises(PackLoadError, match="resolves outside its pack root"):
        PathPackLoader().load("./packs/core", ctx_for(repo))


# --------------------------------------------------------------------------- npm loader


def test_npm_pack_found_in_repo_node_modules(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"package.json": "{}"})
    write_files(repo, npm_package("node_modules/@acme/review-pack"))
    loaded = NpmPackLoader().load("@acme/review-pack", ctx_for(repo))
    assert loaded.root == (repo / "node_modules/@acme/review-pack").resolve()
    assert loaded.source == PACK_MD.encode()
    assert loaded.trusted is False  # never, even though it sits inside the repository


def test_npm_pack_found_by_walking_up(tmp_path: Path) -> None:
    write_files(tmp_path / "mono", npm_package("node_modules/pack-core"))
    repo = init_repo(tmp_path / "mono/apps/web", {"package.json": "{}"})
    loaded = NpmPackLoader().load("pack-core", ctx_for(repo))
    assert loaded.root == (tmp_path / "mono/node_modules/pack-core").resolve()


def test_npm_nearest_node_modules_wins(tmp_path: Path) -> None:
    write_files(tmp_path / "mono", npm_package("node_modules/pack-core"))
    repo = init_repo(tmp_path / "mono/app", {"package.json": "{}"})
    write_files(repo, npm_package("node_modules/pack-core"))
    assert NpmPackLoader().load("pack-core", ctx_for(repo)).root == (repo / "node_modules/pack-core").resolve()


def test_npm_folder_without_package_json_is_not_a_package(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"package.json": "{}"})
    write_files(repo, pack_files("node_modules/pack-core"))
    with pytest.raises(PackUnavailableError, match=r"npm install --save-dev pack-core"):
        NpmPackLoader().load("pack-core", ctx_for(repo))


def test_npm_missing_package_is_unavailable_and_says_how_to_install(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"package.json": "{}"})
    with pytest.raises(PackUnavailableError) as info:
        NpmPackLoader().load("@acme/review-pack", ctx_for(repo))
    message = str(info.value)
    assert "'@acme/review-pack' is not installed" in message
    assert "never installs" in message


@pytest.mark.parametrize(
    "name",
    ["..", "../x", "@acme/..", "@acme/../../etc", "a\\b", "/etc", "@/x", "@acme", "a/b/c", "pkg/sub", "", ".hidden",
     "a b", "@acme/x/y"],
)  # fmt: skip
def test_npm_hostile_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(PackLoadError, match="not a valid npm package name"):
        package_segments(name)
    repo = init_repo(tmp_path / "repo", {"package.json": "{}"})
    with pytest.raises(PackLoadError):
        NpmPackLoader().load(name, ctx_for(repo))


def test_npm_names_accepted() -> None:
    assert package_segments("@acme/review-pack") == ["@acme", "review-pack"]
    assert package_segments("review.pack_core~1") == ["review.pack_core~1"]


# --------------------------------------------------------------------------- confinement


def test_confined_reader_reads_inside(tmp_path: Path) -> None:
    write_files(tmp_path / "pack", {**PACK_FILES, "alias.md": Symlink("rubrics/correctness.md")})
    assert read_confined(tmp_path / "pack", "./rubrics/correctness.md") == b"Look for bugs.\n"
    assert read_confined(tmp_path / "pack", "alias.md") == b"Look for bugs.\n"  # a symlink inside is fine


@pytest.mark.parametrize("rubric", ["../outside.md", "/etc/hostname", "rubrics/../../outside.md", "escape.md",
                                    "dir-link/secret.md"])  # fmt: skip
def test_confined_reader_refuses_escapes(tmp_path: Path, rubric: str) -> None:
    (tmp_path / "outside.md").write_text("secret")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir/secret.md").write_text("secret")
    write_files(
        tmp_path / "pack",
        {**PACK_FILES, "escape.md": Symlink("../outside.md"), "dir-link": Symlink(str(tmp_path / "outdir"))},
    )
    with pytest.raises(PackLoadError, match="resolves outside its pack root"):
        read_confined(tmp_path / "pack", rubric)


def test_confined_reader_refuses_a_fifo_without_hanging(tmp_path: Path) -> None:
    write_files(tmp_path / "pack", PACK_FILES)
    os.mkfifo(tmp_path / "pack/pipe.md")
    with pytest.raises(PackLoadError, match="not a regular file"):
        read_confined(tmp_path / "pack", "pipe.md")


def test_confined_reader_missing_and_directory(tmp_path: Path) -> None:
    write_files(tmp_path / "pack", PACK_FILES)
    with pytest.raises(PackLoadError, match="could not read"):
        read_confined(tmp_path / "pack", "rubrics/none.md")
    with pytest.raises(PackLoadError, match="not a regular file"):
        read_confined(tmp_path / "pack", "rubrics")
