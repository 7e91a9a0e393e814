"""Foreign entries: attestations other hosts published in git notes, imported by ``agentreview fetch`` into
``<repoSlug>/foreign/``. One per attestation digest, never exported, read only through the strict model, and never
a cache hit or prior unless team trust says so (the caller decides)."""

from __future__ import annotations

import functools
import hashlib  # OpenSSL's sha256: a fetch hashes every line, four times faster than the builtin
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agentreview.host.files import atomic_write_bytes, fsync_path
from agentreview.model.attestation import Attestation
from agentreview.model.canonical import canonical_json
from agentreview.model.digests import sha256_hex
from agentreview.store.entries import Summary
from agentreview.store.foreign_entry import (
    foreign_row,
    listable_summary,
    pack_host,
    pack_line,
    read_foreign_at,
    read_or_warn,
)
from agentreview.store.layout import FOREIGN_DIR, MEMBER, LedgerError, LedgerKey, check_key, ledger_slug

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.store.index import LedgerIndex


WRITE_BATCH = 4096  # entries per pack: the writer indexes one batch while the importer reads the next


class Incoming(NamedTuple):
    """An attestation read once: its bytes as stored, their digest, its folder and index columns."""

    text: bytes
    digest: str
    folder: Path
    summary: Summary


class _Batch:
    """The entries of one folder waiting for the writer: one pack's lines, and their index rows made as each comes
    (by the importing thread, so the writer's work is mostly the pack's write and sqlite's, without the GIL)."""

    def __init__(self, rel: str) -> None:
        from agentreview.store.index import entry_row

        self.rel = rel
        self.pack = f"pack-{os.urandom(12).hex()}.jsonl"
        self.lines: list[bytes] = []
        self.rows: list[tuple[Any, ...]] = []
        self.digests: list[str] = []
        self._offset = 0  # where the next line starts
        self._entry_row = entry_row

    def add(self, digest: str, summary: Summary, line: bytes) -> None:
        self._append(digest, self._entry_row(self.rel, self._next_name(), summary, foreign=True, digest=digest), line)

    def without(self, stored: set[str]) -> _Batch:
        """This batch but the entries whose digest is in ``stored`` (their offsets, and so names, made again)."""
        kept = _Batch(self.rel)
        kept.pack = self.pack
        for digest, row, line in zip(self.digests, self.rows, self.lines, strict=True):
            if digest not in stored:
                kept._append(digest, (row[0], kept._next_name(), *row[2:]), line)
        return kept

    def _next_name(self) -> str:
        """``<pack>#<offset>``: the name of the entry whose line is appended next."""
        return f"{self.pack}{MEMBER}{self._offset}"

    def _append(self, digest: str, row: tuple[Any, ...], line: bytes) -> None:
        self.rows.append(row)
        self.lines.append(line)
        self.digests.append(digest)
        self._offset += len(line)


class ForeignStore:
    """Imported attestations of other hosts, one entry per attestation digest."""

    def __init__(self, ledger_root: Path, *, warn: Callable[[str], None] | None = None):
        self.root = Path(ledger_root)
        self._warn = warn or (lambda _msg: None)
        self._pending: dict[Path, _Batch] = {}  # by folder: to write
        self._pending_count = 0
        self._added: set[str] = set()  # digests added with durable=False: pending, or with the writer
        self._writer: ThreadPoolExecutor | None = None  # writes full batches while the caller reads on
        self._writes: list[Future[bool]] = []
        self._syncer: ThreadPoolExecutor | None = None  # makes each pack durable while the writer indexes the next
        self._syncs: list[Future[None]] = []
        self._marked: bool | None = None  # whether the index's re-scan marker is ours (None: none set)
        self._folders: dict[str, Path] = {}  # by repoRemote
        self._stored: dict[Path, set[str]] = {}  # the digests each folder held when first asked
        self._hosts: dict[tuple[str, str | None], bytes] = {}  # the host member's JSON: one importedAt per store

    def check(self, attestation: dict[str, Any]) -> Incoming:
        """Read ``attestation`` with the strict model; ValueError when it is not well formed, LedgerError when its
        key cannot name a path."""
        att = Attestation.read(attestation)
        check_key(LedgerKey.of(att))
        document = att.to_json_dict()
        text = canonical_json(document)
        summary = listable_summary(document)
        return Incoming(text, sha256_hex(text), self._folder(att.target.repoRemote), summary)

    def accept(self, document: dict[str, Any], line: bytes) -> Incoming:
        """Take a note's line (``document`` its JSON) as an import does: listed members well formed (the strict
        read waits for its use), digest that of the line (canonical JSON, as published). Raises as :meth:`check`."""
        summary = listable_summary(document)
        return Incoming(line, hashlib.sha256(line).hexdigest(), self._folder(summary.key.repo_remote), summary)

    def _folder(self, repo_remote: str) -> Path:
        if (folder := self._folders.get(repo_remote)) is None:
            folder = self._folders[repo_remote] = self.root / ledger_slug(repo_remote) / FOREIGN_DIR
        return folder

    def has(self, incoming: dict[str, Any] | Incoming) -> bool:
        """True when the attestation is stored already (or added, waiting for :meth:`sync`)."""
        found = incoming if isinstance(incoming, Incoming) else self.check(incoming)
        return found.digest in self._added or found.digest in self._stored_in(found.folder)

    def _stored_in(self, folder: Path) -> set[str]:
        """The digests ``folder`` held when first asked (this store's own additions are in ``_added``)."""
        if (stored := self._stored.get(folder)) is None:
            rel = folder.relative_to(self.root).as_posix()
            stored = self._stored[folder] = self._index.digests(rel) if folder.is_dir() else set()
        return stored

    def take(self, line: bytes, summary: Summary, *, remote: str) -> bool:
        """``add(..., remote=remote, principal=None, durable=False)`` of a note's line whose listed members are
        ``summary``, without the document and the :class:`Incoming` an add needs: a fetch without team trust takes
        thousands of lines this way."""
        digest = hashlib.sha256(line).hexdigest()
        folder = self._folder(summary.key.repo_remote)
        if digest in self._added or digest in self._stored_in(folder):
            return False
        self._pend(folder, digest, summary, line, self._host_text(remote, None))
        return True

    def _host_text(self, remote: str, principal: str | None) -> bytes:
        """The pack lines' ``host`` member for ``(remote, principal)``: one importedAt per store."""
        if (text := self._hosts.get((remote, principal))) is None:
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            text = self._hosts[(remote, principal)] = pack_host(
                {"foreign": {"remote": remote, "principal": principal, "importedAt": now}}
            )
        return text

    def _pend(self, folder: Path, digest: str, summary: Summary, text: bytes, host_text: bytes) -> None:
        """Keep an entry for the writer thread; each :data:`WRITE_BATCH` of them is handed over as one pack."""
        if self._marked is None:  # a crash before sync() leaves a pack the index has not seen: say so
            self._marked = self._index.begin_writes()
        if (batch := self._pending.get(folder)) is None:
            batch = self._pending[folder] = _Batch(folder.relative_to(self.root).as_posix())
        batch.add(digest, summary, pack_line(text, host_text))
        self._added.add(digest)
        self._pending_count += 1
        if self._pending_count >= WRITE_BATCH:
            self._hand_over()

    def add(self, incoming: dict[str, Any] | Incoming, *, remote: str, principal: str | None,
            durable: bool = True) -> bool:  # fmt: skip
        """Store the attestation; True when it was not here yet. Raises as :meth:`check`. ``durable=False``: each
        :data:`WRITE_BATCH` such entries become one pack, written and indexed by a writer thread; see :meth:`sync`."""
        found = incoming if isinstance(incoming, Incoming) else self.check(incoming)
        if self.has(found):
            return False
        host_text = self._host_text(remote, principal)
        if not durable:
            self._pend(found.folder, found.digest, found.summary, found.text, host_text)
            return True
        line, summary = pack_line(found.text, host_text), found.summary
        path = found.folder / f"{found.digest}.json"
        found.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_bytes(path, line)
        rel = found.folder.relative_to(self.root).as_posix()
        self._index.record_many([(rel, path.name, path.stat(), summary, found.digest)], foreign=True)
        self._stored.setdefault(found.folder, set()).add(found.digest)
        return True

    def _hand_over(self) -> None:
        """Give the pending entries to the writer thread (started on first use)."""
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentreview-foreign")
        pending, self._pending, self._pending_count = self._pending, {}, 0
        self._writes.append(self._writer.submit(self._write, pending))

    def sync(self) -> None:
        """Write every entry added with ``durable=False`` and wait until each is indexed; raises what a write raised."""
        if self._pending:
            self._hand_over()
        writes, self._writes = self._writes, []
        indexed = [write.result() for write in writes]  # in order: the first failure is raised
        syncs, self._syncs = self._syncs, []
        for done in syncs:  # every pack is on disk before the caller records what it read
            done.result()
        if self._marked and all(indexed):
            self._index.end_writes()
        self._marked = None

    def _write(self, pending: dict[Path, _Batch]) -> bool:
        """One pack per folder of ``pending``, then its index rows in one transaction; False when the index could
        not take them (the marker stays, so a reader re-scans)."""
        indexed = True
        for folder, batch in pending.items():
            if folder.is_dir() and (stored := self._index.digests(batch.rel, among=batch.digests)):  # another fetch's
                batch = batch.without(stored)
            if not batch.lines:
                continue
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            pack = folder / batch.pack
            atomic_write_bytes(pack, b"".join(batch.lines), durable=False)  # made durable beside the indexing
            self._sync_later(pack)
            indexed = self._index.record_pack(batch.rel, batch.pack, pack.stat(), batch.rows) and indexed
        self._after_writes(self._index.checkpoint)  # the index's log copied into it while the next batch goes in
        return indexed

    def _sync_later(self, pack: Path) -> None:
        """fsync ``pack`` and its folder beside the writer: the disk's wait overlaps the index's work."""

        def durable() -> None:
            fsync_path(pack)
            fsync_path(pack.parent, reported_as=pack)

        self._syncs.append(self._after_writes(durable))

    def _after_writes(self, work: Callable[[], None]) -> Future[None]:
        """Run ``work`` on the thread that follows the writer (started on first use): the disk's waits go there."""
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentreview-fsync")
        return self._syncer.submit(work)

    @functools.cached_property
    def _index(self) -> LedgerIndex:
        """The ledger's index, which lists foreign entries beside this host's own (opened on first use)."""
        from agentreview.store.index import LedgerIndex

        return LedgerIndex(self.root, self._warn)

    def close(self) -> None:
        if self._writer is not None:  # a batch being written is finished; one not begun is dropped
            self._writer.shutdown(wait=True, cancel_futures=True)
            self._writer = None
        if self._syncer is not None:  # a pack written is made durable even when the fetch failed after it
            self._syncer.shutdown(wait=True)
            self._syncer = None
        if "_index" in self.__dict__:
            self._index.close()

    def all(self, repo_remote: str | None = None) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Every readable foreign entry (of ``repo_remote`` when given), newest first by createdAt."""
        if not self.root.is_dir():
            return
        for rel, name, _row in self._index.query({"repo_remote": repo_remote}, foreign=True):
            if (found := read_or_warn(read_foreign_at, self.root / rel / name, self._warn)) is not None:
                yield found


__all__ = ["FOREIGN_DIR", "ForeignStore", "Incoming", "LedgerError", "foreign_row"]
