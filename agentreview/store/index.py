"""The ledger's sqlite index, disposable: the JSON files are the truth, each row returned is checked against its
file's (mtime, size, inode), and an unreadable or misfiled entry is never listed. Rescanned when missing or stale."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import sqlite3
import stat
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agentreview.host.files import MissingFileError, UnreadableFileError, read_regular_file
from agentreview.store.entries import MAX_ENTRY_BYTES, Summary, summarize
from agentreview.store.layout import (
    ENTRY_NAME,
    ENTRY_SUFFIX,
    FOREIGN_DIR,
    INDEX_NAME,
    MEMBER,
    PACK_NAME,
    ledger_slug,
    valid_child,
)

INDEX_LOCK = ".index.lock"
INDEX_FILE_SUFFIXES = ("", "-wal", "-shm", "-journal")
INDEX_STALE = ".index.stale"
INDEX_SCHEMA_VERSION = 4  # 4: the indexes hold 64-bit keys of the columns (lookup_key), not the text
BUSY_TIMEOUT_MS = 5000
PAGE_BYTES = 8192  # a new index's page: a fetch's rows went in ~10% faster than with 4096 (text indexes, issue 23)
CACHE_KIB = 32 * 1024  # sqlite's page cache (grown only as used): a fetch's batch of rows is written without spilling
FIRST_SYNC_LOCK_TIMEOUT_S = 600
# A directory changed this recently may change again within the same timestamp tick
# (ext4 stamps with a coarse clock, FAT with 2 s), so it is re-listed on the next query.
RACY_NS = 3_000_000_000
# The columns a query may filter on (each an equality test, or membership for ``any_of``).
SELECTIVE_COLUMNS = frozenset({"range_sha", "head_sha", "run_id", "requester_session", "name", "digest"})
BROAD_COLUMNS = frozenset({"repo_remote", "manifest_sha", "binding", "base_sha", "dir"})
FILTER_COLUMNS = SELECTIVE_COLUMNS | BROAD_COLUMNS
# Values of one ``any_of`` column bound per statement (well under sqlite's variable limit).
ANY_OF_CHUNK = 500

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
    verdict TEXT,
    dirty INTEGER,
    foreign_entry INTEGER NOT NULL DEFAULT 0,
    row_json TEXT,
    digest TEXT,
    repo_key INTEGER,
    key_key INTEGER,
    range_key INTEGER,
    head_key INTEGER,
    run_key INTEGER,
    session_key INTEGER,
    digest_key INTEGER,
    PRIMARY KEY (dir, name)
);
CREATE INDEX IF NOT EXISTS entries_created ON entries (created_at);
CREATE INDEX IF NOT EXISTS entries_repo ON entries (repo_key, created_at);
CREATE INDEX IF NOT EXISTS entries_key ON entries (key_key, created_at);
CREATE INDEX IF NOT EXISTS entries_range ON entries (range_key);
CREATE INDEX IF NOT EXISTS entries_head ON entries (head_key);
CREATE INDEX IF NOT EXISTS entries_run ON entries (run_key) WHERE run_key IS NOT NULL;  -- own entries only
CREATE INDEX IF NOT EXISTS entries_session ON entries (session_key) WHERE session_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_digest ON entries (digest_key) WHERE digest_key IS NOT NULL;
"""

_UPSERT = (  # the file's (mtime, size, inode) last: the rows of a pack's members share them, and are made first
    "INSERT OR REPLACE INTO entries (dir, name, ok, repo_remote, manifest_sha, binding, range_sha, base_sha, head_sha, "
    "run_id, requester_session, created_at, verdict, dirty, foreign_entry, row_json, digest, repo_key, key_key, "
    "range_key, head_key, run_key, session_key, digest_key, mtime_ns, size, ino) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

_UPSERT_HEAD, _, _UPSERT_ROW = _UPSERT.partition(" VALUES ")  # a statement of many rows repeats the row
_COLUMNS = _UPSERT_ROW.count("?")
MAX_ROWS_PER_INSERT = 500  # one statement inserts this many rows (sqlite's variable limit allowing)

_Found = tuple[str, str, str | None, str, str]  # (dir, name, row_json, dir/name, created_at) of a row checked
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
T = TypeVar("T")


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


_KEY_BIAS = 1 << 63  # a key is a signed 64-bit integer, sqlite's widest
# the column of each filter column's key, and the key of (repo_remote, manifest_sha, binding) together
KEY_COLUMNS = {"repo_remote": "repo_key", "range_sha": "range_key", "head_sha": "head_key", "run_id": "run_key",
               "requester_session": "session_key", "digest": "digest_key"}  # fmt: skip
LEDGER_KEY_PARTS = ("repo_remote", "manifest_sha", "binding")


def lookup_key(value: str) -> int:
    """The 64-bit key the index holds for ``value``: the number its first 16 characters spell in hex when they do
    (a digest, a commit), else its CRC-32 and Adler-32. An index entry of such a key is a fifth the size of one of
    64 hex digits, and as fast to search; every query also compares the value, so two values with one key cost a
    row read, never a wrong answer (and whoever writes a note can already give a row any value)."""
    try:
        number = int(value[:16], 16)
    except ValueError:
        number = -1
    if number < 0:
        data = value.encode("utf-8", "surrogatepass")
        number = zlib.crc32(data) << 32 | zlib.adler32(data)
    return number - _KEY_BIAS


@functools.lru_cache(maxsize=64)
def _repo_key(repo_remote: str) -> int:
    """:func:`lookup_key` of a repository, which many rows share, computed once."""
    return lookup_key(repo_remote)


@functools.lru_cache(maxsize=64)
def _ledger_key(repo_remote: str, manifest_sha: str, binding: str) -> int:
    """The key of ``(repo_remote, manifest_sha, binding)`` together (NUL is in none of them), computed once."""
    return lookup_key(f"{repo_remote}\0{manifest_sha}\0{binding}")


def entry_row(rel: str, name: str, summary: Summary, *, foreign: bool, digest: str | None = None) -> tuple[Any, ...]:
    """The index row of an ok entry (a file, or a pack's member) but its file's :func:`_stat_sig`, which ends it."""
    key, row, session = summary.key, summary.row, summary.requester_session
    return (rel, name, 1, key.repo_remote, key.manifest_sha, key.binding, key.range_sha, summary.base_sha,
            summary.head_sha, summary.run_id, session, summary.created_at, summary.verdict, int(summary.dirty),
            int(foreign), None if row is None else json.dumps(row), digest, _repo_key(key.repo_remote),
            _ledger_key(key.repo_remote, key.manifest_sha, key.binding), lookup_key(key.range_sha),
            lookup_key(summary.head_sha), None if foreign else lookup_key(summary.run_id),
            None if session is None else lookup_key(session), None if digest is None else lookup_key(digest))


def _row(rel: str, name: str, sig: tuple[int, int, int], summary: Summary, *, foreign: bool,
         digest: str | None = None) -> tuple[Any, ...]:  # fmt: skip
    """The index row of an ok entry (``sig`` its file's :func:`_stat_sig`)."""
    return entry_row(rel, name, summary, foreign=foreign, digest=digest) + sig


def _not_ok(rel: str, name: str, st: os.stat_result, *, foreign: bool) -> tuple[Any, ...]:
    """The row of a file that lists nothing: unusable, or the pack whose members have rows of their own."""
    head = (rel, name, 0, *([None] * 11), int(foreign))
    return head + (None,) * (_COLUMNS - len(head) - 3) + _stat_sig(st)  # no row, digest or key


def _digests(conn: sqlite3.Connection, rel: str, among: Sequence[str] | None = None) -> set[str]:
    """The attestation digests of the usable entries in the directory ``rel`` (of ``among``, when given)."""
    sql = "SELECT digest FROM entries WHERE dir = ? AND ok = 1 AND digest IS NOT NULL"
    if among is None:
        return {digest for (digest,) in conn.execute(sql, (rel,))}
    found: set[str] = set()
    for start in range(0, len(among), ANY_OF_CHUNK):  # through the digest index ("+dir": not the folder's)
        chunk = among[start : start + ANY_OF_CHUNK]
        marks = ", ".join("?" * len(chunk))
        query = f"{sql.replace('dir =', '+dir =')} AND digest_key IN ({marks}) AND digest IN ({marks})"
        found.update(digest for (digest,) in conn.execute(query, (rel, *map(lookup_key, chunk), *chunk)))
    return found


def _file_of(name: str) -> str:
    """The file an entry lives in: itself, or the pack of a member ``<pack>#<offset>``."""
    return name.partition(MEMBER)[0]


def _is_foreign_dir(rel: str) -> bool:
    """``<repoSlug>/foreign``: where the entries ``agentreview fetch`` imported live."""
    return rel.count("/") == 1 and rel.endswith("/" + FOREIGN_DIR)


def _insert_rows(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """``_UPSERT`` of every row, many rows per statement: ``executemany`` gives up the GIL at each row and
    waits to get it back, so a writer thread beside a busy one would take milliseconds a row."""
    per = max(1, min(MAX_ROWS_PER_INSERT, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // _COLUMNS))
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        values = ", ".join([_UPSERT_ROW] * len(chunk))
        conn.execute(f"{_UPSERT_HEAD} VALUES {values}", list(itertools.chain.from_iterable(chunk)))


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


class _Visit:
    """State of one index sync: what the index knew about directories, and what changed."""

    def __init__(self, known: dict[str, int]) -> None:
        self.known = known
        self.now_ns = time.time_ns()
        self.children: dict[str, list[str]] = {}
        for rel in filter(None, known):
            self.children.setdefault(rel.rpartition("/")[0], []).append(rel)


class LedgerIndex:
    """The index of the ledger under ``root``; ``warn`` gets one line per problem found. Thread-safe; processes
    share it through sqlite's locking, and a new index is filled once, under a file lock."""

    def __init__(self, root: Path, warn: Callable[[str], None]):
        self.root = root
        self._root_s = str(root)
        self._warn = warn
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ the interface

    def query(
        self,
        filters: Mapping[str, str | None],
        *,
        limit: int | None = None,
        foreign: bool | None = False,
        passing: bool = False,
        any_of: tuple[str, Sequence[str]] | None = None,
    ) -> list[tuple[str, str, str | None]]:
        """``(dir, name, row_json)`` of the ok entries matching every non-None filter, newest first (``row_json``
        None for an imported entry). ``foreign``: False own, True imported, None both; ``passing``: clean passes
        only; ``any_of``: ``(column, values)``, the column equal to one of the values."""
        given = {col: val for col, val in filters.items() if val is not None}
        columns = set(given) | ({any_of[0]} if any_of else set())
        unknown = columns - FILTER_COLUMNS
        if unknown:
            raise ValueError(f"unknown index column(s): {', '.join(sorted(unknown))}")
        if "run_id" in columns and foreign is not False:  # a run id names a run of this host
            raise ValueError("the run ids of imported entries are not indexed: look one up with foreign=False")
        # a selective column's own index is the one to use: the broad columns are then only checked
        # (sqlite, without statistics, would otherwise walk the repository's index instead); the indexes hold
        # the columns' keys, so each keyed column is matched by its key, then by its value
        narrow = bool(columns & SELECTIVE_COLUMNS)
        whole_key = not narrow and all(col in given for col in LEDGER_KEY_PARTS)
        where: list[str] = ["ok = 1"]
        params: list[Any] = []
        if whole_key:  # the key index: (repo_remote, manifest_sha, binding), newest first
            where.append("key_key = ?")
            params.append(_ledger_key(*(str(given[col]) for col in LEDGER_KEY_PARTS)))
        for col, value in given.items():
            if (keyed := KEY_COLUMNS.get(col)) is not None and (col in SELECTIVE_COLUMNS or not (narrow or whole_key)):
                where.append(f"{keyed} = ?")
                params.append(_repo_key(value) if col == "repo_remote" else lookup_key(value))
            where.append(f"{'+' if narrow and col in BROAD_COLUMNS else ''}{col} = ?")
            params.append(value)
        if foreign is not None:
            where.append(f"foreign_entry = {int(foreign)}")
        if passing:
            where.append("verdict = 'pass' AND dirty = 0")
        tail = " ORDER BY created_at DESC, dir, name" + (" LIMIT ?" if limit is not None else "")
        select = "SELECT dir, name, mtime_ns, size, ino, row_json, created_at FROM entries WHERE "
        if any_of is None:
            statements = [(select + " AND ".join(where) + tail, [*params, *([limit] if limit is not None else [])])]
        else:
            column, values = any_of
            unique = sorted(set(values))
            statements = []
            for start in range(0, len(unique), ANY_OF_CHUNK):
                chunk = unique[start : start + ANY_OF_CHUNK]
                marks = ", ".join("?" * len(chunk))
                clause, bound = f"{column} IN ({marks})", list[Any](chunk)
                if (keyed := KEY_COLUMNS.get(column)) is not None:
                    clause, bound = f"{keyed} IN ({marks}) AND {clause}", [*map(lookup_key, chunk), *chunk]
                statements.append((select + " AND ".join([*where, clause]) + tail,
                                   [*params, *bound, *([limit] if limit is not None else [])]))
        rows = self._query_verified(statements)
        if len(statements) > 1:  # chunks merged: newest first again, then the limit
            rows.sort(key=lambda r: (r[3], r[0], r[1]))
            rows.sort(key=lambda r: r[4], reverse=True)
            rows = rows[:limit] if limit is not None else rows
        return [(rel, name, row) for rel, name, row, _key, _created in rows]

    def record(self, entry: Path, st: os.stat_result, data: bytes, *, foreign: bool = False) -> None:
        """Index an entry just written (when it cannot be, :meth:`_upsert` leaves a re-scan marker)."""
        self._upsert([self._params(entry.parent.relative_to(self.root).as_posix(), entry.name, st, data,
                                   foreign=foreign)])  # fmt: skip

    def begin_writes(self) -> bool:
        """Mark the index stale until :meth:`end_writes`, so entries of a process that dies before it records them
        are found by a re-scan; True when this call left the marker. The index is opened first, so this
        process's own connection does not take the marker for a reason to re-scan."""
        with self._lock:
            try:
                self._connection()
            except (sqlite3.Error, OSError):
                self._close()
                return False
        try:
            fd = os.open(self.root / INDEX_STALE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError:
            return False  # already marked (or the folder is unusable: the rows' write will say so)
        os.close(fd)
        return True

    def record_many(self, entries: Sequence[tuple[str, str, os.stat_result, Summary, str | None]], *,
                    foreign: bool) -> bool:  # fmt: skip
        """Index entry files just written, ``(dir, name, stat, summary, digest)`` each; False as :meth:`_upsert`."""
        return self._upsert([_row(rel, name, _stat_sig(st), summary, foreign=foreign, digest=digest)
                             for rel, name, st, summary, digest in entries])  # fmt: skip

    def record_pack(self, rel: str, pack: str, st: os.stat_result, rows: Sequence[tuple[Any, ...]]) -> bool:
        """Index a pack of imported entries just written: its members' :func:`entry_row` (each named
        ``<pack>#<offset>``), given the pack's stat, and the pack's own row (listing nothing); False as
        :meth:`_upsert`."""
        sig = _stat_sig(st)
        return self._upsert([*(row + sig for row in rows), _not_ok(rel, pack, st, foreign=True)])

    def end_writes(self) -> None:
        """The rows of every entry written since :meth:`begin_writes` are in: remove its marker."""
        with contextlib.suppress(OSError):
            os.unlink(self.root / INDEX_STALE)

    def _upsert(self, rows: Sequence[tuple[Any, ...]]) -> bool:
        """Write ``rows`` in one transaction; False when the index could not (then the next read re-scans)."""
        with self._lock:
            try:
                conn = self._connection()
                with _transaction(conn):
                    _insert_rows(conn, rows)
            except (sqlite3.Error, OSError):
                self._close()
                with contextlib.suppress(OSError):  # the stale marker: the next reader re-scans the files
                    os.close(os.open(self.root / INDEX_STALE, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
                return False
        return True

    def checkpoint(self) -> None:
        """Copy the pages committed to the write-ahead log into the index file (sqlite's passive checkpoint) on a
        connection of its own, so a writer goes on meanwhile and the close of the last connection has little left
        to copy; nothing when the index is not a file (or is busy: the next checkpoint copies them)."""
        uri = f"{(self.root / INDEX_NAME).as_uri()}?mode=rw"  # never creates an index
        with contextlib.suppress(sqlite3.Error):
            self._check_files()  # a FIFO planted in place of a file of the index is never opened
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                conn.close()

    def digests(self, rel: str, among: Sequence[str] | None = None) -> set[str]:
        """The attestation digests of the usable entries in the directory ``rel`` (of ``among`` only, when given)."""
        return self._read(lambda conn: _digests(conn, rel, among))

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

    def _query_verified(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[_Found]:
        """Run each statement; a row whose file changed behind the index (replaced, or gone) is re-read and the
        statements run again. Rows are ``(dir, name, row_json, dir/name, created_at)``."""

        def fetch(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return [row for sql, params in statements for row in conn.execute(sql, params).fetchall()]

        def run(conn: sqlite3.Connection) -> list[_Found]:
            for _ in range(3):
                rows = fetch(conn)
                stale: list[tuple[str, str, os.stat_result | None]] = []
                for rel, name, mtime_ns, size, ino, _row, _created in rows:
                    try:
                        st = os.lstat(os.path.join(self._root_s, rel, _file_of(name)))
                    except FileNotFoundError:
                        stale.append((rel, name, None))
                        continue
                    if _stat_sig(st) != (mtime_ns, size, ino):
                        stale.append((rel, name, st))
                if not stale:
                    break
                with _transaction(conn):
                    for (rel, name), changed in {(rel, _file_of(n)): st for rel, n, st in stale}.items():
                        self._reindex_file(conn, rel, name, changed)
            else:
                rows = fetch(conn)
            return [(rel, name, row, f"{rel}/{name}", created or "") for rel, name, _m, _s, _i, row, created in rows]

        return self._read(run)

    # ------------------------------------------------------------------ connection

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` on the index; a corrupt index is rebuilt once, an unusable one replaced
        by an in-memory index built from the files (the answer is the same, only slower)."""
        with self._lock:
            for attempt in range(2):
                try:
                    return fn(self._connection())
                except sqlite3.Error as exc:
                    self._close()
                    if attempt == 0 and (_is_corruption(exc) or isinstance(exc, _RebuildError)):
                        if not isinstance(exc, _RebuildError):  # another version's index: an upgrade, no fault
                            self._warn(f"ledger index {self.root / INDEX_NAME} was unusable ({exc}) — rebuilding it")
                        self._remove_files()
                        continue
                    self._warn(f"ledger index {self.root / INDEX_NAME} cannot be used ({exc}) — scanning the files")
                    self._conn = self._open(":memory:")
                    self._sync(self._conn, "")
                    return fn(self._conn)
            raise AssertionError("unreachable")  # pragma: no cover

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._check_files()
            conn = self._open(str(self.root / INDEX_NAME))
            self._conn = conn
            stale = os.path.lexists(self.root / INDEX_STALE)
            if stale or conn.execute("SELECT 1 FROM dirs LIMIT 1").fetchone() is None:
                self._first_sync(conn)
            if stale:
                with contextlib.suppress(OSError):
                    os.unlink(self.root / INDEX_STALE)
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
        """Fill a new index from a full scan, under a lock so concurrent processes scan once."""
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
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            conn.execute(f"PRAGMA page_size = {PAGE_BYTES}")  # takes effect only on a new file
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
        depth = rel.count("/") + 1 if rel else 0
        if visit.known.get(rel) == st.st_mtime_ns:
            for child in visit.children.get(rel, []):
                self._visit(conn, visit, child)
            return
        # Settled timestamps are trusted next time; a racy one is re-listed.
        record = st.st_mtime_ns if visit.now_ns - st.st_mtime_ns > RACY_NS else -1
        if depth == 3 or (depth == 2 and _is_foreign_dir(rel)):
            with _transaction(conn):
                self._reconcile_leaf(conn, rel, path)
                self._record_dir(conn, visit, rel, record)
            return
        try:
            names = sorted(
                de.name for de in os.scandir(path)
                if de.is_dir(follow_symlinks=False)
                and (valid_child(depth, de.name) or (depth == 1 and de.name == FOREIGN_DIR))
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
        """Bring the rows of one ``<binding>`` directory in line with its files. A FIFO, device or symlink named
        like an entry gets a not-ok row (and one warning), never a read that could hang."""
        indexed = {
            name: (m, s, i)
            for name, m, s, i in conn.execute("SELECT name, mtime_ns, size, ino FROM entries WHERE dir = ?", (rel,))
        }
        foreign = _is_foreign_dir(rel)
        seen: set[str] = set()
        try:
            scan = list(os.scandir(path))
        except OSError as exc:
            self._warn(f"ledger directory {path} cannot be listed ({exc.strerror}) — skipped")
            return
        for de in scan:
            if not (ENTRY_NAME.match(de.name) or (foreign and PACK_NAME.match(de.name))) or de.is_dir(
                follow_symlinks=False
            ):
                continue
            try:
                st = de.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            seen.add(de.name)
            if indexed.get(de.name) != _stat_sig(st):
                self._reindex_file(conn, rel, de.name, st)
        gone = [(rel, n) for n in indexed if _file_of(n) not in seen]
        conn.executemany("DELETE FROM entries WHERE dir = ? AND name = ?", gone)

    def _reindex_file(self, conn: sqlite3.Connection, rel: str, name: str, st: os.stat_result | None) -> None:
        """Replace the rows of the file ``name`` (an entry, or a pack and its members): none when it is gone."""
        # two statements, each a range of the primary key (with OR, sqlite walks every row of the directory:
        # a re-index of one directory of n entries took n² steps)
        conn.execute("DELETE FROM entries WHERE dir = ? AND name = ?", (rel, name))
        conn.execute("DELETE FROM entries WHERE dir = ? AND name > ? AND name < ?",
                     (rel, name + MEMBER, name + chr(ord(MEMBER) + 1)))  # fmt: skip
        if st is None:
            return
        foreign = _is_foreign_dir(rel)
        if not (foreign and PACK_NAME.match(name)):
            conn.execute(_UPSERT, self._params(rel, name, st, foreign=foreign))
            return
        from agentreview.store.foreign_entry import MAX_PACK_BYTES, pack_members

        rows = [_not_ok(rel, name, st, foreign=True)]
        path = os.path.join(self._root_s, rel, name)
        try:
            data = read_regular_file(path, limit=MAX_PACK_BYTES, follow_symlinks=False)
        except (UnreadableFileError, MissingFileError) as exc:
            self._warn(f"ledger pack {path} {exc} — skipped")
            data = b""
        known = _digests(conn, rel)  # an entry stored twice (a fetch that died unindexed) is listed once
        for member in pack_members(data):
            if member.summary is None or member.digest is None:
                self._warn(f"ledger entry {path}{MEMBER}{member.offset} is unusable ({member.problem}) — skipped")
                continue
            if member.digest in known:
                continue
            known.add(member.digest)
            rows.append(_row(rel, f"{name}{MEMBER}{member.offset}", _stat_sig(st), member.summary, foreign=True,
                             digest=member.digest))  # fmt: skip
        _insert_rows(conn, rows)

    def _params(
        self, rel: str, name: str, st: os.stat_result, data: bytes | None = None, *, foreign: bool = False
    ) -> tuple[Any, ...]:
        """The index row of one entry file; a bad file gets a not-ok row (warned about once). ``st`` is taken
        before the read, so a file replaced meanwhile is re-read by the next query."""
        path = os.path.join(self._root_s, rel, name)
        not_ok = _not_ok(rel, name, st, foreign=foreign)
        try:
            if data is None:
                data = read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False)
            if foreign:
                from agentreview.store.foreign_entry import listable_summary, read_foreign

                summary = listable_summary(read_foreign(data)[0])
                where: tuple[str, ...] = (ledger_slug(summary.key.repo_remote), FOREIGN_DIR)
                filed: tuple[str, ...] = tuple(rel.split("/"))
            else:
                summary = summarize(json.loads(data))
                key = summary.key
                where = (ledger_slug(key.repo_remote), key.manifest_sha, key.binding, f"{key.range_sha}.json")
                filed = (*rel.split("/"), name)
            if where != filed:
                raise ValueError("it holds an attestation for another key")
        except MissingFileError:
            return not_ok
        except UnreadableFileError as exc:  # a FIFO, device or symlink, too large, or unreadable
            self._warn(f"ledger entry {path} {exc} — skipped")
            return not_ok
        except (OSError, ValueError, RecursionError) as exc:  # json and UnicodeDecodeError are ValueErrors
            self._warn(f"ledger entry {path} is unusable ({exc}) — skipped; delete it or re-run the review")
            return not_ok
        digest = name[: -len(ENTRY_SUFFIX)] if foreign else None
        return _row(rel, name, _stat_sig(st), summary, foreign=foreign, digest=digest)
