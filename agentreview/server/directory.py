"""The server's directory, ``$AGENTREVIEW_HOME/server``: created private, and refused when it is not.

Its socket hands this user's commands, environment and terminal to whoever listens, so the
directory must be ours and closed to the group and others (0700); anything else is refused
with the fix. The socket path must also fit a Unix socket address.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from agentreview.model.errors import AgentreviewError
from agentreview.server import protocol


class ServerDirError(AgentreviewError):
    """The server directory is not private to this user, so its socket could be reached by others."""


def check_dir(directory: Path, uid: int | None = None) -> None:
    """Refuse a directory that is not ours or that the group or others may enter."""
    info = directory.lstat()
    own = os.getuid() if uid is None else uid
    if not stat.S_ISDIR(info.st_mode):
        raise ServerDirError(f"{directory}: not a directory — remove it and run 'agentreview server start' again")
    if info.st_uid != own:
        raise ServerDirError(f"{directory}: owned by uid {info.st_uid}, not {own} — remove it or fix its owner")
    if info.st_mode & 0o077:
        raise ServerDirError(
            f"{directory}: mode {stat.S_IMODE(info.st_mode):04o} lets others in — run 'chmod 700 {directory}'"
        )


def prepare_dir(home: Path) -> Path:
    """``$AGENTREVIEW_HOME/server``, created 0700 when missing, checked always."""
    directory = home / "server"
    home.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    check_dir(directory)
    sock = directory / protocol.SOCKET_NAME
    if len(os.fsencode(sock)) > protocol.SUN_PATH_MAX:
        raise ServerDirError(f"{sock}: path too long for a Unix socket — set AGENTREVIEW_HOME to a shorter path")
    return directory


def open_regular(path: Path, flags: int, what: str) -> int:
    """Open a file of the server directory without blocking on a FIFO or following a symlink.

    Returns the descriptor (``O_NONBLOCK`` cleared); raises :class:`ServerDirError` naming the
    file when it is not a regular file or cannot be opened.
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ServerDirError(f"{path}: cannot open the server {what} ({exc.strerror or exc}) — remove it") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ServerDirError(f"{path}: the server {what} is not a regular file — remove it")
    os.set_blocking(fd, True)
    return fd
