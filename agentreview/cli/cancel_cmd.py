"""``agentreview cancel RUN_ID``: stop a running review as Ctrl-C does.

Running lanes and reviewer sessions are killed, unstarted lanes never start, nothing is recorded.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from agentreview.cli.helptext import epilog
from agentreview.model.errors import EXIT_NOT_FOUND


def register(app: typer.Typer) -> None:
    @app.command(
        "cancel",
        epilog=epilog(
            ["agentreview cancel review-0c3ad0e6-4b8e-4a4f-9a53-ffb1d2c8e7a1"],
            [(0, "cancelled, or already ended"), (4, "unknown run id")],
        ),
    )
    def cancel(
        run_id: Annotated[str, typer.Argument(help="The run to cancel (review-…).")],
        as_json: Annotated[bool, typer.Option("--json", help="Print {runId, cancelled, status} as JSON.")] = False,
    ) -> int:
        """Cancel a running review: its lanes are killed and nothing is recorded."""
        from agentreview.host.home import home_dir
        from agentreview.report.neutral import neutralize
        from agentreview.runs.registry import RunRegistry

        result = RunRegistry(home_dir()).cancel(run_id)
        found = result["status"] != "not_found"
        if as_json:
            typer.echo(json.dumps(result))
        elif not found:
            sys.stderr.write(neutralize(f"agentreview cancel: review run '{run_id}' not found") + "\n")
        elif result["cancelled"]:
            typer.echo(f"{run_id} cancelled")
        else:
            typer.echo(f"{run_id} was not running (status {result['status']})")
        return 0 if found else EXIT_NOT_FOUND
