"""The ledger's sqlite index: what makes ``list`` and ``candidates`` fast at 100,000 entries.

The JSON files are the source of truth; this index can always be thrown away. It is rebuilt
when missing or corrupt, replaced by an in-memory one when it cannot be used at all (the
answers stay the same, only slower), and brought up to date cheaply on every query, because
it cannot assume it saw every write (an older host, or a copy, may add files without it):

* every directory it has indexed is recorded with its mtime; a directory whose mtime changed
  is re-listed (a rename into a directory changes its mtime), and one modified within the
  last few seconds is re-listed again next time, since file-system timestamps are coarser
  than the writes they must tell apart;
* each indexed file is recorded with its (mtime, size, inode); a row is checked against its
  file before it is returned, so a replaced or vanished file is re-read or dropped rather
  than served stale.

A file that cannot be read as an entry (corrupt, a FIFO or symlink where an entry belongs,
or filed under a key its content does not name) gets a row marked not-ok, warned about once,
and is never listed.

One module of ~440 lines, on purpose: the sync, the row checks and the recovery from a corrupt
or unusable file all work on one connection under one lock, and each needs the others' state.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentreview.host.files import MissingFileError, UnreadableFileError, read_regular_file
from agentreview.model.digests import json_text
from agentreview.store.entries import MAX_ENTRY_BYTES, summarize
from agentreview.store.layout import ENTRY_NAME, INDEX_NAME, ledger_slug, scope_of, valid_child

INDEX_LOCK = ".index.lock"
INDEX_FILE_SUFFIXES = ("", "-wal", "-shm", "-journal")
INDEX_SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000
FIRST_SYNC_LOCK_TIMEOUT_S = 600
# A directory changed this recently may change again within the same timestamp tick
# (ext4 stamps with a coarse clock, FAT with 2 s), so it is re-listed on the next query.
RACY_NS = 3_000_000_000
# The columns a query may filter on (each an equality test).
FILTER_COLUMNS = frozenset(
    {"repo_remote", "manifest_sha", "binding", "range_sha", "base_sha", "head_sha", "run_id", "requester_session"}
)

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

_UPSERT = (
    "INSERT OR REPLACE INTO entries (dir, name, mtime_ns, size, ino, ok, repo_remote, manifest_sha, binding, "
    "range_sha, base_sha, head_sha, run_id, requester_session, created_at, row_json) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB


class _RebuildError(sqlite3.DatabaseError):
    """The index exists but has another schema version: discard and rebuild it."""


class _UnusableError(sqlite3.DatabaseError):
    """A file of the index is not a regular file (a FIFO, a directory, a device): leave it, scan instead."""


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and (code & 0xFF) in _CORRUPT_CODES:
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def _stat_sig(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _depth(rel: str) -> int:
    return 0 if not rel else rel.count("/") + 1


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


class LedgerIndex:
    """The index of the ledger under ``root``; ``warn`` gets one line per problem found.

    Thread-safe (one lock around the connection); several processes share the file through
    sqlite's own locking, and the first fill of a new index is done once, under a file lock.
    """

    def __init__(self, root: Path, warn: Callable[[str], None]):
        self.root = root
        self._root_s = str(root)
        self._warn = warn
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ the interface

    def query(self, filters: Mapping[str, str | None], *, limit: int | None = None) -> list[tuple[str, str, str]]:
        """``(dir, name, row_json)`` of the ok entries matching every non-None filter, newest first.

        Only the subtree the filters pin down is synced; each row is checked against its file.
        """
        given = {col: val for col, val in filters.items() if val is not None}
        unknown = set(given) - FILTER_COLUMNS
        if unknown:
            raise ValueError(f"unknown index column(s): {', '.join(sorted(unknown))}")
        where = " AND ".join(["ok = 1"] + [f"{col} = ?" for col in given])
        sql = (f"SELECT dir, name, mtime_ns, size, ino, row_json FROM entries WHERE {where} "
               "ORDER BY created_at DESC, dir, name" + (" LIMIT ?" if limit is not None else ""))
        params = [*given.values(), *([limit] if limit is not None else [])]
        scope = scope_of(given.get("repo_remote"), given.get("manifest_sha"), given.get("binding"))
        return self._query_verified(scope, sql, params)

    def record(self, entry: Path, st: os.stat_result, data: bytes) -> None:
        """Index an entry just written (best effort: the file is already the truth)."""
        params = self._params(entry.parent.relative_to(self.root).as_posix(), entry.name, st, data)
        with self._lock:
            try:
                conn = self._connection()
                with _transaction(conn):
                    conn.execute(_UPSERT, params)
            except (sqlite3.Error, OSError):
                self._close()

    def rebuild(self) -> int:
        """Discard the index and rebuild it from the files; return how many entries it holds."""
        with self._lock:
            self._close()
            self._remove_files()
            count = self._read(lambda conn: conn.execute("SELECT COUNT(*) FROM entries WHERE ok = 1").fetchone())
            return int(count[0])

    def close(self) -> None:
        with self._lock:
            self._close()

    # ------------------------------------------------------------------ queries

    def _query_verified(self, scope: str, sql: str, params: Sequence[Any]) -> list[tuple[str, str, str]]:
        """Sync ``scope``, run ``sql``, and check each row against its file; re-read and retry
        when a file changed behind the index (replaced in place, or gone)."""

        def run(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
            self._sync(conn, scope)
            for _ in range(3):
                rows = conn.execute(sql, params).fetchall()
                stale: list[tuple[str, str, os.stat_result | None]] = []
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
                    for rel, name, changed in stale:
                        if changed is None:
                            conn.execute("DELETE FROM entries WHERE dir = ? AND name = ?", (rel, name))
                        else:
                            conn.execute(_UPSERT, self._params(rel, name, changed))
            return [(rel, name, row) for rel, name, _m, _s, _i, row in conn.execute(sql, params).fetchall()]

        result: list[tuple[str, str, str]] = self._read(run)
        return result

    # ------------------------------------------------------------------ connection

    def _read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
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
                        self._remove_files()
                        continue
                    self._warn(f"ledger index {self.root / INDEX_NAME} cannot be used ({exc}) — scanning the files")
                    self._conn = self._open(":memory:")
                    return fn(self._conn)
            raise AssertionError("unreachable")  # pragma: no cover

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._check_files()
            conn = self._open(str(self.root / INDEX_NAME))
            self._conn = conn
            if conn.execute("SELECT 1 FROM dirs LIMIT 1").fetchone() is None:
                self._first_sync(conn)
        return self._conn

    def _check_files(self) -> None:
        """Refuse index files that are not regular files, before sqlite opens them: a planted FIFO
        or device must not be read or written as a database (sqlite would fail, less clearly)."""
        for suffix in INDEX_FILE_SUFFIXES:
            path = self.root / (INDEX_NAME + suffix)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _UnusableError(f"{path.name}: {exc.strerror or exc} — remove it") from exc
            if not stat.S_ISREG(st.st_mode):
                raise _UnusableError(f"{path.name} is not a regular file — remove it")

    def _first_sync(self, conn: sqlite3.Connection) -> None:
        """Fill a new index from a full scan, under a lock so concurrent processes scan once
        (the second one finds the work done and only checks directory times)."""
        from agentreview.host.locks import FileLock, Timeout

        try:
            with FileLock(str(self.root / INDEX_LOCK), timeout=FIRST_SYNC_LOCK_TIMEOUT_S):
                self._sync(conn, "")
        except Timeout:
            self._sync(conn, "")
        except OSError as exc:  # the lock file is a FIFO, a symlink, or cannot be created
            self._warn(f"ledger index lock {self.root / INDEX_LOCK} cannot be used ({exc}) — indexing without it")
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

    def _remove_files(self) -> None:
        """Delete the index; what cannot be deleted (a directory in its place) is refused when opened."""
        for suffix in INDEX_FILE_SUFFIXES:
            with contextlib.suppress(OSError):
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
                if de.is_dir(follow_symlinks=False) and valid_child(depth, de.name)
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
        """Bring the rows of one ``<binding>`` directory in line with its files.

        Everything named like an entry except a directory is indexed: a FIFO, device or
        symlink there gets a not-ok row (and one warning), never a read that could hang.
        """
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
            if not ENTRY_NAME.match(de.name) or de.is_dir(follow_symlinks=False):
                continue
            try:
                st = de.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            seen.add(de.name)
            if indexed.get(de.name) != _stat_sig(st):
                batch.append(self._params(rel, de.name, st))
        conn.executemany(_UPSERT, batch)
        conn.executemany("DELETE FROM entries WHERE dir = ? AND name = ?", [(rel, n) for n in indexed.keys() - seen])

    def _params(self, rel: str, name: str, st: os.stat_result, data: bytes | None = None) -> tuple[Any, ...]:
        """The index row of one entry file; a bad file gets a row marked not-ok (warned about once).

        ``st`` is taken before the read: if the file is replaced meanwhile, the recorded
        signature is the older one and the next query re-reads the file.
        """
        path = os.path.join(self._root_s, rel, name)
        not_ok = (rel, name, *_stat_sig(st), 0, *([None] * 10))
        try:
            if data is None:
                data = read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False)
            summary = summarize(json.loads(data))
            key = summary.key
            slug, manifest_sha, binding = rel.split("/")
            if (ledger_slug(key.repo_remote), key.manifest_sha, key.binding, f"{key.range_sha}.json") != (
                slug, manifest_sha, binding, name
            ):
                raise ValueError("it holds an attestation for another key")
        except MissingFileError:
            return not_ok
        except UnreadableFileError as exc:  # a FIFO, device or symlink, too large, or unreadable
            self._warn(f"ledger entry {path} {exc} — skipped")
            return not_ok
        except (OSError, ValueError) as exc:  # json and UnicodeDecodeError are ValueErrors
            self._warn(f"ledger entry {path} is unusable ({exc}) — skipped; delete it or re-run the review")
            return not_ok
        return (rel, name, *_stat_sig(st), 1, key.repo_remote, key.manifest_sha, key.binding, key.range_sha,
                summary.base_sha, summary.head_sha, summary.run_id, summary.requester_session, summary.created_at,
                json_text(summary.row, indent=None))
