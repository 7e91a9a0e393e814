"""``review_ledger`` and ``review_export`` as the reference host's tools answer them: plain functions (run in
a worker thread) that return the reply dict or raise :class:`~agentreview.mcp.args.ToolFailure`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentreview.mcp import args, confine
from agentreview.mcp.args import ToolFailure
from agentreview.mcp.confine import Roots

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.store.entries import LedgerRow

# Running rows come from the run registry (runs.running_rows): of one repository, and of the
# repository roots a predicate takes.
RootFilter = Callable[[str | None], bool]
RunningRows = Callable[[str | None, RootFilter | None], list[dict[str, Any]]]
# How many settled rows a subtree query reads before it filters them (the index matches one session only).
SUBTREE_SCAN = 10_000


def requester_session(row: dict[str, Any]) -> str | None:
    """The requesting session of a row: a settled row's ``requester.sessionId``, a running row's ``requester``."""
    found = row.get("requester")
    if isinstance(found, dict):
        found = found.get("sessionId")
    return found if isinstance(found, str) else None


def in_session_tree(session: str | None, root: str, subtree: bool) -> bool:
    """Whether ``session`` is ``root``, or (``subtree``) one of the sessions under it: ``root/…``."""
    return session is not None and (session == root or (subtree and session.startswith(root + "/")))


def review_ledger(
    *,
    cwd: str | None = None,
    repo_remote: str | None = None,
    range_: str | None = None,
    binding: str | None = None,
    requester: str | None = None,
    subtree: bool = False,
    include_running: bool = False,
    limit: int = 50,
    running: RunningRows | None = None,
    roots: Roots | None = None,
) -> dict[str, Any]:
    """``{total, attestations}``: running rows, then settled, each newest first. With ``roots``, a listing not
    of ``cwd``'s own repository holds only what was recorded in a repository inside them: a client confined
    to one repository never reads another's reviews."""
    from agentreview.host.git import normalize_remote
    from agentreview.host.home import ledger_root
    from agentreview.store.ledger import Ledger

    if not 1 <= limit <= 500:
        raise ToolFailure(f"limit {limit} must be between 1 and 500")
    if subtree and not requester:
        raise ToolFailure("subtree needs requesterSessionId: the session whose tree of sessions to list")
    root = args.directory(cwd)
    if roots is not None:
        roots.directory(root)
    repo = normalize_remote(repo_remote) if repo_remote else (args.repo_identity(root) if root else None)
    rsha = args.range_sha(range_, root) if range_ else None
    own = root is not None and (repo_remote is None or repo == _identity(root))  # cwd's own repository
    inside = _inside(roots) if roots is not None and not own else None
    rows: list[dict[str, Any]] = []
    if include_running and running is not None:
        for row in running(repo, inside):
            if binding and row.get("binding") not in (None, binding):
                continue
            if requester and not in_session_tree(requester_session(row), requester, subtree):
                continue
            rows.append(row)
    scan = subtree or inside is not None  # rows are filtered after the query: read more of them
    with Ledger(ledger_root(), warn=lambda _message: None) as led:
        listed = led.list(
            repo=repo, binding=binding, range_sha=rsha, requester_session_id=None if subtree else requester,
            limit=SUBTREE_SCAN if scan else limit,
        )
    settled: list[dict[str, Any]] = []
    for found in listed:
        if len(rows) + len(settled) >= limit:
            break
        row = found.to_json()
        if subtree and requester and not in_session_tree(requester_session(row), requester, True):
            continue
        if inside is not None and not inside(recorded_repo_root(found.path)):
            continue
        settled.append(row)
    rows = (rows + settled)[:limit]
    return {"total": len(rows), "attestations": rows}


def _held(rows: list[LedgerRow], roots: Roots, cwd: Path | None, what: str) -> list[LedgerRow]:
    """The rows recorded inside ``roots``, or of ``cwd``'s repository; a refusal when none is."""
    own = _identity(cwd)
    inside = _inside(roots)
    held = [row for row in rows if row.key.repo_remote == own or inside(recorded_repo_root(row.path))]
    if not held:
        raise ToolFailure(
            f"the attestation of {what} was recorded in a repository outside the roots this server works in "
            f"({roots.shown}) — pass cwd: a clone of that repository inside a root"
        )
    return held


def _identity(cwd: Path | None) -> str | None:
    """``cwd``'s repository identity, None without one."""
    if cwd is None:
        return None
    try:
        return args.repo_identity(cwd)
    except ToolFailure:
        return None


def _inside(roots: Roots) -> RootFilter:
    """Whether a recorded repository root lies inside ``roots`` (one not recorded never does)."""
    return lambda repo_root: repo_root is not None and roots.holding(repo_root) is not None


def recorded_repo_root(entry: Path) -> str | None:
    """The repository root a ledger entry file says it was recorded in (its ``host.repoRoot``), or None."""
    from agentreview.host.files import UnreadableFileError, read_regular_file
    from agentreview.store.entries import MAX_ENTRY_BYTES

    try:
        doc = json.loads(read_regular_file(entry, limit=MAX_ENTRY_BYTES, follow_symlinks=False))
    except (UnreadableFileError, OSError, ValueError, RecursionError):
        return None
    host = doc.get("host") if isinstance(doc, dict) else None
    found = host.get("repoRoot") if isinstance(host, dict) else None
    return found if isinstance(found, str) and found else None


def review_export(
    *,
    run_id: str | None = None,
    repo_remote: str | None = None,
    range_sha: str | None = None,
    binding: str | None = None,
    out_path: str | None = None,
    cwd: str | None = None,
    roots: Roots | None = None,
) -> dict[str, Any]:
    """Write a recorded attestation as an export file (reference-notes 2.14); ``{path, runId, verdict}``. With
    ``roots``, ``cwd`` and the attestation's repository (or ``cwd``'s own) must lie inside one, and the file goes
    into the export folder or a root, following no link (:mod:`.confine`)."""
    from agentreview.host.git import normalize_remote
    from agentreview.host.home import ledger_root
    from agentreview.store.export import recorded_export_target
    from agentreview.store.ledger import Ledger

    root = args.directory(cwd)
    if roots is not None:
        roots.directory(root)
    if run_id:
        args.run_id(run_id)
        filters: dict[str, Any] = {"run_id": served_run_id(run_id)}
        what = f"run '{run_id}'"
    elif repo_remote and range_sha:
        if not args.RANGE_SHA.match(range_sha):
            raise ToolFailure(f"rangeSha {range_sha!r} must be 64 hex characters (see review_ledger's rows)")
        filters = {"repo": normalize_remote(repo_remote), "range_sha": range_sha}
        what = f"range {range_sha[:12]} of {repo_remote}"
    else:
        raise ToolFailure("pass runId, or repoRemote + rangeSha (see review_ledger)")
    if binding:
        what += f" (binding {binding})"
    with Ledger(ledger_root(), warn=lambda _message: None) as led:
        rows = led.list(binding=binding, limit=500, **filters)
        if not rows:
            raise ToolFailure(f"no attestation in the ledger for {what} (see review_ledger)")
        if roots is not None:
            rows = _held(rows, roots, root, what)
        if len(rows) > 1 and not binding:
            listing = ", ".join(f"{row.run_id} [{row.binding}]" for row in rows)
            raise ToolFailure(f"several attestations match {what}: {listing}; pass binding or runId")
        entry = led.get(*rows[0].key)
    if entry is None:
        raise ToolFailure(f"ledger entry {rows[0].path} cannot be read; re-run the review")
    att = entry.attestation
    repo_root = Path(entry.host.repo_root)
    try:
        recorded = recorded_export_target(entry)
    except ValueError as exc:
        if not out_path:
            raise ToolFailure(f"{exc}; pass outPath") from exc
        recorded = None  # an exportDir that escapes the repository allows nothing
    if out_path:
        base, parts = confine.export_base(out_path, root or repo_root, roots, recorded and recorded.parent)
    elif recorded is None:
        raise ToolFailure("`outPath` is required (the manifest declares no `verdict.exportDir`)")
    else:
        base = Path(os.path.realpath(repo_root))
        parts = Path(os.path.relpath(recorded, base)).parts
        if roots is not None and roots.holding(recorded) is None:
            raise ToolFailure(
                f"the export folder of {what}, {recorded.parent}, is outside the roots this server works in "
                f"({roots.shown}) — pass outPath (inside cwd's repository)"
            )
    path = confine.write_below(base, parts, att.export_text().encode("utf-8"))
    return {"path": str(path), "runId": att.runId, "verdict": att.verdict}


def served_run_id(run_id: str) -> str:
    """The runId of the attestation ``run_id`` stands for: its own, or for a cached run the run that made it.
    A run with nothing in the ledger says why in one line (running, cancelled, failed, superseded, unknown)."""
    from agentreview.host.home import home_dir
    from agentreview.runs.registry import RunRegistry

    view = RunRegistry(home_dir()).view(run_id)
    if view is None:  # no record, and no ledger entry under this runId
        raise args.unknown_run(run_id)
    attestation = view.get("attestation")
    if isinstance(attestation, dict) and isinstance(attestation.get("runId"), str):
        return attestation["runId"]
    status = view.get("status")
    if status == "running":
        raise ToolFailure(f"run '{run_id}' is still running; export it once review_status says done")
    if view.get("superseded") and status == "done":
        later = view.get("supersededBy")
        raise ToolFailure(
            f"run '{run_id}' was superseded: run '{later}' reviewed the same range and replaced its attestation "
            f"in the ledger; export runId '{later}'"
        )
    if status in ("cancelled", "failed"):
        raise ToolFailure(f"run '{run_id}' {status}: nothing was recorded, so there is nothing to export")
    return run_id


def served_run_id_or_same(run_id: str) -> str:
    """:func:`served_run_id`, or ``run_id`` itself when it stands for nothing in the ledger (the
    caller then reports that in its own words)."""
    from agentreview.runs.registry import RUN_ID

    if not RUN_ID.match(run_id):
        return run_id
    try:
        return served_run_id(run_id)
    except (ToolFailure, OSError, ValueError):
        return run_id
