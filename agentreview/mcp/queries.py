"""``review_ledger`` and ``review_export``: the ledger as the reference host's tools answer it.

Both are plain functions of their arguments (the server runs them in a worker thread) that
return the reply dict or raise :class:`~agentreview.mcp.args.ToolFailure`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentreview.mcp import args, confine
from agentreview.mcp.args import ToolFailure
from agentreview.mcp.confine import Roots

# Running rows come from the run registry; None until it can be imported (see runs.py).
RunningRows = Callable[[str | None], list[dict[str, Any]]]


def review_ledger(
    *,
    cwd: str | None = None,
    repo_remote: str | None = None,
    range_: str | None = None,
    binding: str | None = None,
    requester: str | None = None,
    include_running: bool = False,
    limit: int = 50,
    running: RunningRows | None = None,
    roots: Roots | None = None,
) -> dict[str, Any]:
    """``{total, attestations}``: running rows first (with ``include_running``), then settled, newest first."""
    from agentreview.host.git import normalize_remote
    from agentreview.host.home import ledger_root
    from agentreview.store.ledger import Ledger

    if not 1 <= limit <= 500:
        raise ToolFailure(f"limit {limit} must be between 1 and 500")
    root = args.directory(cwd)
    if roots is not None:
        roots.directory(root)
    repo = normalize_remote(repo_remote) if repo_remote else (args.repo_identity(root) if root else None)
    rsha = args.range_sha(range_, root) if range_ else None
    rows: list[dict[str, Any]] = []
    if include_running and running is not None:
        for row in running(repo):
            if binding and row.get("binding") not in (None, binding):
                continue
            if requester and row.get("requester") != requester:
                continue
            rows.append(row)
    with Ledger(ledger_root(), warn=lambda _message: None) as led:
        settled = led.list(
            repo=repo, binding=binding, range_sha=rsha, requester_session_id=requester, limit=limit
        )
    rows = (rows + [row.to_json() for row in settled])[:limit]
    return {"total": len(rows), "attestations": rows}


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
    """Write a recorded attestation as an export file (reference-notes 2.14); ``{path, runId, verdict}``.

    With ``roots`` (the server always passes them) ``cwd`` must lie inside one, and ``outPath`` inside
    the repository's export folder or a root; the file is written following no link (:mod:`.confine`)."""
    from agentreview.host.git import normalize_remote
    from agentreview.host.home import ledger_root
    from agentreview.store.export import recorded_export_target
    from agentreview.store.ledger import Ledger

    root = args.directory(cwd)
    if roots is not None:
        roots.directory(root)
    if run_id:
        args.run_id(run_id)
        filters: dict[str, Any] = {"run_id": run_id}
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
    path = confine.write_below(base, parts, att.export_text().encode("utf-8"))
    return {"path": str(path), "runId": att.runId, "verdict": att.verdict}
