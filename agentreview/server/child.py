"""The forked child: become the caller's command, run it, and leave with ``os._exit``.

The child takes over the caller's stdin/stdout/stderr (passed as SCM_RIGHTS), cwd, umask and
environment, leads its own process group (so the caller's signals reach its lanes too), drops
every descriptor of the server, and runs :func:`agentreview.cli.entry.main`. It never returns
into the server's loop, whatever happens: a second copy of the loop would answer clients.

It dies with the server (:func:`die_with_server`): once the server is gone its client has
already exited 3, so the command must neither write to the terminal nor record a ledger entry.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

from agentreview.server.signals import child_defaults

EXIT_COULD_NOT_RUN = 3
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_prctl: Any = None  # libc's prctl, looked up by prepare() in the server, before any fork


def prepare() -> None:
    """Look up ``prctl`` once in the server, so a child arms its parent-death signal at once after the fork."""
    global _prctl
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        _prctl = ctypes.CDLL(None, use_errno=True).prctl


def die_with_server(server_pid: int, death_fd: int) -> None:
    """Make sure this child cannot outlive the server that forked it, even one killed by SIGKILL.

    Two independent guards: the kernel sends us SIGKILL when the server exits
    (PR_SET_PDEATHSIG; the server is single-threaded, so the forking thread is the process),
    and a thread watching ``death_fd``, the read end of a pipe whose write end only the server
    holds, kills us when it reads EOF. A server that died before the first guard was armed is
    seen in ``getppid``. The command's lanes are then killed by its process watchdog.
    """
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != server_pid:
        os._exit(EXIT_COULD_NOT_RUN)
    threading.Thread(target=_watch, args=(death_fd,), name="agentreview-server-death", daemon=True).start()


def _watch(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 64):
            pass
    os.kill(os.getpid(), signal.SIGKILL)


def become_command(
    argv: list[str], cwd: str, env: dict[str, str], umask: int, fds: list[int], close_inherited: Callable[[], None],
    server: tuple[int, int],
) -> NoReturn:
    """Run the command on the caller's fds and exit with its status; never returns.

    ``server`` is the server's pid and the read end of its death pipe (see :func:`die_with_server`).
    """
    code = EXIT_COULD_NOT_RUN
    try:
        die_with_server(*server)
        os.setpgid(0, 0)
        child_defaults()
        close_inherited()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.umask(umask)  # files the command writes (ledger, keys) get the caller's permissions
        code = run_command(argv, cwd, env)
    except BaseException as exc:  # the child must reach os._exit, whatever was raised
        with contextlib.suppress(BaseException):
            os.write(2, f"agentreview: the warm server could not run the command: {exc}\n".encode())
    finally:
        os._exit(code)


def _text(fd: int, mode: str, encoding: str, errors: str, *, line_buffering: bool) -> Any:
    """A text stream on ``fd`` as Python builds sys.std* at start-up, so ``isatty()`` is the caller's terminal's."""
    import io

    raw = io.FileIO(fd, mode, closefd=False)
    buffered = io.BufferedReader(raw) if "r" in mode else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=line_buffering)


def run_command(argv: list[str], cwd: str, env: dict[str, str]) -> int:
    """In the child, on the caller's fds: take its cwd, environment and streams, run the CLI, flush."""
    import atexit
    import random
    import tempfile

    atexit._clear()  # the server's handlers are not this command's
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # computed from TMPDIR on first use: the caller's, not the server's
    random.seed()
    encoding = (env.get("PYTHONIOENCODING") or "").split(":")[0] or "utf-8"
    # The streams Python's start-up would have built on these fds, under both names it builds them.
    sys.stdin = sys.__stdin__ = _text(0, "rb", encoding, "strict", line_buffering=False)  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = _text(1, "wb", encoding, "strict", line_buffering=os.isatty(1))  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = _text(2, "wb", encoding, "backslashreplace", line_buffering=True)  # type: ignore[misc]
    sys.argv = [sys.argv[0], *argv]
    from agentreview.cli.entry import _flush, main

    try:
        code = main(argv)
    finally:
        try:
            atexit._run_exitfuncs()
        finally:
            _flush(sys.stdout)
            _flush(sys.stderr)
    return code
