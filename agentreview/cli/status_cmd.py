"""``agentreview status [RUN_ID]``: one run's view, or every running run of this host.

A run whose process died is ``failed``, never ``running`` forever (:mod:`agentreview.runs.registry`).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentreview.cli.helptext import epilog
from agentreview.model.digests import json_text
from agentreview.model.errors import EXIT_NOT_FOUND, AgentreviewError


def _line(view: dict[str, Any]) -> str:
    lanes = ", ".join(f"{lane['id']} {lane['status']}" for lane in view.get("lanes") or [])
    rng = view.get("range") or {}
    span = f"{str(rng.get('base') or '?')[:10]}..{str(rng.get('head') or '?')[:10]}"
    parts = [view["runId"], view["status"]]
    if view.get("verdict"):
        parts.append(f"verdict {view['verdict']}")
    if view.get("binding"):
        parts.append(f"{view['binding']} {span}")
    if lanes:
        parts.append(f"lanes: {lanes}")
    text = "  ".join(parts)
    if view.get("error"):
        text += f"\n  {str(view['error']).splitlines()[0]}"
    return text


def register(app: typer.Typer) -> None:
    @app.command(
        "status",
        epilog=epilog(
            ["agentreview status", "agentreview status review-0c3ad0e6-4b8e-4a4f-9a53-ffb1d2c8e7a1 --json"],
            [0, (4, "unknown run id")],
        ),
    )
    def status(
        run_id: Annotated[str | None, typer.Argument(help="The run (review-…); none: every running run.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the view as JSON.")] = False,
    ) -> int:
        """Show one review run (running, each lane, then its verdict), or every running run of this host."""
        from agentreview.host.home import home_dir
        from agentreview.report.neutral import neutralize
        from agentreview.runs.registry import RunRegistry

        registry = RunRegistry(home_dir())
        if run_id is None:
            views = registry.running()
            if as_json:
                typer.echo(json_text(views))
            else:
                typer.echo(neutralize("\n".join(_line(v) for v in views)) if views else "no review is running")
            return 0
        view = registry.view(run_id)
        if view is None:
            raise AgentreviewError(f"review run '{run_id}' not found", exit_code=EXIT_NOT_FOUND)
        if as_json:
            typer.echo(json_text(view))
        else:
            typer.echo(neutralize(_line(view)))
        return 0
