"""Sharing attestations through git notes: the foreign store, publish, fetch and ``verify --notes``.

Real parts: real repositories, a real bare remote (file://) for push and fetch, real ssh-keygen keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from https_git_server import GitHttpsServer, https_git_server, tls_material  # noqa: F401
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture, repo_fixture: fixtures)
    REMOTE,
    REMOTE_URL,
    Repo,
    allowed_signers,
    git,
    isolated_env,
    keys_fixture,
    repo_fixture,
    sign,
    signers_line,
)

from agentreview.model.attestation import Attestation
from agentreview.store.entries import HostInfo
from agentreview.store.foreign import ForeignStore
from agentreview.store.layout import LedgerError
from agentreview.store.ledger import Ledger


def test_foreign_store_adds_once_and_lists(repo: Repo, tmp_path: Path, keys: dict) -> None:
    store = ForeignStore(tmp_path / "ledger")
    raw = sign(repo.attestation(), keys["trusted"])
    assert store.add(raw, remote="origin", principal="ci@example.com") is True
    assert store.add(raw, remote="origin", principal="ci@example.com") is False
    rows = list(store.all())
    assert len(rows) == 1 and rows[0][1]["foreign"] == {
        "remote": "origin", "principal": "ci@example.com", "importedAt": rows[0][1]["foreign"]["importedAt"]
    }
    assert [a["target"]["headSha"] for a, _host in store.all(REMOTE)] == [repo.head]
    assert list(store.all("https://example.com/other.git")) == []
    files = list((tmp_path / "ledger").rglob("*.json"))
    assert len(files) == 1 and files[0].parent.name == "foreign"


def test_foreign_store_refuses_malformed(tmp_path: Path, repo: Repo) -> None:
    store = ForeignStore(tmp_path / "ledger")
    raw = repo.attestation()
    raw["binding"] = "../../etc"
    with pytest.raises(LedgerError):
        store.add(raw, remote="origin", principal=None)
    with pytest.raises(ValueError):
        store.add({"schema": "nope"}, remote="origin", principal=None)
    assert list(store.all()) == []


# --------------------------------------------------------------------------- two hosts and a remote

NOTES = "refs/notes/agentreview"


def cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update({"AGENTREVIEW_HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    return subprocess.run([sys.executable, "-m", "agentreview", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip


def record(home: Path, repo_root: Path, raw: dict[str, Any]) -> None:
    """Put ``raw`` into the ledger of ``home`` as a finished run of this host would."""
    with Ledger(home / "reviews") as led:
        led.put(Attestation.read(raw), HostInfo(repo_root=str(repo_root), manifest_path=str(repo_root / "REVIEW.md")))


class Hosts:
    """Host A (the repository ``repo``), a bare remote ``shared`` and host B, a clone of that remote."""

    def __init__(self, repo: Repo, tmp: Path, bare: Path | None = None, url: str | None = None):
        self.a, self.tmp = repo, tmp
        self.bare = bare or tmp / "remote.git"
        git(tmp, "init", "-q", "--bare", str(self.bare))
        git(self.bare, "config", "http.receivepack", "true")  # pushes over smart HTTP (the HTTPS variant)
        self.url = url or self.bare.as_uri()
        git(repo.root, "remote", "add", "shared", self.url)
        git(repo.root, "push", "-q", "shared", "main", "feature")
        self.b = tmp / "b"
        git(tmp, "clone", "-q", "-b", "feature", self.url, str(self.b))
        git(self.b, "config", "user.email", "b@example.com")
        git(self.b, "config", "user.name", "B")
        git(self.b, "remote", "set-url", "origin", REMOTE_URL)  # the same repository identity as A's
        git(self.b, "remote", "add", "shared", self.url)
        git(self.b, "branch", "-q", "main", "origin/main")
        self.home_a, self.home_b = tmp / "home-a", tmp / "home-b"

    def remote_note(self, commit: str) -> list[str]:
        proc = subprocess.run(["git", "--git-dir", str(self.bare), "notes", f"--ref={NOTES}", "show", commit],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        return proc.stdout.splitlines() if proc.returncode == 0 else []

    def remote_ref(self) -> str:
        return git(self.bare, "rev-parse", NOTES)


@pytest.fixture(name="hosts")
def hosts_fixture(tmp_path: Path, keys: dict) -> Hosts:
    """A's repository trusts the organisation's key on main (``.agentproto/allowed_signers``)."""
    repo = Repo(tmp_path / "repo", files={".agentproto/allowed_signers": signers_line(keys["trusted"])})
    return Hosts(repo, tmp_path)


@pytest.fixture(name="https_hosts")
def https_hosts_fixture(tmp_path: Path, keys: dict, https_git_server: GitHttpsServer) -> Hosts:  # noqa: F811
    """As ``hosts``, but the shared remote is served by the real smart-HTTP git server over TLS."""
    repo = Repo(tmp_path / "repo", files={".agentproto/allowed_signers": signers_line(keys["trusted"])})
    bare = https_git_server.project_root / "shared.git"
    return Hosts(repo, tmp_path, bare, https_git_server.url("shared"))


def test_over_https_publish_fetch_verify_and_concurrent_publishers(
    https_hosts: Hosts, https_git_server: GitHttpsServer, keys: dict  # noqa: F811
) -> None:
    hosts = https_hosts
    raw_a = sign(hosts.a.attestation(created_at="2026-01-01T00:00:00.000Z"), keys["trusted"])
    raw_b = sign(hosts.a.attestation(created_at="2026-01-02T00:00:00.000Z"), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw_a)
    record(hosts.home_b, hosts.b, raw_b)
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    start = threading.Barrier(2)

    def go(name: str, home: Path, cwd: Path, run_id: str) -> None:
        start.wait()
        results[name] = cli(home, cwd, "publish", run_id, "--remote", "shared")

    threads = [threading.Thread(target=go, args=("a", hosts.home_a, hosts.a.root, raw_a["runId"])),
               threading.Thread(target=go, args=("b", hosts.home_b, hosts.b, raw_b["runId"]))]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"].returncode == 0, results["a"].stderr
    assert results["b"].returncode == 0, results["b"].stderr
    assert any("git-receive-pack" in hit for hit in https_git_server.hits)
    assert len(hosts.remote_note(hosts.a.head)) == 2
    got = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["found"] == 2
    rows = json.loads(cli(hosts.home_b, hosts.b, "ledger", "--json").stdout)
    assert {r["createdAt"] for r in rows if "foreign" in r} == {raw_a["createdAt"], raw_b["createdAt"]}
    gate = cli(hosts.home_b, hosts.b, "verify", "--notes", "--policy-from", "main", "--require-signed", "--json")
    assert gate.returncode == 0, (gate.stdout, gate.stderr)
    lines = [json.loads(ln) for ln in hosts.remote_note(hosts.a.head)]
    newest = 1 + next(i for i, doc in enumerate(lines) if doc["createdAt"] == raw_b["createdAt"])
    assert json.loads(gate.stdout)["path"] == f"{NOTES}@{hosts.a.head}#{newest:06d}"  # the newest line


def test_publish_then_fetch_shows_a_foreign_entry(hosts: Hosts, keys: dict) -> None:
    raw = sign(hosts.a.attestation(), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw)
    done = cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["added"] is True and report["pushed"] == "shared" and report["commit"] == hosts.a.head
    lines = hosts.remote_note(hosts.a.head)
    assert len(lines) == 1 and json.loads(lines[0]) == raw

    allowed_signers(hosts.home_b / "team_signers", keys["trusted"])
    (hosts.home_b / "config.toml").write_text('[team]\nallowed_signers = "team_signers"\n')
    got = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["new"] == 1
    again = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json")  # the ref did not move: nothing read
    assert json.loads(again.stdout)["new"] == 0 and json.loads(again.stdout)["unchanged"] is True
    reread = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json", "--rescan")
    assert json.loads(reread.stdout)["new"] == 0 and json.loads(reread.stdout)["found"] == 1

    listed = cli(hosts.home_b, hosts.b, "ledger", "--json")
    rows = json.loads(listed.stdout)
    assert [r["runId"] for r in rows] == [raw["runId"]]
    assert rows[0]["foreign"] == {"remote": "shared", "principal": "ci@example.com"}
    table = cli(hosts.home_b, hosts.b, "ledger")
    assert "FOREIGN" in table.stdout and "shared (ci@example.com)" in table.stdout
    # never exported: the foreign entry is not an entry of B's own ledger
    assert cli(hosts.home_b, hosts.b, "export", raw["runId"], "--to", "x.json").returncode == 3


def test_fetch_without_trust_or_with_an_untrusted_key_records_no_principal(hosts: Hosts, keys: dict) -> None:
    raw = sign(hosts.a.attestation(), keys["other"])  # signed, but by a key B does not trust
    record(hosts.home_a, hosts.a.root, raw)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared").returncode == 0
    allowed_signers(hosts.home_b / "team_signers", keys["trusted"])
    (hosts.home_b / "config.toml").write_text('[team]\nallowed_signers = "team_signers"\n')
    got = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json")
    body = json.loads(got.stdout)
    assert body["new"] == 1 and any("signature not verified" in n for n in body["notes"])
    rows = json.loads(cli(hosts.home_b, hosts.b, "ledger", "--json").stdout)
    assert rows[0]["foreign"]["principal"] is None


def test_publishing_twice_changes_nothing(hosts: Hosts, keys: dict) -> None:
    raw = sign(hosts.a.attestation(), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared").returncode == 0
    ref = hosts.remote_ref()
    second = cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared", "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["added"] is False
    assert hosts.remote_ref() == ref and len(hosts.remote_note(hosts.a.head)) == 1


def test_no_push_only_adds_the_local_note(hosts: Hosts, keys: dict) -> None:
    raw = sign(hosts.a.attestation(), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw)
    done = cli(hosts.home_a, hosts.a.root, "publish", "--range", "main..feature", "--no-push", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pushed"] is None
    assert hosts.remote_note(hosts.a.head) == []
    assert json.loads(git(hosts.a.root, "notes", f"--ref={NOTES}", "show", hosts.a.head)) == raw
    assert cli(hosts.home_a, hosts.a.root, "publish", "--no-push", "--remote", "x", raw["runId"]).returncode == 64


def test_two_hosts_publishing_at_once_both_keep_their_lines(hosts: Hosts, keys: dict) -> None:
    raw_a = sign(hosts.a.attestation(created_at="2026-01-01T00:00:00.000Z"), keys["trusted"])
    raw_b = sign(hosts.a.attestation(created_at="2026-01-02T00:00:00.000Z"), keys["other"])
    record(hosts.home_a, hosts.a.root, raw_a)
    record(hosts.home_b, hosts.b, raw_b)
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    start = threading.Barrier(2)

    def go(name: str, home: Path, cwd: Path, remote: str, run_id: str) -> None:
        start.wait()
        results[name] = cli(home, cwd, "publish", run_id, "--remote", remote)

    threads = [
        threading.Thread(target=go, args=("a", hosts.home_a, hosts.a.root, "shared", raw_a["runId"])),
        threading.Thread(target=go, args=("b", hosts.home_b, hosts.b, "shared", raw_b["runId"])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"].returncode == 0, results["a"].stderr
    assert results["b"].returncode == 0, results["b"].stderr
    lines = hosts.remote_note(hosts.a.head)
    assert sorted(json.loads(ln)["createdAt"] for ln in lines) == [raw_a["createdAt"], raw_b["createdAt"]]


def test_sequential_publishers_merge_after_a_rejected_push(hosts: Hosts, keys: dict) -> None:
    """B publishes after A without fetching first: its push is rejected, merged and retried."""
    raw_a = sign(hosts.a.attestation(created_at="2026-01-01T00:00:00.000Z"), keys["trusted"])
    raw_b = sign(hosts.a.attestation(created_at="2026-01-02T00:00:00.000Z"), keys["other"])
    record(hosts.home_a, hosts.a.root, raw_a)
    record(hosts.home_b, hosts.b, raw_b)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw_a["runId"], "--remote", "shared").returncode == 0
    done = cli(hosts.home_b, hosts.b, "publish", raw_b["runId"], "--remote", "shared")
    assert done.returncode == 0, done.stderr
    assert len(hosts.remote_note(hosts.a.head)) == 2


def test_garbage_lines_in_a_note_are_skipped_with_a_note(hosts: Hosts, keys: dict) -> None:
    raw = sign(hosts.a.attestation(), keys["trusted"])
    from agentreview.model.digests import canonical_json

    body = b"\n".join([
        b"not json at all",
        b"[1, 2, 3]",
        b'{"schema": "agentproto.review.attestation/v1"}',
        b'{"a": ' + b'"x' * (600 * 1024) + b'"}',  # larger than 1 MiB
        canonical_json(raw),
    ]) + b"\n"  # fmt: skip
    note = hosts.tmp / "note.txt"
    note.write_bytes(body)
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-F", str(note), hosts.a.head)
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")
    got = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json")
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    assert report["new"] == 1
    notes = "\n".join(report["notes"])
    assert "not JSON" in notes and "not a JSON object" in notes and "larger than" in notes
    assert "line 3 is not a valid attestation" in notes  # where in the note, for whoever repairs it
    plain = cli(hosts.tmp / "home-c", hosts.b, "fetch", "--remote", "shared")  # a host that has not read them
    assert plain.returncode == 0 and "skipped" in plain.stderr and "Traceback" not in plain.stderr


def test_fetch_from_a_remote_without_notes_imports_nothing(hosts: Hosts) -> None:
    got = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["new"] == 0
    bad = cli(hosts.home_b, hosts.b, "fetch", "--remote", "nowhere")
    assert bad.returncode == 3 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- verify --notes


def test_verify_notes_is_a_gate_without_an_export_commit(hosts: Hosts, keys: dict) -> None:
    raw = sign(hosts.a.attestation(), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared").returncode == 0
    gate = ("verify", "--notes", "--policy-from", "main", "--require-signed", "--json")
    before = cli(hosts.home_b, hosts.b, *gate)
    assert before.returncode == 4, before.stdout  # not fetched yet: not found
    assert cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared").returncode == 0
    done = cli(hosts.home_b, hosts.b, *gate)
    assert done.returncode == 0, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["principal"] == "ci@example.com"
    assert git(hosts.b, "rev-parse", "HEAD") == hosts.a.head  # the branch holds no export commit
    assert not (hosts.b / ".reviews").exists()


def test_verify_notes_refuses_a_forged_line(hosts: Hosts, keys: dict) -> None:
    """Someone with push rights writes a note signed by a key main does not trust: exit 6, never a pass."""
    raw = sign(hosts.a.attestation(), keys["other"])
    record(hosts.home_a, hosts.a.root, raw)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared").returncode == 0
    assert cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared").returncode == 0
    done = cli(hosts.home_b, hosts.b, "verify", "--notes", "--policy-from", "main", "--require-signed", "--json")
    assert done.returncode == 6, (done.stdout, done.stderr)
    tampered = dict(raw, verdict="pass")
    tampered["lanes"] = [dict(lane, status="pass") for lane in raw["lanes"]]
    tampered["createdAt"] = "2026-02-01T00:00:00.000Z"  # the newest line is the one checked
    from agentreview.model.digests import canonical_json

    note = hosts.tmp / "forged.txt"
    note.write_bytes(canonical_json(tampered) + b"\n")
    git(hosts.b, "notes", f"--ref={NOTES}", "append", "-F", str(note), hosts.a.head)
    forged = cli(hosts.home_b, hosts.b, "verify", "--notes", "--policy-from", "main", "--require-signed")
    assert forged.returncode in (1, 6), forged.stdout


def test_verify_notes_with_a_path_is_a_usage_error(hosts: Hosts) -> None:
    done = cli(hosts.home_b, hosts.b, "verify", "--notes", "x.json")
    assert done.returncode == 64 and "Traceback" not in done.stderr


# --------------------------------------------------------------------------- run --publish


def test_run_publish_shares_the_recorded_attestation(tmp_path: Path) -> None:
    from reviewrepo import Repo as RunRepo
    from reviewrepo import manifest

    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    repo = RunRepo(tmp_path / "run-repo", tmp_path / "run-home")
    repo.commit("initial", **{"README.md": "hello\n"})
    repo.git("remote", "add", "origin", bare.as_uri())
    repo.git("switch", "-q", "-c", "feature")
    repo.commit("add review", **{"REVIEW.md": manifest("  - id: ok\n    kind: command\n    run: 'true'\n")})
    head = repo.commit("feature work", **{"src__app.txt": "v1\n"})
    done = repo.run("--publish")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["published"]["commit"] == head and data["published"]["pushed"] == "origin"
    proc = subprocess.run(["git", "--git-dir", str(bare), "notes", f"--ref={NOTES}", "show", head],
                          capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
    assert json.loads(proc.stdout) == data["attestation"]
    # without a reachable origin, the run is still recorded and the failure is one line, exit 3
    repo.git("remote", "set-url", "origin", (tmp_path / "missing.git").as_uri())
    repo.commit("more work", **{"src__app.txt": "v2\n"})
    failed = repo.run("--publish")
    assert failed.returncode == 3, failed.stderr
    assert json.loads(failed.stdout)["ledgerPath"] and "publish it later" in failed.stderr


def test_an_oversized_note_is_refused_before_it_is_read(
    hosts: Hosts, keys: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note larger than the bound is skipped with a note (its size is asked before any byte is read)."""
    from agentreview.share import batch, exchange, notes

    raw = sign(hosts.a.attestation(), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared").returncode == 0
    monkeypatch.setattr(notes, "MAX_NOTE_BYTES", 512)
    reads: list[list[str]] = []
    real = notes.run_git

    def spy(args: list[str], *a: Any, **kw: Any) -> Any:
        reads.append(list(args))
        return real(args, *a, **kw)

    monkeypatch.setattr(notes, "run_git", spy)
    monkeypatch.setattr(batch, "run_git", spy)
    store = ForeignStore(hosts.tmp / "b-ledger")
    result = exchange.fetch(hosts.b, store, remote="shared")
    assert result.new == 0 and any("larger than 512 bytes" in n for n in result.notes), result.notes
    assert any(args[:3] == ["cat-file", "--buffer", "--batch-check=%(objecttype) %(objectsize)"]
               for args in reads)  # fmt: skip
    # nothing that prints the note's bytes ran (neither `cat-file blob`, `cat-file --batch` nor `notes show`)
    assert not any(args[:2] == ["cat-file", "blob"] or "--batch" in args or "show" in args for args in reads)
