"""An entry's annotations sidecar ``<rangeSha>.annotations.json`` = ``{pr?, prStatus?}``: what happened to an
immutable attestation later, written under the entry's lock and merged into listed rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentreview.host.files import MissingFileError, atomic_write_text, read_regular_file
from agentreview.model.digests import json_text, loads_strict
from agentreview.store.layout import LedgerError

PR_STATES = ("open", "merged", "closed")
MAX_ANNOTATIONS_BYTES = 16 * 1024 * 1024


def read_annotations(path: Path, warn: Callable[[str], None]) -> dict[str, Any]:
    """The sidecar at ``path`` (``{}`` when there is none or it is unreadable, a FIFO included)."""
    try:
        data = loads_strict(read_regular_file(path, limit=MAX_ANNOTATIONS_BYTES, follow_symlinks=False))
    except MissingFileError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:
        warn(f"annotations {path} are unreadable ({exc}) — ignored")
        return {}
    return data if isinstance(data, dict) else {}


def rewrite_annotations(path: Path, change: Callable[[dict[str, Any]], None], warn: Callable[[str], None]) -> None:
    """Read, change and atomically rewrite the sidecar. The caller holds the entry's lock."""
    ann = read_annotations(path, warn)
    if not isinstance(ann.get("prStatus", []), list):
        ann["prStatus"] = []
    change(ann)
    atomic_write_text(path, json_text(ann) + "\n")


def merge_into_row(row: dict[str, Any], ann: Mapping[str, Any]) -> dict[str, Any]:
    """A listed row with the linked PR (unless the attestation names one) and the latest PR state."""
    if "pr" not in row and isinstance(ann.get("pr"), dict):
        row["pr"] = ann["pr"]
    status = ann.get("prStatus")
    if isinstance(status, list) and status and isinstance(status[-1], dict) and "state" in status[-1]:
        row["prState"] = status[-1]["state"]
    return row


def check_pr(pr: Any) -> dict[str, Any]:
    """A pull request reference ``{provider: github, repo, number, url}`` as JSON, or LedgerError."""
    from agentreview.model.attestation import PullRequest

    data = pr.to_json_dict() if isinstance(pr, PullRequest) else pr
    try:
        return PullRequest.from_json(data).to_json_dict()
    except Exception as exc:
        raise LedgerError(f"pr must be {{provider: github, repo: owner/name, number, url}}: {exc}") from exc


def check_snapshot(snapshot: Mapping[str, Any]) -> dict[str, Any]:
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
