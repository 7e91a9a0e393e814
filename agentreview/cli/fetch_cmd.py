"""``agentreview fetch``: import the attestations other hosts published in git notes.

Fetches and merges the remote's ``refs/notes/agentreview`` and stores every attestation found as
a foreign ledger entry (never exported; listed by ``agentreview ledger``). With ``[team]
allowed_signers`` configured, each signature is verified and the principal recorded; else the
principal is null. Malformed or oversized lines are skipped with a note.
Exit codes: 0, 3 a git failure or an unreadable config.toml, 64 usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentreview.model.errors import AgentreviewError


def register(app: typer.Typer) -> None:
    @app.command("fetch")
    def fetch_cmd(
        remote: Annotated[str, typer.Option("--remote", help="Fetch the notes ref from here.")] = "origin",
        cwd: Annotated[Path | None, typer.Option("--cwd", help="The repository (default: the current one).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print {remote, found, new, notes}.")] = False,
    ) -> int:
        """Fetch the remote's review notes and import their attestations as foreign ledger entries."""
        from agentreview.cli.warnings import print_warning
        from agentreview.host.gitrun import GitError
        from agentreview.host.home import ledger_root
        from agentreview.share.exchange import fetch, team_signers
        from agentreview.share.notes import NotesError
        from agentreview.store.foreign import ForeignStore

        signers = team_signers()
        registry = None
        if signers is not None:
            from agentreview.plugins.registry import load_registry

            registry = load_registry()
        store = ForeignStore(ledger_root(), warn=print_warning)
        try:
            result = fetch(cwd or Path.cwd(), store, remote=remote, registry=registry, signers=signers)
        except (NotesError, GitError) as exc:
            raise AgentreviewError(f"fetch {remote}: {exc}") from exc
        if as_json:
            body = {"remote": result.remote, "found": result.found, "new": result.new, "notes": result.notes}
            typer.echo(json.dumps(body, indent=2))
        else:
            for note in result.notes:
                print_warning(note)
            typer.echo(f"fetched {result.found} attestation(s) from {remote}: {result.new} new")
        return 0
