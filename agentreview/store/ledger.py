"""The ledger: this host's record of every attestation, and the source of the verdict cache.

Layout (AIP-62 §The ledger, reference-notes 2.13)::

    <root>/<repoSlug>/<manifestSha>/<binding>/<rangeSha>.json              {attestation, host}
    <root>/<repoSlug>/<manifestSha>/<binding>/<rangeSha>.annotations.json  {pr?, prStatus?}
    <root>/<repoSlug>/runs/<runId>/                                        run scratch
    <root>/index.sqlite                                                    a disposable index

The JSON files are the source of truth. They are written atomically (temp file in
the same directory, fsync, rename, fsync of the directory) under a per-entry file
lock, so a reader never sees half an entry and concurrent writers of one key
leave one whole file.

The sqlite index only makes ``list`` and ``candidates`` fast at 100,000 entries.
It can always be thrown away: it is rebuilt when missing or corrupt, and it is
brought up to date cheaply on every query, because it cannot assume it saw every
write (an older host, or a copy, may add files without it):

* every directory it has indexed is recorded with its mtime; a directory whose
  mtime changed is re-listed (a rename into a directory changes its mtime), and
  one modified within the last few seconds is re-listed again next time, since
  file-system timestamps are coarser than the writes they must tell apart;
* each indexed file is recorded with its (mtime, size, inode); a row is checked
  against its file before it is returned, so a replaced or vanished file is
  re-read or dropped rather than served stale.

A file that cannot be read as an entry, or that sits under a key its content does
not name, is skipped with a warning, never a crash, and never served from cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agentreview.host.files import MissingFileError, UnreadableFileError, atomic_write_text, read_regular_file
from agentreview.host.git import repo_slug
from agentreview.model.digests import loads_strict, multiset_key, range_sha
from agentreview.model.fold import fold_verdict

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation

INDEX_NAME = "index.sqlite"
INDEX_LOCK = ".index.lock"
INDEX_SCHEMA_VERSION = 1
LOCK_TIMEOUT_S = 30.0
BUSY_TIMEOUT_MS = 5000
# A directory changed this recently may change again within the same timestamp tick
# (ext4 stamps with a coarse clock, FAT with 2 s), so it is re-listed on the next query.
RACY_NS = 3_000_000_000
# Largest entry file read; a real one is a few KiB.
MAX_ENTRY_BYTES = 16 * 1024 * 1024

HEX64 = re.compile(r"^[0-9a-f]{64}$")
ENTRY_NAME = re.compile(r"^([0-9a-f]{64})\.json$")
BINDING_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
RUN_ID = re.compile(r"^review-[A-Za-z0-9._-]{1,200}$")
PR_STATES = ("open", "merged", "closed")
LANE_STATUSES = ("pass", "fail", "skipped", "timeout")


class LedgerError(Exception):
    """A ledger operation that cannot be done as asked (bad key, lock timeout, no entry)."""


class LedgerKey(NamedTuple):
    """``(repoRemote, manifestSha, binding, rangeSha)``: one file per key."""

    repo_remote: str
    manifest_sha: str
    binding: str
    range_sha: str

    @classmethod
    def of(cls, att: Attestation) -> LedgerKey:
        return cls(att.target.repoRemote, att.manifestSha, att.binding, att.rangeSha)


@dataclass(frozen=True)
class HostInfo:
    """Where the reviewed checkout lives on this host. Never part of an attestation, never exported."""

    repo_root: str
    manifest_path: str
    export_dir: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> HostInfo:
        if not isinstance(data, Mapping):
            raise ValueError("'host' must be an object {repoRoot, manifestPath, exportDir?}")
        root, manifest, export = data.get("repoRoot"), data.get("manifestPath"), data.get("exportDir")
        if not isinstance(root, str) or not isinstance(manifest, str):
            raise ValueError("'host.repoRoot' and 'host.manifestPath' must be strings")
        if export is not None and not isinstance(export, str):
            raise ValueError("'host.exportDir' must be a string")
        return cls(root, manifest, export)

    def to_json(self) -> dict[str, str]:
        out = {"repoRoot": self.repo_root, "manifestPath": self.manifest_path}
        if self.export_dir is not None:
            out["exportDir"] = self.export_dir
        return out


@dataclass(frozen=True)
class LedgerEntry:
    """One ledger file: the attestation (validated), its raw JSON as stored, and the host data."""

    attestation: Attestation
    raw: dict[str, Any]
    host: HostInfo
    path: Path


@dataclass(frozen=True)
class LedgerRow:
    """A settled ``review_ledger`` row (reference-notes 5.2), plus where its file is."""

    data: dict[str, Any]
    path: Path

    @property
    def key(self) -> LedgerKey:
        d = self.data
        return LedgerKey(d["repoRemote"], d["manifestSha"], d["binding"], d["rangeSha"])

    @property
    def run_id(self) -> str:
        return str(self.data["runId"])

    @property
    def binding(self) -> str:
        return str(self.data["binding"])

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)


def _ledger_slug(repo_remote: str) -> str:
    # repoSlug keeps '.', so a remote of '.' or '..' would name a directory that is not
    # below the root. Those two degenerate remotes use the spec's fallback name instead.
    slug = repo_slug(repo_remote)
    return "repo" if slug in (".", "..") else slug


def _check_key(key: LedgerKey) -> None:
    if not isinstance(key.repo_remote, str) or not key.repo_remote:
        raise LedgerError("ledger key: repoRemote must be a non-empty string")
    if not HEX64.match(key.manifest_sha or ""):
        raise LedgerError(f"ledger key: manifestSha '{key.manifest_sha}' is not 64 lowercase hex")
    if not HEX64.match(key.range_sha or ""):
        raise LedgerError(f"ledger key: rangeSha '{key.range_sha}' is not 64 lowercase hex")
    if not BINDING_SEGMENT.match(key.binding or ""):
        raise LedgerError(
            f"ledger key: binding '{key.binding}' cannot name a ledger directory (letters, digits, '.', '_', '-')"
        )


# --------------------------------------------------------------------------- reading entries


def _parse_entry(data: bytes, path: Path) -> LedgerEntry:
    """Parse an entry file; raise ValueError saying what is wrong with it."""
    from pydantic import ValidationError

    from agentreview.model.attestation import Attestation

    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("attestation"), dict):
        raise ValueError("not a ledger entry {attestation, host}")
    raw = doc["attestation"]
    try:
        att = Attestation.read(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "attestation"
        raise ValueError(f"attestation.{where}: {first.get('msg')}") from exc
    host = HostInfo.from_json(doc.get("host"))
    if att.rangeSha != range_sha(att.target.baseSha, att.target.headSha):
        raise ValueError("rangeSha does not match target.baseSha..target.headSha")
    if att.verdict != att.refold():
        raise ValueError(f"verdict '{att.verdict}' does not follow from its lanes")
    return LedgerEntry(att, raw, host, path)


def _key_matches(entry: LedgerEntry, key: LedgerKey) -> bool:
    return LedgerKey.of(entry.attestation) == key


def _str(doc: Mapping[str, Any], name: str, where: str = "attestation") -> str:
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}.{name} must be a non-empty string")
    return value


def _summarize(doc: Any) -> tuple[LedgerKey, tuple[str, str, str, str | None, str], dict[str, Any]]:
    """The index columns and the settled ``review_ledger`` row (reference-notes 5.2) of an entry.

    Checked without the full document model, because rebuilding the index of
    100,000 entries must take seconds, not minutes: the key fields have their exact
    shape, rangeSha is recomputed and the verdict re-folded. Everything else is
    validated when an entry is read (``get``, ``lookup_cached``, ``candidates``).
    Annotations are not part of the row; a query reads them.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("attestation"), dict):
        raise ValueError("not a ledger entry {attestation, host}")
    att, host = doc["attestation"], HostInfo.from_json(doc.get("host"))
    if att.get("schema") != "agentproto.review.attestation/v1":
        raise ValueError(f"unknown schema {att.get('schema')!r}")
    target = att.get("target")
    if not isinstance(target, dict):
        raise ValueError("attestation.target must be an object")
    remote, base, head = (_str(target, k, "attestation.target") for k in ("repoRemote", "baseSha", "headSha"))
    run_id, review_id, binding, created = (_str(att, k) for k in ("runId", "reviewId", "binding", "createdAt"))
    manifest_sha, rsha = _str(att, "manifestSha"), _str(att, "rangeSha")
    if not run_id.startswith("review-") or not HEX64.match(manifest_sha) or not HEX64.match(rsha):
        raise ValueError("attestation.runId, manifestSha or rangeSha has the wrong shape")
    if rsha != range_sha(base, head):
        raise ValueError("rangeSha does not match target.baseSha..target.headSha")
    lanes = att.get("lanes")
    if not isinstance(lanes, list) or not all(
        isinstance(lane, dict) and isinstance(lane.get("id"), str) and lane.get("status") in LANE_STATUSES
        and isinstance(lane.get("blocking"), bool)
        for lane in lanes
    ):
        raise ValueError("attestation.lanes must be LaneResults {id, status, blocking, ...}")
    verdict = att.get("verdict")
    if verdict != fold_verdict((lane["blocking"], lane["status"]) for lane in lanes):
        raise ValueError(f"verdict {verdict!r} does not follow from its lanes")
    attestor = att.get("attestor")
    if not isinstance(attestor, dict):
        raise ValueError("attestation.attestor must be an object")
    requester = att.get("requester") if isinstance(att.get("requester"), dict) else None
    session = requester.get("sessionId") if requester and isinstance(requester.get("sessionId"), str) else None
    row: dict[str, Any] = {
        "runId": run_id,
        "reviewId": review_id,
        "binding": binding,
        "verdict": verdict,
        "repoRemote": remote,
        "baseSha": base,
        "headSha": head,
        "rangeSha": rsha,
        "manifestSha": manifest_sha,
        "createdAt": created,
        "cwd": host.repo_root,
    }
    if att.get("dirty") is True:
        row["dirty"] = True
    if requester:
        row["requester"] = requester
    if isinstance(att.get("pr"), dict):
        row["pr"] = att["pr"]
    row["signed"] = isinstance(attestor.get("signature"), dict)
    row["lanes"] = [{"id": lane["id"], "status": lane["status"], "blocking": lane["blocking"]} for lane in lanes]
    return LedgerKey(remote, manifest_sha, binding, rsha), (base, head, run_id, session, created), row


def _stat_sig(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


# --------------------------------------------------------------------------- the index

_SCHEMA = """
CREATE TABLE IF NOT EXISTS dirs (rel TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entries (
    dir TEXT NOT NULL,
    name TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    repo_remote TEXT,
    manifest_sha TEXT,
    binding TEXT,
    range_sha TEXT,
    base_sha TEXT,
    head_sha TEXT,
    run_id TEXT,
    requester_session TEXT,
    created_at TEXT,
    row_json TEXT,
    PRIMARY KEY (dir, name)
);
CREATE INDEX IF NOT EXISTS entries_created ON entries (created_at);
CREATE INDEX IF NOT EXISTS entries_key ON entries (repo_remote, manifest_sha, binding, created_at);
CREATE INDEX IF NOT EXISTS entries_range ON entries (range_sha);
CREATE INDEX IF NOT EXISTS entries_head ON entries (head_sha);
CREATE INDEX IF NOT EXISTS entries_run ON entries (run_id);
"""

_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and (code & 0xFF) in _CORRUPT_CODES:
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


@dataclass
class _Visit:
    """State of one index sync: what the index knew about directories, and what changed."""

    known: dict[str, int]
    children: dict[str, list[str]] = field(default_factory=dict)
    now_ns: int = 0

    def __post_init__(self) -> None:
        for rel in self.known:
            if rel:
                parent = rel.rpartition("/")[0]
                self.children.setdefault(parent, []).append(rel)
        self.now_ns = time.time_ns()


def _depth(rel: str) -> int:
    return 0 if not rel else rel.count("/") + 1


def _valid_child(depth: int, name: str) -> bool:
    """Which directory names belong to the ledger layout at each depth (``runs/`` and stray names do not)."""
    if depth == 0:
        return name not in (".", "..")
    if depth == 1:
        return bool(HEX64.match(name))
    return bool(BINDING_SEGMENT.match(name))


class Ledger:
    """The ledger under ``root`` (normally ``home.ledger_root()``).

    ``warn`` receives one line per problem found (a corrupt entry, an index that had
    to be rebuilt); by default the lines are collected in :attr:`warnings`.
    """

    def __init__(self, root: Path, *, warn: Callable[[str], None] | None = None):
        self.root = Path(root)
        self._root_s = str(self.root)
        self.warnings: list[str] = []
        self._warn = warn or self.warnings.append
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ paths

    def entry_path(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> Path:
        key = LedgerKey(repo_remote, manifest_sha, binding, range_sha)
        _check_key(key)
        return self.root / _ledger_slug(repo_remote) / manifest_sha / binding / f"{range_sha}.json"

    def annotations_path(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> Path:
        return self.entry_path(repo_remote, manifest_sha, binding, range_sha).with_name(
            f"{range_sha}.annotations.json"
        )

    def run_dir(self, repo_remote: str, run_id: str) -> Path:
        """``<root>/<repoSlug>/runs/<runId>/``, created private: scratch for agent verdict files."""
        if not RUN_ID.match(run_id):
            raise LedgerError(f"run id '{run_id}' cannot name a run directory (expected review-<id>)")
        path = self.root / _ledger_slug(repo_remote) / "runs" / run_id
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    def _entry_lock(self, entry: Path) -> Any:
        from agentreview.host.locks import FileLock

        return FileLock(str(entry.with_name(entry.name[: -len(".json")] + ".lock")), timeout=LOCK_TIMEOUT_S)

    # ------------------------------------------------------------------ writing

    def put(self, attestation: Attestation, host: HostInfo | Mapping[str, Any]) -> Path:
        """Record an attestation (every one: incomplete and dirty included); a re-run of the key overwrites."""
        from agentreview.host.locks import Timeout

        info = host if isinstance(host, HostInfo) else HostInfo.from_json(host)
        if attestation.verdict != attestation.refold():
            raise LedgerError(f"refusing to record run {attestation.runId}: its verdict does not follow from its lanes")
        key = LedgerKey.of(attestation)
        path = self.entry_path(*key)
        text = json.dumps({"attestation": attestation.to_json_dict(), "host": info.to_json()}, indent=2,
                          ensure_ascii=False) + "\n"
        self._make_dirs(path.parent)
        try:
            with self._entry_lock(path):
                atomic_write_text(path, text)
                st = path.stat()
        except Timeout as exc:
            raise LedgerError(
                f"timed out after {LOCK_TIMEOUT_S:.0f}s waiting for the ledger entry lock of {path}"
            ) from exc
        params = self._index_params(path.parent.relative_to(self.root).as_posix(), path.name, st, text.encode())
        self._index_write(lambda conn: conn.execute(_UPSERT, params))
        return path

    def _make_dirs(self, leaf: Path) -> None:
        """Create the entry's directories private to this user: entries hold checkout paths,
        findings and command-output tails."""
        current = self.root
        current.mkdir(parents=True, exist_ok=True, mode=0o700)
        for part in leaf.relative_to(self.root).parts:
            current = current / part
            current.mkdir(exist_ok=True, mode=0o700)

    # ------------------------------------------------------------------ reading one entry

    def _read_entry(self, path: Path, key: LedgerKey) -> LedgerEntry | None:
        """Read and fully validate the entry at ``path``; it must be a regular file (never a
        symlink) holding an attestation for ``key``. Anything else is None, with a warning."""
        try:
            data = read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False)
        except MissingFileError:
            return None
        except UnreadableFileError as exc:
            self._warn(f"ledger entry {path} {exc} — skipped")
            return None
        try:
            entry = _parse_entry(data, path)
        except ValueError as exc:
            self._warn(f"ledger entry {path} is corrupt ({exc}) — skipped; delete it or re-run the review")
            return None
        if not _key_matches(entry, key):
            self._warn(f"ledger entry {path} holds an attestation for another key — skipped")
            return None
        return entry

    def get(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> LedgerEntry | None:
        """The entry for a key (``ledger.get(*key)``), or None when absent or unreadable."""
        key = LedgerKey(repo_remote, manifest_sha, binding, range_sha)
        return self._read_entry(self.entry_path(*key), key)

    def lookup_cached(
        self,
        repo_remote: str,
        manifest_sha: str,
        binding: str,
        range_sha: str,
        rubrics: Sequence[Mapping[str, Any] | Any],
        packs: Sequence[Mapping[str, Any] | Any] | None,
    ) -> Attestation | None:
        """The recorded attestation if the cache rule allows serving it, else None.

        Rule (AIP-62 §Cache rule): the entry exists, its verdict is not incomplete, it
        is not dirty, and its rubric and pack digests equal the current ones as
        multisets — packs including ``alg``.
        """
        entry = self.get(repo_remote, manifest_sha, binding, range_sha)
        if entry is None:
            return None
        att = entry.attestation
        if att.verdict == "incomplete" or att.dirty:
            return None
        recorded_rubrics = _multiset(att.rubrics, ("check", "path", "sha256"))
        if recorded_rubrics is None or recorded_rubrics != _multiset(rubrics, ("check", "path", "sha256")):
            return None
        pack_fields = ("ref", "id", "version", "alg", "sha256")
        recorded_packs = _multiset(att.packs or [], pack_fields)
        if recorded_packs is None or recorded_packs != _multiset(packs or [], pack_fields):
            return None
        return att

    # ------------------------------------------------------------------ annotations

    def annotations(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> dict[str, Any]:
        """The annotations sidecar (``{}`` when there is none or it is unreadable)."""
        path = self.annotations_path(repo_remote, manifest_sha, binding, range_sha)
        return self._read_annotations(path)

    def _read_annotations(self, path: Path) -> dict[str, Any]:
        try:
            data = loads_strict(read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False))
        except MissingFileError:
            return {}
        except (OSError, ValueError, RecursionError) as exc:
            self._warn(f"annotations {path} are unreadable ({exc}) — ignored")
            return {}
        return data if isinstance(data, dict) else {}

    def set_pr(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str, pr: Any) -> Path:
        """Link a pull request to an entry (annotations only; the attestation is never touched)."""
        from agentreview.model.attestation import PullRequest

        data = pr.model_dump(mode="json") if hasattr(pr, "model_dump") else pr
        try:
            ref = PullRequest.model_validate(data).to_json_dict()
        except Exception as exc:
            raise LedgerError(f"pr must be {{provider: github, repo: owner/name, number, url}}: {exc}") from exc
        return self._update_annotations(repo_remote, manifest_sha, binding, range_sha, lambda ann: ann.update(pr=ref))

    def append_pr_status(
        self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str, snapshot: Mapping[str, Any]
    ) -> Path:
        """Append one PR status snapshot (oldest first) to the entry's annotations."""
        snap = _check_snapshot(snapshot)
        return self._update_annotations(
            repo_remote, manifest_sha, binding, range_sha,
            lambda ann: ann.setdefault("prStatus", []).append(snap),
        )

    def _update_annotations(
        self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str,
        change: Callable[[dict[str, Any]], None],
    ) -> Path:
        from agentreview.host.locks import Timeout

        entry = self.entry_path(repo_remote, manifest_sha, binding, range_sha)
        if not entry.is_file():
            raise LedgerError(f"no ledger entry for rangeSha {range_sha} (binding {binding}) to annotate")
        path = self.annotations_path(repo_remote, manifest_sha, binding, range_sha)
        try:
            with self._entry_lock(entry):
                ann = self._read_annotations(path)
                if not isinstance(ann.get("prStatus", []), list):
                    ann["prStatus"] = []
                change(ann)
                atomic_write_text(path, json.dumps(ann, indent=2, ensure_ascii=False) + "\n")
        except Timeout as exc:
            raise LedgerError(f"timed out waiting for the ledger entry lock of {entry}") from exc
        return path

    # ------------------------------------------------------------------ queries (through the index)

    def list(
        self,
        *,
        repo: str | None = None,
        binding: str | None = None,
        range_sha: str | None = None,
        base_sha: str | None = None,
        head_sha: str | None = None,
        manifest_sha: str | None = None,
        run_id: str | None = None,
        requester_session_id: str | None = None,
        limit: int = 50,
    ) -> list[LedgerRow]:
        """Settled rows matching every given filter, newest first by ``createdAt``."""
        if limit < 1 or not self.root.is_dir():
            return []
        filters = {
            "repo_remote": repo,
            "binding": binding,
            "range_sha": range_sha,
            "base_sha": base_sha,
            "head_sha": head_sha,
            "manifest_sha": manifest_sha,
            "run_id": run_id,
            "requester_session": requester_session_id,
        }
        scope = self._scope(repo, manifest_sha, binding)
        where = " AND ".join(["ok = 1"] + [f"{col} = ?" for col, val in filters.items() if val is not None])
        params = [val for val in filters.values() if val is not None]
        sql = (f"SELECT dir, name, mtime_ns, size, ino, row_json FROM entries WHERE {where} "
               "ORDER BY created_at DESC, dir, name LIMIT ?")
        rows = self._query_verified(scope, sql, [*params, limit])
        out = []
        for rel, name, row_json in rows:
            path = self.root / rel / name
            data = json.loads(row_json)
            ann = self._read_annotations(path.with_name(name[: -len(".json")] + ".annotations.json"))
            if "pr" not in data and isinstance(ann.get("pr"), dict):
                data["pr"] = ann["pr"]
            status = ann.get("prStatus")
            if isinstance(status, list) and status and isinstance(status[-1], dict) and "state" in status[-1]:
                data["prState"] = status[-1]["state"]
            out.append(LedgerRow(data, path))
        return out

    def candidates(self, repo_remote: str, manifest_sha: str, binding: str) -> Iterator[Attestation]:
        """Attestations under ``(repoRemote, manifestSha, binding)``, newest first (composition input)."""
        if not self.root.is_dir():
            return
        scope = self._scope(repo_remote, manifest_sha, binding)
        sql = ("SELECT dir, name, mtime_ns, size, ino, row_json FROM entries WHERE ok = 1 AND repo_remote = ? "
               "AND manifest_sha = ? AND binding = ? ORDER BY created_at DESC, dir, name")
        rows = self._query_verified(scope, sql, [repo_remote, manifest_sha, binding])
        for rel, name, _ in rows:
            path = self.root / rel / name
            entry = self._read_entry(path, LedgerKey(repo_remote, manifest_sha, binding, name[: -len(".json")]))
            if entry is not None:
                yield entry.attestation

    def rebuild_index(self) -> int:
        """Discard the index and rebuild it from the files; return how many entries it holds."""
        with self._lock:
            self._close()
            self._remove_index_files()
            count = self._index_read(lambda conn: conn.execute("SELECT COUNT(*) FROM entries WHERE ok = 1").fetchone())
            return int(count[0])

    def close(self) -> None:
        with self._lock:
            self._close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scope(self, repo: str | None, manifest_sha: str | None, binding: str | None) -> str:
        """The smallest directory that holds every match, so a filtered query syncs only that subtree."""
        if not repo:
            return ""
        slug = _ledger_slug(repo)
        if manifest_sha and HEX64.match(manifest_sha):
            if binding and BINDING_SEGMENT.match(binding):
                return f"{slug}/{manifest_sha}/{binding}"
            return f"{slug}/{manifest_sha}"
        return slug

    def _query_verified(self, scope: str, sql: str, params: Sequence[Any]) -> list[tuple[str, str, str]]:
        """Sync ``scope``, run ``sql``, and check each row against its file; re-read and retry
        when a file changed behind the index (replaced in place, or gone)."""

        def run(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
            self._sync(conn, scope)
            for _ in range(3):
                rows = conn.execute(sql, params).fetchall()
                stale = []
                for rel, name, mtime_ns, size, ino, _row in rows:
                    try:
                        st = os.lstat(os.path.join(self._root_s, rel, name))
                    except FileNotFoundError:
                        stale.append((rel, name, None))
                        continue
                    if _stat_sig(st) != (mtime_ns, size, ino):
                        stale.append((rel, name, st))
                if not stale:
                    return [(rel, name, row) for rel, name, _m, _s, _i, row in rows]
                with _transaction(conn):
                    for rel, name, st in stale:
                        if st is None:
                            conn.execute("DELETE FROM entries WHERE dir = ? AND name = ?", (rel, name))
                        else:
                            conn.execute(_UPSERT, self._index_params(rel, name, st))
            return [(rel, name, row) for rel, name, _m, _s, _i, row in conn.execute(sql, params).fetchall()]

        return self._index_read(run)

    # ------------------------------------------------------------------ index plumbing

    def _index_read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn`` on the index; a corrupt index is rebuilt once, an unusable one replaced
        by an in-memory index built from the files (the answer is the same, only slower)."""
        with self._lock:
            for attempt in range(2):
                try:
                    return fn(self._connection())
                except sqlite3.Error as exc:
                    self._close()
                    if attempt == 0 and (_is_corruption(exc) or isinstance(exc, _RebuildError)):
                        self._warn(f"ledger index {self.root / INDEX_NAME} was unusable ({exc}) — rebuilding it")
                        self._remove_index_files()
                        continue
                    self._warn(f"ledger index {self.root / INDEX_NAME} cannot be used ({exc}) — scanning the files")
                    self._conn = self._open(":memory:")
                    return fn(self._conn)
            raise AssertionError("unreachable")  # pragma: no cover

    def _index_write(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        """Best effort: the file is already the truth; a later query finds it either way."""
        with self._lock:
            try:
                conn = self._connection()
                with _transaction(conn):
                    fn(conn)
            except sqlite3.Error:
                self._close()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            conn = self._open(str(self.root / INDEX_NAME))
            self._conn = conn
            if conn.execute("SELECT 1 FROM dirs LIMIT 1").fetchone() is None:
                self._first_sync(conn)
        return self._conn

    def _first_sync(self, conn: sqlite3.Connection) -> None:
        """Fill a new index from a full scan, under a lock so concurrent processes scan once
        (the second one finds the work done and only checks directory times)."""
        from agentreview.host.locks import FileLock, Timeout

        try:
            with FileLock(str(self.root / INDEX_LOCK), timeout=600):
                self._sync(conn, "")
        except Timeout:
            self._sync(conn, "")

    def _open(self, target: str) -> sqlite3.Connection:
        conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if target != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, INDEX_SCHEMA_VERSION):
                raise _RebuildError(f"index schema version {version}, expected {INDEX_SCHEMA_VERSION}")
            if version == 0:  # new file (or one a concurrent process is creating: the DDL is idempotent)
                conn.executescript(
                    "BEGIN IMMEDIATE;" + _SCHEMA + f"PRAGMA user_version = {INDEX_SCHEMA_VERSION};COMMIT;"
                )
        except BaseException:
            conn.close()
            raise
        return conn

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def _remove_index_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.root / (INDEX_NAME + suffix))

    # ------------------------------------------------------------------ sync: the files are the truth

    def _sync(self, conn: sqlite3.Connection, scope: str) -> None:
        if scope:
            rows = conn.execute(
                "SELECT rel, mtime_ns FROM dirs WHERE rel = ? OR (rel >= ? AND rel < ?)",
                (scope, scope + "/", scope + "0"),
            ).fetchall()
        else:
            rows = conn.execute("SELECT rel, mtime_ns FROM dirs").fetchall()
        self._visit(conn, _Visit(dict(rows)), scope)

    def _visit(self, conn: sqlite3.Connection, visit: _Visit, rel: str) -> None:
        path = os.path.join(self._root_s, rel) if rel else self._root_s
        try:
            st: os.stat_result | None = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode):
            if rel in visit.known or visit.children.get(rel):
                with _transaction(conn):
                    self._drop_subtree(conn, rel)
            return
        depth = _depth(rel)
        if visit.known.get(rel) == st.st_mtime_ns:
            for child in visit.children.get(rel, []):
                self._visit(conn, visit, child)
            return
        # Settled timestamps are trusted next time; a racy one is re-listed.
        record = st.st_mtime_ns if visit.now_ns - st.st_mtime_ns > RACY_NS else -1
        if depth == 3:
            with _transaction(conn):
                self._reconcile_leaf(conn, rel, path)
                self._record_dir(conn, visit, rel, record)
            return
        try:
            names = sorted(
                de.name for de in os.scandir(path)
                if de.is_dir(follow_symlinks=False) and _valid_child(depth, de.name)
            )
        except OSError as exc:
            self._warn(f"ledger directory {path} cannot be listed ({exc.strerror}) — skipped")
            return
        listed = {f"{rel}/{n}" if rel else n for n in names}
        gone = [child for child in visit.children.get(rel, []) if child not in listed]
        if gone:
            with _transaction(conn):
                for child in gone:
                    self._drop_subtree(conn, child)
        for child in sorted(listed):
            self._visit(conn, visit, child)
        if visit.known.get(rel) != record:
            with _transaction(conn):
                self._record_dir(conn, visit, rel, record)

    def _record_dir(self, conn: sqlite3.Connection, visit: _Visit, rel: str, mtime_ns: int) -> None:
        conn.execute("INSERT OR REPLACE INTO dirs (rel, mtime_ns) VALUES (?, ?)", (rel, mtime_ns))
        visit.known[rel] = mtime_ns

    def _drop_subtree(self, conn: sqlite3.Connection, rel: str) -> None:
        lo, hi = rel + "/", rel + "0"
        conn.execute("DELETE FROM dirs WHERE rel = ? OR (rel >= ? AND rel < ?)", (rel, lo, hi))
        conn.execute("DELETE FROM entries WHERE dir = ? OR (dir >= ? AND dir < ?)", (rel, lo, hi))

    def _reconcile_leaf(self, conn: sqlite3.Connection, rel: str, path: str) -> None:
        indexed = {
            name: (m, s, i)
            for name, m, s, i in conn.execute("SELECT name, mtime_ns, size, ino FROM entries WHERE dir = ?", (rel,))
        }
        seen: set[str] = set()
        try:
            scan = list(os.scandir(path))
        except OSError as exc:
            self._warn(f"ledger directory {path} cannot be listed ({exc.strerror}) — skipped")
            return
        batch = []
        for de in scan:
            if not ENTRY_NAME.match(de.name) or not de.is_file(follow_symlinks=False):
                continue
            try:
                st = de.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            seen.add(de.name)
            if indexed.get(de.name) != _stat_sig(st):
                batch.append(self._index_params(rel, de.name, st))
        conn.executemany(_UPSERT, batch)
        conn.executemany("DELETE FROM entries WHERE dir = ? AND name = ?", [(rel, n) for n in indexed.keys() - seen])

    def _index_params(self, rel: str, name: str, st: os.stat_result, data: bytes | None = None) -> tuple[Any, ...]:
        """The index row of one entry file; a bad file gets a row marked not-ok (warned about once).

        ``st`` is taken before the read: if the file is replaced meanwhile, the recorded
        signature is the older one and the next query re-reads the file.
        """
        path = os.path.join(self._root_s, rel, name)
        try:
            if data is None:
                if st.st_size > MAX_ENTRY_BYTES:
                    raise ValueError(f"larger than {MAX_ENTRY_BYTES} bytes")
                with open(path, "rb") as fh:
                    data = fh.read(MAX_ENTRY_BYTES + 1)
            key, (base, head, run_id, session, created), row = _summarize(json.loads(data))
            slug, manifest_sha, binding = rel.split("/")
            if (_ledger_slug(key.repo_remote), key.manifest_sha, key.binding, f"{key.range_sha}.json") != (
                slug, manifest_sha, binding, name
            ):
                raise ValueError("it holds an attestation for another key")
        except FileNotFoundError:
            return (rel, name, *_stat_sig(st), 0, *([None] * 10))
        except (OSError, ValueError) as exc:  # json and UnicodeDecodeError are ValueErrors
            self._warn(f"ledger entry {path} is unusable ({exc}) — skipped; delete it or re-run the review")
            return (rel, name, *_stat_sig(st), 0, *([None] * 10))
        return (rel, name, *_stat_sig(st), 1, key.repo_remote, key.manifest_sha, key.binding, key.range_sha, base,
                head, run_id, session, created, json.dumps(row, ensure_ascii=False))


_UPSERT = (
    "INSERT OR REPLACE INTO entries (dir, name, mtime_ns, size, ino, ok, repo_remote, manifest_sha, binding, "
    "range_sha, base_sha, head_sha, run_id, requester_session, created_at, row_json) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class _RebuildError(sqlite3.DatabaseError):
    """The index exists but has another schema version: discard and rebuild it."""


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _multiset(items: Sequence[Mapping[str, Any] | Any], fields: tuple[str, ...]) -> str | None:
    """The cache rule's multiset key; None when a value is not a string or holds NUL or a
    newline (the separators), so a crafted value can never make two different sets equal."""
    tuples = []
    for item in items:
        values = [item.get(f) if isinstance(item, Mapping) else getattr(item, f, None) for f in fields]
        if not all(isinstance(v, str) and "\0" not in v and "\n" not in v for v in values):
            return None
        tuples.append(values)
    return multiset_key(tuples)


def _check_snapshot(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """A PR status snapshot {fetchedAt, state, reviews[{login, state, submittedAt}], checks?, headSha?}."""
    snap = dict(snapshot)
    if not isinstance(snap.get("fetchedAt"), str):
        raise LedgerError("prStatus snapshot: 'fetchedAt' must be an ISO timestamp string")
    if snap.get("state") not in PR_STATES:
        raise LedgerError(f"prStatus snapshot: 'state' must be one of {', '.join(PR_STATES)}")
    reviews = snap.get("reviews")
    if not isinstance(reviews, list) or not all(
        isinstance(r, Mapping) and all(isinstance(r.get(k), str) for k in ("login", "state", "submittedAt"))
        for r in reviews
    ):
        raise LedgerError("prStatus snapshot: 'reviews' must be a list of {login, state, submittedAt}")
    checks = snap.get("checks")
    if checks is not None and not (
        isinstance(checks, list)
        and all(isinstance(c, Mapping) and isinstance(c.get("name"), str) for c in checks)
    ):
        raise LedgerError("prStatus snapshot: 'checks' must be a list of {name, conclusion}")
    if snap.get("headSha") is not None and not isinstance(snap["headSha"], str):
        raise LedgerError("prStatus snapshot: 'headSha' must be a string")
    return snap


def print_warning(message: str) -> None:
    """A ``warn`` callback for command-line use: one line on stderr."""
    sys.stderr.write(f"agentreview: warning: {message}\n")
