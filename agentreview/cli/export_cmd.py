"""``agentreview export``: write a recorded attestation where a CI gate reads it.

The entry is picked by RUN_ID or ``--range``/``--binding``; it goes to ``--to`` or the recorded ``verdict.exportDir``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentreview.cli.helptext import RangeOption, epilog
from agentreview.model.errors import AgentreviewError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.store.ledger import Ledger, LedgerEntry, LedgerRow


def recorded_entry(run_id: str | None, range_: str | None, binding: str | None, cwd: Path | None) -> LedgerEntry:
    """The ledger entry named by RUN_ID or ``--range`` (and ``--binding``), for export and publish."""
    from agentreview.cli.warnings import print_warning
    from agentreview.host.home import ledger_root
    from agentreview.store.ledger import Ledger

    if not run_id and not range_:
        raise UsageError("give a RUN_ID or --range BASE..HEAD (see 'agentreview ledger')")
    with Ledger(ledger_root(), warn=print_warning) as led:
        row = _pick(led, run_id, range_, binding, cwd)
        entry = led.get(*row.key)
    if entry is None:
        raise AgentreviewError(f"ledger entry {row.path} cannot be read — re-run the review")
    return entry


def _pick(led: Ledger, run_id: str | None, range_: str | None, binding: str | None, cwd: Path | None) -> LedgerRow:
    from agentreview.cli.ledger_cmd import parse_range, repo_of

    if run_id:
        rows = led.list(run_id=run_id, binding=binding, limit=500)
        what = f"run {run_id}"
    else:
        assert range_ is not None
        rsha = parse_range(range_, cwd)
        rows = led.list(repo=repo_of(cwd), range_sha=rsha, binding=binding, limit=500)
        what = f"range {range_}"
    if binding:
        what += f" (binding {binding})"
    if not rows:
        raise AgentreviewError(f"no attestation in the ledger for {what} — see 'agentreview ledger'")
    if len(rows) > 1 and not binding:
        listing = ", ".join(f"{row.run_id} [{row.binding}]" for row in rows)
        raise AgentreviewError(f"several attestations match {what}: {listing} — pick one with --binding or a RUN_ID")
    return rows[0]  # newest first: with --binding, the latest manifest's attestation


def register(app: typer.Typer) -> None:
    @app.command(
        "export",
        epilog=epilog(
            [
                "agentreview export --range origin/main..HEAD",
                "agentreview export review-0c3ad0e6-4b8e-4a4f-9a53-ffb1d2c8e7a1 --to exports/",
            ],
            [0, (3, "no such entry, or could not run")],
        ),
    )
    def export(
        run_id: Annotated[
            str | None, typer.Argument(help="The run to export (see 'agentreview ledger'); or name it by --range.")
        ] = None,
        range_: RangeOption = None,
        binding: Annotated[str | None, typer.Option("--binding", help="Which binding, when several match.")] = None,
        cwd: Annotated[
            Path | None, typer.Option("--cwd", help="Repository, and base of a relative --to.", show_default="here")
        ] = None,
        to: Annotated[
            Path | None, typer.Option("--to", help="Where to write it.", show_default="verdict.exportDir")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print {path, runId, verdict}.")] = False,
    ) -> int:
        """Write a recorded attestation as an export file (two-space JSON)."""
        from agentreview.store.export import recorded_export_target, write_export

        entry = recorded_entry(run_id, range_, binding, cwd)
        att = entry.attestation
        if to is not None:
            target = to if to.is_absolute() else (cwd or Path.cwd()) / to
        else:
            try:
                recorded = recorded_export_target(entry)
            except ValueError as exc:
                raise AgentreviewError(f"{exc} — pass --to PATH") from exc
            if recorded is None:
                raise UsageError("`--to` is required (the manifest declares no `verdict.exportDir`)")
            target = recorded
        try:
            path = write_export(att, target.resolve())
        except OSError as exc:
            raise AgentreviewError(f"cannot write {target}: {exc.strerror or exc}") from exc
        if as_json:
            typer.echo(json.dumps({"path": str(path), "runId": att.runId, "verdict": att.verdict}, indent=2))
        else:
            typer.echo(f"exported {path} ({att.runId}, {att.verdict})")
        return 0
