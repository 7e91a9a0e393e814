"""The host side of the lane watchdog: one small process per host, started with the first lane.

Each lane registers its process group here as it starts and unregisters it once
the group is empty. Registration is one short write to a pipe, so it costs a lane
microseconds; the watchdog itself (see :mod:`agentreview_command._watchdog_main`)
is a separate Python started once, in the background, and never waited for.

If the watchdog dies while the host lives (someone killed it), the next
registration notices the broken pipe, starts a new one and replays the groups
still running. If it cannot be started at all, lanes still run and are still
killed on timeout and cancel; only the host-killed case loses its guarantee, and
:attr:`Watchdog.error` says why.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

from agentreview_command import procs

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
_BOOTSTRAP = (
    f"import sys; sys.path.insert(0, {_PACKAGE_PARENT!r}); "
    "from agentreview_command._watchdog_main import main; sys.exit(main())"
)


class Watchdog:
    """One per host process; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._fd = -1  # our end of the pipe to the watchdog's stdin
        self._groups: set[int] = set()
        self.token = secrets.token_hex(8)
        self.error: str | None = None

    @property
    def marker(self) -> str:
        """The environment variable every lane of this host carries."""
        return procs.marker_name(self.token)

    @property
    def pid(self) -> int | None:
        """The watchdog's pid while one is running."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def register(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            self._send(f"+{pgid}\n")

    def unregister(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)
            self._send(f"-{pgid}\n")

    def _send(self, line: str) -> None:
        for _ in range(2):
            if self._proc is not None and self._proc.poll() is not None:
                self._drop()
            fresh = self._proc is None
            if fresh and not self._start():
                return
            payload = "".join(f"+{pgid}\n" for pgid in self._groups) if fresh else line
            try:
                os.write(self._fd, payload.encode("ascii"))
                return
            except OSError as exc:  # it died under us: start another and replay
                self.error = f"watchdog pipe failed: {exc}"
                self._drop()

    def _start(self) -> bool:
        if not sys.executable:
            self.error = "no Python interpreter path (sys.executable is empty) to start the lane watchdog"
            return False
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, str(os.getpid()), self.token],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
                close_fds=True,
                bufsize=0,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            self.error = f"could not start the lane watchdog: {exc}"
            self._proc = None
            return False
        self._fd = self._proc.stdin.fileno() if self._proc.stdin is not None else -1
        self.error = None
        return True

    def _drop(self) -> None:
        """Close our end of the pipe and forget the watchdog process.

        In a forked child this drops the inherited copy, so the parent's watchdog
        still sees EOF when the parent dies.
        """
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        self._proc = None
        self._fd = -1


_instance: Watchdog | None = None
_instance_lock = threading.Lock()


def get() -> Watchdog:
    """This process's watchdog client (the process itself starts with the first registration)."""
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = Watchdog()
        return _instance


def _after_fork_in_child() -> None:
    global _instance, _instance_lock
    if _instance is not None:
        _instance._drop()
    _instance = None
    _instance_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
