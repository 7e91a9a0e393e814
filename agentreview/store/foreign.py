"""Foreign entries: attestations another host published (git notes), imported by ``agentreview fetch``.

Layout::

    <root>/<repoSlug>/foreign/<attestationSha256>.json   {attestation, host: {foreign: {remote, principal, importedAt}}}

They live beside this host's own entries but apart from them: keyed by the digest of the whole
document (two hosts may review the same range; both are kept), never exported, and never used as
a cache hit or a prior unless team trust says so (the caller decides; this store only keeps them).
A document is validated with the strict verification model before it is stored, so a file here
is always a well-formed attestation; reads still go through the bounded reader and re-check.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.host.files import UnreadableFileError, atomic_write_text, fsync_path, read_regular_file
from agentreview.model.attestation import Attestation
from agentreview.store.entries import MAX_ENTRY_BYTES
from agentreview.store.foreign_entry import foreign_row, read_foreign
from agentreview.store.layout import FOREIGN_DIR, LedgerError, LedgerKey, check_key, ledger_slug

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.store.index import LedgerIndex


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ForeignStore:
    """Imported attestations of other hosts, one file per attestation digest."""

    def __init__(self, ledger_root: Path, *, warn: Callable[[str], None] | None = None):
        self.root = Path(ledger_root)
        self._warn = warn or (lambda _msg: None)
        self._index_obj: LedgerIndex | None = None
        self._unsynced: set[Path] = set()  # written with durable=False, not yet fsynced

    def _dir(self, repo_remote: str) -> Path:
        return self.root / ledger_slug(repo_remote) / FOREIGN_DIR

    def has(self, attestation: dict[str, Any]) -> bool:
        """True when ``attestation`` is stored already; raises as :meth:`add` for one that is malformed."""
        att = Attestation.read(attestation)
        check_key(LedgerKey.of(att))
        return (self._dir(att.target.repoRemote) / f"{att.attestation_sha256()}.json").is_file()

    def add(self, attestation: dict[str, Any], *, remote: str, principal: str | None, durable: bool = True) -> bool:
        """Store ``attestation``; True when it was not here yet. ``durable=False`` leaves the fsync to
        :meth:`sync`, so a fetch of many notes pays one flush rather than two fsyncs per entry.

        Raises :class:`ValueError` (:class:`AttestationShapeError` is one) for a document that is not
        a well-formed attestation, and :class:`LedgerError` for one whose key cannot name a path.
        """
        att = Attestation.read(attestation)
        check_key(LedgerKey.of(att))
        digest = att.attestation_sha256()
        path = self._dir(att.target.repoRemote) / f"{digest}.json"
        if path.is_file():
            return False
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        doc = {
            "attestation": att.to_json_dict(),
            "host": {"foreign": {"remote": remote, "principal": principal, "importedAt": _now()}},
        }
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
        atomic_write_text(path, text, durable=durable)
        if not durable:
            self._unsynced.add(path)
        self._index().record(path, path.stat(), text.encode(), foreign=True)
        return True

    def sync(self) -> None:
        """Make every entry written with ``durable=False`` durable: its file, then its folder."""
        folders = {path.parent for path in self._unsynced}
        for target in [*sorted(self._unsynced), *sorted(folders)]:
            fsync_path(target)
        self._unsynced.clear()

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


__all__ = ["FOREIGN_DIR", "ForeignStore", "LedgerError", "foreign_row"]
