"""``agentreview publish``: share a recorded attestation through git notes.

It joins the note of its head commit under ``refs/notes/agentreview``, then that ref is pushed unless ``--no-push``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentreview.cli.helptext import RangeOption, epilog
from agentreview.model.errors import AgentreviewError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from agentreview.model.attestation import Attestation


def publish_attestation(att: Attestation, repo: Path, remote: str | None) -> dict[str, object]:
    """Publish ``att`` from the repository at ``repo``; the JSON report (shared with ``run --publish``)."""
    from agentreview.host.gitrun import GitError
    from agentreview.share.exchange import publish
    from agentreview.share.notes import NotesError

    try:
        done = publish(repo, att, remote=remote)
    except (NotesError, GitError) as exc:
        raise AgentreviewError(f"publish {att.runId}: {exc}") from exc
    return {"runId": att.runId, "commit": done.commit, "added": done.changed, "pushed": done.pushed,
            "ref": "refs/notes/agentreview"}  # fmt: skip


def register(app: typer.Typer) -> None:
    @app.command(
        "publish",
        epilog=epilog(
            [
                "agentreview publish review-0c3ad0e6-4b8e-4a4f-9a53-ffb1d2c8e7a1",
                "agentreview publish --range origin/main..HEAD --no-push",
            ],
            [0, (3, "no such entry, a git failure, or could not run")],
        ),
    )
    def publish_cmd(
        run_id: Annotated[
            str | None, typer.Argument(help="The run to publish (see 'agentreview ledger'); or name it by --range.")
        ] = None,
        range_: RangeOption = None,
        binding: Annotated[str | None, typer.Option("--binding", help="Which binding, when several match.")] = None,
        cwd: Annotated[
            Path | None, typer.Option("--cwd", help="The repository whose notes receive it.", show_default="here")
        ] = None,
        remote: Annotated[
            str | None, typer.Option("--remote", help="Push the notes ref here.", show_default="origin")
        ] = None,
        no_push: Annotated[bool, typer.Option("--no-push", help="Add the note locally; push nothing.")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print {runId, commit, added, pushed, ref}.")] = False,
    ) -> int:
        """Add a recorded attestation to the git note of its head commit and push the notes ref."""
        from agentreview.cli.export_cmd import recorded_entry

        if no_push and remote is not None:
            raise UsageError("--remote and --no-push exclude each other")
        entry = recorded_entry(run_id, range_, binding, cwd)
        repo = cwd or Path(entry.host.repo_root)
        report = publish_attestation(entry.attestation, repo, None if no_push else (remote or "origin"))
        if as_json:
            typer.echo(json.dumps(report, indent=2))
        else:
            state = "added to" if report["added"] else "already in"
            pushed = f", pushed to {report['pushed']}" if report["pushed"] else ""
            typer.echo(f"{report['runId']} {state} the note of {str(report['commit'])[:12]}{pushed}")
        return 0
