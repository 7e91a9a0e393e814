"""``agentreview pr``: link a recorded review to its GitHub pull request and snapshot the PR's state.

The state goes to the entry's annotations, never to the attestation; the work is :mod:`agentreview.pr.service`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentreview.cli.helptext import RangeOption, epilog
from agentreview.model.digests import json_text
from agentreview.model.errors import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE

EXIT_FOR_CODE = {"not_found": EXIT_NOT_FOUND, "no_pr": EXIT_NOT_FOUND, "invalid_argument": EXIT_USAGE}


def _summary(reply: dict[str, Any]) -> str:
    att, pr, status = reply["attestation"], reply["pr"], reply["status"]
    checks = status.get("checks")
    parts = [
        f"{att['runId']} ({att['verdict']}, {att['baseSha'][:7]}..{att['headSha'][:7]})",
        f"-> {pr['url']} [{reply['linkedVia']}]: {status['state']}",
    ]
    if checks is not None:
        passed = sum(1 for c in checks if c.get("conclusion") == "success")
        parts.append(f"checks {passed}/{len(checks)} success")
    if status.get("reviews"):
        parts.append(f"{len(status['reviews'])} review(s)")
    parts.append(f"{len(reply['snapshots'])} snapshot(s)")
    return "  ".join(parts)


def _checkout() -> Path | None:
    """The current directory when it is inside a git repository (where ``--range`` refs resolve)."""
    from agentreview.host import git as repo

    try:
        return repo.repo_root(Path.cwd())
    except repo.GitError:
        return None


def register(app: typer.Typer) -> None:
    @app.command(
        "pr",
        epilog=epilog(
            [
                "agentreview pr --pr https://github.com/acme/widgets/pull/7",
                "agentreview pr review-0c3ad0e6-4b8e-4a4f-9a53-ffb1d2c8e7a1 --json",
            ],
            [
                (0, "linked"),
                (3, "gh or the GitHub API failed, or could not run"),
                (4, "no ledger entry or no pull request"),
            ],
        ),
    )
    def pr(
        run_id: Annotated[
            str | None, typer.Argument(help="The run (review-…).", show_default="see --range, --pr, --cwd")
        ] = None,
        range_: RangeOption = None,
        cwd: Annotated[
            Path | None,
            typer.Option(
                "--cwd", help="Repository: its HEAD picks the entry when nothing else does.", show_default="here"
            ),
        ] = None,
        pr_url: Annotated[
            str | None, typer.Option("--pr", help="The pull request URL (https://github.com/OWNER/REPO/pull/N).")
        ] = None,
        as_json: Annotated[
            bool,
            typer.Option("--json", help="Print {ok, attestation, pr, linkedVia, status, snapshots} or {ok, error}."),
        ] = False,
    ) -> int:
        """Link a recorded review to its GitHub pull request and record the PR's current state."""
        from agentreview.cli.warnings import print_warning
        from agentreview.host.home import home_dir
        from agentreview.pr.service import link_pr
        from agentreview.report.neutral import neutralize

        if cwd is None and not (run_id or pr_url):
            cwd = _checkout() if range_ else Path.cwd()
        reply = link_pr(home=home_dir(), run_id=run_id, range=range_, cwd=cwd, pr_url=pr_url)
        for line in reply.pop("warnings", []):
            print_warning(line)
        if as_json:
            typer.echo(json_text(reply))
        elif reply["ok"]:
            typer.echo(neutralize(_summary(reply)))
        if reply["ok"]:
            return EXIT_OK
        error = reply["error"]
        if not as_json:
            typer.echo(neutralize(f"agentreview pr: {error['code']}: {error['message']}"), err=True)
        return EXIT_FOR_CODE.get(error["code"], EXIT_ERROR)
