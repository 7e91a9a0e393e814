"""The opt-in warm server: a resident process that keeps agentreview's modules imported and forks per command.

``client`` and ``protocol`` are stdlib-only (they run on every CLI start); ``serve`` is the server.
This package's own module needs nothing but ``os``: :func:`wanted` is what every CLI start pays
when no server runs, one ``lstat``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

SOCKET_NAME = "agentreview.sock"
ENV_NO_SERVER = "AGENTREVIEW_NO_SERVER"


def home_path(env: Mapping[str, str]) -> str:
    """``$AGENTREVIEW_HOME`` resolved the way :func:`agentreview.host.home.home_dir` does, without pathlib."""
    value = env.get("AGENTREVIEW_HOME")
    home = os.path.expanduser(value) if value else os.path.join(os.path.expanduser("~"), ".agentproto")
    return os.path.realpath(home)


def server_dir(env: Mapping[str, str]) -> str:
    return os.path.join(home_path(env), "server")


def socket_path(env: Mapping[str, str]) -> str:
    return os.path.join(server_dir(env), SOCKET_NAME)


def wanted(argv: list[str], env: Mapping[str, str]) -> bool:
    """Whether to try the server: not disabled, not a ``server`` command, and a socket is there."""
    if env.get(ENV_NO_SERVER, "") not in ("", "0") or argv[:1] == ["server"]:
        return False
    try:
        return stat.S_ISSOCK(os.lstat(socket_path(env)).st_mode)
    except OSError:
        return False
