"""``agentreview init``: REVIEW.md, a rubric, allowed_signers, the pre-push hook and a CI gate.

The work is :mod:`agentreview.setup`'s; this module parses options, reaches the plugin registry and prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentreview.cli.helptext import choice, epilog
from agentreview.model.errors import AgentreviewError, UsageError


def register(app: typer.Typer) -> None:
    @app.command(
        "init",
        epilog=epilog(["agentreview init", "agentreview init --ci github --reviewer claude"], [0]),
    )
    def init(
        cwd: Annotated[
            Path | None,
            typer.Option("--cwd", help="The repository to set up (any folder inside it).", show_default="here"),
        ] = None,
        ci: Annotated[
            str | None,
            typer.Option(
                "--ci", click_type=choice("github"), help="Also write a CI gate (.github/workflows/agentreview.yml)."
            ),
        ] = None,
        hook: Annotated[
            str, typer.Option("--hook", click_type=choice("pre-push", "none"), help="The git hook to install.")
        ] = "pre-push",
        reviewer: Annotated[
            str | None,
            typer.Option("--reviewer", help="The agent check's preset.", show_default="the first usable here"),
        ] = None,
        action_ref: Annotated[
            str | None,
            typer.Option(
                "--action-ref",
                metavar="OWNER/REPO@COMMIT",
                help="The agentreview GitHub Action the --ci github workflow uses, pinned by a full 40-hex commit id.",
                show_default="the project's home at the commit this release names",
            ),
        ] = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite files init would write that differ.")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print {written, skipped, ...} as JSON.")] = False,
    ) -> int:
        """Set up a repository for reviews: REVIEW.md, rubric, allowed_signers, pre-push hook, CI gate."""
        from agentreview.host import git as repo
        from agentreview.host.home import home_dir
        from agentreview.host.presets import load_presets
        from agentreview.model.contracts import SignerContext, SigningError
        from agentreview.plugins.registry import load_registry
        from agentreview.setup.init import InitOptions, init_repository
        from agentreview.setup.workflow import DEFAULT_ACTION_REF, parse_action_ref
        from agentreview.signing.signers import configured_signer

        if action_ref is not None and ci != "github":
            raise UsageError("--action-ref names the Action of the GitHub workflow: add --ci github")
        pinned = parse_action_ref(action_ref) if action_ref is not None else DEFAULT_ACTION_REF
        base = (cwd or Path.cwd()).absolute()
        try:
            root = repo.repo_root(base)
        except repo.GitError as exc:
            raise AgentreviewError(f"{exc}; run 'git init' first or pass --cwd") from exc
        home = home_dir()
        registry = load_registry()
        for warning in registry.warnings:
            typer.echo(f"agentreview init: warning: {warning}", err=True)
        providers = registry.objects("providers")
        presets = load_presets(home, providers)
        if reviewer is not None and reviewer not in presets:
            from agentreview.model.suggest import did_you_mean

            raise UsageError(
                f"--reviewer {reviewer!r} is not a preset of this host{did_you_mean(reviewer, presets)} "
                "(see 'agentreview presets')"
            )
        line: str | None = None
        signer_error: str | None = None
        try:
            signer = configured_signer(registry, home)
            line = signer.key_info(SignerContext(home=home, repo_root=root)).allowed_signers_line
        except (SigningError, AgentreviewError) as exc:
            signer_error = str(exc)
        report = init_repository(
            InitOptions(root=root, ci=ci, hook=hook, reviewer=reviewer, force=force, action_ref=pinned),
            providers=providers,
            signers_line=line,
            signer_error=signer_error,
            presets=presets,
        )
        for warning in report.warnings:
            typer.echo(f"agentreview init: warning: {warning}", err=True)
        if as_json:
            typer.echo(json.dumps(report.as_json(), indent=2))
            return 0
        checks = ", ".join(c.id for c in report.checks) or "none that runs here"
        typer.echo(f"agentreview init: {root}")
        typer.echo(f"  command checks: {checks}; reviewer preset: {report.preset or 'none'}; base: {report.base}")
        for check in report.checks:
            typer.echo(f"    {check.id}: {check.run}")
            typer.echo(f"      why: {check.reason}" + (f"; here: {check.host}" if check.host else ""))
        for outcome in report.outcomes:
            reason = f"  ({outcome.reason})" if outcome.reason else ""
            typer.echo(f"  {outcome.status:<9} {outcome.path}{reason}")
        typer.echo("next steps:")
        for step in report.next_steps():
            typer.echo(f"  {step}")
        return 0
