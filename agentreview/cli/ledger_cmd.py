"""``agentreview ledger``: list recorded attestations, newest first.

Two full commit shas or a rangeSha need no repository; refs are resolved in the repository at ``--cwd``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from agentreview.cli.helptext import RangeOption, epilog
from agentreview.model.digests import json_text, range_sha
from agentreview.model.errors import AgentreviewError, UsageError
from agentreview.report.neutral import neutralize

FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
RANGE_SHA = re.compile(r"^[0-9a-f]{64}\Z")


def parse_range(value: str, cwd: Path | None) -> str:
    """The rangeSha a ``--range`` value names (resolving refs in ``cwd``'s repository when needed)."""
    value = value.strip()
    if ".." not in value:
        if RANGE_SHA.match(value):
            return value
        raise UsageError(f"--range {value!r} must be BASE..HEAD or a 64-hex rangeSha")
    base, _, head = value.partition("..")
    if not base or not head:
        raise UsageError(f"--range {value!r} must name both ends: BASE..HEAD")
    if FULL_SHA.match(base) and FULL_SHA.match(head):
        return range_sha(base, head)
    from agentreview.host import git as repo
    try:
        root = repo.repo_root(cwd or Path.cwd())
        return range_sha(repo.rev_parse_commit(root, base), repo.rev_parse_commit(root, head))
    except repo.GitError as exc:
        raise AgentreviewError(f"--range {value!r}: {exc} (full 40-hex shas need no repository)") from exc


def repo_of(cwd: Path | None) -> str | None:
    """The repository identity at ``cwd`` (normalized origin, or ``local:<root>``), None outside git."""
    from agentreview.host import git as repo
    try:
        return repo.repo_remote(repo.repo_root(cwd or Path.cwd()))
    except repo.GitError:
        return None


def _foreign_cell(row: dict[str, Any]) -> str:
    meta = row.get("foreign")
    if not isinstance(meta, dict):
        return "-"
    return f"{meta.get('remote')} ({meta.get('principal') or 'unverified'})"


def _table(rows: list[dict[str, Any]]) -> str:
    header: tuple[str, ...] = ("RUN ID", "VERDICT", "BINDING", "RANGE", "CREATED", "SIGNED", "DIRTY", "PR")
    foreign = any("foreign" in r for r in rows)
    if foreign:
        header = (*header, "FOREIGN")
    body = [
        (
            r["runId"],
            r["verdict"],
            r["binding"],
            f"{r['baseSha'][:7]}..{r['headSha'][:7]}",
            r["createdAt"],
            "yes" if r.get("signed") else "no",
            "yes" if r.get("dirty") else "-",
            r.get("prState") or "-",  # the newest PR status snapshot (agentreview pr)
            *((_foreign_cell(r),) if foreign else ()),
        )
        for r in rows
    ]
    widths = [max(len(str(line[i])) for line in [header, *body]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in [header, *body])


def register(app: typer.Typer) -> None:
    @app.command(
        "ledger",
        epilog=epilog(["agentreview ledger --limit 5", "agentreview ledger --range origin/main..HEAD --json"], [0]),
    )
    def ledger(
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array of rows.")] = False,
        repo: Annotated[str | None, typer.Option("--repo", help="Only this repository (remote or identity).")] = None,
        binding: Annotated[str | None, typer.Option("--binding", help="Only this binding.")] = None,
        range_: RangeOption = None,
        limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many rows.")] = 50,
        cwd: Annotated[
            Path | None, typer.Option("--cwd", help="Repository for resolving --range refs.", show_default="here")
        ] = None,
        requester: Annotated[
            str | None, typer.Option("--requester", help="Only runs requested by this agent session id.")
        ] = None,
        reindex: Annotated[bool, typer.Option("--reindex", help="Rebuild the index from the files first.")] = False,
    ) -> int:
        """List recorded attestations, newest first."""
        from agentreview.cli.warnings import print_warning
        from agentreview.host.git import normalize_remote
        from agentreview.host.home import ledger_root
        from agentreview.store.ledger import Ledger

        rsha = parse_range(range_, cwd) if range_ else None
        with Ledger(ledger_root(), warn=print_warning) as led:
            if reindex:
                led.rebuild_index()
            rows = [
                row.to_json()
                for row in led.list(
                    repo=normalize_remote(repo) if repo else None,
                    binding=binding,
                    range_sha=rsha,
                    requester_session_id=requester,
                    limit=limit,
                    foreign=None,  # imported entries too (a requester filter matches only this host's)
                )
            ]
        if as_json:
            typer.echo(json_text(rows))
        elif rows:
            typer.echo(neutralize(_table(rows)))  # imported rows are anyone's text
        else:
            filtered = repo or binding or range_ or requester
            typer.echo("no attestations match" if filtered else "the ledger holds no attestations")
        return 0
