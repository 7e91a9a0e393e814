"""agentreview: attested code reviews over a frozen git range (agentreview/v1, AIP-62).

Only cheap names live here (the version, the distribution names, the ``hookimpl`` marker), so
``agentreview --version`` and plugin discovery import nothing heavy.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "PROJECT_HOME", "PROJECT_NAME", "__version__", "hookimpl"]

__version__ = "0.1.0"
# The plugin hook project and entry-point group, and the import package and command.
PROJECT_NAME = "agentreview"
# The core's distribution (pyproject's project.name): the name `agentreview` on PyPI is an
# unrelated project, so every install instruction names this one.
DISTRIBUTION = "agentreview-core"
# The project's home (pyproject's project.urls Homepage): where its Action and hooks are taken from.
PROJECT_HOME = "https://github.com/agentreview/agentreview"


def __getattr__(name: str):  # pragma: no cover - trivial lazy attribute
    # pluggy is small, but importing it lazily keeps `--version` free of it.
    if name == "hookimpl":
        import pluggy

        marker = pluggy.HookimplMarker(PROJECT_NAME)
        globals()["hookimpl"] = marker
        return marker
    raise AttributeError(name)
