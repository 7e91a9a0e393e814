"""``agentreview presets``: every reviewer preset this host knows, and whether it can run.

Lists the built-in presets (one per registered provider, even when its CLI is
missing) and the user presets of ``$AGENTREVIEW_HOME/presets.toml``, with the status
of the CLI each preset runs (its ``binary =`` option honoured): installed, usable
(version found and every flag it needs listed by the CLI's help), the version and a
detail line. Each distinct CLI is probed once, each probe bounded by the provider's
own timeout.

With ``--probe``, each preset's provider also runs its real admission without a paid
model call where the CLI allows it (``probe(spec)``: the CLI started as a lane would,
against a local server that refuses every request) and reports ``usable``,
``would fall back: <reason>``, ``would stop: <reason>`` or ``missing: <fix>``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from agentreview.cli.helptext import epilog


def _status(provider: Any, spec: Any) -> dict[str, Any]:
    if provider is None:
        return {"installed": False, "usable": False, "version": None, "detail": "no plugin registers this provider"}
    try:
        preset_status = getattr(provider, "preset_status", None)
        st = preset_status(spec) if preset_status else provider.status()
    except Exception as exc:  # a provider's bug must not hide the other presets
        return {"installed": False, "usable": False, "version": None, "detail": f"status failed: {exc}"}
    return {"installed": st.installed, "usable": st.usable, "version": st.version, "detail": st.detail}


def _probe(provider: Any, spec: Any, status: dict[str, Any]) -> str:
    if provider is None:
        return f"missing: {status['detail']}"
    try:
        probe = getattr(provider, "probe", None)
        found = probe(spec) if probe else None
    except Exception as exc:  # a provider's bug must not hide the other presets
        return f"probe failed: {type(exc).__name__}: {exc}"
    if isinstance(found, str) and found:
        return found
    return "usable" if status["usable"] else f"missing: {status['detail']}"


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
        from agentreview.host.home import home_dir
        from agentreview.host.presets import load_presets
        from agentreview.plugins.registry import load_registry

        registry = load_registry()
        for warning in registry.warnings:
            typer.echo(f"agentreview presets: warning: {warning}", err=True)
        providers = registry.objects("providers")
        found = load_presets(home_dir(), providers)
        statuses: dict[tuple[str, str], dict[str, Any]] = {}
        rows = []
        for spec in sorted(found.values(), key=lambda s: (not s.builtin, s.name)):
            key = (spec.provider, str(spec.options.get("binary") or ""))
            if key not in statuses:
                statuses[key] = _status(providers.get(spec.provider), spec)
            row = {
                "name": spec.name,
                "provider": spec.provider,
                "model": spec.model,
                "source": "builtin" if spec.builtin else "user",
                **statuses[key],
            }
            if probe:
                row["probe"] = _probe(providers.get(spec.provider), spec, statuses[key])
            rows.append(row)
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
