"""``agentreview fetch``: import the attestations other hosts published in git notes, as foreign ledger entries.

With ``[team] allowed_signers`` each signature is verified. Only notes changed since the last import are read;
an unchanged notes ref costs one ``git ls-remote`` and loads neither the config, the plugins nor the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from agentreview.cli.helptext import epilog
from agentreview.host.gitrun import GitError
from agentreview.model.errors import AgentreviewError
from agentreview.share.exchange import MAX_NOTES_PER_FETCH, Fetched, fetch, team_signers, unchanged
from agentreview.share.fetchstate import state_path
from agentreview.share.notes import NotesError


def register(app: typer.Typer) -> None:
    @app.command(
        "fetch",
        epilog=epilog(
            ["agentreview fetch", "agentreview fetch --remote upstream --json"],
            [0, (3, "a git failure, an unreadable config.toml, or could not run")],
        ),
    )
    def fetch_cmd(
        remote: Annotated[str, typer.Option("--remote", help="Fetch the notes ref from here.")] = "origin",
        cwd: Annotated[Path | None, typer.Option("--cwd", help="The repository.", show_default="here")] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print {remote, found, new, read, complete, unchanged, notes}.")
        ] = False,
        max_notes: Annotated[
            int, typer.Option("--max-notes", min=1, help="Read at most this many notes; fetch again for the rest.")
        ] = MAX_NOTES_PER_FETCH,
        rescan: Annotated[
            bool, typer.Option("--rescan", help="Read every note again, not only those changed since the last fetch.")
        ] = False,
    ) -> int:
        """Fetch the remote's review notes and import their attestations as foreign ledger entries."""
        from agentreview.cli.warnings import print_warning
        from agentreview.host.home import home_dir

        where = cwd or Path.cwd()
        state_file = state_path(home_dir(), where, remote)
        try:
            if not rescan and unchanged(where, remote, state_file):
                result = Fetched(remote, unchanged=True)
            else:
                result = _fetch(where, remote, state_file, max_notes, rescan, print_warning)
        except (NotesError, GitError) as exc:
            raise AgentreviewError(f"fetch {remote}: {exc}") from exc
        if as_json:
            body = {"remote": result.remote, "found": result.found, "new": result.new, "read": result.read,
                    "complete": result.complete, "unchanged": result.unchanged, "notes": result.notes}  # fmt: skip
            typer.echo(json.dumps(body, indent=2))
        else:
            for note in result.notes:
                print_warning(note)
            tail = " (notes unchanged since the last fetch)" if result.unchanged else ""
            typer.echo(f"fetched {result.found} attestation(s) from {remote}: {result.new} new{tail}")
        return 0


def _fetch(where: Path, remote: str, state_file: Path, max_notes: int, rescan: bool,
           warn: Callable[[str], None]) -> Fetched:  # fmt: skip
    """A fetch of a ref that moved: the config, the signer plugins and the foreign store loaded."""
    from agentreview.host.home import ledger_root
    from agentreview.store.foreign import ForeignStore

    signers = team_signers()
    registry = None
    if signers is not None:
        from agentreview.plugins.registry import load_registry

        registry = load_registry()
    store = ForeignStore(ledger_root(), warn=warn)
    try:
        return fetch(where, store, remote=remote, registry=registry, signers=signers, state_file=state_file,
                     limit=max_notes, rescan=rescan, checked=True)  # fmt: skip
    finally:
        store.close()
