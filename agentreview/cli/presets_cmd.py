"""``agentreview presets``: every reviewer preset this host knows, and whether it can run.

Lists the built-in presets (one per registered provider, even when its CLI is
missing) and the user presets of ``$AGENTREVIEW_HOME/presets.toml``, with the
provider's status: installed, usable (version found and every flag it needs listed
by the CLI's help), the version and a detail line. Provider status is probed once
per provider, each probe bounded by the provider's own timeout.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer


def _status(provider: Any) -> dict[str, Any]:
    if provider is None:
        return {"installed": False, "usable": False, "version": None, "detail": "no plugin registers this provider"}
    try:
        st = provider.status()
    except Exception as exc:  # a provider's bug must not hide the other presets
        return {"installed": False, "usable": False, "version": None, "detail": f"status failed: {exc}"}
    return {"installed": st.installed, "usable": st.usable, "version": st.version, "detail": st.detail}


def register(app: typer.Typer) -> None:
    @app.command("presets")
    def presets(
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
    ) -> int:
        """List reviewer presets, their provider, and whether that provider's CLI is installed and usable."""
        from agentreview.host.home import home_dir
        from agentreview.host.presets import load_presets
        from agentreview.plugins.registry import load_registry

        registry = load_registry()
        for warning in registry.warnings:
            typer.echo(f"agentreview presets: warning: {warning}", err=True)
        providers = registry.objects("providers")
        found = load_presets(home_dir(), providers)
        statuses = {name: _status(providers.get(name)) for name in {p.provider for p in found.values()}}
        rows = [
            {
                "name": spec.name,
                "provider": spec.provider,
                "model": spec.model,
                "source": "builtin" if spec.builtin else "user",
                **statuses[spec.provider],
            }
            for spec in sorted(found.values(), key=lambda s: (not s.builtin, s.name))
        ]
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
        return 0
