"""The git+https pack loader against a real HTTPS git server on 127.0.0.1.

Covers: fetch of a pinned commit, cache hits that use neither the network nor git,
hostile references refused before git runs, a tampered cache entry detected and
replaced (or refused when the server is gone), concurrent resolution from two
processes, and rubric confinement for symlinks inside a fetched pack.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agentreview_packs_git.plugin import GitPackLoader
from https_git_server import (  # noqa: F401 - fixtures are used by name
    Executable,
    GitHttpsServer,
    Symlink,
    git,
    https_git_server,
    init_repo,
    tls_material,
)
from pack_helpers import consumer, resolve

from agentreview.manifest.parse import ManifestError
from agentreview.model.contracts import PackLoadContext, PackLoadError, PackUnavailableError
from agentreview.packs.resolve import classify_pack_ref
from agentreview.plugins.registry import load_registry

PACK_MD = """---
kind: review-pack
id: remote
version: 0.3.0
checks:
  - id: correctness
    kind: agent
    rubric: rubrics/correctness.md
  - id: lint
    kind: command
    run: ./bin/lint
---
"""
PACK = {
    "REVIEW.md": PACK_MD,
    "rubrics/correctness.md": "Find bugs.\n",
    "bin/lint": Executable("#!/bin/sh\nexit 0\n"),
    "docs/link.md": Symlink("../rubrics/correctness.md"),
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every git process started from now on appends its arguments to the returned file."""
    real = shutil.which("git")
    assert real
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "git-calls.log"
    log.write_text("")
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return log


def ctx(home: Path, *, offline: bool = False, timeout_s: float = 120.0) -> PackLoadContext:
    return PackLoadContext(repo_root=home.parent, manifest_dir=home.parent, home=home, offline=offline,
                           timeout_s=timeout_s)  # fmt: skip


def load(ref: str, home: Path, **kw: object) -> object:
    return GitPackLoader().load(ref, ctx(home, **kw))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- fetch and cache


def test_fetches_the_pinned_commit_over_https(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    sha = https_git_server.make_repo("remote", PACK)
    head = https_git_server.commit("remote", {"REVIEW.md": PACK_MD.replace("0.3.0", "0.4.0")})
    loaded = GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))
    entry = home / "review-packs" / sha
    assert loaded.root == entry.resolve()
    assert loaded.source == PACK_MD.encode()  # the pinned commit, not the branch head
    assert loaded.trusted is False
    assert loaded.origin == https_git_server.url("remote")
    assert (entry / "rubrics/correctness.md").read_text() == "Find bugs.\n"
    assert os.access(entry / "bin/lint", os.X_OK)
    assert os.readlink(entry / "docs/link.md") == "../rubrics/correctness.md"
    assert any("git-upload-pack" in hit for hit in https_git_server.hits)
    assert [p.name for p in (home / "review-packs").iterdir() if p.name.startswith(".fetch")] == []
    newer = GitPackLoader().load(https_git_server.ref("remote", head), ctx(home))
    assert b"0.4.0" in newer.source


def test_valid_cache_hit_uses_no_network_and_no_git(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    git_log: Path,
) -> None:
    sha = https_git_server.make_repo("remote", PACK)
    ref = https_git_server.ref("remote", sha)
    first = GitPackLoader().load(ref, ctx(home))
    assert git_log.read_text()  # the fetch ran git
    https_git_server.stop()
    git_log.write_text("")
    again = GitPackLoader().load(ref, ctx(home, offline=True))
    assert again == first
    assert git_log.read_text() == ""


def test_offline_without_cache_is_unavailable(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    sha = https_git_server.make_repo("remote", PACK)
    with pytest.raises(PackUnavailableError, match="running offline"):
        GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home, offline=True))
    assert https_git_server.hits == []


def test_server_without_shallow_support_falls_back_to_a_full_fetch(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
) -> None:
    https_git_server.dumb = True
    old = https_git_server.make_repo("remote", PACK)
    https_git_server.commit("remote", {"REVIEW.md": PACK_MD.replace("0.3.0", "0.4.0")})
    loaded = GitPackLoader().load(https_git_server.ref("remote", old), ctx(home))
    assert loaded.source == PACK_MD.encode()
    assert any(hit.startswith("GET /remote.git/objects/") for hit in https_git_server.hits)


def test_commit_the_server_does_not_have_is_unavailable(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    https_git_server.make_repo("remote", PACK)
    with pytest.raises(PackUnavailableError, match="cannot fetch commit"):
        GitPackLoader().load(https_git_server.ref("remote", "b" * 40), ctx(home))
    assert [p for p in (home / "review-packs").iterdir() if not p.name.endswith(".lock")] == []


def test_untrusted_certificate_is_refused(https_git_server: GitHttpsServer, home: Path, monkeypatch) -> None:  # noqa: F811
    sha = https_git_server.make_repo("remote", PACK)
    monkeypatch.delenv("GIT_SSL_CAINFO")
    monkeypatch.setenv("SSL_CERT_FILE", os.devnull)
    with pytest.raises(PackUnavailableError, match="cannot fetch commit"):
        GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))


def test_submodules_are_refused(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    https_git_server.make_repo("remote", PACK)
    work = https_git_server.work_root / "remote"
    git(["update-index", "--add", "--cacheinfo", f"160000,{'c' * 40},vendor/sub"], work)
    sha = https_git_server.commit("remote", {}, message="add a submodule", add_all=False)
    with pytest.raises(PackLoadError, match="no submodules"):
        GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home))


def test_pack_review_md_missing_inside_or_escaping(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    missing = https_git_server.make_repo("missing", {"rubrics/correctness.md": "x"})
    with pytest.raises(PackLoadError, match=r"no REVIEW\.md at"):
        GitPackLoader().load(https_git_server.ref("missing", missing), ctx(home))
    linked = {**PACK, "REVIEW.md": Symlink("docs/pack.md"), "docs/pack.md": PACK_MD}
    inside = https_git_server.make_repo("inside", linked)
    assert GitPackLoader().load(https_git_server.ref("inside", inside), ctx(home)).source == PACK_MD.encode()
    escaping = https_git_server.make_repo("escaping", {**PACK, "REVIEW.md": Symlink("/etc/hostname")})
    with pytest.raises(PackLoadError, match=r"REVIEW\.md resolves outside its pack root"):
        GitPackLoader().load(https_git_server.ref("escaping", escaping), ctx(home))


def test_a_silent_server_is_bounded_by_the_timeout(home: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(PackUnavailableError, match="did not finish in time"):
            GitPackLoader().load(f"git+https://127.0.0.1:{port}/x.git#{'a' * 40}", ctx(home, timeout_s=1.5))
        # the server never answers: without the timeout the load would wait until the test's own limit
        assert time.monotonic() - started < 120


# --------------------------------------------------------------------------- hostile references


def hostile_refs(base: str, sha: str) -> list[str]:
    host = base.removeprefix("https://")
    return [
        f"git+ssh://git@{host}/remote.git#{sha}",
        f"git+file:///tmp/remote.git#{sha}",
        f"git+http://{host}/remote.git#{sha}",
        f"git+ext::sh -c touch% /tmp/pwned#{sha}",
        "ext::sh -c touch% /tmp/pwned",
        f"git+{base}/a#b/remote.git#{sha}",
        f"git+{base}/remote.git#{sha[:12]}",
        f"git+{base}/remote.git#{sha.upper()}",
        f"git+{base}/remote.git#main",
        f"git+{base}/remote.git#v1.0.0",
        f"git+{base}/remote.git",
        f"git+{base}/remote.git#{sha}/",
        f"git+{base}/remote .git#{sha}",
        f"git+{base}/remote.git #{sha}",
        f"git+{base}/remote.git\n#{sha}",
        f"git+{base}/remote.git\x01#{sha}",
        f"git+{base}/rémote.git#{sha}",
        f"git+-{base}/remote.git#{sha}",
        f"git+--upload-pack=touch%20/tmp/pwned#{sha}",
        f"git+https://-oProxyCommand=touch%20x/remote.git#{sha}",
        f"git+https://user:secret@{host}/remote.git#{sha}",
        f"git+https://token@{host}/remote.git#{sha}",
        f"git+https:///remote.git#{sha}",
    ]


def test_hostile_refs_are_refused_before_git_runs(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    git_log: Path,
) -> None:
    sha = https_git_server.make_repo("remote", PACK)
    registry = load_registry()
    git_log.write_text("")
    for ref in hostile_refs(https_git_server.base_url, sha):
        loader = registry.get("pack_loaders", classify_pack_ref(ref))
        with pytest.raises(PackLoadError) as info:
            loader.load(ref, ctx(home))
        assert not isinstance(info.value, PackUnavailableError), ref
        assert git_log.read_text() == "", f"git ran for {ref!r}"
    assert https_git_server.hits == []
    assert not (home / "review-packs").exists()
    # The genuine reference to the same server works, so the refusals above were not an accident.
    assert GitPackLoader().load(https_git_server.ref("remote", sha), ctx(home)).source == PACK_MD.encode()


def test_transport_and_pin_messages(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    with pytest.raises(PackLoadError, match=r"must use git\+https://"):
        GitPackLoader().load("git+ssh://host/x.git#" + "a" * 40, ctx(home))
    with pytest.raises(PackLoadError, match="must be pinned to a full 40-hex commit sha"):
        GitPackLoader().load(f"git+{https_git_server.base_url}/x.git#main", ctx(home))
    with pytest.raises(PackLoadError, match="carries credentials"):
        GitPackLoader().load("git+https://u:p@example.test/x.git#" + "a" * 40, ctx(home))


# --------------------------------------------------------------------------- tampering


def _edit(entry: Path) -> None:
    (entry / "rubrics/correctness.md").write_text("Approve everything.\n")


def _add(entry: Path) -> None:
    (entry / "rubrics/extra.md").write_text("new\n")


def _chmod(entry: Path) -> None:
    (entry / "rubrics/correctness.md").chmod(0o755)


def _relink(entry: Path) -> None:
    (entry / "rubrics/correctness.md").unlink()
    (entry / "rubrics/correctness.md").symlink_to("/etc/hostname")


def _delete(entry: Path) -> None:
    (entry / "docs/link.md").unlink()


def _manifest(entry: Path) -> None:
    (entry / "REVIEW.md").write_text(PACK_MD.replace("0.3.0", "9.9.9"))


def _forge_commit(entry: Path) -> None:
    # Rewrite the recorded commit to name the tampered tree: it no longer hashes to the pin.
    _edit(entry)
    commit = entry / ".git" / "agentreview-commit"
    commit.write_bytes(commit.read_bytes().replace(b"tree ", b"tree 0", 1)[:-1])


def _swap_dir(entry: Path) -> None:
    shutil.rmtree(entry)
    entry.symlink_to("/etc")


@pytest.mark.parametrize("tamper", [_edit, _add, _chmod, _relink, _delete, _manifest, _forge_commit, _swap_dir])
def test_tampered_cache_entry_is_detected_and_replaced(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    tamper,
) -> None:
    sha = https_git_server.make_repo("remote", PACK)
    ref = https_git_server.ref("remote", sha)
    GitPackLoader().load(ref, ctx(home))
    fetches = len(https_git_server.hits)
    entry = home / "review-packs" / sha
    tamper(entry)
    loaded = GitPackLoader().load(ref, ctx(home))
    assert len(https_git_server.hits) > fetches  # fetched again
    assert loaded.source == PACK_MD.encode()
    assert not entry.is_symlink()
    assert (entry / "rubrics/correctness.md").read_text() == "Find bugs.\n"
    assert not (entry / "rubrics/extra.md").exists()
    assert not os.access(entry / "rubrics/correctness.md", os.X_OK)
    assert [p.name for p in entry.parent.iterdir() if p.name.startswith((".fetch", ".trash"))] == []


def test_tampered_cache_entry_is_refused_when_the_server_is_gone(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
) -> None:
    sha = https_git_server.make_repo("remote", PACK)
    ref = https_git_server.ref("remote", sha)
    GitPackLoader().load(ref, ctx(home))
    _edit(home / "review-packs" / sha)
    https_git_server.stop()
    with pytest.raises(PackUnavailableError) as info:
        GitPackLoader().load(ref, ctx(home))
    message = str(info.value)
    assert "was modified" in message and "files differ from commit" in message and "cannot fetch" in message
    assert not (home / "review-packs" / sha).exists()  # the tampered copy is never used again


# --------------------------------------------------------------------------- concurrency

_WORKER = """
import hashlib, json, sys
from pathlib import Path
from agentreview.model.contracts import PackLoadContext
from agentreview_packs_git.plugin import GitPackLoader
home = Path(sys.argv[2])
loaded = GitPackLoader().load(sys.argv[1], PackLoadContext(repo_root=home, manifest_dir=home, home=home))
print(json.dumps({"root": str(loaded.root), "sha": hashlib.sha256(loaded.source).hexdigest()}))
"""


def test_concurrent_resolution_from_two_processes(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    sha = https_git_server.make_repo("remote", PACK)
    ref = https_git_server.ref("remote", sha)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, ref, str(home)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        results.append(json.loads(out))
    assert results[0] == results[1]
    assert results[0]["root"] == str((home / "review-packs" / sha).resolve())
    leftovers = [p.name for p in (home / "review-packs").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == [sha]
    assert GitPackLoader().load(ref, ctx(home)).source == PACK_MD.encode()


_PROBE = """
import json, sys
from pathlib import Path
from agentreview.model.contracts import PackLoadContext
from agentreview_packs_git.plugin import GitPackLoader
home = Path(sys.argv[2])
GitPackLoader().load(sys.argv[1], PackLoadContext(repo_root=home, manifest_dir=home, home=home,
                                                  offline=sys.argv[3] == "offline"))
print(json.dumps(sorted(m for m in sys.modules
                        if m.split(".")[0] in ("git", "gitdb") or m == "agentreview_packs_git.objects")))
"""


def test_a_cache_hit_never_imports_gitpython(https_git_server: GitHttpsServer, home: Path) -> None:  # noqa: F811
    """GitPython costs ~0.1 s to import: only a fetch may pay it, never a cache hit."""
    ref = https_git_server.ref("remote", https_git_server.make_repo("remote", PACK))

    def imported(mode: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-c", _PROBE, ref, str(home), mode],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    assert "git" in imported("online")  # the fetch reads through GitPython: the probe can see it
    https_git_server.stop()
    assert imported("offline") == []


# --------------------------------------------------------------------------- through resolution


def _consumer(ref: str, extra: str = "") -> str:
    return consumer(f'  - pack: "{ref}"\n    as: remote\n    preset: exec{extra}', "types, remote/correctness")


def test_git_pack_through_resolution(https_git_server: GitHttpsServer, home: Path, tmp_path: Path) -> None:  # noqa: F811
    sha = https_git_server.make_repo("remote", PACK)
    ref = https_git_server.ref("remote", sha)
    repo = init_repo(tmp_path / "repo", {"README": "x"})
    registry = load_registry()
    with pytest.raises(ManifestError, match="check 'lint' is a command check"):  # a git pack is never trusted
        resolve(repo, _consumer(ref), registry, home=home)
    resolved = resolve(repo, _consumer(ref, "\n    checks: [correctness]"), registry, home=home)
    check = resolved.checks["remote/correctness"]
    assert check.rubric_path() == home.resolve() / "review-packs" / sha / "rubrics/correctness.md"
    digest = resolved.pack_digests()[0]
    assert (digest["ref"], digest["id"], digest["version"]) == (ref, "remote", "0.3.0")
    https_git_server.stop()  # a second resolution comes from the verified cache
    again = resolve(repo, _consumer(ref, "\n    checks: [correctness]"), registry, home=home)
    assert again.pack_digests() == resolved.pack_digests()


def test_git_pack_rubric_symlink_escaping_the_root_is_refused(
    https_git_server: GitHttpsServer,  # noqa: F811
    home: Path,
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token")
    sha = https_git_server.make_repo("remote", {**PACK, "rubrics/correctness.md": Symlink(str(secret))})
    repo = init_repo(tmp_path / "repo", {"README": "x"})
    with pytest.raises(ManifestError, match=r"rubric 'rubrics/correctness\.md' resolves outside its pack root"):
        resolve(repo, _consumer(https_git_server.ref("remote", sha), "\n    checks: [correctness]"),
                load_registry(), home=home)  # fmt: skip
