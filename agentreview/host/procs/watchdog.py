"""The host side of the process watchdog: one small process per host, started with the first child.

Children register their groups through a pipe whose write end only the host holds; when the host dies, even
by SIGKILL, the pipe closes and the watchdog kills every registered group. A dead watchdog is restarted and
the live groups replayed; docs/architecture.md ("Processes") says why not ``PR_SET_PDEATHSIG``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

from agentreview.host.procs import table

# The directory holding the ``agentreview`` package: the watchdog runs with ``-I -S``
# (no site-packages, no environment), so it finds the package by this path alone.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_BOOTSTRAP = (
    f"import sys; sys.path.insert(0, {_PACKAGE_PARENT!r}); "
    "from agentreview.host.procs.watchdog_main import main; sys.exit(main())"
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
        """The environment variable every marked child of this host carries."""
        return table.marker_name(self.token)

    @property
    def pid(self) -> int | None:
        """The watchdog's pid while one is running."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def ensure_running(self) -> None:
        """Start the watchdog process now if none runs: a child is spawned only once one does, or a
        host SIGKILLed between the spawn and the registration would leave that child behind."""
        with self._lock:
            self._send("")

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
            self.error = "no Python interpreter path (sys.executable is empty) to start the process watchdog"
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
            self.error = f"could not start the process watchdog: {exc}"
            self._proc = None
            return False
        self._fd = self._proc.stdin.fileno() if self._proc.stdin is not None else -1
        self.error = None
        return True

    def _drop(self) -> None:
        """Close our end of the pipe and forget the watchdog (in a forked child: the inherited copy, so the
        parent's watchdog still sees EOF when the parent dies)."""
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
