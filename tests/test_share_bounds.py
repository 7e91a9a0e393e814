"""Notes pushed by anyone cost a teammate's ``fetch`` and a ``verify --notes`` gate a bounded amount.

The attacks performed here: thousands of junk notes (notes of commits that do not exist, all
sharing one blob) pushed to the shared remote, and an oversized or malformed note on the head a
gate verifies. Real parts: real repositories, a real bare remote, the real CLI in a subprocess, and
a ``git`` on PATH that only logs each start and runs the real git (it counts the processes a fetch
starts; no timing is asserted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_share import NOTES, Hosts, record
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture, repo_fixture: fixtures)
    Repo,
    allowed_signers,
    git,
    isolated_env,
    keys_fixture,
    repo_fixture,
    sign,
    signers_line,
)

from agentreview.model.digests import canonical_json

JUNK_NOTES = 3000


@pytest.fixture(name="hosts")
def hosts_fixture(tmp_path: Path, keys: dict) -> Hosts:
    repo = Repo(tmp_path / "repo", files={".agentproto/allowed_signers": signers_line(keys["trusted"])})
    return Hosts(repo, tmp_path)


class CountingGit:
    """A directory holding a ``git`` that appends its arguments to a log, then runs the real git."""

    def __init__(self, tmp: Path):
        real = shutil.which("git")
        assert real is not None
        self.bin, self.log = tmp / "counting-bin", tmp / "git-starts.log"
        self.bin.mkdir()
        shim = self.bin / "git"
        shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{self.log}"\nexec "{real}" "$@"\n')
        shim.chmod(0o755)

    def starts(self) -> list[str]:
        """The git processes started since the last call (and forget them)."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        self.log.unlink(missing_ok=True)
        return lines


def cli(home: Path, cwd: Path, *args: str, path_first: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update({"AGENTREVIEW_HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([sys.executable, "-m", "agentreview", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip


def push_junk_notes(hosts: Hosts, count: int) -> None:
    """``count`` notes of commits that do not exist, all one blob, written as a notes tree directly
    (one ``git mktree``, one ``git commit-tree``) and pushed to the shared remote."""
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=hosts.a.root, input=b'{"junk": true}\n',
                          capture_output=True, check=True, timeout=30).stdout.decode().strip()  # fmt: skip
    listing = "".join(f"100644 blob {blob}\t{n:040x}\n" for n in range(1, count + 1))
    tree = subprocess.run(["git", "mktree"], cwd=hosts.a.root, input=listing.encode(), capture_output=True,
                          check=True, timeout=60).stdout.decode().strip()  # fmt: skip
    commit = git(hosts.a.root, "commit-tree", tree, "-m", "junk notes")
    git(hosts.a.root, "push", "-q", "-f", "shared", f"{commit}:{NOTES}")


def body(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_thousands_of_junk_notes_cost_a_fetch_a_few_git_processes(hosts: Hosts, tmp_path: Path) -> None:
    """The attack: 3,000 notes of commits that do not exist. The fetch starts a constant number of
    git processes (not one or three per note), imports nothing, says what it skipped; the next
    fetch, with the notes ref unchanged, starts one."""
    push_junk_notes(hosts, JUNK_NOTES)
    counter = CountingGit(tmp_path)
    first = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json", path_first=counter.bin))
    starts = counter.starts()
    assert 1 <= len(starts) <= 12 and any(" ls-tree " in s for s in starts), starts  # the shim saw the fetch
    assert first["new"] == 0 and first["read"] == 0 and first["complete"] is True
    assert any(f"{JUNK_NOTES} note(s) of commits not in this repository skipped" in n for n in first["notes"])
    assert len(git(hosts.b, "notes", f"--ref={NOTES}", "list").splitlines()) == JUNK_NOTES  # still merged

    again = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json", path_first=counter.bin))
    starts = counter.starts()
    assert again["unchanged"] is True and again["read"] == 0, again
    assert len(starts) == 1 and " ls-remote " in starts[0], starts


def test_the_cap_makes_progress_across_fetches(hosts: Hosts, keys: dict) -> None:
    """More new notes than ``--max-notes``: each fetch reads the next ones and says so; a notes ref
    that moves in between is read after the rest; every note is read exactly once."""
    raw = sign(hosts.a.attestation(), keys["trusted"])
    commits = [hosts.a.commit(f"more {n}", {"src/more.py": f"n = {n}\n"}) for n in range(4)]
    git(hosts.a.root, "push", "-q", "shared", "feature")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")
    line = hosts.tmp / "line.json"
    line.write_bytes(canonical_json(raw) + b"\n")
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-F", str(line), raw["target"]["headSha"])
    for commit in commits:
        git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-m", '{"not": "an attestation"}', commit)
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")

    fetch = ("fetch", "--remote", "shared", "--json", "--max-notes", "2")
    first = body(cli(hosts.home_b, hosts.b, *fetch))
    assert first["read"] == 2 and first["complete"] is False
    assert any("5 new note(s), only the first 2 read; run 'agentreview fetch' again" in n for n in first["notes"])
    # the ref moves before the rest is read: a note on the base commit
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-m", '{"late": true}', hosts.a.base)
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")
    reports = [first]
    while reports[-1]["complete"] is False:
        assert len(reports) < 10, reports
        reports.append(body(cli(hosts.home_b, hosts.b, *fetch)))
    assert [r["read"] for r in reports] == [2, 2, 2]
    assert sum(r["new"] for r in reports) == 1 and sum(r["found"] for r in reports) == 6  # one JSON object per note
    last = body(cli(hosts.home_b, hosts.b, *fetch))
    assert last["unchanged"] is True and last["read"] == 0
    rows = json.loads(cli(hosts.home_b, hosts.b, "ledger", "--json").stdout)
    assert [r["runId"] for r in rows] == [raw["runId"]]


def test_a_note_of_a_commit_fetched_later_is_read_by_rescan(hosts: Hosts, keys: dict) -> None:
    """A note of a commit B does not have yet is skipped with a note naming the way to read it later."""
    head = hosts.a.commit("not yet in b", {"src/late.py": "late = 1\n"})
    git(hosts.a.root, "push", "-q", "shared", "feature")
    raw = sign(hosts.a.attestation(head=head), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared").returncode == 0
    skipped = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert skipped["new"] == 0 and any("--rescan" in n for n in skipped["notes"]), skipped
    git(hosts.b, "fetch", "-q", "shared", "feature")
    assert body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))["unchanged"] is True
    rescan = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json", "--rescan"))
    assert rescan["new"] == 1 and rescan["read"] == 1


def test_a_fetch_state_that_names_a_lost_notes_commit_reads_everything_again(hosts: Hosts, keys: dict) -> None:
    """The remembered notes commit is gone from this clone (pruned, another clone at the same
    place): the fetch reads the notes from scratch instead of failing."""
    from agentreview.share.fetchstate import FetchState, save, state_path

    raw = sign(hosts.a.attestation(), keys["trusted"])
    record(hosts.home_a, hosts.a.root, raw)
    assert cli(hosts.home_a, hosts.a.root, "publish", raw["runId"], "--remote", "shared").returncode == 0
    gone = "0123456789abcdef0123456789abcdef01234567"
    save(state_path(hosts.home_b, hosts.b, "shared"), FetchState(gone, hosts.remote_ref(), gone))
    done = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert done["new"] == 1 and done["complete"] is True


def test_signature_checks_are_bounded_per_fetch_and_never_spent_on_junk(
    hosts: Hosts, keys: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With team trust on, a line costs a signer process: lines that are no attestation cost none,
    an attestation stored already is not checked again, and one fetch checks at most the bound
    (the next goes on from there)."""
    from agentreview.plugins.registry import load_registry
    from agentreview.share import exchange
    from agentreview.signing import signers as signers_module
    from agentreview.store.foreign import ForeignStore

    good = [sign(hosts.a.attestation(created_at=f"2026-01-0{n}T00:00:00.000Z"), keys["trusted"]) for n in (1, 2, 3)]
    junk = [{"attestor": {"signature": {"alg": "ssh-ed25519", "value": f"x{n}"}}} for n in range(5)]
    note = hosts.tmp / "note.txt"
    note.write_bytes(b"".join(canonical_json(doc) + b"\n" for doc in [*good, *junk]))
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-F", str(note), hosts.a.head)
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")

    checks: list[str] = []
    real = signers_module.verify_signature

    def counting(raw: dict[str, Any], *a: Any, **kw: Any) -> str:
        checks.append(str(raw.get("createdAt")))
        return real(raw, *a, **kw)

    monkeypatch.setattr(signers_module, "verify_signature", counting)
    monkeypatch.setattr(exchange, "MAX_SIGNATURE_CHECKS_PER_FETCH", 2)
    team = allowed_signers(hosts.tmp / "team_signers", keys["trusted"])
    store, state = ForeignStore(hosts.tmp / "b-ledger"), hosts.tmp / "state.json"

    def fetch() -> exchange.Fetched:
        return exchange.fetch(hosts.b, store, remote="shared", registry=load_registry(), signers=team,
                              state_file=state)  # fmt: skip

    first = fetch()
    assert (first.new, first.complete, len(checks)) == (2, False, 2), first
    assert any("signatures checked" in n and "run 'agentreview fetch' again" in n for n in first.notes)
    assert sum("not a valid attestation" in n for n in first.notes) == 0  # the junk comes after the good lines
    second = fetch()
    assert (second.new, second.complete, len(checks)) == (1, True, 3), second
    assert sum("not a valid attestation" in n for n in second.notes) == 5
    assert fetch().unchanged is True and len(checks) == 3
    assert sorted(h["foreign"]["principal"] for _, h in store.all()) == ["ci@example.com"] * 3


# --------------------------------------------------------------------------- verify --notes


def gate_reports(repo: Repo, home: Path, tmp: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    sarif, summary = tmp / "gate.sarif", tmp / "summary.md"
    done = cli(home, repo.root, "verify", "--notes", "--json", "--sarif", str(sarif), "--summary", str(summary))
    return done, sarif, summary


def add_raw_note(repo: Repo, data: bytes) -> None:
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=data, capture_output=True,
                          check=True, timeout=120).stdout.decode().strip()  # fmt: skip
    git(repo.root, "notes", f"--ref={NOTES}", "add", "-f", "-C", blob, repo.head)


def test_an_oversized_note_on_the_head_is_not_found_with_every_report(repo: Repo, tmp_path: Path) -> None:
    """A note over the size bound on the verified head: skipped with a note, exit 4 (not the 3 of an
    internal error), and the JSON report, the SARIF log and the summary are all written."""
    from agentreview.share.notes import MAX_NOTE_BYTES

    add_raw_note(repo, b"x" * (MAX_NOTE_BYTES + 1))
    done, sarif, summary = gate_reports(repo, tmp_path / "home", tmp_path)
    assert done.returncode == 4, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["reason"] == "not_found", report
    assert any("larger than" in n and repo.head[:12] in n for n in report["notes"]), report["notes"]
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert "NOT verified" in summary.read_text() and "no attestation for" in summary.read_text()
    assert "Traceback" not in done.stderr


def test_a_malformed_note_on_the_head_is_not_found_with_every_report(repo: Repo, tmp_path: Path) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000  # past the recursion limit: a line skipped, not an internal error
    add_raw_note(repo, b"\xff\xfe\x00 binary\n{not json\n[1, 2]\n" + deep + b"\n")
    done, sarif, summary = gate_reports(repo, tmp_path / "home", tmp_path)
    assert done.returncode == 4, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["reason"] == "not_found"
    assert sum("skipped" in n for n in report["notes"]) == 4, report["notes"]
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert "NOT verified" in summary.read_text() and "no attestation for" in summary.read_text()


def test_changed_notes_lists_what_was_added_or_changed_between_notes_commits(repo: Repo) -> None:
    """The difference read by an incremental fetch: added and changed notes, not removed ones."""
    from agentreview.share.batch import changed_notes, existing_commits, object_sizes, stream_blobs

    one, two = repo.base, repo.head
    three = repo.commit("three", {"src/b.py": "b = 1\n"})
    git(repo.root, "notes", f"--ref={NOTES}", "add", "-m", "first", one)
    git(repo.root, "notes", f"--ref={NOTES}", "add", "-m", "second", two)
    before = git(repo.root, "rev-parse", NOTES)
    git(repo.root, "notes", f"--ref={NOTES}", "add", "-f", "-m", "first, edited", one)
    git(repo.root, "notes", f"--ref={NOTES}", "remove", two)
    git(repo.root, "notes", f"--ref={NOTES}", "add", "-m", "third", three)
    after = git(repo.root, "rev-parse", NOTES)
    assert [e.commit for e in changed_notes(repo.root, None, before)] == sorted([one, two])
    changed = changed_notes(repo.root, before, after)
    assert [e.commit for e in changed] == sorted([one, three])
    assert changed_notes(repo.root, after, after) == []
    blobs = dict(stream_blobs(repo.root, [e.blob for e in changed]))
    assert {blobs[e.blob] for e in changed} == {b"first, edited\n", b"third\n"}
    assert object_sizes(repo.root, [changed[0].blob, one]) == {changed[0].blob: len(blobs[changed[0].blob]), one: None}
    assert existing_commits(repo.root, [one, "f" * 40, changed[0].blob]) == {one}


def test_which_commits_are_here_and_the_notes_sizes_are_one_git_process(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetch asks which annotated commits exist and how large their notes are in one ``git cat-file
    --batch-check`` (ten thousand notes: one process, one pass), answered exactly as the two questions apart."""
    from agentreview.share import batch

    git(repo.root, "notes", f"--ref={NOTES}", "add", "-m", "a note", repo.head)
    blob = git(repo.root, "notes", f"--ref={NOTES}", "list", repo.head)
    commits, blobs = [repo.base, repo.head, "f" * 40, blob], [blob, repo.head, "e" * 40, blob]
    separately = (batch.existing_commits(repo.root, commits), batch.object_sizes(repo.root, blobs))
    calls: list[list[str]] = []
    real = batch.run_git
    monkeypatch.setattr(batch, "run_git", lambda args, *a, **kw: (calls.append(list(args)), real(args, *a, **kw))[1])
    assert batch.commits_and_sizes(repo.root, commits, blobs) == separately
    assert separately == ({repo.base, repo.head}, {blob: len("a note\n"), repo.head: None, "e" * 40: None})
    assert [args[0] for args in calls] == ["config", "cat-file"]  # the promisor check, then one question


def test_blobs_stream_in_the_order_asked_and_a_stream_closed_early_leaves_no_git(repo: Repo) -> None:
    """``stream_blobs`` hands each object over in the order asked (None for a missing one or a
    non-blob); closed after the first of many, it returns and leaves no git process behind."""
    from agentreview.share.batch import stream_blobs

    def blob_of(data: bytes) -> str:
        return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=data,
                              capture_output=True, check=True, timeout=30).stdout.decode().strip()  # fmt: skip

    one, two = blob_of(b"one\n"), blob_of(b"two\n")
    tree = git(repo.root, "rev-parse", f"{repo.head}^{{tree}}")
    asked = [two, "f" * 40, tree, one, two]
    assert list(stream_blobs(repo.root, asked)) == [
        (two, b"two\n"), ("f" * 40, None), (tree, None), (one, b"one\n"), (two, b"two\n")
    ]
    many = [blob_of(b"%d\n" % n + b"x" * 65536) for n in range(40)]  # more than a pipe holds
    stream = stream_blobs(repo.root, many)
    assert next(stream) == (many[0], b"0\n" + b"x" * 65536)
    stream.close()
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _our_cat_file(p)]


def _our_cat_file(proc: Path) -> bool:
    """Whether ``proc`` is a ``git cat-file`` this process started (and has not reaped)."""
    try:
        parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        return parent == os.getpid() and b"cat-file" in (proc / "cmdline").read_bytes()
    except (OSError, IndexError, ValueError):
        return False


def test_a_git_that_fails_mid_stream_is_an_error_not_the_end_of_the_blobs(tmp_path: Path) -> None:
    """git failing (here: not a repository) is raised by the stream, never read as "no more blobs"."""
    from agentreview.host.gitrun import GitError
    from agentreview.share.batch import stream_blobs

    (tmp_path / "not-a-repo").mkdir()
    with pytest.raises(GitError):
        list(stream_blobs(tmp_path / "not-a-repo", ["f" * 40]))


def test_two_notes_sharing_one_blob_are_both_read(hosts: Hosts, keys: dict) -> None:
    """Notes of two commits with the same text are one blob, streamed once and read for each."""
    raw = sign(hosts.a.attestation(), keys["trusted"])
    git(hosts.a.root, "push", "-q", "shared", "feature")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")
    text = canonical_json(raw).decode() + "\n"
    for commit in (hosts.a.base, hosts.a.head):
        git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-f", "-m", text.strip(), commit)
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")
    result = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert (result["read"], result["found"], result["new"], result["notes"]) == (2, 2, 1, []), result


def test_a_notes_tree_entry_is_read_only_from_where_its_record_starts(repo: Repo) -> None:
    """The attack: entries of the notes tree (a file, a submodule) whose names spell out another record
    ("100644 blob <oid>\\t<id>"). The listing is read record by record, so that text is a name, never a note:
    only the real note, under its fan-out path, is listed; a tree or a submodule entry is not a note either."""
    from agentreview.share.batch import changed_notes

    def blob_of(data: bytes) -> str:
        return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=data,
                              capture_output=True, check=True, timeout=30).stdout.decode().strip()  # fmt: skip

    real, bait = blob_of(b"real\n"), blob_of(b"bait\n")
    inner = f"100644 blob {real}\t{repo.head[2:]}\0".encode()
    fanout = subprocess.run(["git", "mktree", "-z"], cwd=repo.root, check=True, capture_output=True, timeout=30,
                            input=inner).stdout.decode().strip()  # fmt: skip
    listing = (f"040000 tree {fanout}\t{repo.head[:2]}\0"
               f"100644 blob {bait}\tx 100644 blob {bait}\t{repo.base}\0"
               f"160000 commit {repo.base}\ty 100644 blob {bait}\t{repo.base}\0")  # fmt: skip
    tree = subprocess.run(["git", "mktree", "-z", "--missing"], cwd=repo.root, input=listing.encode(),
                          capture_output=True, check=True, timeout=30).stdout.decode().strip()  # fmt: skip
    commit = git(repo.root, "commit-tree", tree, "-m", "notes")
    assert [(e.commit, e.blob) for e in changed_notes(repo.root, None, commit)] == [(repo.head, real)]


def test_junk_notes_ahead_of_a_real_one_do_not_keep_it_from_a_capped_fetch(hosts: Hosts, keys: dict) -> None:
    """The attack: notes of commits that do not exist, named so that they come first in the notes
    tree, as many as ``--max-notes``. They are not notes this fetch reads, so the real note after
    them is still sized, read and imported by the first fetch, not pushed out by the junk."""
    raw = sign(hosts.a.attestation(), keys["trusted"])
    git(hosts.a.root, "push", "-q", "shared", "feature")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")

    def blob_of(data: bytes) -> str:
        return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=hosts.a.root, input=data,
                              capture_output=True, check=True, timeout=30).stdout.decode().strip()  # fmt: skip

    junk, real = blob_of(b'{"junk": true}\n'), blob_of(canonical_json(raw) + b"\n")
    listing = "".join(f"100644 blob {junk}\t{n:040x}\n" for n in range(1, 4))
    listing += f"100644 blob {real}\t{raw['target']['headSha']}\n"
    tree = subprocess.run(["git", "mktree"], cwd=hosts.a.root, input=listing.encode(), capture_output=True,
                          check=True, timeout=60).stdout.decode().strip()  # fmt: skip
    git(hosts.a.root, "push", "-q", "-f", "shared", f"{git(hosts.a.root, 'commit-tree', tree, '-m', 'notes')}:{NOTES}")
    first = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json", "--max-notes", "2"))
    assert (first["read"], first["new"], first["complete"]) == (1, 1, True), first
    assert any("3 note(s) of commits not in this repository skipped" in n for n in first["notes"]), first


def test_a_note_nested_deep_enough_to_crash_a_parser_is_one_skipped_line(hosts: Hosts, keys: dict) -> None:
    """The attack: a line of 200,000 nested arrays in the same note as a real attestation. The JSON
    reader gives up on it (Python's recursion limit); before, that ended every fetch of the ref with an
    internal error, so nobody could import anything any more. Now it is one line skipped, the real
    one is imported, and the next fetch says the ref is unchanged."""
    raw = sign(hosts.a.attestation(), keys["trusted"])
    git(hosts.a.root, "push", "-q", "shared", "feature")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")
    deep = b'{"a":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    note = hosts.a.root / "deep-note"
    note.write_bytes(deep + b"\n" + canonical_json(raw) + b"\n")
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-f", "-F", str(note), raw["target"]["headSha"])
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")
    first = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert (first["read"], first["found"], first["new"], first["complete"]) == (1, 1, 1, True), first
    assert [n for n in first["notes"] if "line 1 is not JSON" in n] == first["notes"], first
    again = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert again["unchanged"] is True, again


def test_a_repo_remote_too_long_for_a_directory_name_is_imported_under_a_bounded_one(hosts: Hosts, keys: dict) -> None:
    """The attack: a note line whose target.repoRemote is 300 characters. Its repoSlug names the folder of
    the imported entries, and no filesystem takes a name that long: the writer's mkdir failed, and every
    fetch of the ref ended with an internal error. Now a slug longer than a path segment keeps its first
    characters and a digest of the whole remote; both lines are imported and the ref reads as unchanged."""
    from agentreview.store.layout import MAX_SLUG, ledger_slug

    raw = sign(hosts.a.attestation(), keys["trusted"])
    git(hosts.a.root, "push", "-q", "shared", "feature")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")
    long_remote = "https://example.com/" + "x" * 300
    other = {**raw, "target": {**raw["target"], "repoRemote": long_remote}}
    other.pop("attestor", None)  # unsigned: imported untrusted, as any line anyone pushes
    note = hosts.a.root / "long-note"
    note.write_bytes(canonical_json(raw) + b"\n" + canonical_json(other) + b"\n")
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-f", "-F", str(note), raw["target"]["headSha"])
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")
    first = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert (first["found"], first["new"], first["complete"]) == (2, 2, True), first
    folder = hosts.home_b / "reviews" / ledger_slug(long_remote)
    assert len(folder.name) == MAX_SLUG and folder.name.startswith("https_example.com_xxx") and folder.is_dir()
    assert ledger_slug(long_remote + "y") != ledger_slug(long_remote)  # one directory per remote
    again = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert again["unchanged"] is True, again


def test_a_lone_surrogate_in_an_index_column_is_one_skipped_line(hosts: Hosts, keys: dict) -> None:
    """The attack: a note line whose runId holds the JSON escape of a lone surrogate. JSON can carry one, but
    the index keeps runIds as UTF-8 text: the writer's insert failed, every fetch of the ref ended with an
    internal error, and so did every `ledger` after it (the pack, re-read for the index, failed the same way).
    Now the line is skipped with a note; the real one beside it is imported and listed."""
    raw = sign(hosts.a.attestation(), keys["trusted"])
    git(hosts.a.root, "push", "-q", "shared", "feature")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")
    hostile = canonical_json(raw).replace(f'"runId":"{raw["runId"]}"'.encode(), b'"runId":"review-\\ud800"')
    assert hostile != canonical_json(raw)
    note = hosts.a.root / "surrogate-note"
    note.write_bytes(hostile + b"\n" + canonical_json(raw) + b"\n")
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-f", "-F", str(note), raw["target"]["headSha"])
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")
    first = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert (first["found"], first["new"], first["complete"]) == (2, 1, True), first
    assert [n for n in first["notes"] if "line 1 is not a valid attestation" in n] == first["notes"], first
    listed = cli(hosts.home_b, hosts.b, "ledger", "--json")
    assert [row["runId"] for row in json.loads(listed.stdout)] == [raw["runId"]], listed.stderr


def test_terminal_control_sequences_in_a_note_reach_no_terminal(hosts: Hosts, keys: dict) -> None:
    """The attack: note lines whose text carries what a terminal obeys: clear the screen, set the title (OSC),
    write the clipboard (OSC 52). `fetch` quotes a malformed line's value in its warning and `ledger` prints an
    imported entry's runId and createdAt; on a terminal the sequences ran. Now each control character is shown
    as its escape, and the entry is still imported and listed."""
    raw = sign(hosts.a.attestation(), keys["trusted"])
    git(hosts.a.root, "push", "-q", "shared", "feature")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")
    loud = {**raw, "runId": "review-\x1b[2J\x1b[Hcalm", "createdAt": raw["createdAt"] + "\x1b]0;pwned\x07"}
    bad_key = {**raw, "manifestSha": "\x1b]52;c;ZWNobyBwd25lZA==\x07"}
    note = hosts.a.root / "loud-note"
    note.write_bytes(canonical_json(loud) + b"\n" + canonical_json(bad_key) + b"\n")
    git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-f", "-F", str(note), raw["target"]["headSha"])
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")
    fetched = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared")
    assert fetched.returncode == 0 and "1 new" in fetched.stdout, fetched.stdout + fetched.stderr
    assert "\\x1b]52;c;" in fetched.stderr  # the malformed line's value, quoted as escapes
    listed = cli(hosts.home_b, hosts.b, "ledger")
    assert "review-\\x1b[2J\\x1b[Hcalm" in listed.stdout and "\\x1b]0;pwned\\x07" in listed.stdout, listed.stdout
    for text in (fetched.stdout, fetched.stderr, listed.stdout, listed.stderr):
        assert not any(ord(c) < 0x20 and c not in "\n\t" for c in text), repr(text)


def test_a_partial_clone_is_asked_which_commits_exist_without_fetching_from_its_promisor(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: in a partial clone, an object the clone lacks that is asked of ``git cat-file``
    is fetched from the promisor remote, one round trip per junk note. There the existence check
    goes through ``git rev-list --missing=print``, which never asks: no pack arrives. The same
    question through ``cat-file`` does fetch one, so this test sees the round trip it forbids."""
    from agentreview.share import batch

    old = repo.commit("v1", {"src/old.py": "v = 1\n"})
    old_blob = git(repo.root, "rev-parse", f"{old}:src/old.py")
    repo.commit("v2", {"src/old.py": "v = 2\n"})
    git(repo.root, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{repo.root}", str(partial))
    packs = partial / ".git" / "objects" / "pack"
    before = sorted(packs.glob("*.pack"))
    assert batch._has_promisor(partial) and not batch._has_promisor(repo.root)
    assert batch.existing_commits(partial, [old, old_blob, "f" * 40]) == {old}
    assert sorted(packs.glob("*.pack")) == before  # nothing was fetched

    monkeypatch.setattr(batch, "_has_promisor", lambda cwd: False)
    assert batch.existing_commits(partial, [old, old_blob]) == {old}
    assert len(sorted(packs.glob("*.pack"))) > len(before)  # cat-file fetched the missing blob


def test_the_quick_read_of_a_line_agrees_with_the_full_read_or_leaves_the_line_to_it() -> None:
    """A fetch takes a line's index columns straight from its bytes (msgspec, only the listed members) and reads
    the line whole with the standard library whenever that quick read says None. The quick read must never
    take a line the full read skips, nor read a member otherwise: every line here is either read alike or left
    to the full read, and an ordinary line (repeated or escaped keys, a number beyond 64 bits, non-ASCII text)
    is read quickly, so a fetch does not quietly fall back on all of them."""
    from agentreview.share.notes import parse_line
    from agentreview.store.foreign_entry import listable_summary
    from agentreview.store.layout import LedgerError
    from agentreview.store.listed_line import listed_summary

    head = '"target":{"baseSha":"' + "b" * 40 + '","headSha":"' + "c" * 40 + '","repoRemote":"github.com/acme/w"}'
    body = (f'"binding":"default","createdAt":"2026-01-01T00:00:00.000Z","lanes":[],"manifestSha":"{"d" * 64}",'
            f'"rangeSha":"{"e" * 64}","reviewId":"r","runId":"run-1"')  # fmt: skip
    doc = "{" + head + "," + body + ',"verdict":"pass"'

    def line(extra: str = "", *, end: str = "}") -> bytes:
        return (doc + extra + end).encode()

    ordinary = [
        line(),
        line(',"verdict":"block"'),  # a repeated key: the last one
        line(',"verd\\u0069ct":"block"'),  # an escaped key is the same key
        line(',"target":{"baseSha":"' + "1" * 40 + '","headSha":"' + "2" * 40 + '","repoRemote":"other"}'),
        line(',"dirty":true'),
        line(',"dirty":1'),
        line(',"dirty":"true"'),
        line(',"dirty":true,"dirty":false'),
        line(',"n":123456789012345678901234567890,"f":1e400'),
        line(',"note":"caf\\u00e9 \\u0000 \\ud83d\\ude00 é"'),
        line(',"runId":"run-\\u0000"'),
        line(end="}\r"),
        line(',"attestor":{"signature":{"sig":"x"}},"lanes":[{"id":"a"}]'),
    ]
    unusual = [
        line(',"lanes":{}'),
        line(',"verdict":"maybe"'),
        line(',"x":"\\ud800"'),  # a lone surrogate: refused by msgspec, read by the standard library
        line(',"runId":"run-\\ud800"'),  # one in an index column: neither reads it
        line(',"x":NaN'),
        line(',"x":' + "[" * 100_000 + "]" * 100_000),
        line(',"manifestSha":"NOT-HEX"'),
        line(',"manifestSha":"' + "d" * 64 + '\\n"'),  # hex and a newline: not a path segment
        line(',"reviewId":1'),
        line(',"binding":"../up"'),
        line(',"x":"\t"'),
        line(',"target":1'),
        line(',"lanes":"[]"'),
        ("{" + head + "," + body + "}").encode(),  # no verdict
        b"\xef\xbb\xbf" + line(),  # a byte-order mark
        line().decode().encode("utf-16"),
        line()[:-1] + b',"x":"\xff"}',  # not UTF-8
        line()[:-1] + b',"x":"\xed\xa0\x80"}',  # a surrogate written as UTF-8
        b"[1, 2]",
        b'{"cut": ',
    ]
    for number, text in enumerate(ordinary + unusual, start=1):
        quick = listed_summary(text)
        full = parse_line(number, text, "n", strict=False)
        try:
            slow = listable_summary(full) if isinstance(full, dict) else full
        except (ValueError, LedgerError) as exc:
            slow = str(exc)
        assert quick is None or quick == slow, (number, text[:80], quick, slow)
        if number <= len(ordinary):
            assert quick is not None, (number, text[:80], slow)
    verdicts = [summary.verdict for t in ordinary[1:3] if (summary := listed_summary(t)) is not None]
    assert verdicts == ["block", "block"]
    dirty = [summary.dirty for t in ordinary[4:8] if (summary := listed_summary(t)) is not None]
    assert dirty == [True, False, False, False]


def test_a_note_is_split_into_its_lines_the_same_way_with_one_line_or_many() -> None:
    """One line ending in a newline (a note as publish writes it) takes a shorter path; every shape of note
    near it reads as the general split says: blank lines dropped, a line over the bound skipped with a note."""
    from agentreview.share.notes import MAX_LINE_BYTES, note_lines

    over = f"n: line 1 is larger than {MAX_LINE_BYTES} bytes — skipped"
    cases = {
        b"": [],
        b"\n": [],
        b"  \t\r\n": [],
        b"x": [(1, b"x")],
        b"x\n": [(1, b"x")],
        b"x\r\n": [(1, b"x\r")],
        b"\nx\n": [(2, b"x")],
        b"x\n\n": [(1, b"x")],
        b"x\ny\n": [(1, b"x"), (2, b"y")],
        b"a" * MAX_LINE_BYTES + b"\n": [(1, b"a" * MAX_LINE_BYTES)],
    }
    for data, lines in cases.items():
        assert note_lines(data, "n") == (lines, []), data[:20]
    assert note_lines(b"a" * (MAX_LINE_BYTES + 1) + b"\n", "n") == ([], [over])
    assert note_lines(b"a" * (MAX_LINE_BYTES + 1), "n") == ([], [over])
