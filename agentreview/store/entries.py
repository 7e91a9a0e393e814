"""One ledger entry file ``{attestation, host}``. Two readers on purpose: :func:`parse_entry` validates the whole
attestation and is all that is served; :func:`summarize` checks what the index lists (rangeSha and verdict
recomputed), so listing a large ledger never reads every entry in full."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agentreview.host.files import MissingFileError, UnreadableFileError, read_regular_file
from agentreview.model.digests import json_text, range_sha
from agentreview.model.fold import fold_verdict
from agentreview.model.record import record
from agentreview.store.layout import HEX64, LedgerKey

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation

# Largest entry file read; a real one is a few KiB.
MAX_ENTRY_BYTES = 16 * 1024 * 1024
LANE_STATUSES = ("pass", "fail", "skipped", "timeout")
ATTESTATION_SCHEMA = "agentproto.review.attestation/v1"


@record
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


@record
class LedgerEntry:
    """One ledger file: the attestation (validated), its raw JSON as stored, and the host data."""

    attestation: Attestation
    raw: dict[str, Any]
    host: HostInfo
    path: Path


@record
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


class Summary(NamedTuple):
    """What the index keeps of one entry: its key, filter columns and settled row (None for an imported one)."""

    key: LedgerKey
    base_sha: str
    head_sha: str
    run_id: str
    requester_session: str | None
    created_at: str
    verdict: str
    dirty: bool
    row: dict[str, Any] | None


def entry_text(attestation: Attestation, host: HostInfo) -> str:
    """The bytes of an entry file: ``{attestation, host}``, two-space indent, trailing newline."""
    doc = {"attestation": attestation.to_json_dict(), "host": host.to_json()}
    return json_text(doc) + "\n"


def parse_entry(data: bytes, path: Path) -> LedgerEntry:
    """Parse an entry file with the full document model; raise ValueError saying what is wrong with it."""
    from agentreview.model.attestation import Attestation, AttestationShapeError

    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"not JSON ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("attestation"), dict):
        raise ValueError("not a ledger entry {attestation, host}")
    raw = doc["attestation"]
    try:
        att = Attestation.read(raw)
    except AttestationShapeError as exc:
        raise ValueError(f"attestation member {exc}") from exc
    host = HostInfo.from_json(doc.get("host"))
    if att.rangeSha != range_sha(att.target.baseSha, att.target.headSha):
        raise ValueError("rangeSha does not match target.baseSha..target.headSha")
    if att.verdict != att.refold():
        raise ValueError(f"verdict '{att.verdict}' does not follow from its lanes")
    return LedgerEntry(att, raw, host, path)


def read_entry(path: Path, key: LedgerKey, warn: Callable[[str], None]) -> LedgerEntry | None:
    """Read and fully validate the entry at ``path``; it must be a regular file (never a symlink, a
    FIFO or a device) holding an attestation for ``key``. Anything else is None, with a warning."""
    try:
        data = read_regular_file(path, limit=MAX_ENTRY_BYTES, follow_symlinks=False)
    except MissingFileError:
        return None
    except UnreadableFileError as exc:
        warn(f"ledger entry {path} {exc} — skipped")
        return None
    try:
        entry = parse_entry(data, path)
    except ValueError as exc:
        warn(f"ledger entry {path} is corrupt ({exc}) — skipped; delete it or re-run the review")
        return None
    if LedgerKey.of(entry.attestation) != key:
        warn(f"ledger entry {path} holds an attestation for another key — skipped")
        return None
    return entry


def _str(doc: Mapping[str, Any], name: str, where: str = "attestation") -> str:
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}.{name} must be a non-empty string")
    return value


def summarize(doc: Any) -> Summary:
    """The index columns and the settled ``review_ledger`` row (reference-notes 5.2) of an entry, checked without
    the document model: the key fields' shape, rangeSha recomputed, the verdict re-folded."""
    if not isinstance(doc, dict) or not isinstance(doc.get("attestation"), dict):
        raise ValueError("not a ledger entry {attestation, host}")
    att, host = doc["attestation"], HostInfo.from_json(doc.get("host"))
    if att.get("schema") != ATTESTATION_SCHEMA:
        raise ValueError(f"unknown schema {att.get('schema')!r}")
    target = att.get("target")
    if not isinstance(target, dict):
        raise ValueError("attestation.target must be an object")
    remote, base, head = (_str(target, k, "attestation.target") for k in ("repoRemote", "baseSha", "headSha"))
    run_id, review_id, binding, created = (_str(att, k) for k in ("runId", "reviewId", "binding", "createdAt"))
    manifest_sha, rsha = _str(att, "manifestSha"), _str(att, "rangeSha")
    if not run_id.startswith("review-") or not HEX64.fullmatch(manifest_sha) or not HEX64.fullmatch(rsha):
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
    return Summary(LedgerKey(remote, manifest_sha, binding, rsha), base, head, run_id, session, created, verdict,
                   att.get("dirty") is True, row)  # fmt: skip
