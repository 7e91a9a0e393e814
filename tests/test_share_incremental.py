"""An honest team's notes: a fetch reads what is new since the last one, in a few git processes.

Host A publishes signed attestations of many commits (one note each) to the shared remote; host B
fetches, A publishes more, B fetches again, then once more with nothing new. Real parts: real
repositories, a real bare remote, real ssh-keygen signatures, the real CLI in a subprocess, and a
``git`` first on PATH that logs each start (the host starts git by the absolute path it finds on
PATH, so every start is seen). What is asserted is what each fetch read and how many git
processes it started, never how long it took (bench/bench_notes.py measures that).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_share import NOTES, Hosts
from test_share_bounds import CountingGit, body, cli
from verify_helpers import (  # noqa: F401  (isolated_env, keys_fixture, repo_fixture: fixtures)
    Repo,
    git,
    isolated_env,
    keys_fixture,
    repo_fixture,
    sign,
    signers_line,
)

from agentreview.model.digests import canonical_json

BATCH = 15
MANY = 1200  # notes of an honest team, past the 1,000 one fetch once read at most


@pytest.fixture(name="hosts")
def hosts_fixture(tmp_path: Path, keys: dict) -> Hosts:
    repo = Repo(tmp_path / "repo", files={".agentproto/allowed_signers": signers_line(keys["trusted"])})
    return Hosts(repo, tmp_path)


def publish_batch(hosts: Hosts, keys: dict, start: int) -> list[str]:
    """``BATCH`` new commits on A's feature, each with a note holding its signed attestation,
    pushed with the notes ref; B pulls the commits. The run ids published."""
    run_ids = []
    for n in range(start, start + BATCH):
        head = hosts.a.commit(f"change {n}", {"src/app.py": f"n = {n}\n"})
        raw = sign(hosts.a.attestation(head=head), keys["trusted"])
        line = hosts.tmp / "line.json"
        line.write_bytes(canonical_json(raw) + b"\n")
        git(hosts.a.root, "notes", f"--ref={NOTES}", "add", "-F", str(line), head)
        run_ids.append(raw["runId"])
    git(hosts.a.root, "push", "-q", "shared", "feature", f"{NOTES}:{NOTES}")
    git(hosts.b, "pull", "-q", "--ff-only", "shared", "feature")
    return run_ids


def test_a_second_fetch_reads_only_the_new_notes_and_an_unchanged_ref_costs_one_git(
    hosts: Hosts, keys: dict, tmp_path: Path
) -> None:
    counter = CountingGit(tmp_path)
    fetch = ("fetch", "--remote", "shared", "--json")
    first_ids = publish_batch(hosts, keys, 0)
    first = body(cli(hosts.home_b, hosts.b, *fetch, path_first=counter.bin))
    starts = counter.starts()
    assert first["read"] == BATCH and first["new"] == BATCH and first["complete"] is True, first
    assert 1 <= len(starts) <= 12, starts  # not one or three per note

    second_ids = publish_batch(hosts, keys, BATCH)
    second = body(cli(hosts.home_b, hosts.b, *fetch, path_first=counter.bin))
    starts = counter.starts()
    assert second["read"] == BATCH and second["new"] == BATCH, second  # the first batch is not read again
    assert any(" diff-tree " in s for s in starts) and not any(" ls-tree " in s for s in starts), starts
    assert len(starts) <= 12, starts

    again = body(cli(hosts.home_b, hosts.b, *fetch, path_first=counter.bin))
    starts = counter.starts()
    assert again["unchanged"] is True and again["read"] == 0 and again["new"] == 0, again
    assert len(starts) == 1 and " ls-remote " in starts[0], starts

    listed = body(cli(hosts.home_b, hosts.b, "ledger", "--json"))
    assert {row["runId"] for row in listed} == set(first_ids + second_ids)


def test_a_fetch_writes_its_entries_as_one_durable_pack_indexed_before_it_records_what_it_read(
    hosts: Hosts, keys: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entries of one fetch are one pack file, indexed in one transaction and made durable (the pack, then
    its folder, fsynced while the rows go in), all before the fetch state says the notes were read."""
    from agentreview.share import exchange, fetchstate
    from agentreview.store import foreign, index

    publish_batch(hosts, keys, 0)
    events: list[tuple[str, Any]] = []
    real_write, real_record, real_save = foreign.atomic_write_bytes, index.LedgerIndex.record_pack, fetchstate.save
    real_fsync = foreign.fsync_path

    def fsync(path: Path, **kw: Any) -> None:
        events.append(("fsync", path.name))
        real_fsync(path, **kw)

    def write(path: Path, data: bytes, **kw: Any) -> Path:
        events.append(("write", (path.name, kw.get("durable", True), data.count(b"\n"))))
        return real_write(path, data, **kw)

    def record_pack(self: index.LedgerIndex, rel: str, pack: str, st: Any, members: Any) -> bool:
        events.append(("index", len(members)))
        return real_record(self, rel, pack, st, members)

    monkeypatch.setattr(foreign, "atomic_write_bytes", write)
    monkeypatch.setattr(foreign, "fsync_path", fsync)
    monkeypatch.setattr(index.LedgerIndex, "record_pack", record_pack)
    monkeypatch.setattr(fetchstate, "save", lambda *a, **kw: (events.append(("saved", None)), real_save(*a, **kw))[1])
    root = tmp_path / "ledger"
    store = foreign.ForeignStore(root)
    try:
        result = exchange.fetch(hosts.b, store, remote="shared", state_file=tmp_path / "state.json")
        listed = list(store.all())
    finally:
        store.close()
    (pack,) = root.glob("*/foreign/pack-*.jsonl")
    assert result.new == BATCH and len(listed) == BATCH
    assert events[0] == ("write", (pack.name, False, BATCH)) and events[-1] == ("saved", None)
    durable = [event for event in events if event[0] == "fsync"]
    assert durable == [("fsync", pack.name), ("fsync", "foreign")]  # the pack, then the folder naming it
    assert sorted(events[1:-1]) == sorted([("index", BATCH), *durable])  # the disk's wait beside the index's work
    assert not (root / index.INDEX_STALE).exists()  # the rows are in: no reader has to re-scan


def _sync_and_die_while_indexing(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``store.sync()`` in a process that ends after its pack is on disk and before its rows are in the index."""
    from agentreview.store.index import LedgerIndex

    def record_pack(self: LedgerIndex, *args: Any) -> bool:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(LedgerIndex, "record_pack", record_pack)
        with pytest.raises(KeyboardInterrupt):
            store.sync()


def test_entries_a_fetch_wrote_before_it_died_unindexed_are_still_found(
    hosts: Hosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetch that dies between writing its pack and indexing it leaves the index's re-scan
    marker: the next reader finds every entry of the pack."""
    from agentreview.store.foreign import ForeignStore

    root = tmp_path / "ledger"
    ForeignStore(root).add(hosts.a.attestation(), remote="shared", principal=None)  # the index exists
    dying = ForeignStore(root)
    heads = [hosts.a.commit(f"c {n}", {"src/app.py": f"n = {n}\n"}) for n in range(3)]
    for head in heads:
        assert dying.add(hosts.a.attestation(head=head), remote="shared", principal=None, durable=False)
    _sync_and_die_while_indexing(dying, monkeypatch)
    reader = ForeignStore(root)
    try:
        listed = {att["target"]["headSha"] for att, _host in reader.all()}
    finally:
        reader.close()
    assert set(heads) <= listed and len(listed) == 4


def test_an_entry_a_dead_fetch_left_unindexed_is_stored_again_and_listed_once(
    hosts: Hosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another reader clears the re-scan marker while a fetch works; the fetch then dies after its
    pack is written, before its rows go in. The next fetch reads the note again (its state was never
    saved) and stores the entry again; a re-index lists it once, not twice."""
    from agentreview.store.foreign import ForeignStore
    from agentreview.store.index import LedgerIndex

    root = tmp_path / "ledger"
    ForeignStore(root).add(hosts.a.attestation(), remote="shared", principal=None)  # the index exists
    dying = ForeignStore(root)
    late = hosts.a.attestation(head=hosts.a.commit("c 1", {"src/app.py": "n = 1\n"}))
    assert dying.add(late, remote="shared", principal=None, durable=False)
    early = ForeignStore(root)  # opens the index during the fetch: re-scans and clears the marker
    assert len(list(early.all())) == 1
    early.close()
    _sync_and_die_while_indexing(dying, monkeypatch)
    again = ForeignStore(root)
    try:
        assert not again.has(late)  # unlisted: the next fetch stores it again
        assert again.add(late, remote="shared", principal=None, durable=False)
        again.sync()
        assert late["target"]["headSha"] in {att["target"]["headSha"] for att, _host in again.all()}
    finally:
        again.close()
    assert len(list(root.glob("*/foreign/pack-*.jsonl"))) == 2
    index = LedgerIndex(root, lambda _msg: None)
    try:
        assert index.rebuild() == 2
    finally:
        index.close()


def test_two_fetches_importing_the_same_notes_at_once_store_them_once(hosts: Hosts, tmp_path: Path) -> None:
    """Two fetches in one home read the same new notes; the one that writes second finds the
    first's entries in the index and writes no pack of its own."""
    from agentreview.store.foreign import ForeignStore

    root = tmp_path / "ledger"
    first, second = ForeignStore(root), ForeignStore(root)
    heads = [hosts.a.commit(f"c {n}", {"src/app.py": f"n = {n}\n"}) for n in range(3)]
    for store in (first, second):
        for head in heads:
            assert store.add(hosts.a.attestation(head=head), remote="shared", principal=None, durable=False)
    first.sync()
    second.sync()
    listed = [att["target"]["headSha"] for att, _host in ForeignStore(root).all()]
    assert sorted(listed) == sorted(heads)
    assert len(list(root.glob("*/foreign/pack-*.jsonl"))) == 1


def test_a_fetch_that_finds_some_of_its_entries_stored_meanwhile_writes_and_indexes_only_the_rest(
    hosts: Hosts, tmp_path: Path
) -> None:
    """Two fetches in one home read overlapping notes; the one that writes second drops what the first stored, and
    every entry of its pack is indexed at the offset it was written at (each listed, each readable)."""
    from agentreview.store.foreign import ForeignStore

    root = tmp_path / "ledger"
    first, second = ForeignStore(root), ForeignStore(root)
    heads = [hosts.a.commit(f"c {n}", {"src/app.py": f"n = {n}\n"}) for n in range(4)]
    docs = {head: hosts.a.attestation(head=head) for head in heads}
    for store, mine in ((first, heads[:2]), (second, heads[1:])):
        for head in mine:
            assert store.add(docs[head], remote="shared", principal=None, durable=False)
    first.sync()
    second.sync()
    packs = sorted(root.glob("*/foreign/pack-*.jsonl"), key=lambda p: p.stat().st_size)
    assert [p.read_bytes().count(b"\n") for p in packs] == [2, 2]  # heads 0, 1, then 2, 3: head 1 once
    reader = ForeignStore(root)
    try:
        listed = sorted(att["target"]["headSha"] for att, _host in reader.all())
    finally:
        reader.close()
    assert listed == sorted(heads)
    for store in (first, second):
        store.close()


def fast_import_notes(hosts: Hosts, lines: dict[str, bytes]) -> None:
    """A notes commit holding ``lines[commit]`` as the note of each commit, made by one ``git
    fast-import`` in A and pushed to the shared remote."""
    stream = [f"blob\nmark :{n + 1}\ndata {len(line)}\n".encode() + line + b"\n"
              for n, line in enumerate(lines.values())]  # fmt: skip
    stream.append(f"commit {NOTES}\ncommitter a <a@example.com> 1700000000 +0000\ndata 5\nnotes\n".encode())
    stream.extend(f"N :{n + 1} {commit}\n".encode() for n, commit in enumerate(lines))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=hosts.a.root, input=b"".join(stream), check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    git(hosts.a.root, "push", "-q", "shared", f"{NOTES}:{NOTES}")


def side_commits(hosts: Hosts, count: int) -> list[str]:
    """``count`` commits on A's branch ``history`` off main (one ``git fast-import``), pushed and
    fetched by B: commits a note may annotate."""
    stream = [f"reset refs/heads/history\nfrom {hosts.a.base}\n"]
    stream.extend(f"commit refs/heads/history\nmark :{n + 1}\ncommitter a <a@example.com> {1700000000 + n} +0000\n"
                  f"data 6\nside {n % 10}\n" for n in range(count))  # fmt: skip
    subprocess.run(["git", "fast-import", "--quiet"], cwd=hosts.a.root, input="".join(stream).encode(), check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    git(hosts.a.root, "push", "-q", "shared", "history")
    git(hosts.b, "fetch", "-q", "shared", "history:history")
    return git(hosts.a.root, "rev-list", "--reverse", "history", f"^{hosts.a.base}").split()


def test_one_fetch_imports_more_notes_than_the_old_cap_in_a_few_git_processes(hosts: Hosts, tmp_path: Path) -> None:
    """An honest team's notes past 1,000 (the per-fetch cap this project once had): one ``fetch``
    reads and imports all of them, in a constant number of git processes, and indexes every one."""
    from agentreview.store.foreign import WRITE_BATCH
    from agentreview.store.index import INDEX_STALE, LedgerIndex

    commits = side_commits(hosts, MANY)
    fast_import_notes(hosts, {c: canonical_json(hosts.a.attestation(head=c)) + b"\n" for c in commits})
    counter = CountingGit(tmp_path)
    done = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json", path_first=counter.bin))
    starts = counter.starts()
    assert (done["read"], done["new"], done["complete"], done["notes"]) == (MANY, MANY, True, []), done
    assert 1 <= len(starts) <= 12, starts
    root = hosts.home_b / "reviews"
    packs = list(root.glob("*/foreign/pack-*.jsonl"))  # one a write batch
    assert len(packs) == -(-MANY // WRITE_BATCH) and sum(p.read_bytes().count(b"\n") for p in packs) == MANY
    assert not list(root.glob("*/foreign/*.json"))
    index = LedgerIndex(root, lambda msg: pytest.fail(msg))
    try:
        assert len(index.query({}, foreign=True)) == MANY
    finally:
        index.close()
    assert not (root / INDEX_STALE).exists()


def test_the_per_fetch_cap_is_twenty_thousand_notes_and_the_next_fetch_reads_the_rest(
    hosts: Hosts, tmp_path: Path
) -> None:
    """The bound against junk stays: with no ``--max-notes``, a fetch reads at most
    MAX_NOTES_PER_FETCH (20,000) notes and says so; the next one reads what is left."""
    from agentreview.share.exchange import MAX_NOTES_PER_FETCH

    assert MAX_NOTES_PER_FETCH == 20_000
    commits = side_commits(hosts, MAX_NOTES_PER_FETCH + 1)
    fast_import_notes(hosts, dict.fromkeys(commits, b'{"junk": true}\n'))
    first = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert (first["read"], first["new"], first["complete"]) == (MAX_NOTES_PER_FETCH, 0, False)
    assert any(f"only the first {MAX_NOTES_PER_FETCH} read" in n for n in first["notes"])
    second = body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))
    assert (second["read"], second["new"], second["complete"]) == (1, 0, True)


def test_an_unchanged_fetch_loads_neither_the_config_the_plugins_nor_the_ledger(hosts: Hosts, keys: dict) -> None:
    """With the ref unchanged, ``fetch`` is one ``git ls-remote`` and the CLI's start: config.toml
    (team trust on, so a moved ref would load the signer plugins), the registry and the foreign
    store are not loaded. A config.toml broken since is reported by the next fetch that reads notes."""
    publish_batch(hosts, keys, 0)
    hosts.home_b.mkdir(exist_ok=True)
    signers = hosts.tmp / "team_signers"
    signers.write_text(signers_line(keys["trusted"]))
    (hosts.home_b / "config.toml").write_text(f"[team]\nallowed_signers = {json.dumps(str(signers))}\n")
    assert body(cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json"))["new"] == BATCH
    (hosts.home_b / "config.toml").write_text("[team\n")  # not TOML
    probe = ("import sys\nfrom agentreview.cli.entry import main\ncode = main(sys.argv[1:])\n"
             "loaded = [m for m in ('tomllib', 'agentreview.plugins.registry', 'agentreview.store.foreign',\n"
             "          'agentreview.store.index', 'agentreview.model.attestation') if m in sys.modules]\n"
             "print('LOADED', loaded, code)\n")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env.update({"AGENTREVIEW_HOME": str(hosts.home_b), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    done = subprocess.run([sys.executable, "-c", probe, "fetch", "--remote", "shared", "--json"], cwd=hosts.b,
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.split("LOADED")[0])["unchanged"] is True
    assert done.stdout.split("LOADED")[1].strip() == "[] 0", done.stdout

    publish_batch(hosts, keys, BATCH)
    broken = cli(hosts.home_b, hosts.b, "fetch", "--remote", "shared", "--json")
    assert broken.returncode == 3 and "config.toml" in broken.stderr, broken.stderr


def test_a_fetch_past_one_write_batch_writes_a_pack_a_batch_and_indexes_every_entry(
    hosts: Hosts, keys: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer thread takes the entries a batch at a time (one pack each) while the import reads
    on: every note is imported once, every entry indexed, and no re-scan marker is left behind."""
    from agentreview.share import exchange
    from agentreview.store import foreign
    from agentreview.store.index import INDEX_STALE

    monkeypatch.setattr(foreign, "WRITE_BATCH", 4)
    run_ids = publish_batch(hosts, keys, 0)
    root = tmp_path / "ledger"
    store = foreign.ForeignStore(root)
    try:
        result = exchange.fetch(hosts.b, store, remote="shared", state_file=tmp_path / "state.json")
        listed = [att["runId"] for att, _host in store.all()]
        again = exchange.fetch(hosts.b, store, remote="shared", state_file=tmp_path / "state.json", rescan=True)
    finally:
        store.close()
    packs = sorted(root.glob("*/foreign/pack-*.jsonl"))
    assert (result.read, result.new, result.complete, result.notes) == (BATCH, BATCH, True, [])
    assert len(packs) == -(-BATCH // 4) and sum(p.read_bytes().count(b"\n") for p in packs) == BATCH
    assert sorted(listed) == sorted(run_ids)
    assert (again.read, again.new) == (BATCH, 0)  # read again, stored once
    assert not (root / INDEX_STALE).exists()


def test_a_batch_the_index_refuses_leaves_the_rescan_marker_and_its_entries_are_found(
    hosts: Hosts, keys: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch's rows cannot go in (a busy or broken index): the others' do, the marker stays
    (the fetch must not say the index is whole), and the next reader re-scans and lists every entry."""
    from agentreview.share import exchange
    from agentreview.store import foreign
    from agentreview.store.index import INDEX_STALE, LedgerIndex

    monkeypatch.setattr(foreign, "WRITE_BATCH", 4)
    run_ids = publish_batch(hosts, keys, 0)
    root = tmp_path / "ledger"
    real_record, calls = LedgerIndex.record_pack, []

    def record_pack(self: LedgerIndex, rel: str, pack: str, st: Any, members: Any) -> bool:
        calls.append(len(members))
        return False if len(calls) == 2 else real_record(self, rel, pack, st, members)

    store = foreign.ForeignStore(root)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(LedgerIndex, "record_pack", record_pack)
            result = exchange.fetch(hosts.b, store, remote="shared", state_file=tmp_path / "state.json")
    finally:
        store.close()
    assert result.new == BATCH and len(calls) == -(-BATCH // 4)
    assert (root / INDEX_STALE).exists()
    reader = foreign.ForeignStore(root)
    try:
        assert sorted(att["runId"] for att, _host in reader.all()) == sorted(run_ids)
    finally:
        reader.close()
    assert not (root / INDEX_STALE).exists()
