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
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentreview.host.files import UnreadableFileError, atomic_write_text, read_regular_file
from agentreview.store.entries import MAX_ENTRY_BYTES
from agentreview.store.layout import HEX64, LedgerError, LedgerKey, check_key, ledger_slug

FOREIGN_DIR = "foreign"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ForeignStore:
    """Imported attestations of other hosts, one file per attestation digest."""

    def __init__(self, ledger_root: Path, *, warn: Callable[[str], None] | None = None):
        self.root = Path(ledger_root)
        self._warn = warn or (lambda _msg: None)

    def _dir(self, repo_remote: str) -> Path:
        return self.root / ledger_slug(repo_remote) / FOREIGN_DIR

    def has(self, attestation: dict[str, Any]) -> bool:
        """True when ``attestation`` is stored already; raises as :meth:`add` for one that is malformed."""
        from agentreview.model.attestation import Attestation

        att = Attestation.read(attestation)
        check_key(LedgerKey.of(att))
        return (self._dir(att.target.repoRemote) / f"{att.attestation_sha256()}.json").is_file()

    def add(self, attestation: dict[str, Any], *, remote: str, principal: str | None) -> bool:
        """Store ``attestation``; True when it was not here yet.

        Raises :class:`ValueError` (:class:`AttestationShapeError` is one) for a document that is not
        a well-formed attestation, and :class:`LedgerError` for one whose key cannot name a path.
        """
        from agentreview.model.attestation import Attestation

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
        atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return True

    def _read(self, path: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
        from agentreview.model.attestation import Attestation
        from agentreview.model.digests import loads_strict

        try:
            doc = loads_strict(read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False))
            att = doc["attestation"]
            host = doc["host"]
            if not isinstance(att, dict) or not isinstance(host, dict):
                raise ValueError("attestation and host must be objects")
            Attestation.read(att)
        except (UnreadableFileError, ValueError, KeyError, TypeError) as exc:
            self._warn(f"{path}: skipped foreign entry: {exc}")
            return None
        return att, host

    def _files(self, repo_remote: str | None) -> Iterator[Path]:
        if not self.root.is_dir():
            return
        dirs = [self._dir(repo_remote)] if repo_remote is not None else sorted(self.root.glob(f"*/{FOREIGN_DIR}"))
        for d in dirs:
            if not d.is_dir() or d.is_symlink():
                continue
            for name in sorted(os.listdir(d)):
                if name.endswith(".json") and HEX64.match(name[:-5]):
                    yield d / name

    def all(self, repo_remote: str | None = None) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Every readable foreign entry (of ``repo_remote`` when given), newest first by createdAt."""
        rows = [r for r in (self._read(p) for p in self._files(repo_remote)) if r is not None]
        if repo_remote is not None:
            rows = [r for r in rows if r[0].get("target", {}).get("repoRemote") == repo_remote]
        rows.sort(key=lambda r: str(r[0].get("createdAt", "")), reverse=True)
        yield from rows

    def candidates(self, repo_remote: str, manifest_sha: str, binding: str) -> Iterator[dict[str, Any]]:
        """Raw attestation dicts under ``(repoRemote, manifestSha, binding)``, newest first."""
        for att, _host in self.all(repo_remote):
            if att.get("manifestSha") == manifest_sha and att.get("binding") == binding:
                yield att


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def foreign_row(att: dict[str, Any], host: dict[str, Any]) -> dict[str, Any]:
    """A ``ledger`` row for a foreign entry: the usual members plus ``foreign: {remote, principal}``."""
    target, attestor, meta = _obj(att.get("target")), _obj(att.get("attestor")), _obj(host.get("foreign"))
    lanes = [lane for lane in att.get("lanes") or [] if isinstance(lane, dict)]
    row: dict[str, Any] = {
        "runId": att.get("runId"),
        "reviewId": att.get("reviewId"),
        "binding": att.get("binding"),
        "verdict": att.get("verdict"),
        "repoRemote": target.get("repoRemote"),
        "baseSha": target.get("baseSha"),
        "headSha": target.get("headSha"),
        "rangeSha": att.get("rangeSha"),
        "manifestSha": att.get("manifestSha"),
        "createdAt": att.get("createdAt"),
        "signed": isinstance(attestor.get("signature"), dict),
        "lanes": [{"id": ln.get("id"), "status": ln.get("status"), "blocking": ln.get("blocking")} for ln in lanes],
        "foreign": {"remote": meta.get("remote"), "principal": meta.get("principal")},
    }
    if att.get("dirty") is True:
        row["dirty"] = True
    return row


__all__ = ["FOREIGN_DIR", "ForeignStore", "LedgerError", "foreign_row"]
