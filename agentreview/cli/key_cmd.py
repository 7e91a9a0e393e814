"""``agentreview key``: this host's signing key, created on first use, and its allowed_signers line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentreview.cli.helptext import epilog
from agentreview.model.errors import AgentreviewError


def register(app: typer.Typer) -> None:
    @app.command(
        "key",
        epilog=epilog(
            ["agentreview key", "agentreview key --principal ci@example.com"],
            [0, (3, "the key cannot be prepared (no ssh-keygen, unreadable key)")],
        ),
    )
    def key(
        principal: Annotated[
            str | None,
            typer.Option(
                "--principal",
                help="Principal for the printed allowed_signers line (signing itself uses "
                "[signing].principal in config.toml, else the git email).",
            ),
        ] = None,
        cwd: Annotated[
            Path | None, typer.Option("--cwd", help="Repository whose git user.email applies.", show_default="here")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> int:
        """Show the signing key, its fingerprint, the principal, and the ready allowed_signers line."""
        from agentreview.host import git as repo
        from agentreview.host.home import home_dir
        from agentreview.model.contracts import SignerContext, SigningError
        from agentreview.plugins.registry import load_registry
        from agentreview.signing.signers import configured_signer

        home = home_dir()
        try:
            root: Path | None = repo.repo_root(cwd or Path.cwd())
        except repo.GitError:
            root = None
        try:
            signer = configured_signer(load_registry(), home)
            info = signer.key_info(SignerContext(home=home, repo_root=root, principal=principal))
            signs_as = info.principal if principal is None else signer.key_info(
                SignerContext(home=home, repo_root=root)).principal  # fmt: skip
        except SigningError as exc:
            raise AgentreviewError(str(exc)) from exc
        if signs_as != info.principal:  # the line would trust an identity no review of this host claims
            typer.echo(
                f"agentreview key: warning: reviews here are signed as {signs_as!r}, not {info.principal!r}, so a gate "
                f"that trusts only this line refuses them: set [signing] principal = {json.dumps(info.principal)} in "
                f"{home / 'config.toml'} to sign as {info.principal!r}",
                err=True,
            )
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "fingerprint": info.fingerprint,
                        "principal": info.principal,
                        "publicKeyPath": str(info.public_key_path),
                        "allowedSignersLine": info.allowed_signers_line,
                    },
                    indent=2,
                )
            )
            return 0
        typer.echo(f"public key:   {info.public_key_path}")
        typer.echo(f"fingerprint:  {info.fingerprint}")
        typer.echo(f"principal:    {info.principal}")
        typer.echo("allowed_signers line (add it to the allowed_signers file of every gate that trusts this host):")
        typer.echo(info.allowed_signers_line)
        return 0
