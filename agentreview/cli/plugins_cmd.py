"""``agentreview plugins``: what is installed, from which distribution, implementing which hooks."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agentreview.cli.helptext import epilog


def register(app: typer.Typer) -> None:
    @app.command(
        "plugins",
        epilog=epilog(["agentreview plugins", "agentreview plugins --json"], [0]),
    )
    def plugins(
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
    ) -> int:
        """List the loaded plugins, their distribution, version and hooks."""
        from agentreview.plugins.registry import load_registry

        # A PluginConflictError is an AgentreviewError: the app prints it as one line, exit 3.
        registry = load_registry()
        provides: dict[str, list[str]] = {}
        for point in ("lane_executors", "pack_loaders", "providers", "signers"):
            for name, reg in getattr(registry, point).items():
                provides.setdefault(reg.plugin, []).append(f"{point}:{name}")
        rows = []
        for info in registry.plugins:
            row = info.as_dict()
            row["provides"] = sorted(provides.get(info.name, []))
            rows.append(row)
        for warning in registry.warnings:
            typer.echo(f"agentreview plugins: warning: {warning}", err=True)
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return 0
        if not rows:
            typer.echo("no plugins loaded")
        for row in rows:
            typer.echo(f"{row['name']}  ({row['distribution']} {row['version']})")
            typer.echo(f"  module:   {row['module']}")
            typer.echo(f"  hooks:    {', '.join(row['hooks']) or '-'}")
            typer.echo(f"  provides: {', '.join(row['provides']) or '-'}")
        return 0
