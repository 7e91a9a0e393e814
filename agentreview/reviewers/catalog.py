"""Every reviewer preset this host knows and whether it can run (``agentreview presets``, MCP ``review_presets``).

Each distinct CLI is probed once; ``probe`` also runs each preset's admission without a paid model call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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


def preset_rows(probe: bool = False, warn: Callable[[str], None] = lambda _m: None) -> list[dict[str, Any]]:
    """One row per preset, built-ins first: ``{name, provider, model, source, installed, usable, version,
    detail}`` (and ``probe`` with ``probe``); each plugin-loading warning goes to ``warn``."""
    from agentreview.host.home import home_dir
    from agentreview.host.presets import load_presets
    from agentreview.plugins.registry import load_registry

    registry = load_registry()
    for warning in registry.warnings:
        warn(warning)
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
    return rows
