"""Foreign entries: attestations another host published (git notes), imported by ``agentreview fetch``.

Layout: ``<root>/<repoSlug>/foreign/<attestationSha256>.json`` holding ``{attestation, host:
{foreign: {remote, principal, importedAt}}}``. Kept apart from this host's own entries: keyed by
the whole document's digest (two hosts may review one range; both stay), never exported, and
never a cache hit or a prior unless team trust says so (the caller decides). Only a document the
strict verification model accepts is stored; reads still go through the bounded reader.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agentreview.host.files import UnreadableFileError, atomic_write_text, read_regular_file, sync_paths
from agentreview.model.attestation import Attestation
from agentreview.store.entries import MAX_ENTRY_BYTES, Summary
from agentreview.store.foreign_entry import foreign_row, foreign_summary, read_foreign
from agentreview.store.layout import FOREIGN_DIR, LedgerError, LedgerKey, check_key, ledger_slug

if TYPE_CHECKING:  # pragma: no cover
    import os

    from agentreview.store.index import LedgerIndex


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Incoming(NamedTuple):
    """An attestation checked once (:meth:`ForeignStore.check`): its JSON members (as the model
    read them), digest and entry path."""

    document: dict[str, Any]
    digest: str
    path: Path


class ForeignStore:
    """Imported attestations of other hosts, one file per attestation digest."""

    def __init__(self, ledger_root: Path, *, warn: Callable[[str], None] | None = None):
        self.root = Path(ledger_root)
        self._warn = warn or (lambda _msg: None)
        self._index_obj: LedgerIndex | None = None
        self._pending: list[tuple[Path, os.stat_result, Summary]] = []  # written, not yet synced nor indexed
        self._marked: bool | None = None  # whether the index's re-scan marker is ours (None: none set)
        self._folders: set[Path] = set()

    def _dir(self, repo_remote: str) -> Path:
        return self.root / ledger_slug(repo_remote) / FOREIGN_DIR

    def check(self, attestation: dict[str, Any]) -> Incoming:
        """Read ``attestation`` with the strict model, once for :meth:`has` and :meth:`add`.

        Raises :class:`ValueError` (:class:`AttestationShapeError` is one) for a document that is
        not a well-formed attestation, and :class:`LedgerError` for one whose key cannot name a path.
        """
        att = Attestation.read(attestation)
        check_key(LedgerKey.of(att))
        document, digest = att.to_json_dict(), att.attestation_sha256()
        return Incoming(document, digest, self._dir(att.target.repoRemote) / f"{digest}.json")

    def has(self, attestation: dict[str, Any] | Incoming) -> bool:
        """True when ``attestation`` is stored already; raises as :meth:`check` for one that is malformed.

        A stored entry the index lacks (written by a fetch that died before its rows went in, after
        another reader had cleared the re-scan marker) is indexed now, so reading its note again heals it."""
        found = attestation if isinstance(attestation, Incoming) else self.check(attestation)
        if not found.path.is_file():
            return False
        index = self._index()
        if not index.has_entry(found.path):
            try:
                data = read_regular_file(found.path, limit=MAX_ENTRY_BYTES, follow_symlinks=False)
                index.record(found.path, found.path.stat(), data, foreign=True)
            except (UnreadableFileError, OSError) as exc:
                self._warn(f"{found.path}: foreign entry not indexed: {exc}")
        return True

    def add(self, attestation: dict[str, Any] | Incoming, *, remote: str, principal: str | None,
            durable: bool = True) -> bool:  # fmt: skip
        """Store ``attestation``; True when it was not here yet. Raises as :meth:`check`.

        ``durable=False`` leaves the flush and the index rows to :meth:`sync`, so a fetch of many
        notes pays one file-system sync and one index transaction, not two fsyncs and a commit each.
        """
        found = attestation if isinstance(attestation, Incoming) else self.check(attestation)
        path = found.path
        if path.is_file():
            return False
        if path.parent not in self._folders:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._folders.add(path.parent)
        att = found.document
        host = {"foreign": {"remote": remote, "principal": principal, "importedAt": _now()}}
        summary = foreign_summary(att, host)
        # one line: json's C encoder writes it, where an indented form costs more than the rest of an import
        text = json.dumps({"attestation": att, "host": host}, sort_keys=True, separators=(",", ":")) + "\n"
        if durable:
            atomic_write_text(path, text)
            self._index().record_many([(path, path.stat(), summary)], foreign=True, marked=False)
            return True
        if self._marked is None:  # a crash before sync() leaves files the index has not seen: say so
            self._marked = self._index().begin_writes()
        atomic_write_text(path, text, durable=False)
        self._pending.append((path, path.stat(), summary))
        return True

    def sync(self) -> None:
        """Make every entry written with ``durable=False`` durable (files and folders), then index them."""
        if not self._pending:
            return
        sync_paths(path for path, _st, _summary in self._pending)
        self._index().record_many(self._pending, foreign=True, marked=bool(self._marked))
        self._pending.clear()
        self._marked = None

    def _index(self) -> LedgerIndex:
        """The ledger's index, which lists foreign entries beside this host's own (opened on first write)."""
        if self._index_obj is None:
            from agentreview.store.index import LedgerIndex

            self._index_obj = LedgerIndex(self.root, self._warn)
        return self._index_obj

    def close(self) -> None:
        if self._index_obj is not None:
            self._index_obj.close()

    def _read(self, path: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
        try:
            return read_foreign(read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False))
        except (UnreadableFileError, ValueError) as exc:
            self._warn(f"{path}: skipped foreign entry: {exc}")
            return None

    def all(self, repo_remote: str | None = None) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Every readable foreign entry (of ``repo_remote`` when given), newest first by createdAt,
        as the ledger's index lists them."""
        if not self.root.is_dir():
            return
        for rel, name, _row in self._index().query({"repo_remote": repo_remote}, foreign=True):
            found = self._read(self.root / rel / name)
            if found is not None:
                yield found

    def candidates(self, repo_remote: str, manifest_sha: str, binding: str) -> Iterator[dict[str, Any]]:
        """Raw attestation dicts under ``(repoRemote, manifestSha, binding)``, newest first."""
        for att, _host in self.all(repo_remote):
            if att.get("manifestSha") == manifest_sha and att.get("binding") == binding:
                yield att


__all__ = ["FOREIGN_DIR", "ForeignStore", "Incoming", "LedgerError", "foreign_row"]
