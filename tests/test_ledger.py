"""The ledger: atomic entries, the cache rule clause by clause, the sqlite index kept honest by the files."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from agentreview.model.attestation import Attestation
from agentreview.model.digests import range_sha
from agentreview.store.layout import INDEX_NAME
from agentreview.store.ledger import HostInfo, Ledger, LedgerError, LedgerKey

REMOTE = "github.com/acme/widgets"
MSHA = "a" * 64
RUBRICS = [{"check": "correctness", "path": "rubrics/c.md", "sha256": "b" * 64}]
PACKS = [{"ref": "./packs/core", "id": "core", "version": "1.0.0", "alg": "agentproto-pack-digest/v1",
          "sha256": "c" * 64}]
HOST = {"repoRoot": "/src/widgets", "manifestPath": "/src/widgets/REVIEW.md", "exportDir": "/src/widgets/.reviews"}


def lane(status: str = "pass", blocking: bool = True, lane_id: str = "types") -> dict[str, Any]:
    return {"id": lane_id, "kind": "command", "status": status, "blocking": blocking, "findings": [], "durationMs": 5}


def make_att(
    n: int = 1,
    *,
    remote: str = REMOTE,
    msha: str = MSHA,
    binding: str = "default",
    base: str = "1" * 40,
    head: str | None = None,
    status: str = "pass",
    rubrics: list[dict[str, str]] | None = None,
    packs: list[dict[str, str]] | None = None,
    dirty: bool = False,
    created: str | None = None,
    session: str | None = None,
) -> Attestation:
    return Attestation.build(
        run_id=f"review-{n:04d}",
        review_id="widgets",
        manifest_sha=msha,
        binding=binding,
        repo_remote=remote,
        base_sha=base,
        head_sha=head or f"{n:040x}",
        lanes=[lane(status)],
        daemon="agentreview-test@host",
        rubrics=RUBRICS if rubrics is None else rubrics,
        packs=PACKS if packs is None else packs,
        dirty=dirty,
        requester={"sessionId": session} if session else None,
        created_at=created or f"2025-01-01T00:00:{n % 60:02d}.{n // 60:03d}Z",
    )


def entry_text(att: Attestation | dict[str, Any], host: dict[str, Any] = HOST) -> str:
    doc = att.to_json_dict() if isinstance(att, Attestation) else att
    return json.dumps({"attestation": doc, "host": host}, indent=2) + "\n"


def write_behind(root: Path, att: Attestation) -> Path:
    """Write an entry file the way a host without the index would (no ledger API)."""
    led = Ledger(root)
    path = led.entry_path(*LedgerKey.of(att))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(entry_text(att))
    return path


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTREVIEW_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "reviews"


def run_ids(rows: list[Any]) -> list[str]:
    return [r.run_id for r in rows]


# --------------------------------------------------------------------------- writing


def test_put_writes_the_entry_at_its_key_path_atomically(root: Path) -> None:
    att = make_att(1)
    path = Ledger(root).put(att, HOST)
    assert path == root / "github.com_acme_widgets" / MSHA / "default" / f"{att.rangeSha}.json"
    text = path.read_text()
    assert text == entry_text(att)  # two-space JSON, trailing newline, {attestation, host}
    assert (path.stat().st_mode & 0o777) == 0o600
    assert not [p for p in path.parent.iterdir() if ".tmp." in p.name]


def test_put_overwrites_the_same_key_and_get_reads_it_back(root: Path) -> None:
    led = Ledger(root)
    first = make_att(1, head="f" * 40)
    second = Attestation.build(**{**_build_args(first), "run_id": "review-second", "lanes": [lane("fail")]})
    led.put(first, HOST)
    path = led.put(second, HostInfo("/elsewhere", "/elsewhere/REVIEW.md"))
    entry = led.get(*LedgerKey.of(first))
    assert entry is not None and entry.path == path
    assert entry.attestation.runId == "review-second" and entry.attestation.verdict == "block"
    assert entry.host == HostInfo("/elsewhere", "/elsewhere/REVIEW.md")
    assert len(led.list()) == 1


def _build_args(att: Attestation) -> dict[str, Any]:
    return dict(
        run_id=att.runId, review_id=att.reviewId, manifest_sha=att.manifestSha, binding=att.binding,
        repo_remote=att.target.repoRemote, base_sha=att.target.baseSha, head_sha=att.target.headSha,
        lanes=[lane_.to_json_dict() for lane_ in att.lanes], daemon="d", rubrics=RUBRICS, packs=PACKS,
        created_at=att.createdAt,
    )


def test_put_refuses_an_attestation_whose_verdict_is_not_its_fold(root: Path) -> None:
    forged = Attestation.read({**make_att(1).to_json_dict(), "verdict": "pass", "lanes": [lane("fail")]})
    with pytest.raises(LedgerError, match="does not follow from its lanes"):
        Ledger(root).put(forged, HOST)
    assert not root.exists() or not list(root.rglob("*.json"))


def test_concurrent_writers_in_several_processes_leave_one_valid_file(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from agentreview.model.attestation import Attestation
        from agentreview.store.ledger import Ledger
        worker = int(sys.argv[1])
        led = Ledger(Path({str(root)!r}))
        for i in range(15):
            att = Attestation.build(
                run_id=f"review-w{{worker}}-{{i}}", review_id="widgets", manifest_sha={MSHA!r}, binding="default",
                repo_remote={REMOTE!r}, base_sha="1" * 40, head_sha="2" * 40,
                lanes=[{{"id": "t", "kind": "command", "status": "pass", "blocking": True, "findings": [],
                        "durationMs": 1, "summary": "x" * (worker * 500)}}],
                daemon="d", rubrics=[], created_at=f"2025-01-01T00:00:{{i:02d}}.000Z")
            led.put(att, {{"repoRoot": "/r", "manifestPath": "/r/REVIEW.md"}})
    """))
    procs = [subprocess.Popen([sys.executable, str(script), str(w)]) for w in range(1, 6)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 5
    leaf = root / "github.com_acme_widgets" / MSHA / "default"
    entries = [p for p in leaf.iterdir() if p.name.endswith(".json")]
    assert [p.name for p in entries] == [f"{range_sha('1' * 40, '2' * 40)}.json"]
    assert not [p for p in leaf.iterdir() if ".tmp." in p.name]
    doc = json.loads(entries[0].read_text())  # whole, parseable, one writer's document
    att = Attestation.read(doc["attestation"])
    worker = int(att.runId.split("-")[1][1:])
    assert att.lanes[0].summary == "x" * (worker * 500)
    fresh = Ledger(root)
    assert run_ids(fresh.list()) == [att.runId] and fresh.warnings == []


def test_paths_cannot_escape_the_root(root: Path) -> None:
    led = Ledger(root)
    for bad_binding in ("..", "../x", "a/b", ".hidden", ""):
        with pytest.raises(LedgerError):
            led.entry_path(REMOTE, MSHA, bad_binding, "d" * 64)
    with pytest.raises(LedgerError):
        led.entry_path(REMOTE, "../" + "a" * 61, "default", "d" * 64)
    # a pattern's `$` also matches before a final newline: each part is matched whole
    for msha, binding, rsha in ((MSHA + "\n", "default", "d" * 64), (MSHA, "default\n", "d" * 64),
                                (MSHA, "default", "d" * 64 + "\n")):  # fmt: skip
        with pytest.raises(LedgerError):
            led.entry_path(REMOTE, msha, binding, rsha)
    for remote in ("..", "."):  # repoSlug keeps dots; the ledger must still stay under its root
        assert led.entry_path(remote, MSHA, "default", "d" * 64).parent.parent.parent == root / "repo"
    for bad_run in ("review-../../x", "../review-1", "review-a/b"):
        with pytest.raises(LedgerError):
            led.run_dir(REMOTE, bad_run)
    run_dir = led.run_dir(REMOTE, "review-1234")
    assert run_dir == root / "github.com_acme_widgets" / "runs" / "review-1234" and run_dir.is_dir()
    assert led.list() == []  # the runs directory is not mistaken for entries


def test_a_remote_too_long_for_one_path_segment_still_names_one_directory_of_its_own(root: Path) -> None:
    """A repoSlug past NAME_MAX (a long origin URL here; anyone's text in a note) could name no directory:
    it keeps its first characters and a digest of the whole remote, and a shorter one is left as the spec has it."""
    from agentreview.store.layout import MAX_SLUG

    led = Ledger(root)
    long_remote = "https://example.com/" + "a/" * 200
    path = led.entry_path(long_remote, MSHA, "default", "d" * 64)
    slug = path.relative_to(root).parts[0]
    assert len(slug) == MAX_SLUG and slug.startswith("https_example.com_a_a")
    path.parent.mkdir(parents=True)  # a name the filesystem takes
    assert led.entry_path(long_remote + "b", MSHA, "default", "d" * 64).relative_to(root).parts[0] != slug
    assert led.entry_path(REMOTE, MSHA, "default", "d" * 64).relative_to(root).parts[0] == "github.com_acme_widgets"


# --------------------------------------------------------------------------- the cache rule


def _lookup(led: Ledger, att: Attestation, rubrics: Any = RUBRICS, packs: Any = PACKS) -> Attestation | None:
    return led.lookup_cached(REMOTE, att.manifestSha, att.binding, att.rangeSha, rubrics, packs)


def test_cache_hit_returns_the_recorded_attestation_block_included(root: Path) -> None:
    led = Ledger(root)
    passed, blocked = make_att(1), make_att(2, status="fail")
    led.put(passed, HOST)
    led.put(blocked, HOST)
    hit = _lookup(led, passed)
    assert hit is not None and hit.to_json_dict() == passed.to_json_dict()
    hit = _lookup(led, blocked)
    assert hit is not None and hit.verdict == "block"
    # rubric and pack order do not matter: multisets
    two = [*RUBRICS, {"check": "style", "path": "rubrics/s.md", "sha256": "e" * 64}]
    led.put(make_att(3, rubrics=two), HOST)
    assert _lookup(led, make_att(3, rubrics=two), rubrics=list(reversed(two))) is not None


def test_cache_miss_for_missing_incomplete_and_dirty(root: Path) -> None:
    led = Ledger(root)
    assert _lookup(led, make_att(1)) is None
    incomplete, dirty = make_att(2, status="timeout"), make_att(3, dirty=True)
    led.put(incomplete, HOST)
    led.put(dirty, HOST)
    assert incomplete.verdict == "incomplete" and _lookup(led, incomplete) is None
    assert dirty.verdict == "pass" and _lookup(led, dirty) is None


@pytest.mark.parametrize(
    "rubrics",
    [
        [],  # the recorded run had a rubric, this one has none
        [{**RUBRICS[0], "sha256": "f" * 64}],  # rubric bytes changed
        [{**RUBRICS[0], "path": "rubrics/other.md"}],
        [{**RUBRICS[0], "check": "other"}],
        RUBRICS * 2,  # multiplicity counts
    ],
)
def test_cache_miss_when_the_rubric_multiset_differs(root: Path, rubrics: list[dict[str, str]]) -> None:
    led = Ledger(root)
    att = make_att(1)
    led.put(att, HOST)
    assert _lookup(led, att, rubrics=rubrics) is None


@pytest.mark.parametrize(
    "packs",
    [
        [],
        None,
        [{**PACKS[0], "alg": "agentproto-pack-digest/v2"}],  # same hex under another recipe: a miss
        [{**PACKS[0], "sha256": "f" * 64}],
        [{**PACKS[0], "version": "1.0.1"}],
        [{**PACKS[0], "id": "other"}],
        [{**PACKS[0], "ref": "npm:core"}],
        PACKS * 2,
    ],
)
def test_cache_miss_when_the_pack_multiset_differs(root: Path, packs: Any) -> None:
    led = Ledger(root)
    att = make_att(1)
    led.put(att, HOST)
    assert _lookup(led, att, packs=packs) is None


def test_cache_without_packs_on_either_side_hits(root: Path) -> None:
    led = Ledger(root)
    att = make_att(1, packs=[])
    assert "packs" not in att.to_json_dict()
    led.put(att, HOST)
    assert _lookup(led, att, packs=[]) is not None
    assert _lookup(led, att, packs=None) is not None
    assert _lookup(led, att, packs=PACKS) is None


def test_crafted_separators_cannot_make_two_rubric_sets_equal(root: Path) -> None:
    led = Ledger(root)
    att = make_att(1, rubrics=[{"check": "a", "path": "x\0" + "b" * 64, "sha256": "b" * 64}])
    led.put(att, HOST)
    assert _lookup(led, att, rubrics=att.to_json_dict()["rubrics"]) is None


def test_cache_never_serves_a_tampered_or_misplaced_file(root: Path) -> None:
    led = Ledger(root)
    att = make_att(1, status="fail")
    path = led.put(att, HOST)
    doc = json.loads(path.read_text())
    doc["attestation"]["verdict"] = "pass"  # verdict edited, lanes still fail
    path.write_text(json.dumps(doc))
    assert _lookup(led, att) is None
    assert any("does not follow from its lanes" in w for w in led.warnings)
    # an attestation of another repository copied under this key
    other = make_att(2, remote="github.com/evil/repo")
    path.write_text(entry_text(other))
    assert led.lookup_cached(REMOTE, MSHA, "default", att.rangeSha, RUBRICS, PACKS) is None
    assert any("another key" in w for w in led.warnings)


def test_a_corrupt_entry_is_skipped_with_a_warning(root: Path) -> None:
    led = Ledger(root)
    good, bad = make_att(1), make_att(2)
    led.put(good, HOST)
    bad_path = led.put(bad, HOST)
    bad_path.write_text('{"attestation": {"schema": "agentproto.review.attestation/v1", "runId": ')
    assert led.get(*LedgerKey.of(bad)) is None
    assert _lookup(led, bad) is None
    fresh = Ledger(root)
    assert run_ids(fresh.list()) == [good.runId]
    assert any(str(bad_path) in w and "corrupt" in w for w in fresh.warnings)
    assert [a.runId for a in fresh.candidates(REMOTE, MSHA, "default")] == [good.runId]


# --------------------------------------------------------------------------- listing


def test_list_is_newest_first_with_filters_and_limit(root: Path) -> None:
    led = Ledger(root)
    atts = [
        make_att(1, created="2025-01-01T00:00:01.000Z"),
        make_att(2, created="2025-03-01T00:00:00.000Z", binding="ci"),
        make_att(3, created="2025-02-01T00:00:00.000Z", remote="github.com/acme/other"),
        make_att(4, created="2025-04-01T00:00:00.000Z", msha="9" * 64, session="sess-1"),
    ]
    for att in atts:
        led.put(att, HOST)
    assert run_ids(led.list()) == ["review-0004", "review-0002", "review-0003", "review-0001"]
    assert run_ids(led.list(limit=2)) == ["review-0004", "review-0002"]
    assert run_ids(led.list(repo=REMOTE)) == ["review-0004", "review-0002", "review-0001"]
    assert run_ids(led.list(binding="ci")) == ["review-0002"]
    assert run_ids(led.list(manifest_sha="9" * 64)) == ["review-0004"]
    assert run_ids(led.list(range_sha=atts[2].rangeSha)) == ["review-0003"]
    assert run_ids(led.list(base_sha="1" * 40, head_sha=f"{1:040x}")) == ["review-0001"]
    assert run_ids(led.list(run_id="review-0003")) == ["review-0003"]
    assert run_ids(led.list(requester_session_id="sess-1")) == ["review-0004"]
    assert run_ids(led.list(repo=REMOTE, manifest_sha=MSHA, binding="default")) == ["review-0001"]
    assert led.list(repo="github.com/nobody/none") == []


def test_rows_carry_the_settled_review_ledger_fields(root: Path) -> None:
    led = Ledger(root)
    att = make_att(7, dirty=True, session="sess-9")
    led.put(att, HOST)
    row = led.list()[0].to_json()
    assert set(row) == {"runId", "reviewId", "binding", "verdict", "repoRemote", "baseSha", "headSha", "rangeSha",
                        "manifestSha", "createdAt", "cwd", "dirty", "requester", "signed", "lanes"}
    assert row["cwd"] == HOST["repoRoot"] and row["dirty"] is True and row["signed"] is False
    assert row["requester"] == {"sessionId": "sess-9"}
    assert row["lanes"] == [{"id": "types", "status": "pass", "blocking": True}]
    assert row["rangeSha"] == att.rangeSha and row["createdAt"] == att.createdAt


def test_candidates_are_newest_first_for_one_key_prefix(root: Path) -> None:
    led = Ledger(root)
    led.put(make_att(1, created="2025-01-01T00:00:00.000Z"), HOST)
    led.put(make_att(2, created="2025-01-03T00:00:00.000Z"), HOST)
    led.put(make_att(3, created="2025-01-02T00:00:00.000Z"), HOST)
    led.put(make_att(4, binding="ci"), HOST)
    led.put(make_att(5, msha="9" * 64), HOST)
    led.put(make_att(6, remote="github.com/acme/other"), HOST)
    got = list(led.candidates(REMOTE, MSHA, "default"))
    assert [a.runId for a in got] == ["review-0002", "review-0003", "review-0001"]
    assert all(isinstance(a, Attestation) for a in got)
    assert list(led.candidates("github.com/no/such", MSHA, "default")) == []


def test_slug_collisions_never_mix_repositories(root: Path) -> None:
    # 'github.com/a/b_c' and 'github.com/a_b/c' share the slug 'github.com_a_b_c'.
    led = Ledger(root)
    one = make_att(1, remote="github.com/a/b_c", head="3" * 40)
    two = make_att(2, remote="github.com/a_b/c", head="3" * 40)
    led.put(one, HOST)
    assert led.lookup_cached("github.com/a_b/c", MSHA, "default", two.rangeSha, RUBRICS, PACKS) is None
    assert list(led.candidates("github.com/a_b/c", MSHA, "default")) == []
    assert run_ids(led.list(repo="github.com/a_b/c")) == []
    assert run_ids(led.list(repo="github.com/a/b_c")) == ["review-0001"]


# --------------------------------------------------------------------------- the index


def test_index_is_rebuilt_when_deleted(root: Path) -> None:
    led = Ledger(root)
    for n in range(1, 4):
        led.put(make_att(n), HOST)
    led.close()
    for name in os.listdir(root):
        if name.startswith(INDEX_NAME):
            os.unlink(root / name)
    fresh = Ledger(root)
    assert run_ids(fresh.list()) == ["review-0003", "review-0002", "review-0001"]
    assert (root / INDEX_NAME).is_file()


def test_index_is_rebuilt_when_corrupt(root: Path) -> None:
    led = Ledger(root)
    for n in range(1, 4):
        led.put(make_att(n), HOST)
    assert len(led.list()) == 3
    led.close()
    for name in os.listdir(root):
        if name.startswith(INDEX_NAME + "-"):
            os.unlink(root / name)
    (root / INDEX_NAME).write_bytes(b"this is not a database" * 400)
    fresh = Ledger(root)
    assert run_ids(fresh.list()) == ["review-0003", "review-0002", "review-0001"]
    assert any("rebuilding" in w for w in fresh.warnings)
    with sqlite3.connect(root / INDEX_NAME) as conn:
        assert conn.execute("SELECT COUNT(*) FROM entries WHERE ok = 1").fetchone()[0] == 3


def test_index_of_another_schema_version_is_rebuilt(root: Path) -> None:
    led = Ledger(root)
    led.put(make_att(1), HOST)
    assert len(led.list()) == 1
    led.close()
    with sqlite3.connect(root / INDEX_NAME) as conn:
        conn.execute("DELETE FROM entries")
        conn.execute("PRAGMA user_version = 99")
    fresh = Ledger(root)
    assert run_ids(fresh.list()) == ["review-0001"]
    assert fresh.warnings == []  # an upgrade's rebuild is silent


def test_an_index_that_cannot_be_opened_falls_back_to_the_files(root: Path) -> None:
    root.mkdir(parents=True)
    (root / INDEX_NAME).mkdir()  # not a database file and not removable as one
    led = Ledger(root)
    led.put(make_att(1), HOST)
    led.put(make_att(2, binding="ci"), HOST)
    assert run_ids(led.list()) == ["review-0002", "review-0001"]
    assert [a.runId for a in led.candidates(REMOTE, MSHA, "ci")] == ["review-0002"]
    assert any("scanning the files" in w for w in led.warnings)


def test_files_added_behind_the_index_are_found_on_reindex(root: Path) -> None:
    led = Ledger(root)
    led.put(make_att(1), HOST)
    assert len(led.list()) == 1
    # an older host (no index) writes: same leaf, a new binding, a new manifest, a new repository
    write_behind(root, make_att(2))
    write_behind(root, make_att(3, binding="ci"))
    write_behind(root, make_att(4, msha="9" * 64))
    write_behind(root, make_att(5, remote="gitlab.com/x/y"))
    # reads never re-list directories: what was written behind the index waits for a re-check
    assert run_ids(led.list()) == ["review-0001"]
    assert led.rebuild_index() == 5
    assert sorted(run_ids(led.list())) == ["review-0001", "review-0002", "review-0003", "review-0004", "review-0005"]
    assert run_ids(led.list(repo="gitlab.com/x/y")) == ["review-0005"]
    assert [a.runId for a in led.candidates(REMOTE, MSHA, "default")] == ["review-0002", "review-0001"]


def test_a_fresh_root_written_without_any_index_is_indexed(root: Path) -> None:
    for n in range(1, 6):
        write_behind(root, make_att(n))
    assert not (root / INDEX_NAME).exists()
    assert run_ids(Ledger(root).list()) == [f"review-{n:04d}" for n in range(5, 0, -1)]


def test_files_removed_behind_the_index_are_dropped(root: Path) -> None:
    led = Ledger(root)
    paths = [led.put(make_att(n), HOST) for n in range(1, 4)]
    led.put(make_att(9, binding="ci"), HOST)
    assert len(led.list()) == 4
    paths[1].unlink()
    assert run_ids(led.list()) == ["review-0009", "review-0003", "review-0001"]
    import shutil

    shutil.rmtree(root / "github.com_acme_widgets" / MSHA / "ci")
    assert run_ids(led.list()) == ["review-0003", "review-0001"]


def test_a_file_replaced_while_its_directory_time_is_unchanged_is_reread(root: Path) -> None:
    led = Ledger(root)
    path = led.put(make_att(1), HOST)
    leaf = path.parent
    old = time.time_ns() - 3600 * 10**9
    os.utime(leaf, ns=(old, old))  # a settled directory: the index trusts its listing
    assert run_ids(led.list()) == ["review-0001"]
    replaced = Attestation.build(**{**_build_args(make_att(1)), "run_id": "review-replaced"})
    path.write_text(entry_text(replaced))  # rewritten in place
    os.utime(leaf, ns=(old, old))
    assert run_ids(led.list()) == ["review-replaced"]
    path.unlink()
    os.utime(leaf, ns=(old, old))
    assert led.list() == []


def test_a_write_the_index_could_not_take_is_found_by_the_next_read(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentreview.store import index

    led = Ledger(root)
    led.put(make_att(1), HOST)
    led.close()
    monkeypatch.setattr(index, "BUSY_TIMEOUT_MS", 100)
    holder = sqlite3.connect(root / INDEX_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the index: this write cannot be indexed
    try:
        writer = Ledger(root)
        writer.put(make_att(2), HOST)
        writer.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (root / index.INDEX_STALE).exists()
    assert run_ids(Ledger(root).list()) == ["review-0002", "review-0001"]
    assert not (root / index.INDEX_STALE).exists()


def test_symlinks_in_the_ledger_are_not_followed(root: Path, tmp_path: Path) -> None:
    led = Ledger(root)
    led.put(make_att(1), HOST)
    outside = tmp_path / "outside"
    outside.mkdir()
    att = make_att(2)
    (outside / f"{att.rangeSha}.json").write_text(entry_text(att))
    os.symlink(outside, root / "github.com_acme_widgets" / MSHA / "linked")
    leaf = root / "github.com_acme_widgets" / MSHA / "default"
    os.symlink(outside / f"{att.rangeSha}.json", leaf / f"{att.rangeSha}.json")
    assert run_ids(led.list()) == ["review-0001"]
    assert led.get(*LedgerKey.of(att)) is None


def test_a_fifo_in_place_of_an_entry_cannot_hang_a_read(root: Path) -> None:
    led = Ledger(root)
    led.put(make_att(1), HOST)
    att = make_att(2)
    os.mkfifo(led.entry_path(*LedgerKey.of(att)))
    assert led.get(*LedgerKey.of(att)) is None
    assert led.lookup_cached(*LedgerKey.of(att), RUBRICS, PACKS) is None
    assert run_ids(led.list()) == ["review-0001"]


def test_a_fifo_at_an_entry_name_is_warned_about_once(root: Path) -> None:
    led = Ledger(root)
    led.put(make_att(1), HOST)
    planted = led.entry_path(*LedgerKey.of(make_att(2)))
    os.mkfifo(planted)
    assert led.rebuild_index() == 1
    assert run_ids(led.list()) == ["review-0001"]
    assert [w for w in led.warnings if str(planted) in w and "not a regular file" in w]
    before = len(led.warnings)
    assert run_ids(led.list()) == ["review-0001"]
    assert len(led.warnings) == before, "an unchanged bad file is warned about once, not on every query"


def test_a_fifo_in_place_of_an_entry_lock_is_a_ledger_error(root: Path) -> None:
    led = Ledger(root)
    att = make_att(1)
    path = led.put(att, HOST)
    lock = path.with_name(f"{att.rangeSha}.lock")
    lock.unlink()
    os.mkfifo(lock)
    with pytest.raises(LedgerError, match=re.escape(f"cannot lock {lock}")):
        led.put(att, HOST)
    pr = {"provider": "github", "repo": "acme/widgets", "number": 12, "url": "https://github.com/acme/widgets/pull/12"}
    with pytest.raises(LedgerError, match=re.escape(f"cannot lock {lock}")):
        led.set_pr(*LedgerKey.of(att), pr)
    assert led.get(*LedgerKey.of(att)) is not None


def test_list_on_a_missing_root_is_empty_and_creates_nothing(root: Path) -> None:
    assert Ledger(root).list() == []
    assert not root.exists()


# --------------------------------------------------------------------------- annotations


def test_annotations_never_touch_the_attestation(root: Path) -> None:
    led = Ledger(root)
    att = make_att(1)
    path = led.put(att, HOST)
    before = path.read_bytes()
    key = LedgerKey.of(att)
    pr = {"provider": "github", "repo": "acme/widgets", "number": 12, "url": "https://github.com/acme/widgets/pull/12"}
    led.set_pr(*key, pr)
    snap = {"fetchedAt": "2025-01-02T00:00:00.000Z", "state": "open",
            "reviews": [{"login": "amy", "state": "APPROVED", "submittedAt": "2025-01-02T00:00:00Z"}]}
    led.append_pr_status(*key, snap)
    led.append_pr_status(*key, {**snap, "state": "merged", "checks": [{"name": "ci", "conclusion": None}]})
    assert path.read_bytes() == before
    ann = led.annotations(*key)
    assert ann["pr"] == pr and [s["state"] for s in ann["prStatus"]] == ["open", "merged"]
    side = path.with_name(f"{att.rangeSha}.annotations.json")
    assert json.loads(side.read_text()) == ann and side.read_text().endswith("\n")
    assert not [p for p in path.parent.iterdir() if ".tmp." in p.name]
    row = led.list()[0].to_json()
    assert row["pr"] == pr and row["prState"] == "merged"
    hit = led.lookup_cached(*key, RUBRICS, PACKS)
    assert hit is not None and hit.to_json_dict() == att.to_json_dict()


def test_annotations_reject_bad_input_and_missing_entries(root: Path) -> None:
    led = Ledger(root)
    att = make_att(1)
    key = LedgerKey.of(att)
    with pytest.raises(LedgerError, match="no ledger entry"):
        led.append_pr_status(*key, {"fetchedAt": "x", "state": "open", "reviews": []})
    led.put(att, HOST)
    with pytest.raises(LedgerError, match="state"):
        led.append_pr_status(*key, {"fetchedAt": "x", "state": "approved", "reviews": []})
    with pytest.raises(LedgerError, match="pr must be"):
        led.set_pr(*key, {"provider": "gitlab", "repo": "a/b", "number": 1, "url": "u"})
    assert led.annotations(*key) == {}
