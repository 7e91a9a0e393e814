"""The server's stamp: what a client compares to know the server runs the code it would run.

The stamp lists the version, interpreter and prefix, and every file the server's agentreview
and plugin modules came from, plus the directories that hold installed distributions, each
with its :func:`~agentreview.server.protocol.fingerprint` (size, mtime_ns, ctime_ns, inode,
device: an mtime put back by ``cp -p`` or ``rsync -a`` does not hide a change); any edit,
install or uninstall since the server started changes one of them, and
:func:`agentreview.server.client.stamp_matches` then runs the command in-process instead.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from agentreview.server.protocol import fingerprint

# The entry module runs as ``__main__``, so it is not in sys.modules under its own name.
SERVE_MODULE_FILE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "serve.py")


def build_stamp() -> dict[str, Any]:
    """What a client compares to know the server runs its code (see :func:`client.stamp_matches`)."""
    from importlib.metadata import entry_points

    import agentreview

    entries = {ep.module for ep in entry_points(group="agentreview")}
    tops = {"agentreview"} | {module.split(".")[0] for module in entries}
    paths = {path for path in map(_origin, entries) if path is not None}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name.split(".")[0] in tops and isinstance(file, str) and file:
            paths.add(os.path.realpath(file))
    paths.add(SERVE_MODULE_FILE)
    paths |= {os.path.realpath(p) for p in sys.path if p.endswith("-packages") and os.path.isdir(p)}
    files = []
    for path in sorted(paths):
        with contextlib.suppress(OSError):
            files.append([path, fingerprint(path)])
    return {"version": agentreview.__version__, "prefix": sys.prefix, "python": sys.version, "files": files}


def _origin(module: str) -> str | None:
    """The file a plugin's entry module loads from (imported or not), for the stamp."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return os.path.realpath(spec.origin) if spec is not None and spec.origin else None
