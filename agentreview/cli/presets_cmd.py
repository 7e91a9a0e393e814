"""``agentreview presets``: every reviewer preset this host knows, and whether it can run.

``--probe`` runs each provider's admission against a local server that refuses every request: no model call is paid.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agentreview.cli.helptext import epilog


def register(app: typer.Typer) -> None:
    @app.command(
        "presets",
        epilog=epilog(["agentreview presets", "agentreview presets --probe"], [0]),
    )
    def presets(
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
        probe: Annotated[
            bool,
            typer.Option(
                "--probe",
                help="Also start each preset's CLI as a lane would, against a local server that refuses every "
                "request (no paid model call), and report usable, would fall back or missing.",
            ),
        ] = False,
    ) -> int:
        """List reviewer presets, their provider, and whether the CLI each one runs is installed and usable."""
        from agentreview.reviewers.catalog import preset_rows

        rows = preset_rows(probe, warn=lambda warning: typer.echo(f"agentreview presets: warning: {warning}", err=True))
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return 0
        if not rows:
            typer.echo("no presets: install agentreview-agent or add [presets.<name>] tables to presets.toml")
        for row in rows:
            state = "usable" if row["usable"] else "installed, not usable" if row["installed"] else "not installed"
            model = f" model={row['model']}" if row["model"] else ""
            version = f" {row['version']}" if row["version"] else ""
            typer.echo(f"{row['name']}  ({row['source']}) provider={row['provider']}{model}: {state}{version}")
            if row["detail"]:
                typer.echo(f"  {row['detail']}")
            if probe:
                typer.echo(f"  probe: {row['probe']}")
        return 0
