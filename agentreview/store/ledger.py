"""The ledger: this host's record of every attestation, and the source of the verdict cache. Entries are written
atomically under a per-entry lock; one unreadable, or filed under a key it does not name, is never served."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.host.files import (
    WRITE_ERRNOS,
    FileWriteError,
    atomic_write_text,
)
from agentreview.store.annotations import (
    check_pr,
    check_snapshot,
    merge_into_row,
    read_annotations,
    rewrite_annotations,
)
from agentreview.store.cache import servable
from agentreview.store.entries import HostInfo, LedgerEntry, LedgerRow, entry_text, read_entry
from agentreview.store.layout import (
    ANNOTATIONS_SUFFIX,
    ENTRY_SUFFIX,
    FOREIGN_DIR,
    LOCK_SUFFIX,
    RUN_ID,
    LedgerError,
    LedgerKey,
    entry_path,
    ledger_slug,
    sibling,
)

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation
    from agentreview.store.index import LedgerIndex

LOCK_TIMEOUT_S = 30.0


class Ledger:
    """The ledger under ``root``; ``warn`` gets one line per problem found (default: kept in :attr:`warnings`)."""

    def __init__(self, root: Path, *, warn: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.warnings: list[str] = []
        self._warn = warn or self.warnings.append

    @functools.cached_property
    def _index(self) -> LedgerIndex:
        """The index, opened on first use: reading one entry (a cache lookup) never loads sqlite."""
        from agentreview.store.index import LedgerIndex

        return LedgerIndex(self.root, self._warn)

    # ------------------------------------------------------------------ paths

    def entry_path(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> Path:
        return entry_path(self.root, LedgerKey(repo_remote, manifest_sha, binding, range_sha))

    def annotations_path(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> Path:
        return sibling(self.entry_path(repo_remote, manifest_sha, binding, range_sha), ANNOTATIONS_SUFFIX)

    def run_dir(self, repo_remote: str, run_id: str) -> Path:
        """``<root>/<repoSlug>/runs/<runId>/``, created private: scratch for agent verdict files."""
        if not RUN_ID.match(run_id):
            raise LedgerError(f"run id '{run_id}' cannot name a run directory (expected review-<id>)")
        path = self.root / ledger_slug(repo_remote) / "runs" / run_id
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    def _locked(self, entry: Path, write: Callable[[], None]) -> None:
        """Run ``write`` under the entry's lock; a lock that times out or cannot be taken is a LedgerError."""
        from agentreview.host.locks import FileLock, Timeout

        lock = FileLock(str(sibling(entry, LOCK_SUFFIX)), timeout=LOCK_TIMEOUT_S)
        try:
            with lock:
                write()
        except Timeout as exc:
            raise LedgerError(
                f"timed out after {LOCK_TIMEOUT_S:.0f}s waiting for the ledger entry lock of {entry}"
            ) from exc
        except OSError as exc:
            if exc.filename != lock.lock_file:
                raise
            if exc.errno in WRITE_ERRNOS:  # the file system refused: removing the lock file would not help
                raise FileWriteError(lock.lock_file, exc) from exc
            raise LedgerError(
                f"cannot lock {lock.lock_file} ({exc.strerror or exc}) — remove it and retry"
            ) from exc

    # ------------------------------------------------------------------ writing

    def put(self, attestation: Attestation, host: HostInfo | Mapping[str, Any]) -> Path:
        """Record an attestation (every one: incomplete and dirty included); a re-run of the key overwrites."""
        info = host if isinstance(host, HostInfo) else HostInfo.from_json(host)
        if attestation.verdict != attestation.refold():
            raise LedgerError(f"refusing to record run {attestation.runId}: its verdict does not follow from its lanes")
        path = entry_path(self.root, LedgerKey.of(attestation))
        text = entry_text(attestation, info)
        self._make_dirs(path.parent)
        written: list[os.stat_result] = []

        def write() -> None:
            atomic_write_text(path, text)
            written.append(path.stat())

        self._locked(path, write)
        self._index.record(path, written[0], text.encode())
        return path

    def _make_dirs(self, leaf: Path) -> None:
        """Create the entry's directories private to this user: entries hold checkout paths,
        findings and command-output tails."""
        current = self.root
        try:
            current.mkdir(parents=True, exist_ok=True, mode=0o700)
            for part in leaf.relative_to(self.root).parts:
                current = current / part
                current.mkdir(exist_ok=True, mode=0o700)
        except OSError as exc:
            raise FileWriteError(current, exc) from exc

    # ------------------------------------------------------------------ reading one entry

    def get(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> LedgerEntry | None:
        """The entry for a key (``ledger.get(*key)``), or None when absent or unreadable."""
        key = LedgerKey(repo_remote, manifest_sha, binding, range_sha)
        return read_entry(entry_path(self.root, key), key, self._warn)

    def lookup_cached(
        self,
        repo_remote: str,
        manifest_sha: str,
        binding: str,
        range_sha: str,
        rubrics: Sequence[Mapping[str, Any] | Any],
        packs: Sequence[Mapping[str, Any] | Any] | None,
    ) -> Attestation | None:
        """The recorded attestation if the cache rule (:mod:`~agentreview.store.cache`) allows serving it."""
        entry = self.get(repo_remote, manifest_sha, binding, range_sha)
        if entry is None or not servable(entry.attestation, rubrics, packs):
            return None
        return entry.attestation

    # ------------------------------------------------------------------ annotations

    def annotations(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str) -> dict[str, Any]:
        """The annotations sidecar (``{}`` when there is none or it is unreadable)."""
        return read_annotations(self.annotations_path(repo_remote, manifest_sha, binding, range_sha), self._warn)

    def set_pr(self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str, pr: Any) -> Path:
        """Link a pull request to an entry (annotations only; the attestation is never touched)."""
        ref = check_pr(pr)
        key = LedgerKey(repo_remote, manifest_sha, binding, range_sha)
        return self._update_annotations(key, lambda ann: ann.update(pr=ref))

    def append_pr_status(
        self, repo_remote: str, manifest_sha: str, binding: str, range_sha: str, snapshot: Mapping[str, Any]
    ) -> Path:
        """Append one PR status snapshot (oldest first) to the entry's annotations."""
        snap = check_snapshot(snapshot)
        key = LedgerKey(repo_remote, manifest_sha, binding, range_sha)
        return self._update_annotations(key, lambda ann: ann.setdefault("prStatus", []).append(snap))

    def _update_annotations(self, key: LedgerKey, change: Callable[[dict[str, Any]], None]) -> Path:
        entry = entry_path(self.root, key)
        if not entry.is_file():
            raise LedgerError(f"no ledger entry for rangeSha {key.range_sha} (binding {key.binding}) to annotate")
        path = sibling(entry, ANNOTATIONS_SUFFIX)
        self._locked(entry, lambda: rewrite_annotations(path, change, self._warn))
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
        foreign: bool | None = False,
    ) -> list[LedgerRow]:
        """Settled rows matching every given filter, newest first: own (``foreign=False``), imported or both (None)."""
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
        out = []
        for rel, name, row_json in self._index.query(filters, limit=limit, foreign=foreign):
            path = self.root / rel / name
            if row_json is not None:
                row = json.loads(row_json)
                if "foreign" not in row:
                    row = merge_into_row(row, read_annotations(sibling(path, ANNOTATIONS_SUFFIX), self._warn))
            else:  # an imported entry
                from agentreview.store.foreign_entry import listing_row, read_or_warn

                if (row := read_or_warn(listing_row, path, self._warn)) is None:
                    continue
            out.append(LedgerRow(row, path))
        return out

    def candidates(
        self,
        repo_remote: str,
        manifest_sha: str,
        binding: str,
        *,
        base_sha: str | None = None,
        heads: Sequence[str] | None = None,
        passing: bool = False,
    ) -> Iterator[Attestation]:
        """Attestations under ``(repoRemote, manifestSha, binding)``, newest first, narrowed by ``base_sha``,
        ``heads`` and ``passing`` so a composition lookup reads only the entries that could serve."""
        if not self.root.is_dir():
            return
        filters = {"repo_remote": repo_remote, "manifest_sha": manifest_sha, "binding": binding, "base_sha": base_sha}
        any_of = ("head_sha", heads) if heads is not None else None
        for rel, name, _ in self._index.query(filters, passing=passing, any_of=any_of):
            key = LedgerKey(repo_remote, manifest_sha, binding, name[: -len(ENTRY_SUFFIX)])
            entry = read_entry(self.root / rel / name, key, self._warn)
            if entry is not None:
                yield entry.attestation

    def foreign_candidates(
        self,
        repo_remote: str,
        manifest_sha: str,
        binding: str,
        *,
        range_sha: str | None = None,
        base_sha: str | None = None,
        heads: Sequence[str] | None = None,
        digests: Sequence[str] | None = None,
        passing: bool = False,
    ) -> Iterator[tuple[Path, dict[str, Any], dict[str, Any]]]:
        """``(path, attestation, host)`` of the imported entries under the key, newest first, narrowed like
        :meth:`candidates` (or by attestation ``digests``); each document re-read and re-checked."""
        from agentreview.store.foreign_entry import read_foreign_at, read_or_warn

        if heads is not None and digests is not None:
            raise ValueError("narrow by heads or by digests, not both")
        if not self.root.is_dir():
            return
        filters = {"repo_remote": repo_remote, "manifest_sha": manifest_sha, "binding": binding,
                   "range_sha": range_sha, "base_sha": base_sha}
        any_of: tuple[str, Sequence[str]] | None = None
        if heads is not None:
            any_of = ("head_sha", heads)
        elif digests is not None:
            filters["dir"] = f"{ledger_slug(repo_remote)}/{FOREIGN_DIR}"
            any_of = ("digest", digests)
        for rel, name, _ in self._index.query(filters, foreign=True, passing=passing, any_of=any_of):
            path = self.root / rel / name
            if (found := read_or_warn(read_foreign_at, path, self._warn)) is not None:
                yield path, *found

    def rebuild_index(self) -> int:
        """Discard the index and rebuild it from the files; return how many entries it holds."""
        return self._index.rebuild()

    def close(self) -> None:
        if "_index" in self.__dict__:
            self._index.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
