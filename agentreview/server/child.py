"""The forked child: become the caller's command, run it, and leave with ``os._exit``.

The child takes over the caller's stdin/stdout/stderr (passed as SCM_RIGHTS), cwd, umask and
environment, leads its own process group (so the caller's signals reach its lanes too), drops
every descriptor of the server, and runs :func:`agentreview.cli.entry.main`. It never returns
into the server's loop, whatever happens: a second copy of the loop would answer clients.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from agentreview.server.signals import child_defaults

EXIT_COULD_NOT_RUN = 3


def become_command(
    argv: list[str], cwd: str, env: dict[str, str], umask: int, fds: list[int], close_inherited: Callable[[], None]
) -> NoReturn:
    """Run the command on the caller's fds and exit with its status; never returns."""
    code = EXIT_COULD_NOT_RUN
    try:
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
