"""agentreview: attested code reviews over a frozen git range (agentreview/v1, AIP-62).

Only cheap names live here: the version and the ``hookimpl`` marker plugins use.
Everything heavy (pydantic, typer, git) is imported by the modules that need it,
so ``agentreview --version`` and plugin discovery stay fast.
"""

from __future__ import annotations

__all__ = ["PROJECT_NAME", "__version__", "hookimpl"]

__version__ = "0.1.0"
PROJECT_NAME = "agentreview"


def __getattr__(name: str):  # pragma: no cover - trivial lazy attribute
    # pluggy is small, but importing it lazily keeps `--version` free of it.
    if name == "hookimpl":
        import pluggy

        marker = pluggy.HookimplMarker(PROJECT_NAME)
        globals()["hookimpl"] = marker
        return marker
    raise AttributeError(name)
