"""An honest team's notes: a fetch reads what is new since the last one, in a few git processes.

Host A publishes signed attestations of many commits (one note each) to the shared remote; host B
fetches, A publishes more, B fetches again, then once more with nothing new. Real parts: real
repositories, a real bare remote, real ssh-keygen signatures, the real CLI in a subprocess, and a
``git`` first on PATH that logs each start (the host starts git by the absolute path it finds on
PATH, so every start is seen). What is asserted is what each fetch read and how many git
processes it started, never how long it took (bench/bench_notes.py measures that).
"""

from __future__ import annotations

import os
from pathlib import Path

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


def test_a_fetch_makes_every_imported_entry_durable_before_it_records_what_it_read(
    hosts: Hosts, keys: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries are written without a per-entry fsync and flushed together: every entry file and its
    folder are fsynced, and all of it happens before the fetch state says the notes were read."""
    from agentreview.share import exchange, fetchstate
    from agentreview.store.foreign import ForeignStore

    publish_batch(hosts, keys, 0)
    events: list[str] = []
    real_fsync, real_save = os.fsync, fetchstate.save
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd))[1])
    monkeypatch.setattr(fetchstate, "save", lambda *a, **kw: (events.append("<state saved>"), real_save(*a, **kw))[1])
    root = tmp_path / "ledger"
    store = ForeignStore(root)
    try:
        result = exchange.fetch(hosts.b, store, remote="shared", state_file=tmp_path / "state.json")
    finally:
        store.close()
    entries = sorted(str(p) for p in root.glob("*/foreign/*.json"))
    assert result.new == BATCH and len(entries) == BATCH
    saved = events.index("<state saved>")
    assert set(entries) <= set(events[:saved])  # each entry file synced before the state was written
    assert {str(Path(e).parent) for e in entries} <= set(events[:saved])  # and the folder holding them
