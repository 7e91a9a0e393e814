"""Lookups through the ledger's index: the composition prior, foreign entries, re-indexing and recovery.

Real git repositories with sibling branches: the prior found by walking the head's first-parent
line against the index is the one the per-entry ``git merge-base --is-ancestor`` search found.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reviewrepo import Repo

from agentreview.engine.compose import find_prior
from agentreview.engine.priors import first_parent_walk, own_priors
from agentreview.host import git
from agentreview.model.attestation import Attestation
from agentreview.model.digests import range_sha
from agentreview.store.foreign import ForeignStore
from agentreview.store.foreign_entry import foreign_row
from agentreview.store.index import INDEX_STALE
from agentreview.store.layout import INDEX_NAME, ledger_slug
from agentreview.store.ledger import Ledger, LedgerKey

REMOTE = "github.com/acme/widgets"
MSHA = "a" * 64
RUBRIC = "b" * 64
HOST = {"repoRoot": "/src/widgets", "manifestPath": "/src/widgets/REVIEW.md"}


def att(
    n: int,
    base: str,
    head: str,
    *,
    status: str = "pass",
    dirty: bool = False,
    rubric: str = RUBRIC,
    binding: str = "default",
    remote: str = REMOTE,
) -> Attestation:
    return Attestation.build(
        run_id=f"review-{n:04d}",
        review_id="widgets",
        manifest_sha=MSHA,
        binding=binding,
        repo_remote=remote,
        base_sha=base,
        head_sha=head,
        lanes=[{"id": "review", "kind": "command", "status": status, "blocking": True, "findings": [],
                "durationMs": 5}],
        daemon="agentreview-test@host",
        rubrics=[{"check": "review", "path": "rubric.md", "sha256": rubric}],
        dirty=dirty,
        created_at=f"2025-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
    )


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "reviews"


@pytest.fixture
def branches(tmp_path: Path) -> tuple[Repo, dict[str, str]]:
    """main: B; feature: f1 f2 f3 f4 off B; sibling: s1 s2 off B; late: l1 off f2."""
    repo = Repo(tmp_path / "repo", tmp_path / "home")
    shas = {"B": repo.commit("base", **{"README.md": "hello\n"})}
    repo.git("switch", "-q", "-c", "feature")
    for n in range(1, 5):
        shas[f"f{n}"] = repo.commit(f"f{n}", **{f"f{n}.txt": f"{n}\n"})
    repo.git("switch", "-q", "-c", "sibling", shas["B"])
    for n in range(1, 3):
        shas[f"s{n}"] = repo.commit(f"s{n}", **{f"s{n}.txt": f"{n}\n"})
    repo.git("switch", "-q", "-c", "late", shas["f2"])
    shas["l1"] = repo.commit("l1", **{"l1.txt": "1\n"})
    return repo, shas


def _per_entry(repo: Repo, led: Ledger, base: str, head: str) -> Any:
    """The prior as found by asking git about every earlier entry (one process each)."""
    return find_prior(
        led.candidates(REMOTE, MSHA, "default"), base_sha=base, head_sha=head, check_id="review",
        rubric_sha256=RUBRIC, pack_digest=None, is_ancestor=lambda a, b: git.is_ancestor(repo.path, a, b),
    )


def _indexed(repo: Repo, led: Ledger, base: str, head: str) -> Any:
    key = LedgerKey(REMOTE, MSHA, "default", range_sha(base, head))
    priors = own_priors(repo.path, led, key, base, head)
    return find_prior(
        priors.candidates, base_sha=base, head_sha=head, check_id="review", rubric_sha256=RUBRIC,
        pack_digest=None, is_ancestor=priors.is_ancestor,
    )


def test_the_prior_found_through_the_index_is_the_one_found_per_entry(
    root: Path, branches: tuple[Repo, dict[str, str]]
) -> None:
    repo, shas = branches
    base = shas["B"]
    led = Ledger(root)
    # passes on both sibling lines, newer and older, and entries that must never serve
    led.put(att(1, base, shas["f1"]), HOST)
    led.put(att(2, base, shas["s1"]), HOST)
    led.put(att(3, base, shas["f3"], status="fail"), HOST)
    led.put(att(4, base, shas["f2"], dirty=True), HOST)
    led.put(att(5, base, shas["s2"]), HOST)
    led.put(att(6, base, shas["f3"], rubric="c" * 64, binding="ci"), HOST)
    led.put(att(7, shas["f1"], shas["f3"]), HOST)  # another base
    led.put(att(8, base, shas["f2"], rubric="c" * 64), HOST)  # another rubric
    led.put(att(9, base, shas["f2"], remote="github.com/acme/other"), HOST)
    found = {}
    for name in ("f1", "f2", "f3", "f4", "s1", "s2", "l1", "B"):
        head = shas[name]
        found[name] = _indexed(repo, led, base, head)
        assert found[name] == _per_entry(repo, led, base, head), name
    assert found["f4"] is not None and found["f4"].prior_head_sha == shas["f1"]
    assert found["l1"] is not None and found["l1"].prior_head_sha == shas["f1"]
    assert found["s2"] is not None and found["s2"].prior_head_sha == shas["s1"]
    assert found["f1"] is None and found["s1"] is None and found["B"] is None
    # a newer pass on the line is preferred, as before
    led.put(att(10, base, shas["f2"]), HOST)
    assert _indexed(repo, led, base, shas["f4"]) == _per_entry(repo, led, base, shas["f4"])
    assert _indexed(repo, led, base, shas["f4"]).prior_head_sha == shas["f2"]


def test_the_walk_is_one_bounded_git_call(branches: tuple[Repo, dict[str, str]]) -> None:
    repo, shas = branches
    assert first_parent_walk(repo.path, shas["f4"]) == [shas["f3"], shas["f2"], shas["f1"], shas["B"]]
    assert first_parent_walk(repo.path, shas["f4"], steps=2) == [shas["f3"], shas["f2"]]
    assert first_parent_walk(repo.path, "0" * 40) == []


def test_only_the_entries_on_the_walk_are_read(root: Path, branches: tuple[Repo, dict[str, str]]) -> None:
    repo, shas = branches
    base = shas["B"]
    led = Ledger(root)
    led.put(att(1, base, shas["f1"]), HOST)
    for n in range(2, 40):  # passes whose heads are not commits of this repository's line
        led.put(att(n, base, f"{n:040x}"), HOST)
    priors = own_priors(repo.path, led, LedgerKey(REMOTE, MSHA, "default", "0" * 64), base, shas["f4"])
    assert [a.runId for a in priors.candidates] == ["review-0001"]


def _foreign(n: int, base: str = "1" * 40, head: str | None = None) -> dict[str, Any]:
    return att(n, base, head or f"{n:040x}").to_json_dict()


def test_foreign_entries_are_indexed_listed_and_narrowed(root: Path) -> None:
    led = Ledger(root)
    led.put(att(1, "1" * 40, "2" * 40), HOST)
    store = ForeignStore(root)
    docs = [_foreign(n) for n in (2, 3, 4)]
    for doc in docs:
        assert store.add(doc, remote="origin", principal="alice@example.test")
    assert [r.run_id for r in led.list()] == ["review-0001"]
    assert [r.run_id for r in led.list(foreign=True)] == ["review-0004", "review-0003", "review-0002"]
    both = led.list(foreign=None)
    assert [r.run_id for r in both] == ["review-0004", "review-0003", "review-0002", "review-0001"]
    expected = {a["runId"]: foreign_row(a, h) for a, h in store.all(REMOTE)}
    assert {r.run_id: r.to_json() for r in both[:3]} == expected
    assert both[0].to_json()["foreign"] == {"remote": "origin", "principal": "alice@example.test"}
    # narrowed like this host's own: by range, by head, by the digest the file is named by
    from agentreview.model.digests import attestation_sha256_of

    by_range = led.foreign_candidates(REMOTE, MSHA, "default", range_sha=docs[1]["rangeSha"])
    assert [a["runId"] for _p, a, _h in by_range] == ["review-0003"]
    by_head = led.foreign_candidates(REMOTE, MSHA, "default", heads=[f"{2:040x}", f"{4:040x}"], passing=True)
    assert [a["runId"] for _p, a, _h in by_head] == ["review-0004", "review-0002"]
    by_digest = list(led.foreign_candidates(REMOTE, MSHA, "default", digests=[attestation_sha256_of(docs[0])]))
    assert [a["runId"] for _p, a, _h in by_digest] == ["review-0002"]
    assert by_digest[0][0].parent.name == "foreign"


def test_foreign_entries_survive_a_deleted_or_corrupt_index(root: Path) -> None:
    led = Ledger(root)
    led.put(att(1, "1" * 40, "2" * 40), HOST)
    ForeignStore(root).add(_foreign(2), remote="origin", principal=None)
    led.close()
    for name in os.listdir(root):
        if name.startswith(INDEX_NAME):
            os.unlink(root / name)
    assert [r.run_id for r in Ledger(root).list(foreign=None)] == ["review-0002", "review-0001"]
    for name in os.listdir(root):
        if name.startswith(INDEX_NAME + "-"):
            os.unlink(root / name)
    (root / INDEX_NAME).write_bytes(b"not a database at all" * 300)
    fresh = Ledger(root)
    assert [r.run_id for r in fresh.list(foreign=None)] == ["review-0002", "review-0001"]
    assert any("rebuilding" in w for w in fresh.warnings)


def test_a_tampered_foreign_file_is_re_read_not_served_from_the_index(root: Path) -> None:
    store = ForeignStore(root)
    doc = _foreign(2)
    store.add(doc, remote="origin", principal=None)
    led = Ledger(root)
    (path,) = (root / "github.com_acme_widgets" / "foreign").glob("*.json")
    data = json.loads(path.read_text())
    data["attestation"]["runId"] = "review-edited"  # rewritten in place behind the index
    path.write_text(json.dumps(data))
    assert [r.run_id for r in led.list(foreign=True)] == ["review-edited"]
    path.write_text('{"attestation": ')  # no longer an entry at all
    assert led.list(foreign=True) == []
    assert list(led.foreign_candidates(REMOTE, MSHA, "default")) == []
    assert any(str(path) in w for w in led.warnings)


def _packed(root: Path, docs: list[dict[str, Any]]) -> Path:
    """``docs`` imported as one fetch imports them: one pack file."""
    store = ForeignStore(root)
    for doc in docs:
        line = json.dumps(doc, separators=(",", ":")).encode()
        incoming = store.accept(json.loads(line), line)
        assert store.add(incoming, remote="origin", principal=None, durable=False)
    store.sync()
    store.close()
    (pack,) = (root / "github.com_acme_widgets" / "foreign").glob("pack-*.jsonl")
    return pack


def test_the_entries_of_a_pack_are_indexed_narrowed_and_survive_a_deleted_index(root: Path) -> None:
    docs = [_foreign(n) for n in (2, 3, 4)]
    pack = _packed(root, docs)
    led = Ledger(root)
    assert [r.run_id for r in led.list(foreign=True)] == ["review-0004", "review-0003", "review-0002"]
    line = json.dumps(docs[1], separators=(",", ":")).encode()
    (found,) = led.foreign_candidates(REMOTE, MSHA, "default", digests=[hashlib.sha256(line).hexdigest()])
    assert found[1]["runId"] == "review-0003" and found[0].name.startswith(pack.name + "#")
    led.close()
    for name in os.listdir(root):
        if name.startswith(INDEX_NAME):
            os.unlink(root / name)
    fresh = Ledger(root)
    assert [r.run_id for r in fresh.list(foreign=True)] == ["review-0004", "review-0003", "review-0002"]
    assert fresh.warnings == []


def test_rows_inserted_many_per_statement_are_each_indexed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows go in several to a statement (so a writer thread keeps the GIL between rows); with two to
    a statement, an odd number of entries, written and then re-scanned, are every one listed."""
    from agentreview.store import index

    monkeypatch.setattr(index, "MAX_ROWS_PER_INSERT", 2)
    _packed(root, [_foreign(n) for n in range(2, 9)])
    expected = [f"review-{n:04d}" for n in range(8, 1, -1)]
    led = Ledger(root)
    assert [r.run_id for r in led.list(foreign=True)] == expected
    assert led.rebuild_index() == 7  # the re-scan inserts the pack's members the same way
    assert [r.run_id for r in led.list(foreign=True)] == expected and led.warnings == []


def test_a_tampered_pack_is_re_read_not_served_from_the_index(root: Path) -> None:
    pack = _packed(root, [_foreign(2), _foreign(3)])
    led = Ledger(root)
    assert len(led.list(foreign=True)) == 2
    lines = pack.read_bytes().split(b"\n")
    pack.write_bytes(lines[0].replace(b'"review-0002"', b'"review-edited"') + b"\n" + b'{"attestation": 1}\n')
    assert [r.run_id for r in led.list(foreign=True)] == ["review-edited"]
    assert [a["runId"] for _p, a, _h in led.foreign_candidates(REMOTE, MSHA, "default")] == ["review-edited"]
    assert any(str(pack) in w for w in led.warnings)


def test_an_imported_line_the_strict_model_refuses_is_listed_and_never_used(root: Path) -> None:
    """An import checks only what a listing shows; the strict model reads an entry at its use."""
    doc = _foreign(2)
    doc["lanes"] = [{"id": "x"}]  # a lane with no status: not an attestation the model accepts
    _packed(root, [doc])
    led = Ledger(root)
    assert [r.run_id for r in led.list(foreign=True)] == ["review-0002"]
    assert list(led.foreign_candidates(REMOTE, MSHA, "default")) == []
    assert any("skipped foreign entry" in w for w in led.warnings)
    assert list(ForeignStore(root).all()) == []


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREVIEW_")}
    env["AGENTREVIEW_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "agentreview", *args], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def _rebuild_work(root: Path, entries: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """sqlite's work (virtual machine steps, in thousands) to rebuild the index of ``entries`` entries in one
    directory: counted, not timed, so a load on the machine cannot change it."""
    from agentreview.store.index import LedgerIndex

    led = Ledger(root)
    for n in range(entries):
        led.put(att(n, "1" * 40, f"{n + 1:040x}"), HOST)
    steps = [0]
    real_open = LedgerIndex._open

    def counting(self: LedgerIndex, target: str) -> Any:
        conn = real_open(self, target)
        conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 1000)
        return conn

    monkeypatch.setattr(LedgerIndex, "_open", counting)
    assert led.rebuild_index() == entries
    led.close()
    return steps[0]


def test_a_rebuild_is_linear_in_the_entries_of_one_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every review of one repository, manifest and binding is one directory: rebuilding its index (a missing or
    corrupt index, ``ledger --reindex``) must cost in proportion to its entries. Replacing each file's rows with
    an OR over the primary key walked every row of the directory per file: twice the entries, four times the work."""
    small = _rebuild_work(tmp_path / "small", 150, monkeypatch)
    large = _rebuild_work(tmp_path / "large", 300, monkeypatch)
    assert large < 2.6 * small, (small, large)


def test_ledger_reindex_finds_files_written_behind_the_index(root: Path, tmp_path: Path) -> None:
    led = Ledger(root)
    led.put(att(1, "1" * 40, "2" * 40), HOST)
    ForeignStore(root).add(_foreign(3), remote="origin", principal=None)
    late = att(2, "1" * 40, "3" * 40)
    path = led.entry_path(*LedgerKey.of(late))
    path.write_text(json.dumps({"attestation": late.to_json_dict(), "host": HOST}))  # no ledger API
    home = tmp_path / "home"
    listed = _cli(home, "ledger", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["runId"] for r in json.loads(listed.stdout)] == ["review-0003", "review-0001"]
    again = _cli(home, "ledger", "--json", "--reindex", "--repo", REMOTE, "--limit", "2")
    assert again.returncode == 0, again.stderr
    assert [r["runId"] for r in json.loads(again.stdout)] == ["review-0003", "review-0002"]
    assert "foreign" in json.loads(again.stdout)[0]
    assert not (root / INDEX_STALE).exists()


def test_an_index_row_edited_to_pass_never_makes_a_failing_entry_a_prior(
    root: Path, branches: tuple[Repo, dict[str, str]]
) -> None:
    import sqlite3

    repo, shas = branches
    base = shas["B"]
    led = Ledger(root)
    led.put(att(1, base, shas["f1"], status="fail"), HOST)
    led.put(att(2, base, shas["f2"], dirty=True), HOST)
    led.close()
    with sqlite3.connect(root / INDEX_NAME) as conn:  # a same-uid process rewrites the index
        conn.execute("UPDATE entries SET verdict = 'pass', dirty = 0")
    fresh = Ledger(root)
    assert _indexed(repo, fresh, base, shas["f4"]) is None
    assert _per_entry(repo, fresh, base, shas["f4"]) is None


def test_a_long_walk_is_asked_in_chunks_and_merged_newest_first(root: Path) -> None:
    from agentreview.store.index import ANY_OF_CHUNK

    led = Ledger(root)
    heads = [f"{n:040x}" for n in range(1, 3 * ANY_OF_CHUNK)]
    picked = [heads[5], heads[ANY_OF_CHUNK + 7], heads[-1]]  # one in each chunk of the sorted walk
    for n, head in zip((3, 1, 2), picked, strict=True):
        led.put(att(n, "1" * 40, head), HOST)
    led.put(att(9, "1" * 40, "f" * 40), HOST)  # not on the walk
    got = led.candidates(REMOTE, MSHA, "default", base_sha="1" * 40, heads=heads, passing=True)
    assert [a.runId for a in got] == ["review-0003", "review-0002", "review-0001"]


def test_every_lookup_is_answered_by_its_own_index(root: Path) -> None:
    """Each query the host asks (listings, the prior's heads, the key, team trust's range, heads and digests, a run
    id, a requester) searches the index it was meant for, by the columns' 64-bit keys: never a walk of the table,
    and never the broad repository index when a selective one applies (a walk grows with the ledger)."""
    led = Ledger(root)
    led.put(att(1, "1" * 40, "2" * 40), HOST)
    ForeignStore(root).add(_foreign(2), remote="origin", principal=None)
    conn = led._index._connection()
    asked: list[str] = []
    conn.set_trace_callback(asked.append)
    head, rsha, slug = "2" * 40, range_sha("1" * 40, "2" * 40), ledger_slug(REMOTE)
    expected = [
        (lambda: led.list(foreign=None), "SCAN entries USING INDEX entries_created"),
        (lambda: led.list(repo=REMOTE, foreign=None), "entries_repo (repo_key=?)"),
        (lambda: led.list(range_sha=rsha, foreign=None), "entries_range (range_key=?)"),
        (lambda: led.list(repo=REMOTE, range_sha=rsha, binding="default"), "entries_range (range_key=?)"),
        (lambda: led.list(run_id="review-0001", limit=1), "entries_run (run_key=?)"),
        (lambda: led.list(requester_session_id="s-1"), "entries_session (session_key=?)"),
        (lambda: list(led.candidates(REMOTE, MSHA, "default", base_sha="1" * 40, heads=[head], passing=True)),
         "entries_head (head_key=?)"),
        (lambda: list(led.candidates(REMOTE, MSHA, "default")), "entries_key (key_key=?)"),
        (lambda: list(led.foreign_candidates(REMOTE, MSHA, "default", range_sha=rsha)), "entries_range (range_key=?)"),
        (lambda: list(led.foreign_candidates(REMOTE, MSHA, "default", digests=["c" * 64])),
         "entries_digest (digest_key=?)"),
        (lambda: led._index.digests(f"{slug}/foreign", among=["c" * 64]), "entries_digest (digest_key=?)"),
    ]  # fmt: skip
    for ask, index in expected:
        asked.clear()
        ask()
        (sql,) = [s for s in asked if s.startswith("SELECT") and "FROM entries" in s]
        plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert index in plan, (sql, plan)
        assert "SCAN entries" not in plan.replace("SCAN entries USING INDEX entries_created", ""), plan


def test_values_that_share_an_index_key_are_told_apart_by_their_value(root: Path) -> None:
    """The index holds 64-bit keys of its columns (a sha's first 16 hex digits): heads and ranges that share
    them, as anyone who writes notes can make, cost a row read each and are never taken for one another."""
    from agentreview.store.index import lookup_key

    led = Ledger(root)
    prefix = "ab" * 8
    heads = [prefix + f"{n:024x}" for n in (1, 2, 3)]
    assert len({lookup_key(h) for h in heads}) == 1
    store = ForeignStore(root)
    docs = [_foreign(n, head=head) for n, head in zip((1, 2, 3), heads, strict=True)]
    for doc in docs:
        assert store.add(doc, remote="origin", principal=None)
    by_head = led.foreign_candidates(REMOTE, MSHA, "default", heads=[heads[1]])
    assert [a["target"]["headSha"] for _p, a, _h in by_head] == [heads[1]]
    ranged = [d["rangeSha"] for d in docs]
    by_range = led.foreign_candidates(REMOTE, MSHA, "default", range_sha=ranged[2])
    assert [a["runId"] for _p, a, _h in by_range] == ["review-0003"]
    assert [r.run_id for r in led.list(foreign=None, range_sha=ranged[0])] == ["review-0001"]


def test_run_ids_are_looked_up_among_this_hosts_entries_only(root: Path) -> None:
    """Imported entries' run ids are not keyed (no lookup asks for one: a run id names a run of this host), so a
    query for a run id among them is refused rather than answered without them."""
    led = Ledger(root)
    led.put(att(1, "1" * 40, "2" * 40), HOST)
    ForeignStore(root).add(_foreign(1), remote="origin", principal=None)  # the same run id, imported
    assert [(r.run_id, r.to_json().get("foreign")) for r in led.list(run_id="review-0001")] == [("review-0001", None)]
    with pytest.raises(ValueError, match="not indexed"):
        led.list(run_id="review-0001", foreign=None)
