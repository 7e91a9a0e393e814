"""The git pack loader's object reader (GitPython) held to the fetch's rules, attacks performed.

After the fetch, the pinned commit is read through GitPython's object model over
persistent ``git cat-file`` processes. These tests check what that must not
loosen: every git process runs with the scrubbed environment and the hardening
options even inside a git hook's environment, the readers are killed at the
deadline and never outlive a load, hostile trees are refused whether or not git's
own fsck saw them, and oversized packs are refused.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import agentreview_packs_git
import git.objects.fun
import pytest
from agentreview_packs_git import cache
from agentreview_packs_git.gitrun import HARDENING
from agentreview_packs_git.plugin import GitPackLoader
from https_git_server import GitHttpsServer, https_git_server, tls_material  # noqa: F401 - fixtures

from agentreview.model.contracts import PackLoadContext, PackLoadError, PackUnavailableError

PACK_MD = "---\nkind: review-pack\nid: remote\nversion: 0.3.0\nchecks: []\n---\n"
PACK = {"REVIEW.md": PACK_MD, "rubrics/a.md": "A\n", "rubrics/deep/b.md": "B\n"}
# What a git hook's environment (or a hostile parent) may carry; none of it may reach a git process.
PLANTED = {
    "GIT_DIR": "/planted/repo/.git",
    "GIT_WORK_TREE": "/planted/repo",
    "GIT_COMMON_DIR": "/planted/repo/.git",
    "GIT_OBJECT_DIRECTORY": "/planted/objects",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/planted/alternates",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "core.sshCommand",
    "GIT_CONFIG_VALUE_0": "touch /planted/pwned",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def ctx(home: Path, *, timeout_s: float = 120.0) -> PackLoadContext:
    return PackLoadContext(repo_root=home.parent, manifest_dir=home.parent, home=home, timeout_s=timeout_s)


def shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cat_file: str = "") -> Path:
    """Put a ``git`` on PATH that logs each call (argv, GIT_* environment, pid) to the returned
    folder, running ``cat_file`` (shell; the real git is ``$REAL``) first for ``cat-file --batch*``."""
    real = shutil.which("git")
    assert real
    folder = tmp_path / "shim"
    folder.mkdir()
    script = f"""#!/bin/sh
REAL="{real}"
log="{folder}/calls.log"
{{ echo "CALL $$ $*"; env | grep '^GIT_' | sed 's/^/ENV /'; }} >> "$log"
case " $* " in *" cat-file --batch"*) echo $$ >> "{folder}/readers"; {cat_file or ":"} ;; esac
exec "$REAL" "$@"
"""
    (folder / "git").write_text(script)
    (folder / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def calls(folder: Path) -> list[tuple[list[str], dict[str, str]]]:
    """The logged calls: (argv after ``git``, GIT_* environment)."""
    out: list[tuple[list[str], dict[str, str]]] = []
    for line in (folder / "calls.log").read_text().splitlines():
        if line.startswith("CALL "):
            out.append((line.split(" ")[2:], {}))
        elif line.startswith("ENV ") and out:
            key, _, value = line[4:].partition("=")
            out[-1][1][key] = value
    return out


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def load_until_it_stalls(server: GitHttpsServer, sha: str, home: Path, stalled: Path, timeout_s: float) -> float:
    """Load with a deadline meant to expire while a reader stalls, and return the seconds that load took.

    A loaded machine can spend the whole deadline on the fetch, before any reader starts: that
    attempt proves nothing, so it is made again with three times the deadline."""
    while True:
        started = time.monotonic()
        with pytest.raises(PackUnavailableError, match="did not finish in time"):
            GitPackLoader().load(server.ref("remote", sha), ctx(home, timeout_s=timeout_s))
        if stalled.exists():
            return time.monotonic() - started
        assert timeout_s < 100, "the fetch never finished before the deadline; no reader was reached"
        timeout_s *= 3


def test_every_git_process_is_scrubbed_and_hardened_inside_a_hook_environment(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sha = https_git_server.make_repo("remote", PACK)
    log = shim(tmp_path, monkeypatch)
    for key, value in PLANTED.items():
        monkeypatch.setenv(key, value)
    loaded = GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))
    assert loaded.source == PACK_MD.encode()  # read from the fetch folder, not the planted object store
    assert (loaded.root / "rubrics/deep/b.md").read_text() == "B\n"
    logged = calls(log)
    readers = [argv for argv, _ in logged if "--batch" in argv or "--batch-check" in argv]
    assert readers, "the object reader started no cat-file process"
    for argv in readers:
        assert argv[: len(HARDENING)] == list(HARDENING), argv
        assert argv[len(HARDENING) :] in (["cat-file", "--batch"], ["cat-file", "--batch-check"]), argv
    for argv, env in logged:
        if argv[:1] == ["version"] or argv[:2] == ["config", "--get-regexp"]:
            continue  # GitPython's import-time probe, and the user's own CA settings (read on purpose)
        assert not [k for k, v in env.items() if "planted" in v or k.startswith("GIT_CONFIG_KEY")], argv
        assert env.get("GIT_CONFIG_NOSYSTEM") == "1" and env.get("GIT_CONFIG_GLOBAL") == os.devnull, argv
    assert not Path("/planted").exists()
    for pid in (log / "readers").read_text().split():
        assert gone(int(pid)), "a cat-file reader outlived the load"


def test_a_hanging_reader_is_killed_at_the_deadline(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sha = https_git_server.make_repo("remote", PACK)
    stalled = tmp_path / "stalled"
    log = shim(tmp_path, monkeypatch, cat_file=f"touch {stalled}; exec sleep 600")
    took = load_until_it_stalls(https_git_server, sha, home, stalled, timeout_s=5)
    assert took < 300, "the load waited for the reader's 600 s instead of its deadline"
    pids = [int(pid) for pid in (log / "readers").read_text().split()]
    assert pids, "the fetch timed out before the reader started; the test proved nothing"
    assert all(gone(pid) for pid in pids)
    assert [p.name for p in (home / "review-packs").iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.parametrize("cut", [150, 520, 700], ids=["in-commit", "in-tree", "in-header"])
def test_a_reader_stalling_mid_object_is_killed_at_the_deadline(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cut: int,
) -> None:
    """``cat-file --batch`` answers ``cut`` bytes (unbuffered, so they arrive), then stalls with its
    pipe open: the read is ended at the deadline, and no half-read stream in GitPython's frames
    complains afterwards ("read of closed file")."""
    sha = https_git_server.make_repo("remote", PACK)
    stalled = tmp_path / "stalled"
    answer_then_stall = f'"$REAL" "$@" | {{ dd bs=1 count={cut} 2>/dev/null; touch {stalled}; exec sleep 600; }}; exit'
    stall = f'case "$*" in *--batch-check*) ;; *) {answer_then_stall} ;; esac'
    log = shim(tmp_path, monkeypatch, cat_file=stall)
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    load_until_it_stalls(https_git_server, sha, home, stalled, timeout_s=4)
    gc.collect()
    assert unraisable == []
    assert all(gone(int(pid)) for pid in (log / "readers").read_text().split())
    assert [p.name for p in (home / "review-packs").iterdir() if not p.name.endswith(".lock")] == []


def _publish_tree(server: GitHttpsServer, name: str, hostile: bytes) -> str:
    """Publish a commit whose root tree holds REVIEW.md and a folder named ``hostile`` (a name git
    itself never writes), bypassing every client-side check; return the commit's sha."""
    server.make_repo(name, {"REVIEW.md": PACK_MD})
    work = server.work_root / name
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    env |= {f"GIT_{role}_{field}": value for role in ("AUTHOR", "COMMITTER")
            for field, value in (("NAME", "a"), ("EMAIL", "a@example.test"))}  # fmt: skip

    def run(*args: str, data: bytes | None = None) -> str:
        return subprocess.run(["git", *args], cwd=work, env=env, input=data, capture_output=True, check=True,
                              timeout=30).stdout.decode().strip()  # fmt: skip

    def tree(*entries: tuple[bytes, bytes, str]) -> str:
        body = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
        return run("hash-object", "-t", "tree", "-w", "--literally", "--stdin", data=body)

    blob = run("hash-object", "-w", "--stdin", data=PACK_MD.encode())
    inner = tree((b"100644", b"x", blob))
    root = tree((b"100644", b"REVIEW.md", blob), (b"40000", hostile, inner))
    commit = run("commit-tree", root, "-p", "HEAD", "-m", "hostile")
    bare = server.project_root / f"{name}.git"
    run("push", "--quiet", str(bare), f"{commit}:refs/heads/main")
    subprocess.run(["git", "update-server-info"], cwd=bare, env=env, check=True, timeout=30)
    return commit


@pytest.mark.parametrize("hostile", [b"..", b".git", b".GIT", b"a/../.."], ids=["dotdot", "dotgit", "DOTGIT", "slash"])
@pytest.mark.parametrize("layer", ["git-fsck", "gitpython", "ours"])
def test_a_hostile_tree_name_is_refused_by_every_layer(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    layer: str,
    hostile: bytes,
) -> None:
    """Smart HTTP: git's fsck (``transfer.fsckObjects``) refuses the pack. The dumb protocol skips
    that fsck: GitPython's tree parser refuses the name (since 3.2; before, it passes it on), and
    with that check gone the reader's own path check does."""
    sha = _publish_tree(https_git_server, "remote", hostile)
    https_git_server.dumb = layer != "git-fsck"
    if layer == "ours":
        monkeypatch.setattr(git.objects.fun, "_validate_tree_entry_name", lambda *a, **k: None, raising=False)
    expected = {"git-fsck": "cannot fetch commit", "gitpython": "holds a tree entry git would refuse|unsafe path",
                "ours": "unsafe path"}[layer]  # fmt: skip
    with pytest.raises(PackLoadError, match=expected):
        GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))
    assert not (home / "review-packs" / sha).exists()
    assert not (home / "x").exists() and not (home.parent / "x").exists()
    assert [p.name for p in (home / "review-packs").iterdir() if not p.name.endswith(".lock")] == []


def test_an_oversized_pack_is_refused(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sha = https_git_server.make_repo("remote", {**PACK, "big.bin": "x" * 5000})
    monkeypatch.setattr(cache, "MAX_PACK_BYTES", 4096)
    with pytest.raises(PackLoadError, match="too large for a pack"):
        GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))
    monkeypatch.setattr(cache, "MAX_PACK_BYTES", 1 << 20)
    monkeypatch.setattr(cache, "MAX_PACK_FILES", 2)
    with pytest.raises(PackLoadError, match="more than 2 files"):
        GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))


def test_a_missing_gitpython_is_a_clear_fetch_error(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sha = https_git_server.make_repo("remote", PACK)
    monkeypatch.delenv("GIT_PYTHON_REFRESH", raising=False)
    monkeypatch.delitem(sys.modules, "agentreview_packs_git.objects", raising=False)
    monkeypatch.delattr(agentreview_packs_git, "objects", raising=False)
    monkeypatch.setitem(sys.modules, "git", None)  # as if GitPython were not installed
    with pytest.raises(PackUnavailableError, match=r"needs GitPython .* install 'gitpython>=3\.1\.57'"):
        GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))
    assert "GIT_PYTHON_REFRESH" not in os.environ  # set for the import only
    assert [p.name for p in (home / "review-packs").iterdir() if not p.name.endswith(".lock")] == []
